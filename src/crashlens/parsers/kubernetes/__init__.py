"""Kubernetes inputs: objects as `kubectl get -o json|yaml` prints them (`objects.py`) and
`kubectl describe pod` / `kubectl get events` text (`describe.py`).

Both kinds produce the same facts, so rules and the failure detector read a pod the same way
whichever form it came in. `k8s.reason` and `k8s.exit_code` are the keys the launcher
collector already writes for such lines in any text log (`launcher/deaths.py`): the failure
detector reads them.

Facts (each with its line number where the parser can find it, and the line as text):

* `k8s.reason`: str a container state's reason (`OOMKilled`, `Error`, `Completed`,
  `ContainerCannotRun`, `StartError`, `CrashLoopBackOff`) or the pod's `status.reason`
  (`Evicted`, `Preempting`, `NodeShutdown`); attrs pod, container, state (`state`,
  `lastState`, `waiting` or `pod`), exit_code (the terminated state's), message.
* `k8s.exit_code`: int a terminated container's exit code; attrs pod, container, state, reason.
* `k8s.eviction`: str the resource an eviction names (`memory`, `ephemeral-storage`, `inodes`,
  `pids`, or the pressure condition `MemoryPressure`, `DiskPressure`, `PIDPressure`); attrs
  pod, message.
* `k8s.disruption`: str a `DisruptionTarget` condition's reason (`PreemptionByScheduler`,
  `TerminationByKubelet`, `DeletionByTaintManager`, `EvictionByEvictionAPI`,
  `DeletionByPodGC`); attrs pod, message.
* `k8s.event`: str an event's reason (`OOMKilling`, `Evicted`, `FailedScheduling`, `BackOff`,
  `Killing`, `Preempting`, ...); attrs type (`Normal` / `Warning`), object, count, message.
* `k8s.unschedulable`: str one reason the scheduler gives for not placing a pod that the same
  input never shows scheduled (a `FailedScheduling` event, a `PodScheduled` condition that is
  `False`): `Insufficient nvidia.com/gpu`, `didn't match Pod's node affinity/selector`, `had
  untolerated taint {...}`; attrs pod, kind (`resource`, `affinity`, `taint`, `volume`,
  `other`), nodes (how many it ruled out), total (nodes in the cluster), message.
* `k8s.node`: str the node a pod ran on; attrs pod.
* `k8s.phase`: str a pod's phase (`Running`, `Succeeded`, `Failed`, `Pending`); attrs pod.
* `k8s.restart_count`: int a container's restart count; attrs pod, container.
* `k8s.memory_limit_bytes`, `k8s.memory_request_bytes`: int a container's memory limit and
  request; attrs pod, container.
* `k8s.shm_private_bytes`: int a container's /dev/shm size from its pod spec (the runtime's
  64 MiB when no memory volume is mounted there); attrs pod, container, default, volume
  (`volumes.py`; JSON/YAML only).
* `k8s.job_condition`: str the last true condition of a Kubeflow job (PyTorchJob, TFJob, MPIJob,
  ...) or a JobSet (`Failed`, `Succeeded`, `Suspended`, `Running`, `Created`); attrs kind,
  job, reason, message.
* `k8s.replica_failed`: str a replica type (PyTorchJob `Master` / `Worker`) or replicated job
  (JobSet) with failed replicas; attrs kind, job, failed (count), first (True for the one the
  job's `Failed` condition names, the first to fail: cited at that condition's message),
  replica (the name in lower case, as the pods' labels write it), reason and message (the
  `Failed` condition's, on the first).

A pod's `k8s.reason`, `k8s.exit_code`, `k8s.eviction`, `k8s.disruption` and `k8s.node` carry
`replica` and `replica_index` when its labels name them (`training.kubeflow.org/replica-type`,
JobSet's `jobset.sigs.k8s.io/replicatedjob-name`): a rule joins them to `k8s.replica_failed`
with `same = ['replica']`.
"""
