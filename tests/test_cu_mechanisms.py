"""Mechanisms learned in the stop of batch 2026-12-06-cu, each tested on lines written for the
test: how macOS's shell words a signal death (BSD's strsignal text and the signal's number),
what notebook front ends show once their kernel process is dead, and the legacy `docker
build`'s report of a RUN step the kernel killed."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.model import Ending
from mechanism_helpers import ending_of, log_report, rules_hitting

LINES_AND_RULES = [
    ("Abort trap: 6", "network-sigabrt-exit"),
    (
        "The command '/bin/sh -c pip install -r requirements.txt' returned a non-zero code: 137",
        "host-oom-docker-exit-137",
    ),
]


@pytest.mark.parametrize(
    ("line", "rule"), LINES_AND_RULES, ids=[rule for _, rule in LINES_AND_RULES]
)
def test_the_line_is_read_by_the_rule_of_its_mechanism(line: str, rule: str) -> None:
    assert rule in rules_hitting(line)


DEATH_LINES = [
    ("macos-abort", "Abort trap: 6"),
    ("macos-trap", "Trace/BPT trap: 5"),
    ("notebook-restarting", "The kernel appears to have died. It will restart automatically."),
    ("notebook-gave-up", "The kernel has died, and the automatic restart has failed."),
    (
        "vscode-cell",
        "The Kernel crashed while executing code in the current cell or a previous cell.",
    ),
    (
        "vscode-log",
        "12:07:55.806 [error] Disposing session as kernel process died ExitCode: undefined,"
        " Reason: ",
    ),
    ("spyder", "Kernel died, restarting"),
]


@pytest.mark.parametrize(("name", "line"), DEATH_LINES, ids=[name for name, _ in DEATH_LINES])
def test_the_line_shows_the_run_died(tmp_path: Path, name: str, line: str) -> None:
    """After lines of training progress, the line is a death sign: the ending is `died`."""
    report = log_report(tmp_path / name, "Epoch 1/10\nstep 100 loss 2.31\n" + line + "\n")
    assert ending_of(report) is Ending.DIED
    assert str(report.verdict) != "none"


def test_a_kernel_death_mentioned_in_passing_is_not_one(tmp_path: Path) -> None:
    """The front ends' words are matched as they print them, not a sentence that quotes them."""
    report = log_report(
        tmp_path / "quoted",
        "Epoch 1/10\nstep 100 loss 2.31\nsee the FAQ if a kernel died once\nstep 200 loss 2.10\n",
    )
    assert ending_of(report) is not Ending.DIED
