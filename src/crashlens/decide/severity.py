"""The severity a log line gives itself: its own level marker, read the way its logger wrote it.

Every logging library stamps a record with its level, and the level is the writer's own word
on whether the program goes on: a warning is printed by a program that carries on, an error
may or may not end it, a fatal record is followed by an abort. The markers differ by library:

* glog (Caffe2, TensorFlow's C++ core, c10): a letter before the date, `W0515 10:02:03.123
  1234 file.cc:88]`, or in c10's bracketed form `[W pthreadpool-cpp.cc:88]` /
  `[W515 10:02:03.123 file.cpp:88]`; TensorFlow's `W tensorflow/...`;
* onnxruntime's sink: `[W:onnxruntime:Default, file.cc:1671 function]`;
* Python's `logging` in its common formats: `WARNING:` (basicConfig, uvicorn's `INFO:     `),
  `[WARNING]` (DeepSpeed), ` - WARNING - `, `| WARNING |`, `WARNING worker.py:1072 --` (Ray),
  `INFO 06-21 19:23:24 file.py:63]` (vLLM);
* Python's `warnings` module: `UserWarning: ...`, `path.py:12: FutureWarning: ...`.

`level_of` returns the level of the marker nearest the line's start (a message may quote
another record's level further on), or None when the line carries none.
"""

from __future__ import annotations

import re
from enum import IntEnum


class Level(IntEnum):
    """A record's level, ordered by severity."""

    DEBUG = 10
    INFO = 20
    WARNING = 30
    ERROR = 40
    FATAL = 50


LETTERS = {
    "V": Level.DEBUG,
    "I": Level.INFO,
    "W": Level.WARNING,
    "E": Level.ERROR,
    "F": Level.FATAL,
}
"""glog's and onnxruntime's one-letter levels (onnxruntime adds `V`, verbose)."""
NAMES = {
    "DEBUG": Level.DEBUG,
    "TRACE": Level.DEBUG,
    "INFO": Level.INFO,
    "NOTICE": Level.INFO,
    "WARN": Level.WARNING,
    "WARNING": Level.WARNING,
    "ERROR": Level.ERROR,
    "ERR": Level.ERROR,
    "CRITICAL": Level.FATAL,
    "FATAL": Level.FATAL,
}
"""`logging`'s level names and the few others loggers print."""

_NAME = r"(?P<name>DEBUG|TRACE|INFO|NOTICE|WARN(?:ING)?|ERR(?:OR)?|CRITICAL|FATAL)"
_LETTER_MARKERS = (
    # glog: `W0515 10:02:03.123456 1234 file.cc:88]`
    re.compile(r"^(?P<letter>[IWEF])[0-9]{4} "),
    # c10's bracketed glog: `[W pthreadpool-cpp.cc:88]`, `[W515 10:02:03.1 file.cpp:88]`
    re.compile(r"\[(?P<letter>[IWEF])(?:[0-9]{3,4} [0-9:.]+(?: [0-9]+)?)? [^ \]\n]+:[0-9]+\]"),
    # onnxruntime: `[W:onnxruntime:Default, file.cc:1671 function]`
    re.compile(r"\[(?P<letter>[VIWEF]):onnxruntime:"),
    # TensorFlow's C++ logging: `W tensorflow/core/...`
    re.compile(r"(?:^|[ \t])(?P<letter>[IWEF]) tensorflow/"),
)
_NAME_MARKERS = (
    # a level field: `WARNING:` (basicConfig, uvicorn's padded `INFO:     `), `[WARN]`,
    # `| WARNING |`, ` - WARNING - `, `mod:35 WARNING -> `
    re.compile(r"(?:^|[ \t|\[])" + _NAME + r"(?:[ \t]*(?:->|[:|\]])|[ \t]+-[ \t])"),
    # `[ WARN ]`, `[INFO ]`, and a level that starts the line (`WARNING the ...`)
    re.compile(r"\[[ \t]*" + _NAME + r"[ \t]*\]"),
    re.compile(r"^" + _NAME + r"\b"),
    # Ray `WARNING worker.py:1072 --`, vLLM `INFO 06-21 19:23:24 file.py:63]`
    re.compile(
        r"(?:^|[ \t\]])" + _NAME + r"[ \t]+(?:[0-9]{2}-[0-9]{2} [0-9:]{8} )?[\w./-]+\.py:[0-9]+\b"
    ),
)
_PYTHON_WARNING = re.compile(r"^(?:[^ \n]+:[0-9]+: )?[A-Za-z_.]*Warning: ")
"""Python's `warnings` module: `UserWarning: ...`, with its `file:line: ` when shown."""


def level_of(line: str) -> Level | None:
    """The level of the marker nearest the line's start, or None."""
    letters = [m for p in _LETTER_MARKERS if (m := p.search(line)) is not None]
    names = [m for p in _NAME_MARKERS if (m := p.search(line)) is not None]
    found = [(m.start(), LETTERS[m.group("letter")]) for m in letters]
    found += [(m.start(), NAMES[m.group("name")]) for m in names]
    if (match := _PYTHON_WARNING.search(line)) is not None:
        found.append((match.start(), Level.WARNING))
    return min(found)[1] if found else None
