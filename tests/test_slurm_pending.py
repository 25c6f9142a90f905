"""A job `squeue` shows pending never started: its ending is `stopped`, citing the row and the
reason Slurm gives, unless the reason records a failure or a log shows the run going on
(`parsers.launcher.squeue`, `decide.never_started.never_allocated`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.model import Ending, Verdict
from crashlens.parsers.launcher.squeue import failed_before, pending_job
from mechanism_helpers import report_of

# squeue(1)'s default table (JOBID PARTITION NAME USER ST TIME NODES NODELIST(REASON)), rows
# shaped as its EXAMPLES section prints them, with the documented reason codes
QUEUE = """\
             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
             65646     batch     chem     mike  R      24:19      2 adev[7-8]
             65648     batch     math     phil PD       0:00      6 (Resources)
"""

ROWS = [
    ("             65648     batch     math     phil PD       0:00      6 (Resources)", "65648"),
    ("  4242_[1-8%2]       gpu  sweep   user PD       0:00      1 (Priority)", "4242_[1-8%2]"),
    (
        "  731      a100 train.sh   user PD       0:00      2 "
        "(ReqNodeNotAvail, UnavailableNodes:gpu[01-02])",
        "731",
    ),
    (
        "1020391 gpu2080ti pythonjo    USER PD       0:00      1 (Nodes required for job are "
        "DOWN, DRAINED or reserved for jobs in higher priority partitions)",
        "1020391",
    ),
]


@pytest.mark.parametrize(("row", "job"), ROWS)
def test_a_pending_row_gives_its_job_and_reason(row: str, job: str) -> None:
    found = pending_job(row)
    assert found is not None and found.job == job
    assert not found.reason.startswith("(") and not found.reason.endswith(")")


@pytest.mark.parametrize(
    "line",
    [
        "             65646     batch     chem     mike  R      24:19      2 adev[7-8]",
        "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)",
        "  88     batch     math     phil CG       0:03      1 adev9",
        "loss PD 0:00 at step 3 (warmup)",
    ],
)
def test_other_lines_are_no_pending_job(line: str) -> None:
    assert pending_job(line) is None


def test_reasons_that_record_a_failure() -> None:
    assert failed_before("launch failed requeued held")
    assert failed_before("DependencyNeverSatisfied")
    assert not failed_before("Resources")
    assert not failed_before("JobHeldUser")


def test_a_pending_job_never_started(tmp_path: Path) -> None:
    report = report_of(tmp_path, {"squeue.txt": QUEUE})
    assessed = report.assessment
    assert report.verdict is Verdict.NONE and assessed is not None
    assert assessed.ending is Ending.STOPPED
    assert assessed.sign is not None and assessed.sign.line == 3
    assert assessed.reason.startswith("The job never started")
    assert "job 65648" in assessed.reason and "(Resources)" in assessed.reason
    assert "sinfo -p batch" in assessed.reason


def test_the_advice_follows_the_reason(tmp_path: Path) -> None:
    held = QUEUE.replace("(Resources)", "(JobHeldUser)")
    report = report_of(tmp_path, {"squeue.txt": held})
    assert report.assessment is not None
    assert "scontrol release 65648" in report.assessment.reason


def test_a_launch_that_failed_is_no_job_that_never_started(tmp_path: Path) -> None:
    failed = QUEUE.replace("(Resources)", "(launch failed requeued held)")
    report = report_of(tmp_path, {"squeue.txt": failed})
    assert report.assessment is not None and report.assessment.ending is Ending.UNKNOWN
    assert report.verdict is not Verdict.NONE


def test_a_log_of_the_run_going_on_is_no_job_that_never_started(tmp_path: Path) -> None:
    training = "epoch 1 step 100 loss: 2.31\nepoch 1 step 200 loss: 2.12\n"
    report = report_of(tmp_path, {"squeue.txt": QUEUE, "train.log": training})
    assert report.assessment is not None and report.assessment.ending is not Ending.STOPPED


def test_a_failure_beside_a_pending_job_still_decides(tmp_path: Path) -> None:
    dying = (
        "Traceback (most recent call last):\n"
        '  File "/app/train.py", line 12, in <module>\n'
        "    model.cuda()\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    report = report_of(tmp_path, {"squeue.txt": QUEUE, "train.log": dying})
    assert report.assessment is not None and report.assessment.ending is not Ending.STOPPED
    assert report.verdict is not Verdict.NONE
