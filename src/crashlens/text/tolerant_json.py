"""JSON as people paste it: after a prompt, cut off, followed by garbage, with trailing commas.

`read_first_value` decodes the first JSON value of a text and says where it ends, so whatever
follows (a second command's output, a prompt) is left to the caller. When strict decoding fails
it accepts trailing commas before `]` / `}` (podman's documentation example has them), and
otherwise closes a truncated document at its latest complete value, trying at most
`MAX_REPAIRS` cut points, latest first. `Repair` says which of these was needed.

An absurd value costs that value only: an integer longer than Python's 4300-digit limit and a
number or constant that is not finite (`1e999`, `Infinity`, `NaN`) decode as None, and a
container nested deeper than `MAX_DEPTH` (the decoder would raise RecursionError) is blanked
out to `null`, offsets and line numbers kept, so the rest of the document still decodes.
"""

from __future__ import annotations

import json
import math
import re
from collections import deque
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

# `[` or `{` opening a line, followed by the end of the line, `{` or a key: not `[rank0]:`.
_START_RE = re.compile(r"^[ \t]*(?P<open>\[[ \t]*(?:\r?$|\{)|\{[ \t]*(?:\r?$|\"))", re.M)
# A complete string, a string cut by the end of the text, or a structural character.
_TOKEN_RE = re.compile(
    r'(?P<str>"(?:[^"\\]|\\[\s\S])*")|(?P<cut>"(?:[^"\\]|\\[\s\S])*\Z)|[{}\[\],]'
)
_TRAILING_COMMA_RE = re.compile(r'("(?:[^"\\]|\\[\s\S])*")|,(\s*[\]}])')
MAX_REPAIRS = 64
"""How many cut points the truncation repair tries, latest first."""
MAX_DEPTH = 200
"""Deepest nesting decoded; a deeper container becomes null (no tool nests 200 levels)."""
MAX_INT_DIGITS = 4300
"""Python's own limit on `int()` of a string (`sys.get_int_max_str_digits`)."""


def _json_int(digits: str) -> int | None:
    return int(digits) if len(digits.lstrip("-")) <= MAX_INT_DIGITS else None


