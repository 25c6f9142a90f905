"""How a platform's record of the job (a pod from kubectl, a Slurm state from sacct or
scontrol) decides whether the run failed, was stopped, or finished."""

from __future__ import annotations

from pathlib import Path

from crashlens.decide.failure import assess
from crashlens.match.rules import shipped_rules
from crashlens.model import Assessment, Ending, Verdict
from crashlens.pipeline import analyze_inputs, build_report

from conftest import sample_text

LOG_FINISHED = (
    "{'train_runtime': 5120.4, 'train_samples_per_second': 9.1, 'epoch': 3.0}\n"
    "Saving model checkpoint to /output\n"
)
LOG_SIGTERM = (
    "W1118 22:47:52.101000 140 torch/distributed/elastic/agent/server/api.py:704] "
    "Received Signals.SIGTERM death signal, shutting down workers\n"
)


def _pod_yaml(reason: str, disruption: str | None) -> str:
    condition = (
        f'  - type: DisruptionTarget\n    status: "True"\n    reason: {disruption}\n'
        if disruption
        else ""
    )
    return (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: trainer-0\nspec:\n  nodeName: node-01\n"
        f'status:\n  conditions:\n{condition}  - type: Ready\n    status: "False"\n'
        "  containerStatuses:\n  - name: trainer\n    restartCount: 0\n    state:\n"
        f"      terminated:\n        exitCode: 137\n        reason: {reason}\n  phase: Failed\n"
    )


def _run(tmp_path: Path, files: dict[str, str]) -> tuple[Assessment, Verdict]:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    rules = shipped_rules()
    analyses = analyze_inputs([str(tmp_path)], rules=rules)
    return assess(analyses), build_report(analyses, rules).verdict


def test_a_pod_preempted_by_the_scheduler_is_a_stop(tmp_path: Path) -> None:
    files = {"pod.log": LOG_SIGTERM, "pod.yaml": _pod_yaml("Error", "PreemptionByScheduler")}
    assessment, verdict = _run(tmp_path, files)
    assert assessment.ending is Ending.STOPPED
    assert verdict is Verdict.NONE


def test_the_same_kill_by_the_kubelet_is_a_failure(tmp_path: Path) -> None:
    files = {"pod.log": LOG_SIGTERM, "pod.yaml": _pod_yaml("Error", "TerminationByKubelet")}
    assessment, _ = _run(tmp_path, files)
    assert assessment.ending is Ending.DIED


def test_oomkilled_after_the_log_finished_is_a_host_oom(tmp_path: Path) -> None:
    files = {"pod.log": LOG_FINISHED, "pod.yaml": _pod_yaml("OOMKilled", None)}
    assessment, verdict = _run(tmp_path, files)
    assert assessment.ending is Ending.DIED
    assert verdict is Verdict.HOST_OOM


def test_a_completed_container_keeps_the_finish(tmp_path: Path) -> None:
    pod = _pod_yaml("Completed", None).replace("exitCode: 137", "exitCode: 0")
    assessment, verdict = _run(tmp_path, {"pod.log": LOG_FINISHED, "pod.yaml": pod})
    assert assessment.ending is Ending.COMPLETED
    assert verdict is Verdict.NONE


def test_sacct_out_of_memory_is_a_host_oom(tmp_path: Path) -> None:
    oom = sample_text("slurm_job/sacct_fixed_width_out_of_memory_0_125_REPRO.txt")
    assessment, verdict = _run(tmp_path, {"sacct.txt": oom})
    assert assessment.ending is Ending.DIED and verdict is Verdict.HOST_OOM


def test_sacct_timeout_is_a_stop(tmp_path: Path) -> None:
    timeout = "JobID|State|ExitCode\n77|TIMEOUT|0:0\n77.batch|CANCELLED|0:15\n"
    assessment, verdict = _run(tmp_path, {"sacct.txt": timeout})
    assert assessment.ending is Ending.STOPPED and verdict is Verdict.NONE


def test_a_pytorchjob_failure_is_a_death(tmp_path: Path) -> None:
    job = sample_text("kubectl_json/pytorchjob_worker_failed_master_running_REPRO.yaml")
    assessment, _ = _run(tmp_path, {"pytorchjob.yaml": job})
    assert assessment.ending is Ending.DIED
    assert assessment.sign is not None and "PyTorchJob" in (assessment.sign.note or "")
