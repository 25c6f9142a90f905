"""Exceptions the process reported and went on from are no evidence of a failure.

CPython prints some tracebacks and carries on (`parsers/launcher/teardown.py` names each
report): a `__del__` method's or a weakref callback's exception under `Exception ignored in:`
(which cannot propagate), an `atexit` handler's as the interpreter exits, the `traceback`
module's `Exception in user code:` idiom of an `except` block that printed it, TensorFlow's
queue operations cancelled as their queue closes. A rule that matches such an exception's line
(a `ConnectionResetError` from a DataLoader iterator's `__del__` reads like a network failure)
shows something the run survived, so the decision leaves those hits out (`without_ignored`);
the failure detector still lists them as harmless when the run finished, and, when such a
report is the last error of a log that shows no other ending, says why each was judged
harmless (`why_harmless`) instead of only that the log simply stops.

A thread's uncaught exception (`thread`) is kept: that thread is gone, and a training loop
waiting on it (a pin-memory or loader thread) can hang or fail because of it.
"""

from __future__ import annotations

from collections.abc import Sequence

from crashlens.model import Fact, Hit

IGNORED_REPORTS = frozenset({"finalizer", "shutdown", "handled", "cancelled"})
"""`teardown` kinds of a `python.exception` whose process went on (or was exiting)."""
WHY_HARMLESS = {
    "cancelled": "TensorFlow cancelled a pending enqueue as its queue or session closed: a "
    "feeder thread ending because the training loop stopped (its last step, its iteration "
    "limit), not a failure",
    "finalizer": "raised in an object's finalizer (`__del__` or a weakref callback), which "
    "Python reports and ignores",
    "shutdown": "raised by an `atexit` handler as the interpreter exited, after the program's "
    "own code had returned",
    "handled": "printed by an `except` block that caught it and went on",
}
"""Why each kind of report the process went on from is harmless, as a clause."""
MAX_LISTED = 8
"""Harmless reports listed, at most (then a count)."""


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


def why_harmless(facts: Sequence[Fact]) -> list[str]:
    """One sentence per exception the process went on from (`place: exception; why.`), in
    order, at most `MAX_LISTED` (then a count)."""
    found = sorted(
        (
            item
            for item in facts
            if item.key == "python.exception" and str(item.attr("teardown")) in WHY_HARMLESS
        ),
        key=lambda item: (item.path, item.lineno or 0),
    )
    listed = []
    for item in found:
        place = f"{item.path}:{item.lineno}" if item.lineno is not None else item.path
        kind, colon, message = str(item.value).partition(":")
        text = kind.rsplit(".", 1)[-1] + colon + message  # `CancelledError: ...`, no module path
        shown = text if len(text) <= 100 else text[:99] + "…"
        listed.append(f"{place}: `{shown}`; {WHY_HARMLESS[str(item.attr('teardown'))]}.")
    more = len(listed) - MAX_LISTED
    return listed[:MAX_LISTED] + ([f"... and {more} more such lines."] if more > 0 else [])
