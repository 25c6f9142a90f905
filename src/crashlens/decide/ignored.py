"""Exceptions the process reported and went on from are no evidence of a failure.

CPython prints some tracebacks and carries on (`parsers/launcher/teardown.py` names each
report): a `__del__` method's or a weakref callback's exception under `Exception ignored in:`
(which cannot propagate), an `atexit` handler's as the interpreter exits, the `traceback`
module's `Exception in user code:` idiom of an `except` block that printed it, TensorFlow's
queue operations cancelled as their queue closes. A rule that matches such an exception's line
(a `ConnectionResetError` from a DataLoader iterator's `__del__` reads like a network failure)
shows something the run survived, so the decision leaves those hits out (`without_ignored`);
the failure detector still lists them as harmless when the run finished.

A thread's uncaught exception (`thread`) is kept: that thread is gone, and a training loop
waiting on it (a pin-memory or loader thread) can hang or fail because of it.
"""

from __future__ import annotations

from collections.abc import Sequence

from crashlens.model import Fact, Hit

IGNORED_REPORTS = frozenset({"finalizer", "shutdown", "handled", "cancelled"})
"""`teardown` kinds of a `python.exception` whose process went on (or was exiting)."""


def ignored_lines(facts: Sequence[Fact]) -> frozenset[tuple[str, int]]:
    """(path, line) of each exception line of a report the process went on from."""
    return frozenset(
        (item.path, item.lineno)
        for item in facts
        if item.key == "python.exception"
        and item.lineno is not None
        and item.attr("teardown") in IGNORED_REPORTS
    )


def without_ignored(hits: Sequence[Hit], facts: Sequence[Fact]) -> list[Hit]:
    """The hits, less those on an exception line the process reported and went on from."""
    lines = ignored_lines(facts)
    if not lines:
        return list(hits)
    return [hit for hit in hits if hit.lineno is None or (hit.path, hit.lineno) not in lines]
