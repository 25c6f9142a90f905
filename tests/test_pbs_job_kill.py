"""PBS's note of the limit it killed a job for: a wall-time or CPU-time limit is the scheduler's
stop (the run is not a failure, like Slurm's TIMEOUT); a memory limit is a death of host memory.

PBS Pro and Torque write `=>> PBS: job killed: <resource> <used> exceeded limit <limit>` into
the job's error file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.mechanism_helpers import ending_of as _ending
from tests.mechanism_helpers import log_report as _report

from crashlens.model import Ending, Verdict

TRAINING = "".join(f"epoch 2 step {step} loss 0.52{step % 10}\n" for step in range(400, 410))


@pytest.mark.parametrize(
    "kill",
    [
        "=>> PBS: job killed: walltime 86431 exceeded limit 86400\n",
        "=>> PBS: job killed: cput job total 7300 secs exceeded limit 7200\n",
    ],
    ids=["walltime", "cput"],
)
def test_a_time_limit_kill_is_a_stop(tmp_path: Path, kill: str) -> None:
    report = _report(tmp_path, TRAINING + kill + "Terminated\n")
    assert _ending(report) is Ending.STOPPED
    assert report.verdict is Verdict.NONE


@pytest.mark.parametrize(
    "kill",
    [
        "=>> PBS: job killed: mem 33554432kb exceeded limit 16777216kb\n",
        "=>> PBS: job killed: mem job total 4323312 kb exceeded limit 3145728 kb\n",
    ],
    ids=["pbs-pro", "torque"],
)
def test_a_memory_limit_kill_is_host_memory(tmp_path: Path, kill: str) -> None:
    report = _report(tmp_path, TRAINING + kill)
    assert _ending(report) is Ending.DIED
    assert report.verdict is Verdict.HOST_OOM


def test_a_failure_before_the_wall_time_kill_is_the_cause(tmp_path: Path) -> None:
    failure = (
        "Traceback (most recent call last):\n"
        '  File "/srv/train.py", line 61, in <module>\n'
        "    torch.save(state, path)\n"
        "OSError: [Errno 28] No space left on device\n"
    )
    report = _report(
        tmp_path, TRAINING + failure + "=>> PBS: job killed: walltime 86431 exceeded limit 86400\n"
    )
    assert _ending(report) is Ending.DIED
    assert report.verdict is Verdict.FILESYSTEM
