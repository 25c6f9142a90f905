"""Kubernetes inputs: kubectl JSON/YAML objects and describe / get events text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crashlens.model import Fact, InputKind
from crashlens.parsers.base import safe_sniff
from crashlens.parsers.kubernetes.common import eviction_resource, quantity_bytes
from crashlens.parsers.kubernetes.describe import KubectlTextParser
from crashlens.parsers.kubernetes.objects import KubectlJsonParser
from crashlens.pipeline import analyze_inputs
from mechanism_helpers import report_of
from test_k8s_scheduling import PENDING_DESCRIBE

from conftest import SAMPLES, sample_text

JSON = KubectlJsonParser()
TEXT = KubectlTextParser()


def _facts(parser: KubectlJsonParser | KubectlTextParser, name: str) -> list[Fact]:
    return list(parser.parse(sample_text(name), name).facts)


def _values(facts: list[Fact], key: str) -> list[object]:
    return [f.value for f in facts if f.key == key]


@pytest.mark.parametrize("path", sorted((SAMPLES / "kubectl_json").iterdir()), ids=lambda p: p.name)
def test_every_json_sample_sniffs_high_and_not_as_text(path) -> None:
    head = path.read_text(encoding="utf-8")
    assert safe_sniff(JSON, head) >= 0.9
    assert safe_sniff(TEXT, head) == 0.0


@pytest.mark.parametrize("path", sorted((SAMPLES / "kubectl_text").iterdir()), ids=lambda p: p.name)
def test_every_text_sample_sniffs_high_and_not_as_json(path) -> None:
    head = path.read_text(encoding="utf-8")
    assert safe_sniff(TEXT, head) >= 0.9
    assert safe_sniff(JSON, head) == 0.0


def test_pod_json_error_137_with_crash_loop() -> None:
    facts = _facts(JSON, "kubectl_json/pod_json_k8s_1.1_memtest_error_137_REPRO.json")
    error = next(f for f in facts if f.key == "k8s.reason" and f.value == "Error")
    assert error.attr("state") == "lastState" and error.attr("exit_code") == 137
    assert error.attr("container") == "memtest" and error.attr("pod") == "memtest"
    assert "Error" in error.text and error.lineno is not None
    assert "CrashLoopBackOff" in _values(facts, "k8s.reason")
    assert _values(facts, "k8s.exit_code") == [137]
    assert _values(facts, "k8s.restart_count") == [3]
    assert _values(facts, "k8s.memory_limit_bytes") == [100 * 1024**2]
    assert _values(facts, "k8s.node") == ["node-01"]


def test_pod_list_evicted_for_ephemeral_storage() -> None:
    facts = _facts(JSON, "kubectl_json/pod_list_evicted_ephemeral_storage_REPRO.json")
    assert _values(facts, "k8s.eviction") == ["ephemeral-storage"]
    assert _values(facts, "k8s.disruption") == ["TerminationByKubelet"]
    assert "Evicted" in _values(facts, "k8s.reason")
    assert _values(facts, "k8s.phase") == ["Failed"]
    assert _values(facts, "k8s.memory_request_bytes") == [1024**3]


def test_pod_yaml_oomkilled_with_exit_code_0() -> None:
    facts = _facts(JSON, "kubectl_json/pod_yaml_oomkilled_exit_code_0_phase_succeeded_REPRO.yaml")
    oom = next(f for f in facts if f.value == "OOMKilled")
    assert oom.attr("container") == "main" and oom.attr("exit_code") == 0
    assert "Completed" in _values(facts, "k8s.reason")  # the init container
    assert _values(facts, "k8s.phase") == ["Succeeded"]
    assert _values(facts, "k8s.memory_limit_bytes") == [4 * 1024**3]


def test_events_json() -> None:
    facts = _facts(JSON, "kubectl_json/events_json_npd_oomkilling_REPRO.json")
    events = [f for f in facts if f.key == "k8s.event"]
    assert [e.value for e in events] == ["OOMKilling", "BackOff"]
    assert events[0].attr("object") == "Node/node-03" and events[0].attr("type") == "Warning"
    assert events[1].attr("count") == 6


def test_pytorchjob_names_the_failed_replica() -> None:
    facts = _facts(JSON, "kubectl_json/pytorchjob_worker_failed_master_running_REPRO.yaml")
    condition = next(f for f in facts if f.key == "k8s.job_condition")
    assert condition.value == "Failed" and condition.attr("kind") == "PyTorchJob"
    failed = [f for f in facts if f.key == "k8s.replica_failed"]
    assert [(f.value, f.attr("failed"), f.attr("first")) for f in failed] == [("Worker", 1, True)]
    # cited where the job's record says it failed first, with the reason; the replica as the
    # pods' labels write it, to join them
    (worker,) = failed
    assert worker.lineno == 53 and "1 Worker replica(s) failed" in worker.text
    assert (worker.attr("replica"), worker.attr("reason")) == ("worker", "JobFailed")
    assert condition.lineno == 53


def test_describe_evicted_for_memory() -> None:
    facts = _facts(TEXT, "kubectl_text/describe_pod_evicted_memory_preemptible_node_REPRO.txt")
    assert _values(facts, "k8s.eviction") == ["memory"]
    assert _values(facts, "k8s.reason") == ["Evicted"]
    assert _values(facts, "k8s.memory_limit_bytes") == [10 * 10**9]
    assert _values(facts, "k8s.memory_request_bytes") == [7 * 10**9]
    evicted = next(f for f in facts if f.key == "k8s.event" and f.value == "Evicted")
    assert evicted.attr("source") == "kubelet, gke-general-preemptible-pool-0000"


def test_describe_last_state_oomkilled() -> None:
    facts = _facts(TEXT, "kubectl_text/describe_pod_last_state_oomkilled_restarts_REPRO.txt")
    oom = next(f for f in facts if f.key == "k8s.reason")
    assert (oom.value, oom.attr("state"), oom.attr("container")) == (
        "OOMKilled",
        "lastState",
        "api",
    )
    assert _values(facts, "k8s.exit_code") == [137]
    assert _values(facts, "k8s.restart_count") == [4]
    assert _values(facts, "k8s.node") == ["node-04"]
    backoff = next(f for f in facts if f.key == "k8s.event" and f.value == "BackOff")
    assert backoff.attr("count") == 9


def test_get_events_table() -> None:
    facts = _facts(TEXT, "kubectl_text/get_events_failed_scheduling_evicted_REPRO.txt")
    reasons = _values(facts, "k8s.event")
    assert reasons == ["Scheduled", "Started", "Evicted", "Killing", "FailedScheduling"]
    assert _values(facts, "k8s.eviction") == ["memory"]
    evicted = next(f for f in facts if f.key == "k8s.eviction")
    assert evicted.attr("pod") == "trainer-0"


def test_events_block_alone() -> None:
    facts = _facts(TEXT, "kubectl_text/describe_pod_events_evicted_ephemeral_storage_REPRO.txt")
    assert _values(facts, "k8s.eviction") == ["ephemeral-storage"]


@pytest.mark.parametrize(
    ("quantity", "expected"),
    [
        ("64Gi", 64 << 30),
        ("7G", 7 * 10**9),
        ("128974848", 128974848),
        ("129e6", 129 * 10**6),
        ("1.5Gi", 3 << 29),
        ("lots", None),
        ("", None),
        ("9" * 50, None),
        ("1e999", None),
    ],
)
def test_quantities(quantity: str, expected: int | None) -> None:
    assert quantity_bytes(quantity) == expected


def test_eviction_resources() -> None:
    assert eviction_resource("The node was low on resource: memory.") == "memory"
    assert eviction_resource("The node had condition: [DiskPressure].") == "DiskPressure"
    assert eviction_resource("Pod ephemeral local storage usage exceeds") == "ephemeral-storage"
    assert eviction_resource("Preempted by a higher priority pod") is None


@pytest.mark.parametrize("parser", [JSON, TEXT], ids=lambda p: p.kind.value)
def test_truncated_and_garbage_give_fewer_facts_never_an_error(parser) -> None:
    for name in sorted((SAMPLES / parser.kind.value).iterdir()):
        text = name.read_text(encoding="utf-8")
        whole = parser.parse(text, "x").facts
        cut = parser.parse(text[: len(text) // 2], "x").facts
        assert len(cut) <= len(whole)
    for garbage in ("", "{", "apiVersion: v1\nkind: Pod\nstatus: [", "\x00\xff" * 100, "Name:"):
        assert isinstance(parser.parse(garbage, "x").facts, tuple)


def _blockers(facts: list[Fact]) -> list[tuple[object, ...]]:
    return [
        (f.value, f.attr("pod"), f.attr("kind"), f.attr("nodes"), f.attr("total"))
        for f in facts
        if f.key == "k8s.unschedulable"
    ]


def test_get_events_names_what_kept_a_pod_unscheduled() -> None:
    """trainer-1 was never placed (trainer-0 was: its Scheduled event); each reason of the
    scheduler's message is a fact with the nodes it ruled out."""
    facts = _facts(TEXT, "kubectl_text/get_events_failed_scheduling_evicted_REPRO.txt")
    assert _blockers(facts) == [
        ("Insufficient nvidia.com/gpu", "trainer-1", "resource", 3, 8),
        (
            "had untolerated taint {node.kubernetes.io/memory-pressure: }",
            "trainer-1",
            "taint",
            5,
            8,
        ),
    ]
    first = next(f for f in facts if f.key == "k8s.unschedulable")
    assert first.lineno == 6 and "FailedScheduling" in first.text


