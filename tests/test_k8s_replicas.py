"""The replica a training job records as failed first is where to look: the report cites
the job's record, and how that replica's pod died decides what the other ranks' NCCL errors
mean."""

from __future__ import annotations

import json
from pathlib import Path

from crashlens.model import Verdict
from mechanism_helpers import report_of

from conftest import sample_text

RULE = "host-oom-k8s-first-replica-killed-explains-peers"
# The Master's log: its peer (a Worker) is gone. Alone, a network symptom.
MASTER_LOG = (
    "[rank0]:[E1118 22:47:50.101000 140 ProcessGroupNCCL.cpp:1595] [PG 0 Rank 0] NCCL error: "
    "remote process exited or there was a network error, NCCL version 2.21.5\n"
    "[rank0]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/"
    "c10d/ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, "
    "NCCL version 2.21.5\n"
)


def _pod(name: str, replica: str, reason: str, code: int) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {
                "training.kubeflow.org/job-name": "pytorchjob",
                "training.kubeflow.org/replica-type": replica,
                "training.kubeflow.org/replica-index": "0",
            },
        },
        "spec": {"nodeName": "node-01", "containers": [{"name": "pytorch"}]},
        "status": {
            "phase": "Failed",
            "containerStatuses": [
                {
                    "name": "pytorch",
                    "restartCount": 0,
                    "state": {"terminated": {"exitCode": code, "reason": reason}},
                }
            ],
        },
    }


def _pods(worker_reason: str, worker_code: int) -> str:
    items = [
        _pod("pytorchjob-master-0", "master", "Error", 1),
        _pod("pytorchjob-worker-0", "worker", worker_reason, worker_code),
    ]
    return json.dumps({"apiVersion": "v1", "items": items, "kind": "List"}, indent=4)


def _job() -> str:
    return sample_text("kubectl_json/pytorchjob_worker_failed_master_running_REPRO.yaml")


def test_the_job_record_cites_the_replica_that_failed_first(tmp_path: Path) -> None:
    report = report_of(tmp_path, {"pytorchjob.yaml": _job()})
    assert report.first_failure is not None
    assert "1 Worker replica(s) failed" in report.first_failure.text


def test_a_sigkilled_first_replica_explains_the_peers_nccl_errors(tmp_path: Path) -> None:
    pods = _pods("Error", 137)
    without = report_of(tmp_path / "without", {"pods.json": pods, "master-0.log": MASTER_LOG})
    assert without.verdict is not Verdict.HOST_OOM
    report = report_of(
        tmp_path / "with",
        {"pytorchjob.yaml": _job(), "pods.json": pods, "master-0.log": MASTER_LOG},
    )
    assert report.verdict is Verdict.HOST_OOM
    cited = {item.rule for item in report.causes[0].evidence}
    assert RULE in cited
    (note,) = [n for n in report.notes if RULE in n]
    assert "1 Worker replica(s) failed" in note and '"exitCode": 137' in note


def test_the_same_errors_when_another_replica_was_killed_stay_network(tmp_path: Path) -> None:
    """The Master's pod, not the Worker that failed first, carries the 137: no explanation."""
    items = [
        _pod("pytorchjob-master-0", "master", "Error", 137),
        _pod("pytorchjob-worker-0", "worker", "Error", 1),
    ]
    pods = json.dumps({"apiVersion": "v1", "items": items, "kind": "List"}, indent=4)
    report = report_of(
        tmp_path, {"pytorchjob.yaml": _job(), "pods.json": pods, "master-0.log": MASTER_LOG}
    )
    assert not [n for n in report.notes if RULE in n]
