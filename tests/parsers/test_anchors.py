"""The Anchor idiom: dispatch in table order, `on_line` first, settling from declared keys."""

from __future__ import annotations

import re
from typing import Any

import pytest

from crashlens.model import Fact, Line
from crashlens.parsers import PARSERS
from crashlens.parsers.base import (
    Anchor,
    AnchoredCollector,
    LogParser,
    collect_text,
    line_safety,
    patterns_of,
)
from crashlens.parsers.dmesg.collector import ANCHORS as KERNEL_ANCHORS
from crashlens.parsers.launcher import LauncherParser
from crashlens.parsers.launcher.collector import ANCHORS as LAUNCHER_ANCHORS
from crashlens.parsers.launcher.collector import LauncherCollector

LOG_PARSERS = [p for p in PARSERS if isinstance(p, LogParser)]


class _Recorder(AnchoredCollector):
    """A collector that writes down what it was called with, in order."""

    def __init__(self) -> None:
        super().__init__("t.log", TABLE)
        self.calls: list[str] = []

    def on_line(self, line: Line, matched: tuple[Anchor[Any], ...]) -> None:
        self.calls.append(f"line:{[TABLE.index(a) for a in matched]}")

    def on_version(self, line: Line) -> None:
        self.calls.append("version")
        if m := re.search(r"v([0-9.]+)", line.text):
            self.keep_first("tool.version", m.group(1), line)

    def on_size(self, line: Line) -> None:
        self.calls.append("size")
        for key in ("run.nodes", "run.gpus"):
            if m := re.search(key.split(".")[1] + r"=([0-9]+)", line.text):
                self.keep_first(key, int(m.group(1)), line)

    def on_error(self, line: Line) -> None:
        self.calls.append("error")

    def finish(self) -> list[Fact]:
        return list(self.singles.values())


R = _Recorder
TABLE: tuple[Anchor[_Recorder], ...] = (
    Anchor(r"version v", R.on_version, settles=("tool.version",)),
    Anchor(r"ERROR"),  # read by on_line only
    Anchor(r"nodes=|gpus=", R.on_size, settles=("run.nodes", "run.gpus")),
    Anchor(r"ERROR", R.on_error),
)


def _line(lineno: int, text: str) -> Line:
    return Line(path="t.log", lineno=lineno, raw=text, text=text)


def test_handlers_run_in_table_order_after_on_line() -> None:
    collector = _Recorder()
    collector.feed(_line(1, "ERROR in version v1.2"), frozenset({3, 0, 1}))
    assert collector.calls == ["line:[0, 1, 3]", "version", "error"]


def test_indexes_outside_the_table_are_ignored() -> None:
    collector = _Recorder()
    collector.feed(_line(1, "ERROR"), frozenset({3, 99, -1}))
    assert collector.calls == ["line:[3]", "error"]


def test_an_anchor_settles_once_all_its_keys_are_known() -> None:
    collector = _Recorder()
    collector.feed(_line(1, "nodes=2"), frozenset({2}))
    assert collector.settled == set()  # gpus still unknown
    collector.feed(_line(2, "version v1.2"), frozenset({0}))
    assert collector.settled == {0}
    collector.feed(_line(3, "gpus=8 nodes=4"), frozenset({2}))
    assert collector.settled == {0, 2}
    facts = {f.key: (f.value, f.lineno) for f in collector.finish()}
    assert facts == {"run.nodes": (2, 1), "tool.version": ("1.2", 2), "run.gpus": (8, 3)}


def test_a_line_without_the_value_does_not_settle() -> None:
    collector = _Recorder()
    collector.feed(_line(1, "version v"), frozenset({0}))
    assert collector.settled == set()


def test_patterns_are_the_table_in_order() -> None:
    assert patterns_of(TABLE) == ("version v", "ERROR", "nodes=|gpus=", "ERROR")


def test_anchors_compare_by_identity() -> None:
    assert TABLE[1] != TABLE[3] and TABLE[1] in TABLE and TABLE.index(TABLE[3]) == 3


@pytest.mark.parametrize(
    ("pattern", "broken"),
    [
        (r"foo\sbar", "\\s"),
        (r"(?<=x)foo", "lookbehind"),
        (r"foo [^ ]+ bar", "[^ ]"),
        (r"foo [^ \n]+ bar", None),
        (r"\[(?:rank|default)[0-9]+\]:", None),
    ],
)
def test_line_safety(pattern: str, broken: str | None) -> None:
    problem = line_safety(pattern)
    if broken is None:
        assert problem is None
    else:
        assert problem is not None and broken in problem


@pytest.mark.parametrize("parser", LOG_PARSERS, ids=lambda p: p.kind.value)
def test_every_log_parser_anchor_is_line_safe(parser: LogParser) -> None:
    for pattern in parser.anchors:
        re.compile(pattern)
        assert line_safety(pattern) is None, pattern


@pytest.mark.parametrize("table", [LAUNCHER_ANCHORS, KERNEL_ANCHORS], ids=["launcher", "dmesg"])
def test_settling_anchors_have_handlers(table: tuple[Anchor[Any], ...]) -> None:
    """An anchor read only by `on_line` must never be skipped: it cannot declare keys."""
    assert all(anchor.handler is not None for anchor in table if anchor.settles)


def test_launcher_settles_the_version_anchor_only_when_cuda_is_known_too() -> None:
    index = next(i for i, a in enumerate(LAUNCHER_ANCHORS) if a.pattern == "NCCL version [0-9]")
    collector = LauncherCollector("train.log")
    collector.feed(_line(1, "node-1:100:200 [0] NCCL INFO NCCL version 2.18.1"), frozenset({index}))
    assert index not in collector.settled  # this line named no CUDA
    collector.feed(_line(2, "NCCL version 2.18.3+cuda12.1"), frozenset({index}))
    assert index in collector.settled
    facts = {f.key: f.value for f in collector.finish()}
    assert facts["nccl.version"] == "2.18.1" and facts["cuda.version"] == "12.1"


def test_the_torchelastic_report_is_read_across_its_anchors() -> None:
    """Header, index, field and border lines each match their own handler-less anchor."""
    text = (
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  time      : 2025-03-14_10:02:07\n"
        "  host      : node-02\n"
        "  rank      : 3 (local_rank: 3)\n"
        "  exitcode  : -9 (pid: 2606)\n"
        "  error_file: <N/A>\n"
        "  traceback : Signal 9 (SIGKILL) received by PID 2606\n"
        "============================================================\n"
    )
    _, facts = collect_text(LauncherParser(), text, "train.log")
    first = next(f for f in facts if f.key == "launcher.first_failure")
    assert (first.value, first.lineno, first.attr("host"), first.attr("exit_code")) == (
        3,
        5,
        "node-02",
        -9,
    )
    signal = next(f for f in facts if f.key == "launcher.signal")
    assert (signal.value, signal.attr("rank"), signal.attr("pid")) == ("SIGKILL", 3, 2606)