def test_describe_of_a_pending_pod() -> None:
    facts = list(TEXT.parse(PENDING_DESCRIBE, "describe.txt").facts)
    assert [(value, kind, nodes) for value, _, kind, nodes, _ in _blockers(facts)] == [
        ("Insufficient nvidia.com/gpu", "resource", 4),
        ("didn't match Pod's node affinity/selector", "affinity", 6),
        ("had untolerated taint {node.kubernetes.io/unreachable: }", "taint", 2),
    ]
    # the same pod once placed on a node: the earlier FailedScheduling is history
    placed = PENDING_DESCRIBE.replace("Node:             <none>", "Node:  gpu-07/10.0.0.7")
    assert _blockers(list(TEXT.parse(placed, "describe.txt").facts)) == []


def test_pod_json_pending_unschedulable() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "trainer-1"},
        "spec": {"containers": [{"name": "trainer"}]},
        "status": {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/3 nodes are available: 1 node(s) had taint "
                    "{node-role.kubernetes.io/master: }, that the pod didn't tolerate, "
                    "2 Insufficient nvidia.com/gpu.",
                }
            ],
        },
    }
    text = json.dumps(pod, indent=4)
    facts = list(JSON.parse(text, "pod.json").facts)
    assert _blockers(facts) == [
        (
            "had taint {node-role.kubernetes.io/master: }, that the pod didn't tolerate",
            "trainer-1",
            "taint",
            1,
            3,
        ),
        ("Insufficient nvidia.com/gpu", "trainer-1", "resource", 2, 3),
    ]
    assert "0/3 nodes are available" in next(f.text for f in facts if f.key == "k8s.unschedulable")


