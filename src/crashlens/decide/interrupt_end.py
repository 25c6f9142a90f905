"""What a user's interrupt in the middle of a log means for how the run ended.

An uncaught `KeyboardInterrupt` (Ctrl-C; a traceback the log shows, not the last output) ends
the interpreter: the run was stopped from outside (`decide.failure` reads it as a stop). Two
things change that reading:

* Python went on after it in the same log: another exception, or a cause-level failure line
  (a caught interrupt, a notebook's next cell, a worker's error reported after the stop): the
  interrupt is not how the run ended (`interrupt_superseded`). An interrupt that is the log's
  last output is read as such (`decide.failure`: a stop, or a start-up that hung there).
* Native output after it that reads as a death (an assertion in a destructor, CPython's fatal
  error at interpreter shutdown, a core dump) is the exiting interpreter's teardown, unless
  another Python exception follows the interrupt there (`interrupt_teardown`). A log whose
  last output is a traceback cut off, or a line cut short, keeps that reading: Python or the
  launcher was still at work.
"""

from __future__ import annotations

from collections.abc import Sequence

from crashlens.decide.ending_signs import Sign
from crashlens.decide.ignored import without_ignored
from crashlens.decide.stop_order import USER_STOP_EXCEPTIONS, cause_level
from crashlens.match.rules import RuleIndex
from crashlens.model import Fact, Hit


def interrupt_superseded(
    stop: Sign, facts: Sequence[Fact], hits: Sequence[Hit], index: RuleIndex
) -> bool:
    """Whether a user interrupt read from a traceback in the middle of a log is followed there
    by another Python exception or a cause-level failure line: the process went on (a caught
    interrupt, a notebook's next cell, a worker's error reported after it), so the interrupt
    is not how the run ended."""
    if stop.fact.key != "python.exception" or stop.fact.attr("source") != "log":
        return False
    path, at = stop.fact.path, stop.fact.lineno or 0
    if any(f.key == "log.ends_with" and f.path == path and f.lineno == at for f in facts):
        return True  # the log's last output: its own reading decides (a hung start-up's stop)
    return _raised_after(facts, path, at, counting_reported=False) or any(
        h.path == path and (h.lineno or 0) > at and cause_level(h, index.failure, index.knock_on)
        for h in without_ignored(hits, facts)
    )


def interrupt_teardown(
    stops: Sequence[Sign], deaths: Sequence[Sign], facts: Sequence[Fact]
) -> list[Sign]:
    """The death signs after an uncaught user interrupt in the same log, where no other Python
    exception follows the interrupt there: the exiting interpreter's teardown."""
    interrupts = {
        s.fact.path: s.fact.lineno or 0 for s in stops if s.fact.key == "python.exception"
    }
    quiet = {
        path
        for path, at in interrupts.items()
        if not _raised_after(facts, path, at, counting_reported=True)
    }
    return [
        s
        for s in deaths
        if s.fact.path in quiet
        and (s.fact.lineno or 0) > interrupts[s.fact.path]
        and (s.fact.key != "log.ends_with" or s.fact.value == "fatal")
    ]


def _raised_after(facts: Sequence[Fact], path: str, at: int, *, counting_reported: bool) -> bool:
    """Whether Python raised an exception other than a user stop in `path` after line `at`: an
    uncaught one, or (`counting_reported`) also one it reported and went on from (a
    finalizer's)."""
    return any(
        f.key == "python.exception"
        and f.path == path
        and (f.lineno or 0) > at
        and (counting_reported or f.attr("teardown") is None)
        and not str(f.value).startswith(USER_STOP_EXCEPTIONS)
        for f in facts
    )
