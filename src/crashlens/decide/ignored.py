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

Two more reports are known by the files their traceback ran through (`python.stack`), which
the decision reads before anything else (`with_known_reports`, called by `decide.policy`):

* `tracker`: a traceback whose every frame is in multiprocessing's resource tracker (or its
  Python 3.7 name, `semaphore_tracker.py`, or loky's copy): the tracker is a process of its
  own whose loop catches each command's exception, prints it through `sys.excepthook` and
  reads the next command. A `KeyError` there is the tracker told twice to forget a shared
  memory segment that several processes registered (a known CPython bug): nothing failed.
* `lifespan`: asyncio's `CancelledError` raised in uvicorn's lifespan `receive()`: the ASGI
  lifespan task waits there for the shutdown message, and is cancelled instead when the
  server's event loop is torn down at exit (a stop signal, Ctrl-C, with requests or workers
  still running). A server's shutdown, which `decide.failure` reads as a stop; but only with
  no other uncaught exception in view: a server that an error brought down (an engine that
  died, then the server shut down) is torn down the same way, and that error is the ending.
* `runner`: asyncio's `CancelledError` raised in `asyncio.run()` itself (asyncio/runners.py)
  where the same log shows a Ctrl-C (its echo, a SIGINT, a KeyboardInterrupt): since Python
  3.11 the runner turns SIGINT into the main task's cancellation, and raises KeyboardInterrupt
  while handling the CancelledError that comes back, so a server stopped with Ctrl-C (uvicorn,
  an inference server's API) ends in this chain; a paste cut after its first part shows only
  the CancelledError. Without a Ctrl-C in view the program cancelled its own main task, which
  is no stop; and, as for `lifespan`, another uncaught exception in view is the ending.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from crashlens.model import Fact, FactValue, Hit, InputAnalysis
from crashlens.text.clip import shortened

IGNORED_REPORTS = frozenset(
    {"finalizer", "shutdown", "handled", "cancelled", "tracker", "lifespan", "runner"}
)
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
    "tracker": "printed by multiprocessing's resource tracker, a process of its own that "
    "catches each command's error, prints it and goes on (a segment registered by several "
    "processes and unregistered twice: a known CPython bug, python/cpython#82300), not by the "
    "run",
    "lifespan": "the server's lifespan task, cancelled as its event loop shut down (uvicorn's "
    "shutdown on a stop signal: Ctrl-C, SIGTERM), not an error of the application",
    "runner": "asyncio.run()'s main task, cancelled by the Ctrl-C the log shows (since Python "
    "3.11 the runner turns SIGINT into that cancellation, then raises KeyboardInterrupt), not "
    "an error of the program",
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
        shown = shortened(text, 100)
        listed.append(f"{place}: `{shown}`; {WHY_HARMLESS[str(item.attr('teardown'))]}.")
    more = len(listed) - MAX_LISTED
    return listed[:MAX_LISTED] + ([f"... and {more} more such lines."] if more > 0 else [])


TRACKER_FILE = re.compile(r"(?:^|[/\\])(?:resource_tracker|semaphore_tracker)\.py$")
"""multiprocessing's resource tracker (`semaphore_tracker.py` before Python 3.8), or loky's."""
LIFESPAN_FILE = re.compile(r"(?:^|[/\\])uvicorn[/\\]lifespan[/\\]on\.py$")
"""uvicorn's lifespan protocol, whose `receive()` the ASGI app's lifespan task awaits."""
RUNNER_FILE = re.compile(r"(?:^|[/\\])asyncio[/\\]runners\.py$")
"""asyncio's runner: `asyncio.run()`, which cancels its main task on SIGINT (Python 3.11+)."""
CANCELLED = re.compile(r"^(?:asyncio\.(?:exceptions\.)?)?CancelledError$")
"""asyncio's cancellation, as Python prints it (3.8+: `asyncio.exceptions.CancelledError`)."""
REPORT_KEYS = frozenset({"python.exception", "log.ends_with"})


def known_report(stack: Fact) -> str | None:
    """The teardown kind a traceback's files show (`tracker`, `lifespan`), or None."""
    files = [f for f in str(stack.attr("frames") or stack.value).split("|") if f]
    exception = str(stack.attr("exception") or "")
    if files and all(TRACKER_FILE.search(f) for f in files):
        return "tracker"
    if CANCELLED.search(exception) and any(LIFESPAN_FILE.search(f) for f in files):
        return "lifespan"
    if CANCELLED.search(exception) and any(RUNNER_FILE.search(f) for f in files):
        return "runner"
    return None


def with_known_reports(analyses: Sequence[InputAnalysis]) -> list[InputAnalysis]:
    """The analyses, with each exception of a report known by its traceback's files (see the
    module docstring) marked as the parser marks the reports it knows (`teardown`), and the
    log's ending at such an exception line too."""
    kinds: dict[tuple[str, int], str] = {}
    for analysis in analyses:
        interrupted = _shows_interrupt(analysis.facts)
        for item in analysis.facts:
            if item.key == "python.stack" and item.lineno is not None:
                kind = known_report(item)
                if kind is not None and (kind != "runner" or interrupted):
                    kinds[(item.path, item.lineno)] = kind
    if _uncaught_besides(analyses, kinds):
        kinds = {place: kind for place, kind in kinds.items() if kind not in ("lifespan", "runner")}
    return [_marked(analysis, kinds) for analysis in analyses]


def _shows_interrupt(facts: Sequence[Fact]) -> bool:
    """Whether a log shows a Ctrl-C: its echo or a SIGINT read as a signal, or Python's
    KeyboardInterrupt."""
    return any(
        (item.key == "launcher.signal" and item.value == "SIGINT")
        or (item.key == "python.exception" and str(item.value).startswith("KeyboardInterrupt"))
        for item in facts
    )


def _uncaught_besides(analyses: Sequence[InputAnalysis], kinds: dict[tuple[str, int], str]) -> bool:
    """Whether an exception no report explains is in view (not a clean exit, not Ctrl-C)."""
    return any(
        item.key == "python.exception"
        and item.attr("teardown") is None
        and item.lineno is not None
        and (item.path, item.lineno) not in kinds
        and not str(item.value).startswith(("SystemExit", "KeyboardInterrupt"))
        for analysis in analyses
        for item in analysis.facts
    )


def _marked(analysis: InputAnalysis, kinds: dict[tuple[str, int], str]) -> InputAnalysis:
    if not any(path == analysis.status.path for path, _ in kinds):
        return analysis
    messages = {
        str(item.value): kinds[(item.path, item.lineno)]
        for item in analysis.facts
        if item.key == "python.exception"
        and item.lineno is not None
        and (item.path, item.lineno) in kinds
    }
    facts = tuple(_with_kind(item, kinds, messages) for item in analysis.facts)
    return replace(analysis, facts=facts)


def _with_kind(item: Fact, kinds: dict[tuple[str, int], str], messages: dict[str, str]) -> Fact:
    if item.key not in REPORT_KEYS or item.attr("teardown") is not None or item.lineno is None:
        return item
    kind = kinds.get((item.path, item.lineno))
    if kind is None and item.key == "log.ends_with" and item.value == "traceback":
        # the last of several identical reports closes the log; the first carries the stack
        kind = messages.get(item.text.strip())
    if kind is None:
        return item
    attrs: tuple[tuple[str, FactValue], ...] = (
        *((name, value) for name, value in item.attrs if name != "teardown"),
        ("teardown", kind),
    )
    return replace(item, attrs=attrs)


LIFESPAN_SAYS = (
    "the log ends with the server's lifespan task cancelled as its event loop shut down "
    "(uvicorn's shutdown on a stop signal: Ctrl-C, SIGTERM)"
)
"""The stop a `lifespan` report at the end of a log shows (`decide.failure`)."""
RUNNER_SAYS = (
    "the log ends with asyncio.run()'s main task cancelled by the Ctrl-C it shows (the user's "
    "stop of an asyncio program, a server's Ctrl-C)"
)
"""The stop a `runner` report at the end of a log shows (`decide.failure`)."""
