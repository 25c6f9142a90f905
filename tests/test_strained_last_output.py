"""A log that stops at an out-of-memory event the program says it goes on from shows neither a
run going on nor an ending (`decide/last_output.py`, `strained`); the same line with progress
after it is a batch the run skipped."""

from __future__ import annotations

from pathlib import Path

from crashlens.decide.last_output import read_last_output
from crashlens.model import Ending
from mechanism_helpers import ending_of, log_report

_FAIRSEQ = (
    "2021-03-02 10:11:12 | WARNING | fairseq.trainer | attempting to recover from OOM in "
    "forward/backward pass"
)
_TF = (
    "2021-06-01 12:00:01.123456: W tensorflow/core/common_runtime/bfc_allocator.cc:271] "
    "Allocator (GPU_0_bfc) ran out of memory trying to allocate 3.80GiB with freed_by_count=0."
)


def test_the_recovery_warnings_read_as_strained() -> None:
    for line in (_FAIRSEQ, _TF):
        wording = read_last_output(line, line)
        assert wording is not None and wording.kind == "strained"


def test_a_log_that_stops_at_the_recovery_is_no_healthy_run(tmp_path: Path) -> None:
    text = f"2021-03-02 10:10:00 | INFO | fairseq.trainer | begin training epoch 1\n{_FAIRSEQ}\n"
    report = log_report(tmp_path / "stops", text)
    assert ending_of(report) is Ending.UNKNOWN
    assert str(report.verdict) != "none"
    assert report.causes and report.causes[0].category.value == "gpu_oom"


def test_progress_after_the_recovery_is_a_run_going_on(tmp_path: Path) -> None:
    text = (
        "2021-03-02 10:10:00 | INFO | fairseq.trainer | begin training epoch 1\n"
        f"{_FAIRSEQ}\n"
        "2021-03-02 10:12:00 | INFO | train_inner | epoch 001:    200 / 1000 loss=7.1, "
        "ppl=137.2, wps=9000, lr=0.0005\n"
        "2021-03-02 10:14:00 | INFO | train_inner | epoch 001:    400 / 1000 loss=6.4, "
        "ppl=84.4, wps=9100, lr=0.0005\n"
    )
    report = log_report(tmp_path / "goes-on", text)
    assert str(report.verdict) == "none"
