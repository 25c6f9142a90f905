"""A stop of a run that never got past waiting for its peers is a hang, not `none`
(`decide/peer_wait.py`); a stop after training progress, or with no such wait, stays a stop."""

from __future__ import annotations

from pathlib import Path

from crashlens.match.rules import shipped_rules
from crashlens.model import Ending, Report, Verdict
from crashlens.pipeline import analyze_inputs, build_report

BARRIER = (
    "[torch.distributed.distributed_c10d][INFO] - Waiting in store based barrier to initialize "
    "process group for rank: 0, key: store_based_barrier_key:1 (world_size=4, worker_count=2, "
    "timeout=0:30:00)\n"
)
CTRL_C = (
    "^CWARNING:torch.distributed.elastic.agent.server.api:Received 2 death signal, "
    "shutting down workers\n"
    "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 3301 closing signal "
    "SIGINT\n"
)


def _report(folder: Path, text: str) -> Report:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "launcher.log").write_text(text, encoding="utf-8")
    rules = shipped_rules()
    return build_report(analyze_inputs([str(folder)], rules=rules), rules, None)


def test_a_ctrl_c_while_waiting_for_peers_is_no_none(tmp_path: Path) -> None:
    report = _report(tmp_path, BARRIER * 3 + CTRL_C)
    assert report.assessment is not None and report.assessment.ending is Ending.UNKNOWN
    assert "peers" in report.assessment.reason
    assert report.verdict is not Verdict.NONE


def test_a_ctrl_c_after_training_is_a_stop(tmp_path: Path) -> None:
    text = BARRIER + "epoch 1 step 100 loss 0.91\nepoch 1 step 200 loss 0.88\n" + CTRL_C
    report = _report(tmp_path, text)
    assert report.assessment is not None and report.assessment.ending is Ending.STOPPED
    assert report.verdict is Verdict.NONE


def test_a_ctrl_c_with_no_wait_in_view_is_a_stop(tmp_path: Path) -> None:
    report = _report(tmp_path, "Loading dataset shards: 3 of 40\n" + CTRL_C)
    assert report.assessment is not None and report.assessment.ending is Ending.STOPPED
