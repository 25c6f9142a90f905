"""Which lines of a text each replacement row can touch: one multi-pattern pass over the text.

Running every row's regex over every line is what made redaction crawl (0.3 MB/s): most lines
of a log hold nothing personal, and Python's `re` pays at each position for a pattern that
starts with a lookbehind or a character class. So each row carries a *gate*: a simple regex
that matches, on the same line, wherever the row's pattern can (a superset). The gates of all
rows are searched at once over the text folded to lower-case Latin-1 bytes (one byte per
character, so byte offsets are character offsets), and a row runs only on the lines its gate
hit. A gate can also be a `Run` of characters, found with `bytes.translate` and `find`.

Hyperscan (where a wheel exists) searches every gate in one pass; elsewhere polars searches
each gate line by line (Rust's `regex`; a gate it refuses is a Python `re` over the folded
bytes). Both only *propose* lines: the rows' own patterns decide, so the two backends redact
identically (tests/test_redact_leaks.py checks they propose the same lines).
"""

from __future__ import annotations

import codecs
import functools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

FOLD_ERRORS = "crashlens-fold"
"""The codec error handler that writes each character Latin-1 lacks as its stand-in byte."""
_OTHER = "\xff"
"""The stand-in of a character outside Latin-1 that is none of the below: a byte no gate's
class names (the gates are ASCII), so it fails `[a-z0-9]` and passes `[^/?#@]` just as the
character does in the rows' patterns (`?` did not: a user name in `://<user>@` hid its URL)."""
_CASED = re.compile("[a-z]", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def _stand_in(char: str) -> str:
    """The Latin-1 character the gates see for `char`, one Latin-1 lacks: what the rows'
    `str` patterns take it for. `re` matches `(?i)token` in `toKen` (the Kelvin sign folds to
    `k`), `ſecret` (long s) and `İ`/`ı` (dotted capital, dotless small i); `\\s` takes every
    Unicode space and `\\d` every decimal digit. Asked of `re` itself, character by
    character, so the table is what the patterns do (a scan of every code point at import
    costs half a second)."""
    if char.isspace():
        return " "
    if char.isdecimal():
        return str(unicodedata.decimal(char))
    if _CASED.fullmatch(char):
        for form in (char.lower(), char.upper(), char.casefold()):
            letter = form[:1].lower()
            if letter.isascii() and re.fullmatch(letter, char, re.IGNORECASE):
                return letter
    return _OTHER


_RUNS: dict[str, str] = {}
"""The stand-ins of runs of characters Latin-1 lacks, by run: a progress bar's blocks
(`▏`, `█▌`) recur on every update of a tqdm line, and a lookup costs half a join."""
_MAX_RUNS = 65536
_MAX_RUN_KEPT = 64


def _stand_ins(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    run = error.object[error.start : error.end]
    found = _RUNS.get(run)
    if found is None:
        found = "".join(map(_stand_in, run))
        if len(run) <= _MAX_RUN_KEPT and len(_RUNS) < _MAX_RUNS:
            _RUNS[run] = found
    return found, error.end


codecs.register_error(FOLD_ERRORS, _stand_ins)

_LATIN1_SPACES = bytes(c for c in range(256) if chr(c).isspace() and not bytes([c]).isspace())
"""Latin-1's spaces that `\\s` takes in a `str` and not in `bytes` (NEL, NBSP, the
separators 0x1c-0x1f): folded to a plain space, or `password\\xa0=...` passed no gate."""
_FOLD_TABLE = bytes.maketrans(
    bytes(range(ord("A"), ord("Z") + 1)) + _LATIN1_SPACES,
    bytes(range(ord("a"), ord("z") + 1)) + b" " * len(_LATIN1_SPACES),
)


_BAR_GLYPHS = tuple(
    (glyph, _stand_in(glyph))
    for glyph in "\u2588\u258f\u258e\u258d\u258c\u258b\u258a\u2589\u2501\u2578\u257a"
)
"""Progress bars' glyphs (tqdm's eighth blocks, rich's and Keras' heavy lines) with their
stand-ins, replaced before encoding: a training log's bar writes a run of them on every
update, and the codec calls `_stand_ins` once a run (a tqdm-heavy log: ~15 ms/MB), where
`str.replace` of each glyph costs ~1 ms/MB in all."""


def fold(text: str) -> bytes:
    """`text` as lower-case Latin-1 bytes: one byte per character, offsets unchanged; a
    character Latin-1 lacks becomes what the rows' patterns take it for (`_stand_in`)."""
    if not text.isascii():
        for glyph, stand_in in _BAR_GLYPHS:
            if glyph in text:
                text = text.replace(glyph, stand_in)
    return text.encode("latin-1", FOLD_ERRORS).translate(_FOLD_TABLE)


@dataclass(frozen=True, slots=True)
class Run:
    """A gate that is a run of at least `length` of the bytes `chars` (a base64 blob's).

    Found with `bytes.translate` and `bytes.find` on both backends: Hyperscan's bounded
    repeat of a wide class cost a third of its whole scan, the two C loops a fraction."""

    chars: bytes
    length: int
    mixed_case: bool = False
    """Only runs that hold an upper-case and a lower-case letter in the text itself (given
    to `Gates.lines`): a hex digest or a lower-case name is all one case."""
    part: int = 0
    """Only runs with `part` bytes in a row between slashes, where set: a path's names are
    shorter (`/opt/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL` is one run)."""

    def table(self) -> bytes:
        """Maps `chars` to 1 and every other byte to 0."""
        return bytes(1 if byte in self.chars else 0 for byte in range(256))


Gate = bytes | Run
"""A row's gate: a regex over the folded text, or a `Run`."""


class Gates:
    """The gates of a table of rows, compiled once: `lines()` maps a folded text to the rows
    each of its lines needs."""

    def __init__(
        self,
        gates: Sequence[Gate],
        *,
        backend: str = "auto",
        record: Sequence[int] = (),
        sharper: Sequence[bytes | None] = (),
    ) -> None:
        self._gates = tuple(gates)
        self._bits = tuple(1 << row for row in range(len(self._gates)))
        regexes = [(row, gate) for row, gate in enumerate(self._gates) if isinstance(gate, bytes)]
        self._python = tuple((row, re.compile(gate, re.MULTILINE)) for row, gate in regexes)
        self._runs = tuple(
            (row, gate.table(), b"\x01" * gate.length, gate.mixed_case, gate.part)
            for row, gate in enumerate(self._gates)
            if isinstance(gate, Run)
        )
        self._database: Any = None
        if regexes and backend in ("auto", "hyperscan"):
            # a row's sharper gate, where it has one, stands in for its gate with Hyperscan
            sharp = dict(enumerate(sharper))
            regexes = [(row, sharp.get(row) or gate) for row, gate in regexes]
            self._database = _hyperscan_database(regexes)
            if self._database is None and backend == "hyperscan":
                raise RuntimeError("hyperscan is not installed")
        self.backend = "hyperscan" if self._database is not None else "python"
        self.recorded = frozenset(record) if self._database is not None else frozenset()
        """The rows whose gate match ends `lines()` and `ends()` give (Hyperscan reports every
        end; `re` only those of non-overlapping matches, so the Python backend gives none)."""
        self._recorded = [(row, gate) for row, gate in regexes if row in self.recorded]
        self._recorded_database: Any = None
        """Built on first use (a changed line's gates): most short texts never need it."""
        self._by_line: tuple[list[tuple[int, str]], list[tuple[int, re.Pattern[bytes]]]] | None
        self._by_line = None
        """Without Hyperscan: the gates polars searches line by line, and those left to `re`
        (built on first use)."""

    def lines(
        self, folded: bytes, text: str | None = None, ends: dict[int, list[int]] | None = None
    ) -> dict[int, int]:
        """Line start offset -> bit mask of the rows whose gate matched on that line.

        `text` is what `folded` was folded from: a `Run` gate that asks for mixed case
        looks at it (without it, every run is proposed). `ends` gets, for each row of
        `recorded`, where its gate's matches end, ascending (`redact.anchors`)."""
        found: dict[int, int] = {}
        rfind, find, size = folded.rfind, folded.find, len(folded)
        bits = self._bits
        # The line of the last match and the rows it has so far: a line often holds several
        # matches in a row, which then cost no search.
        first, last, rows = 0, -1, 0

        def mark(row: int, end: int) -> None:
            nonlocal first, last, rows
            # `end` is exclusive; the character before it (a gate may end on the newline
            # after a line, never on the one before) sits on the line that starts after the
            # last newline before it, and that line runs to its own newline, included.
            at = end - 1 if end > 0 else 0
            if first <= at <= last:
                rows |= bits[row]
                return
            if rows:
                found[first] = found.get(first, 0) | rows
            first = rfind(b"\n", 0, at) + 1
            last = find(b"\n", first)
            if last < 0:
                last = size
            rows = bits[row]

        if self._database is not None:
            # The callback only records each match: a Python call from Hyperscan costs as
            # much as the work done with the match, which the loop below does without one.
            matches: list[tuple[int, int]] = []
            record = matches.append

            def on_match(row: int, _start: int, end: int, _flags: int, _context: object) -> None:
                record((row, end))

            self._database.scan(folded, match_event_handler=on_match)
            found_ends: list[list[int] | None] = [None] * len(self._gates)
            if ends is not None:
                for row in self.recorded:
                    found_ends[row] = ends.setdefault(row, [])
            _mark_matches(matches, folded, bits, found, found_ends)
            if ends is not None:
                for row_ends in ends.values():
                    row_ends.sort()
        else:
            searched: Sequence[tuple[int, re.Pattern[bytes]]] = self._python
            if len(folded) >= _POLARS_FROM:
                by_polars, searched = self._line_gates()
                if by_polars:
                    _lines_by_polars(folded, by_polars, bits, found)
            for row, pattern in searched:
                for match in pattern.finditer(folded):
                    mark(row, match.end())
        for row, table, needle, mixed_case, part in self._runs:
            marked = folded.translate(table)
            at = marked.find(needle)
            cased = text if mixed_case else None
            while at >= 0:
                if cased is not None or part:
                    stop = marked.find(b"\x00", at)
                    if _left_alone(folded, cased, at, stop if stop >= 0 else size, part):
                        at = marked.find(needle, stop) if stop >= 0 else -1
                        continue
                mark(row, at + len(needle))
                after = find(b"\n", at)
                if after < 0:
                    break
                at = marked.find(needle, after)
        if rows:
            found[first] = found.get(first, 0) | rows
        return found

    def _line_gates(self) -> tuple[list[tuple[int, str]], list[tuple[int, re.Pattern[bytes]]]]:
        """The regex gates polars takes (as `str` patterns over Latin-1 text), and the rest."""
        if self._by_line is None:
            by_polars: list[tuple[int, str]] = []
            by_re: list[tuple[int, re.Pattern[bytes]]] = []
            for row, pattern in self._python:
                line_pattern = _polars_pattern(pattern.pattern)
                if line_pattern is None:
                    by_re.append((row, pattern))
                else:
                    by_polars.append((row, line_pattern))
            self._by_line = (by_polars, by_re)
        return self._by_line

    def ends(self, folded: bytes) -> dict[int, list[int]]:
        """Row -> where its gate's matches end in `folded`, ascending, for the rows of
        `recorded` (a line the rows before changed: its gates are found again)."""
        found: dict[int, list[int]] = {}
        if self._recorded_database is None and self._recorded:
            self._recorded_database = _hyperscan_database(self._recorded)
        if self._recorded_database is None:
            return found

        def on_match(row: int, _start: int, end: int, _flags: int, _context: object) -> None:
            row_ends = found.get(row)
            if row_ends is None:
                found[row] = [end]
            else:
                row_ends.append(end)

        self._recorded_database.scan(folded, match_event_handler=on_match)
        for row_ends in found.values():
            row_ends.sort()
        return found


def _left_alone(folded: bytes, text: str | None, start: int, end: int, part: int) -> bool:
    """Whether a `Run` gate's run (`start`-`end`) is one its row leaves as it is: all one
    case in `text` (where given), or, with `part`, no `part` bytes in a row between slashes."""
    if text is not None:
        run = text[start:end]
        if run.lower() == run or run.upper() == run:
            return True
    return part > 0 and max(map(len, folded[start:end].split(b"/"))) < part


def _mark_matches(
    matches: list[tuple[int, int]],
    folded: bytes,
    bits: Sequence[int],
    found: dict[int, int],
    found_ends: list[list[int] | None],
) -> None:
    """What `Gates.lines` marks for each (row, end) of Hyperscan's matches, with every name
    a local (the loop runs once for each match of a text: `mark`'s shared state costs a cell
    access each time), and each recorded row's ends in `found_ends`."""
    rfind, find, size = folded.rfind, folded.find, len(folded)
    first, last, rows = 0, -1, 0
    for row, end in matches:
        at = end - 1
        if first <= at <= last:
            rows |= bits[row]
        else:
            # as `mark`: the line of the character before `end`, newline after it included
            if rows:
                found[first] = found.get(first, 0) | rows
            first = rfind(b"\n", 0, at if at > 0 else 0) + 1
            last = find(b"\n", first)
            if last < 0:
                last = size
            rows = bits[row]
        row_ends = found_ends[row]
        if row_ends is not None:
            row_ends.append(end)
    if rows:
        found[first] = found.get(first, 0) | rows


def _polars_pattern(gate: bytes) -> str | None:
    """`gate` as polars' `str.contains` takes it, or None where polars is missing or refuses
    it. Polars searches with Rust's `regex` (linear time, a literal prefilter) over the
    folded text decoded as Latin-1, one character for each byte: `\\s` there is Unicode's,
    which within Latin-1 adds NEL and NBSP, and `fold` writes both as a plain space."""
    try:
        import polars as pl
    except ImportError:
        return None
    pattern = gate.decode("latin-1")
    try:
        pl.Series([""], dtype=pl.String).str.contains(pattern)
    except Exception:  # noqa: BLE001 - any refusal leaves the gate to `re`
        return None
    return pattern


_POLARS_FROM = 64 * 1024
"""Texts this long go to polars: a call costs it ~7 ms whatever the length (`re` takes
that long over ~25 KB), and `redact_report` writes many short texts."""
_POLARS_BLOCK = 4 * 1024 * 1024
"""Bytes of a text polars takes at a time (its lines held twice, as `str` and in a Series)."""


def _lines_by_polars(
    folded: bytes, gates: Sequence[tuple[int, str]], bits: Sequence[int], found: dict[int, int]
) -> None:
    """Each gate searched line by line, the lines it matches marked in `found`.

    `re` searched each gate over the whole text from every place (a gate that starts with a
    class or an alternation costs a try at each byte): 40 gates ran at 2-3 MB/s. A gate is a
    superset of its row's matches on the same line, so a line where it matches nothing is
    one the row leaves as it is, whether or not a match over the whole text runs past the
    line's end (which `re` and Hyperscan also propose). A long text goes in blocks of whole
    lines."""
    import polars as pl

    offset, size = 0, len(folded)
    while True:
        cut = folded.find(b"\n", offset + _POLARS_BLOCK) if size - offset > _POLARS_BLOCK else -1
        lines = folded[offset : cut if cut >= 0 else size].decode("latin-1").split("\n")
        series = pl.Series(lines, dtype=pl.String)
        starts: list[int] | None = None
        for row, pattern in gates:
            hits = series.str.contains(pattern).arg_true().to_list()
            if not hits:
                continue
            if starts is None:
                # each line's start: the lengths of the lines before it, and a newline each
                starts = list(accumulate(map((1).__add__, map(len, lines)), initial=offset))
            bit = bits[row]
            for index in hits:
                start = starts[index]
                found[start] = found.get(start, 0) | bit
        if cut < 0:
            return
        offset = cut + 1


def _hyperscan_database(gates: Sequence[tuple[int, bytes]]) -> Any:
    try:
        import hyperscan
    except ImportError:
        return None
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    flags = hyperscan.HS_FLAG_MULTILINE
    database.compile(
        expressions=[gate for _, gate in gates],
        ids=[row for row, _ in gates],
        elements=len(gates),
        flags=[flags] * len(gates),
    )
    return database


def rows_of(mask: int, cache: dict[int, tuple[int, ...]]) -> tuple[int, ...]:
    """The row indices set in `mask`, in table order (memoised: few masks recur)."""
    rows = cache.get(mask)
    if rows is None:
        rows = tuple(i for i in range(mask.bit_length()) if mask >> i & 1)
        cache[mask] = rows
    return rows


Edit = tuple[int, int, str]
"""(start, end, replacement): `text[start:end]` becomes `replacement`."""


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """`text` with each edit made (edits in text order, not overlapping)."""
    if not edits:
        return text
    pieces: list[str] = []
    position = 0
    for start, end, replacement in edits:
        pieces.append(text[position:start])
        pieces.append(replacement)
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


class Literals:
    """Where a set of byte strings stands in a text, as one `re` alternation of them finds
    it, from every occurrence (overlapping ones included) that Hyperscan's literal compiler
    reports; `None` from `build()` where Hyperscan is missing or refuses a token (the caller
    falls back to the alternation itself)."""

    def __init__(self, database: Any, tokens: Sequence[bytes]) -> None:
        self._database = database
        self._lengths = tuple(len(token) for token in tokens)

    @classmethod
    def build(cls, tokens: Sequence[bytes]) -> Literals | None:
        try:
            import hyperscan
        except ImportError:
            return None
        database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        try:
            database.compile(
                expressions=list(tokens),
                ids=list(range(len(tokens))),
                elements=len(tokens),
                flags=[0] * len(tokens),
                literal=True,
            )
        except hyperscan.error:
            return None  # a name past its length limit (a 100 KB "host" in a hostile log)
        return cls(database, tokens)

    def occurrences(self, folded: bytes) -> list[tuple[int, int, int]]:
        """(start, end, token index) of every occurrence of a token, overlapping ones too."""
        found: list[tuple[int, int, int]] = []
        record = found.append
        lengths = self._lengths

        def on_match(index: int, _start: int, end: int, _flags: int, _context: object) -> None:
            record((end - lengths[index], end, index))

        self._database.scan(folded, match_event_handler=on_match)
        return found

    def spans(self, folded: bytes) -> list[tuple[int, int, int]]:
        """(start, end, token index) of what one `re` alternation of the tokens, longest
        first, finds (`re.finditer`): the longest occurrence at the leftmost place, then the
        same from its end on."""
        found: list[tuple[int, int, int]] = []
        record = found.append
        lengths = self._lengths

        def on_match(index: int, _start: int, end: int, _flags: int, _context: object) -> None:
            # the end negated: a plain sort puts the longest first at a place (two tokens
            # that start and end alike are one token: the index never decides)
            record((end - lengths[index], -end, index))

        self._database.scan(folded, match_event_handler=on_match)
        found.sort()
        spans: list[tuple[int, int, int]] = []
        resume = 0
        for start, negated, index in found:
            if start >= resume:
                resume = -negated
                spans.append((start, resume, index))
        return spans
