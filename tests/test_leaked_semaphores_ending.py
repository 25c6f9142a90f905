"""Multiprocessing's leaked-semaphore report as a log's last output: its processes had ended,
how is not shown (a kill leaves the same report), so it is never a healthy run by itself; a
finish or a death before it still decides. Lines of public reports other than the case that
prompted it."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.mechanism_helpers import ending_of as _ending
from tests.mechanism_helpers import log_report as _report

from crashlens.model import Ending, Verdict

# Python 3.10's report as MPI-Dortmund/tomotwin-cryoet#122 printed it after a SIGKILL (and
# SkyworkAI/SkyReels-V1#43 after a finish); Python 3.6's, whose tracker shows the call's last
# source line (`len(cache))`), as under the spawn SIGKILL report of test_batch_h_mechanisms.
LEAK_310 = (
    "/opt/conda/lib/python3.10/multiprocessing/resource_tracker.py:224: UserWarning: "
    "resource_tracker: There appear to be 1 leaked semaphore objects to clean up at shutdown\n"
    "  warnings.warn('resource_tracker: There appear to be %d '\n"
)
LEAK_36 = (
    "/usr/lib/python3.6/multiprocessing/semaphore_tracker.py:143: UserWarning: "
    "semaphore_tracker: There appear to be 4 leaked semaphores to clean up at shutdown\n"
    "  len(cache))\n"
)


@pytest.mark.parametrize("leak", [LEAK_310, LEAK_36])
def test_a_leak_report_alone_is_an_ending_not_shown(tmp_path: Path, leak: str) -> None:
    report = _report(tmp_path, leak)
    assert _ending(report) is Ending.UNKNOWN
    assert report.verdict is not Verdict.NONE
    assert report.assessment is not None and "resource tracker" in report.assessment.reason


@pytest.mark.parametrize("leak", [LEAK_310, LEAK_36])
def test_a_leak_report_after_progress_is_still_no_finish(tmp_path: Path, leak: str) -> None:
    text = "epoch 1 step 100 loss 2.31\nepoch 1 step 200 loss 1.92\n" + leak
    report = _report(tmp_path, text)
    assert _ending(report) is Ending.UNKNOWN
    assert report.verdict is not Verdict.NONE


def test_a_finish_line_before_the_leak_report_is_a_finish(tmp_path: Path) -> None:
    # HF Trainer's completion line, then the tracker's report at interpreter exit
    finish = (
        "\n\nTraining completed. Do not forget to share your model on huggingface.co/models =)\n"
    )
    report = _report(tmp_path, "{'loss': 0.41, 'epoch': 3.0}" + finish + LEAK_310)
    assert _ending(report) is Ending.COMPLETED
    assert report.verdict is Verdict.NONE


def test_a_kill_before_the_leak_report_is_a_death(tmp_path: Path) -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "main.py", line 231, in <module>\n'
        "    mp.spawn(train, nprocs=2, join=True)\n"
        "torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with "
        "signal SIGKILL\n" + LEAK_36
    )
    report = _report(tmp_path, text)
    assert _ending(report) is Ending.DIED
