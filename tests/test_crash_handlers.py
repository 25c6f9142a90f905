"""Crash handlers' reports, and crashes in a process's exit path.

abseil's failure signal handler (TensorFlow, JAX/XLA, Ray, gRPC) prints `*** SIGSEGV received
at time=<t> on cpu <n> ***` and glog's `*** SIGSEGV (@0x0) received by PID <pid> (TID ...) from
PID 0; stack trace: ***`, each above the crashed stack: a process died of that signal. When
that stack (or a c10 or gdb stack under a crash line) runs through the exit path (libc's exit
handlers, the interpreter's finalization, Ray's worker shutdown), the crash came after the
program's work had returned: teardown, unless a failure is in view.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.mechanism_helpers import ending_of as _ending
from tests.mechanism_helpers import log_report as _report

from crashlens.model import Ending, Verdict

TRAINING = "".join(f"epoch 3 step {step} loss 0.41{step % 10}\n" for step in range(100, 110))
ABSEIL = (
    "*** SIGSEGV received at time=1717000000 on cpu 12 ***\n"
    "PC: @     0x7f3a2b1c0d10  (unknown)  xla::PjRtStreamExecutorClient::Compile()\n"
    "    @     0x7f3a2c9e4420       1824  (unknown)\n"
    "    @     0x7f3a2b1b9a55        912  xla::PjRtStreamExecutorClient::CompileAndLoad()\n"
)
GLOG = (
    '*** Aborted at 1717000000 (unix time) try "date -d @1717000000" if you are using GNU '
    "date ***\n"
    "*** SIGSEGV (@0x0) received by PID 4242 (TID 0x7f0a12345700) from PID 0; stack trace: ***\n"
    "    @     0x7f0a1b2c3d4e  caffe2::Blob::Reset()\n"
)
EXIT_PATH_FRAMES = (
    "    @     0x7f0a1b2c3e5f  std::_Sp_counted_base<>::_M_release()\n"
    "    @     0x7f0a1c4d5e6f  __run_exit_handlers\n"
    "    @     0x7f0a1c4d5f70  exit\n"
    "    @     0x7f0a1c4b0e81  __libc_start_main\n"
)
FINISHED = "Training time 3:12:45\n"


@pytest.mark.parametrize("crash", [ABSEIL, GLOG], ids=["abseil", "glog"])
def test_a_crash_handlers_report_is_a_death(tmp_path: Path, crash: str) -> None:
    report = _report(tmp_path, TRAINING + crash)
    assert _ending(report) is Ending.DIED
    assert report.verdict is not Verdict.NONE
    reason = report.assessment.reason if report.assessment else ""
    assert "SIGSEGV" in reason and "crash handler" in reason


def test_a_crash_in_the_exit_path_after_the_finish_is_teardown(tmp_path: Path) -> None:
    report = _report(tmp_path, TRAINING + FINISHED + GLOG + EXIT_PATH_FRAMES)
    assert _ending(report) is Ending.COMPLETED
    assert report.verdict is Verdict.NONE


def test_a_crash_in_the_exit_path_alone_is_teardown(tmp_path: Path) -> None:
    report = _report(tmp_path, TRAINING + GLOG + EXIT_PATH_FRAMES)
    assert _ending(report) is Ending.COMPLETED
    reason = report.assessment.reason if report.assessment else ""
    assert "__run_exit_handlers" in reason


def test_a_crash_elsewhere_is_still_a_death(tmp_path: Path) -> None:
    frames = EXIT_PATH_FRAMES.replace("__run_exit_handlers", "at::native::conv2d")
    assert _ending(_report(tmp_path, TRAINING + GLOG + frames)) is Ending.DIED


def test_a_failure_in_view_keeps_its_teardown_crash_a_death(tmp_path: Path) -> None:
    failure = (
        "Traceback (most recent call last):\n"
        '  File "/srv/train.py", line 88, in <module>\n'
        "    loss.backward()\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    report = _report(tmp_path, TRAINING + failure + GLOG + EXIT_PATH_FRAMES)
    assert _ending(report) is Ending.DIED
    assert report.verdict is not Verdict.NONE
