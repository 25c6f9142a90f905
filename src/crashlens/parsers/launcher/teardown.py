"""Which Python report a traceback belongs to, while a log streams: one the process went on from?

CPython prints some tracebacks and carries on, so their exception ends nothing:

* `thread`: `Exception in thread <name>:` heads the traceback of a thread's uncaught exception
  (`threading.excepthook`): that thread ends, the process does not. Where a paste lost that
  line, the traceback's outermost frame shows it: `threading.py`'s `_bootstrap_inner`, which
  runs every thread's target and exists in no other traceback.
* `cancelled`: TensorFlow's `CancelledError` for an enqueue (`Enqueue operation was
  cancelled`, `EnqueueMany ...`): raised in the thread blocked on a full queue when the queue
  is closed with its pending enqueues cancelled or the session closes, which is how a
  training loop that stopped (its last step, its iteration cap) ends its feeder threads. TF's
  own `QueueRunner` catches it as a normal close; a hand-written loader thread prints it
  (under `Exception in thread`: the kind is still `cancelled`, that thread ended because the
  loop closed its queue). A cancelled dequeue is left out: the consumer, usually the training
  loop itself, was waiting.
* `finalizer`: `Exception ignored in: <...>` heads the traceback of a `__del__` method or a
  weakref callback (`sys.unraisablehook`), which cannot propagate; a frame `in __del__`, or
  in multiprocessing's `_run_finalizers`, which catches a finalizer's exception and prints it
  (`traceback.print_exc()`), shows the same inside the traceback.
* `shutdown`: a frame in `atexit`'s `_run_exitfuncs`: the program's own code had returned.
* `handled`: `Exception in user code:` and a dashed rule head the traceback: the idiom of the
  `traceback` module's documentation for an `except` block that prints the exception and
  goes on (`print("-" * 60)`, `traceback.print_exc()`), which libraries copy (visdom's client
  prints it for every event it fails to send). multiprocessing's queue feeder thread does
  the same: `Queue._feed` catches what sending an item raised and prints it
  (`_on_queue_feeder_error`: `traceback.print_exc()`), so a frame `in _feed` of
  `multiprocessing/queues.py` is the outermost frame of such a report and of no other
  traceback, and the feeder's process goes on (Python 3.8+ goes on to the next item). Only
  its `BrokenPipeError` is `handled`: the reading end was closed, the consumer had exited or
  closed it. Any other exception there lost the item (a tensor that could not be written to
  a full /dev/shm as it was pickled: `unable to write to file </torch_...>`) and the consumer
  waits for it: an ordinary failure.

`TeardownTracker` follows the anchor lines of a traceback (its header, the lines that head or
frame such a report, a chained traceback's separator) and says, when the exception line that
closes the traceback arrives, which of these it was (None: an ordinary traceback). A chained
traceback (`During handling of the above exception ...`) belongs to the report it continues.
"""

from __future__ import annotations

import re