def _json_float(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


def _json_constant(_name: str) -> None:
    return None  # Infinity, -Infinity, NaN: not a value any tool means


_DECODER = json.JSONDecoder(
    parse_int=_json_int, parse_float=_json_float, parse_constant=_json_constant
)


def loads(text: str) -> Any:
    """`json.loads` that never meets an absurd value (the module doc); ValueError if not JSON."""
    value, end = _raw_decode(text, 0)
    if text[end:].strip():
        raise ValueError(f"extra data at offset {end}")
    return value


def _raw_decode(text: str, start: int) -> tuple[Any, int]:
    """`raw_decode`, with over-deep containers blanked first when they are what failed."""
    try:
        return _DECODER.raw_decode(text, start)
    except RecursionError:
        pass
    return _DECODER.raw_decode(blank_deep(text, start), start)


def blank_deep(text: str, start: int = 0, limit: int = MAX_DEPTH) -> str:
    """`text` with every container opened deeper than `limit` replaced by `null` and spaces.

    Newlines are kept, so offsets and line numbers of everything else stay the same.
    """
    depth = 0
    pieces: list[str] = []
    kept_to = 0
    deep_from: int | None = None
    for token in _TOKEN_RE.finditer(text, start):
        if token.lastgroup == "cut":
            break
        if token.lastgroup == "str":
            continue
        char = token.group()
        if char in "[{":
            depth += 1
            if depth > limit and deep_from is None:
                deep_from = token.start()
        elif char in "]}":
            depth -= 1
            if deep_from is not None and depth == limit:
                pieces.append(text[kept_to:deep_from])
                pieces.append(_blank(text[deep_from : token.end()]))
                kept_to, deep_from = token.end(), None
            if depth <= 0:
                break
    if deep_from is not None:  # never closed: blank to the end
        pieces.append(text[kept_to:deep_from])
        pieces.append(_blank(text[deep_from:]))
        kept_to = len(text)
    pieces.append(text[kept_to:])
    return "".join(pieces)


def _blank(span: str) -> str:
    """`null` padded to the span's length, its newlines kept where they were."""
    lines = span.split("\n")
    out = ["null".ljust(len(lines[0])) if len(lines[0]) >= 4 else "null"]
    out.extend(" " * len(line) for line in lines[1:])
    return "\n".join(out)


class Repair(StrEnum):
    """What had to be forgiven to decode the value."""

    TRAILING_COMMAS = "trailing commas"
    TRUNCATED = "truncated"


_Stack = tuple[str, "_Stack"] | None
"""Open brackets, innermost first, as a chain that shares its tail: a cut point keeps the
stack of its moment without copying it (a copy per cut is quadratic in deep nesting)."""


def _closers(stack: _Stack) -> str:
    """The brackets that close `stack`, innermost first."""
    out: list[str] = []
    while stack is not None:
        bracket, stack = stack
        out.append("]" if bracket == "[" else "}")
    return "".join(out)


@dataclass(slots=True)
class _BracketWalk:
    """Structure of the first JSON value: container offsets and safe cut points."""

    object_starts: list[int]
    """Offsets of the objects at the top level, or directly inside a top-level array."""
    end: int | None
    """Offset just past the first value, None when it never closes (truncated)."""
    cuts: deque[tuple[int, _Stack]]
    """(offset, open brackets) where the text before `offset` ends with a complete value."""


def _walk(text: str, start: int) -> _BracketWalk:
    """Walk the brackets of the JSON value at `start` without decoding it."""
    stack: _Stack = None
    depth = 0
    starts: list[int] = []
    cuts: deque[tuple[int, _Stack]] = deque(maxlen=MAX_REPAIRS)
    for token in _TOKEN_RE.finditer(text, start):
        if token.lastgroup == "str":
            continue
        if token.lastgroup == "cut":
            break  # the document was cut inside a string
        char = token.group()
        if char in "[{":
            if char == "{" and (depth == 0 or (depth == 1 and stack == ("[", None))):
                starts.append(token.start())
            stack, depth = (char, stack), depth + 1
        elif char in "]}":
            if stack is not None:
                stack, depth = stack[1], depth - 1
            if stack is None:
                return _BracketWalk(starts, token.end(), cuts)
            cuts.append((token.end(), stack))
        else:  # a comma outside strings follows a complete value
            cuts.append((token.start(), stack))
    return _BracketWalk(starts, None, cuts)


def strip_trailing_commas(text: str) -> str:
    """Remove commas before `]`/`}` (outside strings)."""
    return _TRAILING_COMMA_RE.sub(lambda m: m.group(1) or m.group(2), text)


def _decode_lenient(text: str) -> tuple[Any, int]:
    """Decode the first JSON value of text, accepting trailing commas; raises ValueError."""
    try:
        return _raw_decode(text, 0)
    except ValueError:
        return _raw_decode(strip_trailing_commas(text), 0)


def _close_truncated(text: str, walk: _BracketWalk, start: int) -> Any:
    """Close a truncated document at its latest cut point that decodes; None when none does.

    Over-deep containers are blanked and trailing commas stripped once, before the cuts are
    tried: done per cut, each try would cost the whole text again.
    """
    body = blank_deep(text[start:])
    if any(found.group(2) for found in _TRAILING_COMMA_RE.finditer(body)):
        body = strip_trailing_commas(body)
    cuts = walk.cuts if body == text[start:] else _walk(body, 0).cuts
    shift = start if cuts is walk.cuts else 0
    for offset, stack in reversed(cuts):
        try:
            return _raw_decode(body[: offset - shift] + _closers(stack), 0)[0]
        except ValueError:
            continue
    return None


def json_start(text: str) -> int | None:
    """Offset of the first line that opens a JSON array or object (skips a pasted command).

    Only `[` or `{` that open a line and are followed by the end of the line, `{` or a key
    count, so a log prefix such as `[rank0]:` is not taken for JSON.
    """
    found = _START_RE.search(text)
    return found.start("open") if found else None


@dataclass(slots=True)
class FirstValue:
    """The first JSON value of a text, where it ends, and what was forgiven to read it."""

    value: Any
    start: int
    end: int | None
    """Offset just past the value in the text; None when a truncated value never closes."""
    repair: Repair | None
    _text: str = field(repr=False)
    _walk: _BracketWalk | None = field(default=None, repr=False)

    def object_starts(self) -> list[int]:
        """Offsets of the objects at the top level or directly inside a top-level array.

        The n-th object of a decoded top-level array starts at the n-th offset. Walking the
        brackets costs more than decoding, so it is done only when asked (or when a repair
        needed it already).
        """
        if self._walk is None:
            self._walk = _walk(self._text, self.start)
        return self._walk.object_starts


def read_first_value(text: str, start: int = 0) -> FirstValue | None:
    """Decode the JSON value at `start` (see the module doc); None when nothing decodes."""
    try:
        value, end = _raw_decode(text, start)
        return FirstValue(value, start, end, None, text)
    except ValueError:
        pass
    walk = _walk(text, start)
    try:
        value, length = _decode_lenient(text[start:])
    except ValueError:
        value = _close_truncated(text, walk, start)
        if value is None:
            return None
        return FirstValue(value, start, walk.end, Repair.TRUNCATED, text, walk)
    # Offsets in the comma-stripped text are not offsets in `text`: prefer the walk's end.
    end = start + length if walk.end is None else walk.end
    return FirstValue(value, start, end, Repair.TRAILING_COMMAS, text, walk)