def test_pod_facts_carry_their_replica_from_the_labels() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "train-worker-1",
            "labels": {
                "training.kubeflow.org/replica-type": "worker",
                "training.kubeflow.org/replica-index": "1",
            },
        },
        "spec": {"nodeName": "node-02", "containers": [{"name": "pytorch"}]},
        "status": {
            "phase": "Failed",
            "containerStatuses": [
                {
                    "name": "pytorch",
                    "restartCount": 0,
                    "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
                }
            ],
        },
    }
    facts = list(JSON.parse(json.dumps(pod, indent=2), "pods.json").facts)
    replicas = {(f.key, f.attr("replica"), f.attr("replica_index")) for f in facts}
    assert {("k8s.reason", "worker", "1"), ("k8s.exit_code", "worker", "1")} <= replicas
    # a JobSet's pod names its replicated job
    pod["metadata"] = {
        "name": "train-workers-0-0",
        "labels": {
            "jobset.sigs.k8s.io/replicatedjob-name": "Workers",
            "jobset.sigs.k8s.io/job-index": "0",
        },
    }
    facts = list(JSON.parse(json.dumps(pod, indent=2), "pods.json").facts)
    assert next(f for f in facts if f.key == "k8s.reason").attr("replica") == "workers"


def test_describe_reads_the_replica_label_block() -> None:
    text = sample_text("kubectl_text/describe_pod_evicted_memory_preemptible_node_REPRO.txt")
    plain = list(TEXT.parse(text, "d.txt").facts)
    assert all(f.attr("replica") is None for f in plain)
    labelled = text.replace(
        "pod-template-hash=3593767279",
        "pod-template-hash=3593767279\n"
        "                    training.kubeflow.org/replica-type=worker\n"
        "                    training.kubeflow.org/replica-index=2",
    )
    facts = list(TEXT.parse(labelled, "d.txt").facts)
    evicted = next(f for f in facts if f.key == "k8s.eviction")
    assert (evicted.value, evicted.attr("replica"), evicted.attr("replica_index")) == (
        "memory",
        "worker",
        "2",
    )
    # the labels' lines are read as labels, not as other rows: the same facts otherwise
    assert [(f.key, f.value) for f in facts] == [(f.key, f.value) for f in plain]


