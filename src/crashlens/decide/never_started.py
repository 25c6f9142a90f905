"""A job that never started: a pod the scheduler could not place, or a Slurm job still
pending, is no failure of the run.

Kubernetes keeps a pod `Pending` while no node can take it (`FailedScheduling`: too few free
GPUs, a node selector or affinity no node matches, taints it does not tolerate, an unbound
volume). Its containers never ran, so nothing of the run failed, and no category of the
taxonomy is its cause; but the report must not say that "no ending was found" either: the
scheduler's event is the ending, and what to do is to give the pod what it asks for.

Its ending is `stopped`, which the report contract (`docs/report-contract.md`) documents as
covering a job that never started: the run did not fail, something outside it decided; the
reason says the job never started and what to do. Only where no input shows another ending:
a pod placed later did start (the parsers emit `k8s.unschedulable` only for pods the same
input never shows scheduled), and a death or a stop elsewhere decides as usual.

Slurm's counterpart is a job `squeue` shows pending (`PD`, `slurm.pending`: see
`parsers.launcher.squeue`) with a reason that records no failure, where no log shows training
progress: its batch script never ran. A reason that records one (a launch that failed and was
requeued and held) is left to the rest of the decision.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from crashlens.model import Assessment, Ending, Fact
from crashlens.text.clip import shortened

UNSCHEDULABLE = "k8s.unschedulable"
SLURM_PENDING = "slurm.pending"
MAX_PODS = 3
"""Pods named in the reason, at most (then a count)."""
MAX_MESSAGE = 200
"""Characters of the scheduler's message quoted in the reason."""

ADVICE = {
    "resource": "give the pod what it asks for (free or add GPUs or memory, or ask for fewer "
    "per pod)",
    "affinity": "fix the pod's node selector or affinity so that some node matches it",
    "taint": "add the tolerations the nodes' taints need, or schedule on untainted nodes",
    "volume": "bind or create the volume (PersistentVolumeClaim) the pod mounts",
}
"""What to do for each kind of blocker (`parsers.kubernetes.common`'s `kind` attr)."""
GENERIC_ADVICE = "see why the scheduler could not place it (`kubectl describe pod`)"


def never_scheduled(facts: Sequence[Fact], started: bool) -> Assessment | None:
    """The ending of a job with a pod the scheduler never placed, or None when there is none.
    `started`: an input tells the run's own story (some rank ran and printed)."""
    pending = [f for f in facts if f.key == UNSCHEDULABLE]
    if not pending:
        return None
    first = min(pending, key=lambda f: (f.path, f.lineno or 0))
    pods = sorted({str(f.attr("pod")) for f in pending if f.attr("pod")})
    named = ", ".join(pods[:MAX_PODS]) + (
        f" and {len(pods) - MAX_PODS} more" if len(pods) > MAX_PODS else ""
    )
    which = f"pod {named}" if len(pods) == 1 else f"pods {named}" if pods else "a pod of the job"
    # the scheduler's verdict on the nodes, without its note on preemption
    message = str(first.attr("message") or first.value).split(" preemption:", 1)[0].strip()
    quoted = shortened(message, MAX_MESSAGE)
    kinds = [str(f.attr("kind")) for f in pending]
    advice = [ADVICE[k] for k in dict.fromkeys(kinds) if k in ADVICE] or [GENERIC_ADVICE]
    todo = "; ".join(advice)
    if started:
        what = (
            f"The scheduler never placed {which} (FailedScheduling: {quoted}): the ranks that "
            "started waited for a peer that never ran, which is no failure of the run"
        )
    else:
        what = (
            f"The job never started: the scheduler never placed {which} (FailedScheduling: "
            f"{quoted}), so nothing ran and nothing of the run failed"
        )
    says = f"the scheduler could not place {which} (FailedScheduling)"
    return Assessment(
        ending=Ending.STOPPED,
        sign=first.cited(says),
        reason=f"{what}. To run it: {todo}, then resubmit.",
    )


SLURM_ADVICE = (
    (
        "Dependency",
        "wait for the jobs it depends on (`squeue --user $USER`), or drop the dependency",
    ),
    (
        "Held",
        "release it (`scontrol release {job}`) if you held it, or ask the admins why they did",
    ),
    (
        "QOS|Assoc|Limit",
        "wait for your running jobs to end, or ask for less: a limit of your account, QOS or "
        "partition holds it (`scontrol show job {job}`)",
    ),
)
"""What to do for a pending reason of each kind (the first match); otherwise
`SLURM_GENERIC_ADVICE`. `{job}` and `{partition}` are filled in."""
SLURM_GENERIC_ADVICE = (
    "wait for nodes to free up, or ask for fewer or other resources (what the partition has "
    "free: `sinfo -p {partition}`; when the job would start: `squeue --start -j {job}`)"
)


def never_allocated(facts: Sequence[Fact]) -> Assessment | None:
    """The ending of a Slurm job that `squeue` shows pending and that never ran, or None (no
    such job, a pending reason that records a failure, or a log showing training progress)."""
    if any(f.key == "log.progress" for f in facts):
        return None
    pending = [f for f in facts if f.key == SLURM_PENDING and f.attr("failed_before") is not True]
    if not pending:
        return None
    first = min(pending, key=lambda f: (f.path, f.lineno or 0))
    reason = str(first.value)
    quoted = shortened(reason, MAX_MESSAGE)
    job, partition = first.attr("job"), first.attr("partition")
    which = f"job {job}" if job else "the job"
    where = f" in partition {partition}" if partition else ""
    advice = next(
        (advice for kinds, advice in SLURM_ADVICE if re.search(kinds, reason)),
        SLURM_GENERIC_ADVICE,
    )
    todo = advice.format(job=job or "<job>", partition=partition or "<partition>")
    return Assessment(
        ending=Ending.STOPPED,
        sign=first.cited(f"Slurm keeps {which} pending ({quoted})"),
        reason=(
            f"The job never started: Slurm keeps {which}{where} pending ({quoted}), so its "
            f"script has not run and nothing of the run failed. To run it: {todo}."
        ),
    )
