"""Judging "the run went on past the alarm" per process (`parsers.launcher.process_ends`,
`decide.unended`): in a log whose every line names its process, a process that raised an
alarm and whose own last lines are an error did not go on, whatever other processes print
after it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.mechanism_helpers import ending_of, log_report

from crashlens.model import Ending, Line, Verdict
from crashlens.parsers.launcher.process_ends import process_ends
from crashlens.pipeline import analyze_inputs

CORPUS = Path(__file__).resolve().parent.parent / "corpus"


def process_end_facts(folder: Path) -> list[tuple[str, int | None, object, str]]:
    return [
        (str(f.value), f.lineno, f.attr("first"), str(f.attr("lines")))
        for analysis in analyze_inputs([str(folder)])
        for f in analysis.facts
        if f.key == "log.process_end"
    ]


def test_real_nccl_trace_of_one_process_among_others() -> None:
    """driver-horovod-nccl-2-4-2-shm-h-cuda-failure-invalid-argument-ib-hang: one rank's
    `NCCL WARN Cuda failure` and its return-code trace (lines 12-16), then two other
    processes' ring set-up lines end the log."""
    folder = CORPUS / "driver-horovod-nccl-2-4-2-shm-h-cuda-failure-invalid-argument-ib-hang"
    found = process_end_facts(folder / "logs")
    assert [(kind, last, first) for kind, last, first, _ in found] == [("unwinding", 16, 12)]
    own = found[0][3].split(",")
    assert {"12", "16"} <= set(own) and "17" not in own and "18" not in own


NCCL_TRACE = (
    "node-a:100:110 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via P2P/IPC\n"
    "node-a:101:111 [1] NCCL INFO Channel 00 : 1[1] -> 0[0] via P2P/IPC\n"
    "node-a:101:111 [1] misc/strongstream.cc:395 NCCL WARN Something unexpected: code 7\n"
    "node-a:101:111 [1] NCCL INFO enqueue.cc:1501 -> 5\n"
    "node-a:101:111 [1] NCCL INFO group.cc:245 -> 5\n"
    "node-a:100:110 [0] NCCL INFO Connected all rings\n"
    "node-a:100:110 [0] NCCL INFO Connected all trees\n"
)
NCCL_WENT_ON = (
    "node-a:100:110 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via P2P/IPC\n"
    "node-a:101:111 [1] misc/strongstream.cc:395 NCCL WARN Something unexpected: code 7\n"
    "node-a:101:111 [1] NCCL INFO Channel 01 : 1[1] -> 0[0] via P2P/IPC\n"
    "node-a:100:110 [0] NCCL INFO Connected all rings\n"
    "node-a:101:111 [1] NCCL INFO Connected all rings\n"
)
RANKS_ERROR = (
    "[rank0]: step 10 loss 2.31\n"
    "[rank1]: step 10 loss 2.30\n"
    "[rank1]: WARNING: dataset shard 7 is smaller than the others\n"
    "[rank1]: error: could not read shard header\n"
    "[rank0]: step 11 loss 2.29\n"
    "[rank0]: step 12 loss 2.27\n"
)
RANKS_NOTICE_AFTER = (
    "[rank0]: step 10 loss 2.31\n"
    "[rank1]: WARNING: dataset shard 7 is smaller than the others\n"
    "[rank1]: error: could not read shard header\n"
    "[rank0]: step 11 loss 2.29\n"
    "[rank0]: /opt/lib/x.py:12: UserWarning: foo is deprecated\n"
)
"""Another process's harmless notice as the log's last line says nothing of rank 1."""
RANKS_WENT_ON = (
    "[rank0]: step 10 loss 2.31\n"
    "[rank1]: WARNING: dataset shard 7 is smaller than the others\n"
    "[rank1]: step 11 loss 2.30\n"
    "[rank0]: step 11 loss 2.29\n"
    "[rank0]: step 12 loss 2.27\n"
)


@pytest.mark.parametrize(
    "text",
    [NCCL_TRACE, RANKS_ERROR, RANKS_NOTICE_AFTER],
    ids=["nccl-trace", "rank-error", "notice-of-another-rank"],
)
def test_alarm_of_a_process_that_ended_on_an_error_is_not_gone_past(
    tmp_path: Path, text: str
) -> None:
    report = log_report(tmp_path / "run", text)
    assert ending_of(report) is not Ending.ONGOING
    assert report.verdict is not Verdict.NONE


@pytest.mark.parametrize("text", [NCCL_WENT_ON, RANKS_WENT_ON], ids=["nccl", "ranks"])
def test_alarm_of_a_process_that_went_on_is_gone_past(tmp_path: Path, text: str) -> None:
    report = log_report(tmp_path / "run", text)
    assert ending_of(report) is Ending.ONGOING


def line(lineno: int, raw: str, text: str, rank: int | None, host: str | None) -> Line:
    return Line("x.log", lineno, raw, text, rank=rank, host=host)


def test_torchrun_ranks_are_told_apart() -> None:
    tail = [
        line(1, "[rank0]: step 4", "step 4", 0, None),
        line(
            2,
            "[rank1]: Traceback (most recent call last):",
            "Traceback (most recent call last):",
            1,
            None,
        ),
        line(
            3,
            '[rank1]:   File "t.py", line 3, in <module>',
            '  File "t.py", line 3, in <module>',
            1,
            None,
        ),
        line(4, "[rank1]: ValueError: bad batch", "ValueError: bad batch", 1, None),
        line(5, "[rank0]: step 5", "step 5", 0, None),
    ]
    found = process_ends("x.log", tail)
    assert [(f.value, f.lineno, f.attr("lines")) for f in found] == [("exception", 4, "2,3,4")]
    assert found[0].attr("first") == 2


def test_pdsh_hosts_are_told_apart() -> None:
    tail = [
        line(1, "gpu-01: step 4", "step 4", None, "gpu-01"),
        line(2, "gpu-02: error: shard unreadable", "error: shard unreadable", None, "gpu-02"),
        line(3, "gpu-01: step 5", "step 5", None, "gpu-01"),
    ]
    found = process_ends("x.log", tail)
    assert [(f.value, f.lineno, f.attr("process")) for f in found] == [("error", 2, "gpu-02::")]


def test_unprefixed_or_single_process_logs_give_nothing() -> None:
    mixed = [
        line(1, "[rank1]: ValueError: bad", "ValueError: bad", 1, None),
        line(2, "step 5", "step 5", None, None),
    ]
    single = [
        line(1, "[rank1]: step 1", "step 1", 1, None),
        line(2, "[rank1]: ValueError: bad", "ValueError: bad", 1, None),
    ]
    assert process_ends("x.log", mixed) == []
    assert process_ends("x.log", single) == []