_START_ERROR = """Name:             trainer-worker-0
Status:           Failed
Containers:
  pytorch:
    State:          Terminated
      Reason:       StartError
      Message:      failed to create containerd task: failed to create shim task: OCI runtime \
create failed: runc create failed: unable to start container process: error during container \
init: error running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected \
mode as 'legacy'
nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown
      Exit Code:    128
"""


def test_a_pod_message_quoting_the_runtime_error_is_read_by_the_log_rules(tmp_path: Path) -> None:
    # the container never started: the runtime's own words in the state's message name the cause
    report = report_of(tmp_path / "pod", {"describe.txt": _START_ERROR})
    assert report.inputs[0].kind is InputKind.KUBECTL_TEXT
    assert str(report.verdict) == "driver"
    as_json = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "trainer-worker-0"},
        "status": {
            "phase": "Failed",
            "containerStatuses": [
                {
                    "name": "pytorch",
                    "state": {
                        "terminated": {
                            "reason": "StartError",
                            "exitCode": 128,
                            "message": _START_ERROR.split("Message:", 1)[1].split("Exit Code")[0],
                        }
                    },
                }
            ],
        },
    }
    report = report_of(tmp_path / "json", {"pod.json": json.dumps(as_json, indent=2)})
    assert report.inputs[0].kind is InputKind.KUBECTL_JSON
    assert str(report.verdict) == "driver"


def test_docker_inspects_state_error_is_read_by_the_log_rules(tmp_path: Path) -> None:
    # a container that never started: docker keeps the runtime's error in State.Error
    message = _START_ERROR.split("Message:", 1)[1].split("Exit Code")[0].strip()
    inspect = [
        {
            "Id": "3f1c0d2e9b7a",
            "Name": "/trainer",
            "State": {
                "Status": "created",
                "Running": False,
                "OOMKilled": False,
                "ExitCode": 128,
                "Error": message,
            },
            "HostConfig": {"ShmSize": 17179869184, "IpcMode": "private"},
        }
    ]
    report = report_of(tmp_path / "docker", {"docker_inspect.json": json.dumps(inspect, indent=4)})
    assert report.inputs[0].kind is InputKind.DOCKER_INSPECT
    assert str(report.verdict) == "driver"


def test_a_real_event_quoting_the_kernels_oom_kill_is_read_by_the_log_rules() -> None:
    # node-problem-detector's OOMKilling event (a shared sample) carries the kernel's own line
    path = SAMPLES / "kubectl_json" / "events_json_npd_oomkilling_REPRO.json"
    (analysis,) = analyze_inputs([str(path)])
    assert analysis.status.kind is InputKind.KUBECTL_JSON
    assert "host-oom-memcg-killed-process" in {hit.rule_id for hit in analysis.hits}