HEADER = re.compile(r"Traceback \(most recent call last\):")
ANNOUNCED = (
    ("thread", re.compile(r"^[ \t]*Exception in thread [^\n]*:[ \t]*$"), 1),
    ("finalizer", re.compile(r"^[ \t]*Exception ignored in"), 1),
    ("handled", re.compile(r"^[ \t]*Exception in user code:[ \t]*$"), 2),
)
"""Lines printed above the traceback of a report the process goes on from, and how many lines
above its header at most (the user-code idiom prints a dashed rule between)."""
FRAMES = (
    ("finalizer", re.compile(r", in (?:__del__|_run_finalizers)[ \t]*$")),
    ("shutdown", re.compile(r", in _run_exitfuncs[ \t]*$")),
    ("thread", re.compile(r"threading\.py\", line [0-9]+, in _bootstrap_inner[ \t]*$")),
    ("feeder", re.compile(r"multiprocessing[/\\]queues\.py\", line [0-9]+, in _feed[ \t]*$")),
)
"""Frames that show, inside a traceback, that Python reports and ignores its exception."""
FEEDER_PIPE = re.compile(r"^[ \t]*BrokenPipeError: \[Errno 32\]")
"""The queue feeder's send to a pipe whose reading end is closed (see `feeder` above)."""
QUEUE_CANCELLED = re.compile(r"CancelledError: Enqueue[A-Za-z]* operation was cancelled")
"""TensorFlow's error for an enqueue cancelled by the queue's or the session's close
(`tf.errors.CancelledError`): a training loop's feeder thread ending as the loop stops."""
CHAIN = re.compile(
    r"During handling of the above exception, another exception occurred:"
    r"|The above exception was the direct cause of the following exception:"
)
ANCHOR = (
    r"Exception in thread [^\n]*:|Exception ignored in|Exception in user code:"
    r"|, in (?:__del__|_run_finalizers|_run_exitfuncs|_bootstrap_inner|_feed)"
    r"|During handling of the above exception"
    r"|CancelledError: Enqueue[A-Za-z]* operation was cancelled|BrokenPipeError: \[Errno 32\]"
    r"|The above exception was the direct cause|Traceback \(most recent call last\)"
)
"""The scan pattern of every line the tracker reads (line-safe)."""
CHAIN_GAP = 2
"""Lines a chained traceback's header may sit below its separator (a blank line between)."""

_PY2_TYPE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,200}")


def py2_unraisable(text: str) -> tuple[str, str] | None:
    """(exception type, value) of Python 2's one-line report of an exception it ignores
    (PyErr_WriteUnraisable: `Exception <type>: <value> in <object> ignored`, the object
    usually a bound `__del__`): the `finalizer` report on one line, with no traceback.

    Read with string operations (the value may hold ` in <` itself: the last one is the
    object's), so a long line costs linear time."""
    line = text.strip()
    if not line.startswith("Exception ") or not line.endswith("> ignored"):
        return None
    head, separator, _ = line[len("Exception ") :].rpartition(" in <")
    exc_type, colon, value = head.partition(": ")
    if not separator or not colon or _PY2_TYPE.fullmatch(exc_type) is None:
        return None
    return exc_type, value


class TeardownTracker:
    """The teardown kind of the traceback being read (see the module docstring)."""

    def __init__(self) -> None:
        self.kind: str | None = None
        self.announced: tuple[str, int | None, int] | None = None
        self.chained_at: int | None = None
        self.previous: str | None = None
        """The kind of the last traceback closed (a chained one continues it)."""

    def read(self, text: str, lineno: int | None) -> None:
        """Read one anchor line (a header, an announcing line, a frame, a separator)."""
        for kind, pattern, gap in ANNOUNCED:
            if pattern.search(text):
                self.announced = (kind, lineno, gap)
                return
        if CHAIN.search(text):
            self.chained_at = lineno
            return
        if HEADER.search(text):
            self.kind = self._opened(lineno)
            self.announced = None
            self.chained_at = None
        for kind, pattern in FRAMES:
            if pattern.search(text) and self.kind is None:
                self.kind = kind
        if self.kind in (None, "thread") and QUEUE_CANCELLED.search(text):
            # the exception line itself, read before it closes the traceback; a feeder
            # thread's cancelled enqueue is that thread ending as the loop stops, not a
            # thread dying of an error
            self.kind = "cancelled"
        if self.kind == "feeder" and FEEDER_PIPE.search(text):
            self.kind = "handled"  # the exception line: the feeder's reader had gone

    def _opened(self, lineno: int | None) -> str | None:
        if lineno is None:
            return None
        if self.announced is not None:
            kind, at, gap = self.announced
            if at is not None and 0 < lineno - at <= gap:
                return kind
        if self.chained_at is not None and 0 < lineno - self.chained_at <= CHAIN_GAP:
            return self.previous
        return None

    def close(self) -> str | None:
        """An exception line closed the traceback: its teardown kind (None: ordinary)."""
        kind, self.kind = self.kind, None
        if kind == "feeder":
            kind = None  # a feeder's other errors lost an item: an ordinary traceback
        self.previous = kind
        return kind
