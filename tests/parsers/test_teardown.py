"""`python.exception` knows when its traceback is one Python reports and goes on from."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.match.rules import shipped_rules
from crashlens.model import Verdict
from crashlens.parsers.launcher.teardown import TeardownTracker
from crashlens.pipeline import analyze_inputs, build_report


def exceptions(tmp_path: Path, text: str) -> dict[str, object]:
    (tmp_path / "train.log").write_text(text, encoding="utf-8")
    analyses = analyze_inputs([str(tmp_path)])
    return {
        str(f.value): f.attr("teardown")
        for a in analyses
        for f in a.facts
        if f.key == "python.exception"
    }


FINALIZER = (
    "Traceback (most recent call last):\n"
    '  File "/opt/py/lib/python3.9/multiprocessing/util.py", line 300, in _run_finalizers\n'
    "    finalizer()\n"
    '  File "/opt/py/lib/python3.9/shutil.py", line 709, in rmtree\n'
    "OSError: [Errno 39] Directory not empty: '/tmp/pymp-x1'\n"
)
THREAD = (
    "Exception in thread pin_memory:\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.10/threading.py", line 1016, in _bootstrap_inner\n'
    "ConnectionResetError: [Errno 104] Connection reset by peer\n"
)
IGNORED = (
    "Exception ignored in: <function Viewer.__del__ at 0x7f3a2c1d>\n"
    "Traceback (most recent call last):\n"
    '  File "/srv/viewer.py", line 88, in __del__\n'
    "AttributeError: 'NoneType' object has no attribute 'close'\n"
)
HANDLED = (
    "Exception in user code:\n"
    "------------------------------------------------------------\n"
    "Traceback (most recent call last):\n"
    '  File "/srv/poll.py", line 40, in poll\n'
    "TimeoutError: [Errno 110] Connection timed out\n"
    "------------------------------------------------------------\n"
)
ORDINARY = (
    "Traceback (most recent call last):\n"
    '  File "/srv/fit.py", line 12, in <module>\n'
    "KeyError: 'labels'\n"
)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (FINALIZER, "finalizer"),
        (THREAD, "thread"),
        (IGNORED, "finalizer"),
        (HANDLED, "handled"),
        (ORDINARY, None),
    ],
    ids=["multiprocessing finalizer", "thread", "unraisable __del__", "printed by except", "plain"],
)
def test_the_traceback_kind(tmp_path: Path, text: str, kind: str | None) -> None:
    found = exceptions(tmp_path, "step 1\n" + text + "step 2\n")
    assert list(found.values()) == [kind]


def test_an_ordinary_traceback_after_a_finalizers_is_ordinary(tmp_path: Path) -> None:
    found = exceptions(tmp_path, FINALIZER + "epoch 2\n" + ORDINARY)
    assert found["KeyError: 'labels'"] is None
    assert found["OSError: [Errno 39] Directory not empty: '/tmp/pymp-x1'"] == "finalizer"


def test_a_chained_traceback_belongs_to_the_report_it_continues() -> None:
    tracker = TeardownTracker()
    tracker.read("Exception in thread loader:", 1)
    tracker.read("Traceback (most recent call last):", 2)
    assert tracker.close() == "thread"
    tracker.read("During handling of the above exception, another exception occurred:", 5)
    tracker.read("Traceback (most recent call last):", 7)
    assert tracker.close() == "thread"
    tracker.read("Traceback (most recent call last):", 20)
    assert tracker.close() is None


def test_finalizer_tracebacks_between_epochs_are_no_failure(tmp_path: Path) -> None:
    text = "".join(f"epoch {n} loss 0.{9 - n}\n" + FINALIZER for n in range(3)) + "epoch 3\n"
    (tmp_path / "train.log").write_text(text, encoding="utf-8")
    rules = shipped_rules()
    report = build_report(analyze_inputs([str(tmp_path)], rules=rules), rules)
    assert report.verdict is Verdict.NONE


def test_an_ordinary_traceback_between_epochs_is_still_a_failure(tmp_path: Path) -> None:
    text = "epoch 1\n" + ORDINARY + "epoch 2\n"
    (tmp_path / "train.log").write_text(text, encoding="utf-8")
    rules = shipped_rules()
    report = build_report(analyze_inputs([str(tmp_path)], rules=rules), rules)
    assert report.verdict is not Verdict.NONE
