"""Finding candidate lines in big buffers with one multi-pattern pass.

The hot path of crashlens: a log is read in ~8 MiB chunks and every rule pattern and parser
anchor is searched at once. Hyperscan (a multi-pattern automaton over whole buffers, where a
wheel exists) reports match end offsets; the pure-Python backend (Linux aarch64 and anywhere
hyperscan is missing) runs each compiled pattern over the buffer. Both only *propose* lines:
the engine re-checks each candidate line with Python `re`, which is the authority, so the two
backends give identical results (tests/test_scan.py proves it on every shared sample).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import re
from collections.abc import Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from crashlens.match.diskcache import read_entry, write_entry
from crashlens.match.scan_forms import scan_forms
from crashlens.text.linear import Linear, linear_bytes
from crashlens.text.literals import required_literals

# One literal prefix (ESC) before the alternation lets `re` jump from escape to escape; the
# same sequences as `parsers.base.ANSI_RE` (an OSC holds no ESC, so none rescans the line).
_ANSI_BYTES = re.compile(
    rb"\x1b(?:\[[0-9;?]*[A-Za-z]|\][^\x07\n\x1b]*(?:\x07|\x1b\\)|[()][A-Za-z0-9])"
)


_UNSUPPORTED = re.compile(rb"(?<!\\)(?:\\\\)*(?:\((?:\?<?[=!]|\?>|\?\(|\?P=)|\\[1-9]|\\g[<{0-9])")
"""Constructs Hyperscan rejects (lookaround, atomic groups, conditionals, backreferences):
a pattern holding one is compiled in prefilter mode from the start. Finding them by compiling
each pattern alone, after the whole set failed, cost 1,100 compiles (2.6 s) and two full ones
on a fresh cache; the one-by-one search is kept for anything this misses. Only an unescaped
`(` or `\\` counts (an even run of backslashes before it); a false hit (one inside a character
class) only costs a looser prefilter."""


_LONG_BOUNDED = re.compile(
    r"((?<!\\)\.|\[\^(?:[^\]\\]|\\.)*\\n(?:[^\]\\]|\\.)*\])\{([0-9]+),([0-9]+)\}"
)
"""A long bounded repeat of a class that never matches a newline (`[^\\n]{0,300}`, `.{0,80}`)."""
_LOOSEN_FROM = 40


def _loosened(form: str) -> str:
    """`form` with long bounded repeats of non-newline classes made open (`[^\\n]{0,300}` ->
    `[^\\n]{0,}`), for Hyperscan only: its compile time grows with the bound (the rule library
    compiled 0.3 s faster, a tenth of a fresh cache's start), the search is linear either
    way, and the lines it proposes stay within one line (the class excludes the newline) and
    are a superset, which the line re-check narrows to the same results. Not for the Python
    backend, where an open repeat can backtrack."""

    def open_bound(match: re.Match[str]) -> str:
        atom, low, high = match.groups()
        return f"{atom}{{{low},}}" if int(high) >= _LOOSEN_FROM else match.group(0)

    if "}" not in form or "(?s" in form:  # a dot that matches newlines stays bounded
        return form
    return _LONG_BOUNDED.sub(open_bound, form)


@dataclass(frozen=True, slots=True)
class ScanPattern:
    """One pattern to search for: a Python-syntax regex that never crosses a line."""

    regex: str
    ignore_case: bool = False


class Backend(Protocol):
    """A multi-pattern searcher over one buffer."""

    name: str

    def ends(self, buffer: bytes, ignored: AbstractSet[int] = frozenset()) -> list[tuple[int, int]]:
        """(pattern index, match end offset) pairs, in any order; none of the patterns in
        `ignored` (the caller needs no more of their matches)."""

    def without(self, ignored: AbstractSet[int]) -> Backend:
        """A searcher that does not look for the patterns in `ignored` at all (indices kept),
        or this one when that would not save work."""

    @property
    def ignored_matches(self) -> int:
        """How many matches of ignored patterns the last `ends` call found and dropped."""

    def ignored_counts(self) -> dict[int, int]:
        """Per ignored pattern, the matches (or lines) of it the last `ends` call dropped."""


class PythonBackend:
    """Without hyperscan: slower, but available everywhere, with the same results.

    Every pattern but a few has required literals (crashlens.text.literals; the rule tests insist
    on one of 4+ characters). One multi-literal pass (polars' Aho-Corasick, in Rust) finds the
    lines holding any of them; each such line is then matched, in Python, by the patterns of
    the literals it holds. A pattern without literals runs over the whole buffer.
    """

    name = "python"

    def __init__(self, patterns: Sequence[ScanPattern]) -> None:
        self._compiled: list[Linear[bytes]] = []
        self._whole: list[int] = []
        """Patterns without literals: run over the whole buffer."""
        self._exact: dict[str, list[int]] = {}
        self._folded: dict[str, list[int]] = {}
        """Literal (bytes as latin-1 text, folded ones in lower case) -> its patterns."""
        self._dropped: dict[int, int] = {}
        forms = scan_forms([p.regex for p in patterns])
        for index, (p, regex) in enumerate(zip(patterns, forms, strict=True)):
            flags = re.MULTILINE | (re.IGNORECASE if p.ignore_case else 0)
            self._compiled.append(linear_bytes(regex, flags))
            prefilter = _prefilter(regex, p.ignore_case)
            if prefilter is None:
                self._whole.append(index)
                continue
            literals, fold = prefilter
            table = self._folded if fold else self._exact
            for literal in literals:
                table.setdefault(literal.decode("latin-1"), []).append(index)

    def ends(self, buffer: bytes, ignored: AbstractSet[int] = frozenset()) -> list[tuple[int, int]]:
        found: list[tuple[int, int]] = []
        dropped: dict[int, int] = {}
        self._dropped = dropped
        for index in self._whole:
            if index in ignored:
                continue
            whole = self._compiled[index].pattern
            found.extend((index, match.end()) for match in whole.finditer(buffer))
        for start, stop, indexes in self._candidate_lines(buffer):
            for index in indexes:
                if index in ignored:
                    # Counted by the prefilter alone: a line holding the pattern's literal.
                    dropped[index] = dropped.get(index, 0) + 1
                    continue
                # One end names the line, which is all the scan reports; the linear check
                # first, so a long line costs no backtracking search (crashlens.text.linear).
                linear = self._compiled[index]
                if linear.possible(buffer, start, stop):
                    match = linear.pattern.search(buffer, start, stop)
                    if match is not None:
                        found.append((index, match.end()))
        return found

    def without(self, ignored: AbstractSet[int]) -> Backend:
        return self  # an ignored pattern is never searched here: nothing to save

    @property
    def ignored_matches(self) -> int:
        return 0  # never narrowed: an ignored pattern costs no search here

    def ignored_counts(self) -> dict[int, int]:
        return self._dropped

    def _candidate_lines(self, buffer: bytes) -> Iterator[tuple[int, int, list[int]]]:
        """(start, end, patterns) of each line holding a literal, with the literals' patterns."""
        if not buffer or not (self._exact or self._folded):
            return
        import polars as pl  # deferred: only this backend needs it while scanning

        # latin-1 keeps one character per byte, so offsets in the text are offsets in bytes.
        lines = pl.Series(buffer.decode("latin-1").split("\n"), dtype=pl.String)
        masks = []
        if self._exact:
            masks.append(lines.str.contains_any(list(self._exact)))
        if self._folded:
            masks.append(lines.str.contains_any(list(self._folded), ascii_case_insensitive=True))
        rows = (masks[0] | masks[1] if len(masks) == 2 else masks[0]).arg_true()
        if rows.is_empty():
            return
        lengths = lines.str.len_chars()
        starts = ((lengths + 1).cum_sum() - lengths - 1).gather(rows).to_list()
        held = lines.gather(rows)
        # Which literals each such line holds, found in Rust too: only they name its patterns.
        none: list[list[str]] = [[]] * len(held)
        exact = (
            held.str.extract_many(list(self._exact), overlapping=True).to_list()
            if self._exact
            else none
        )
        folded = (
            held.str.extract_many(
                list(self._folded), ascii_case_insensitive=True, overlapping=True
            ).to_list()
            if self._folded
            else none
        )
        for start, length, exact_hits, folded_hits in zip(
            starts, lengths.gather(rows).to_list(), exact, folded, strict=True
        ):
            indexes = {i for literal in exact_hits for i in self._exact.get(literal, ())}
            # a case-insensitive hit comes back as written in the line
            indexes.update(
                i for literal in folded_hits for i in self._folded.get(_folded(literal), ())
            )
            yield start, start + length, sorted(indexes)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
"""Case folding as Hyperscan's caseless mode and the Aho-Corasick pass do it: ASCII only."""


def _prefilter(regex: str, ignore_case: bool) -> tuple[tuple[bytes, ...], bool] | None:
    found = required_literals(regex)
    if found is None:
        return None
    literals, inline_fold = found
    fold = ignore_case or inline_fold
    if fold and inline_fold and not all(_caseless_beyond_ascii(s) for s in literals):
        # The literal finder lowered the pattern's own `(?i)` literals: a cased letter past
        # ASCII may have been upper case in the pattern, which Hyperscan matches as written.
        return None
    # Folded as Hyperscan's caseless mode folds: ASCII letters only, the rest as written (a
    # German, French or CJK wording no longer sends its pattern over the whole buffer: on
    # lines of launcher events that cost 0.3 s a MiB).
    return tuple(
        sorted((s.translate(_ASCII_LOWER) if fold else s).encode("utf-8") for s in literals)
    ), fold


def _folded(text: str) -> str:
    """`text` with its ASCII letters in lower case (as `_prefilter` keys its literals)."""
    return text.lower() if text.isascii() else text.translate(_ASCII_LOWER)


def _caseless_beyond_ascii(text: str) -> bool:
    """Whether every character past ASCII in `text` has no case (CJK, punctuation...)."""
    return all(c.isascii() or c.lower() == c.upper() for c in text)


class HyperscanBackend:
    """All patterns in one Hyperscan block-mode database (prefilter mode where needed)."""

    name = "hyperscan"

    def __init__(
        self,
        patterns: Sequence[ScanPattern],
        ids: Sequence[int] | None = None,
        prefiltered: AbstractSet[int] | None = None,
    ) -> None:
        """`ids`: the index each pattern reports (default: its position); `prefiltered`: the
        ids known to need prefilter mode (found by the backend this one narrows)."""
        import hyperscan  # deferred: a native module, only needed when scanning

        self._hs = hyperscan
        self._patterns = tuple(patterns)
        self._ids = tuple(ids) if ids is not None else tuple(range(len(patterns)))
        self._dropped: list[int] = []
        """Per pattern index, the matches the last `ends` dropped (its patterns ignored)."""
        expressions = [
            _loosened(form).encode("utf-8") for form in scan_forms([p.regex for p in patterns])
        ]
        flags = [
            hyperscan.HS_FLAG_MULTILINE
            | hyperscan.HS_FLAG_ALLOWEMPTY
            | (hyperscan.HS_FLAG_CASELESS if p.ignore_case else 0)
            for p in patterns
        ]
        for index, pattern_id in enumerate(self._ids):
            known = prefiltered is not None and pattern_id in prefiltered
            if known or _UNSUPPORTED.search(expressions[index]):
                flags[index] |= hyperscan.HS_FLAG_PREFILTER
        self._prefiltered: frozenset[int] | None = None
        """The ids compiled in prefilter mode, once known: what `without` passes on."""
        self._empty = not expressions
        if self._empty:
            return
        cache = _cache_name(expressions, flags, None if ids is None else self._ids)
        cached = _load_cached(hyperscan, cache)
        if cached is not None:
            self._db = cached
            self._prefiltered = _load_prefiltered(cache)
            return
        try:
            self._db = _database(hyperscan, expressions, flags, self._ids)
        except Exception:
            # Constructs hyperscan rejects (backreferences, some assertions) are compiled in
            # prefilter mode: it then reports a superset, and the line re-check keeps results
            # exact. Found one by one only when the whole set fails, since each check is a
            # compile of its own (about 3 ms: 6 s for the rule library); so the answer is kept
            # beside the database and handed to every narrowed search of it, which would
            # otherwise pay the 6 s again for each set of patterns it leaves out.
            for index, expression in enumerate(expressions):
                if not _compiles(hyperscan, expression, flags[index]):
                    flags[index] |= hyperscan.HS_FLAG_PREFILTER
            self._db = _database(hyperscan, expressions, flags, self._ids)
        self._prefiltered = frozenset(
            pattern_id
            for pattern_id, flag in zip(self._ids, flags, strict=True)
            if flag & hyperscan.HS_FLAG_PREFILTER
        )
        _store(hyperscan, self._db, cache)
        _store_prefiltered(cache, self._prefiltered)

    def ends(self, buffer: bytes, ignored: AbstractSet[int] = frozenset()) -> list[tuple[int, int]]:
        if self._empty or not buffer:
            self._dropped = []
            return []
        found: list[tuple[int, int]] = []
        dropped = [0] * (max(self._ids) + 1)
        self._dropped = dropped

        def on_match(index: int, start: int, end: int, flags: int, context: object) -> None:
            # A pattern matching every line of a big chunk would otherwise hold a tuple per
            # match until the chunk is done (a progress anchor: 240 MiB on a 9 MiB log).
            if index in ignored:
                dropped[index] += 1
            else:
                found.append((index, end))

        self._db.scan(buffer, match_event_handler=on_match)
        return found

    def without(self, ignored: AbstractSet[int]) -> Backend:
        kept = [(i, p) for i, p in zip(self._ids, self._patterns, strict=True) if i not in ignored]
        if len(kept) == len(self._ids):
            return self
        return HyperscanBackend([p for _, p in kept], [i for i, _ in kept], self._prefiltered)

    @property
    def ignored_matches(self) -> int:
        return sum(self._dropped)

    def ignored_counts(self) -> dict[int, int]:
        return {index: count for index, count in enumerate(self._dropped) if count}


def _cache_name(
    expressions: list[bytes], flags: list[int], ids: Sequence[int] | None = None
) -> str | None:
    """The cache entry for the compiled database of these patterns (None: not cacheable).

    Compiling the rule library takes about 0.2 s, more than analyzing a small job folder; the
    serialized database loads in microseconds. Keyed by the patterns, flags and the hyperscan
    version, so a changed rule library simply gets a new entry.
    """
    digest = hashlib.sha256()
    try:
        digest.update(importlib.metadata.version("hyperscan").encode())
    except importlib.metadata.PackageNotFoundError:
        return None
    for expression, flag in zip(expressions, flags, strict=True):
        digest.update(expression + b"\0" + str(flag).encode() + b"\0")
    if ids is not None:
        digest.update(b"ids " + ",".join(map(str, ids)).encode())
    return f"hyperscan-{digest.hexdigest()[:24]}.db"


def _load_cached(hyperscan: Any, name: str | None) -> Any:
    data = read_entry(name) if name is not None else None
    if data is None:
        return None
    try:
        database = hyperscan.loadb(data, hyperscan.HS_MODE_BLOCK)
        database.scratch = hyperscan.Scratch(database)
    except Exception:  # corrupt or from another build: compile instead
        return None
    return database


def _store(hyperscan: Any, database: Any, name: str | None) -> None:
    if name is not None:
        write_entry(name, hyperscan.dumpb(database))


def _load_prefiltered(name: str | None) -> frozenset[int] | None:
    """The ids a cached database compiled in prefilter mode (None: not recorded)."""
    data = read_entry(f"{name}.prefilter") if name is not None else None
    if data is None:
        return None
    try:
        text = data.decode("ascii")
        return frozenset(int(word) for word in text.split(",") if word)
    except ValueError:  # a damaged entry: unknown, found again when needed
        return None


def _store_prefiltered(name: str | None, prefiltered: frozenset[int]) -> None:
    if name is not None:
        write_entry(f"{name}.prefilter", ",".join(map(str, sorted(prefiltered))).encode())


def _database(
    hyperscan: Any, expressions: list[bytes], flags: list[int], ids: Sequence[int] | None = None
) -> Any:
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(
        expressions=expressions,
        ids=list(ids) if ids is not None else list(range(len(expressions))),
        elements=len(expressions),
        flags=flags,
    )
    return db


def _compiles(hyperscan: Any, expression: bytes, flags: int) -> bool:
    try:
        _database(hyperscan, [expression], [flags])
    except Exception:
        return False
    return True


def hyperscan_available() -> bool:
    """Whether the hyperscan module imports on this machine."""
    try:
        import hyperscan  # noqa: F401
    except ImportError:
        return False
    return True


def make_backend(patterns: Sequence[ScanPattern], prefer: str = "auto") -> Backend:
    """Hyperscan when available (or asked for), else the pure-Python backend."""
    if prefer == "python" or (prefer == "auto" and not hyperscan_available()):
        return PythonBackend(patterns)
    return HyperscanBackend(patterns)


class Candidate(NamedTuple):
    """A line in which at least one pattern may match (a tuple: tens of thousands are made)."""

    lineno: int
    """1-based, counting `\\n`."""
    line: bytes
    """The line without its newline, ANSI escapes removed."""
    patterns: frozenset[int]


def strip_ansi(chunk: bytes) -> bytes:
    """Remove ANSI escape sequences (same newline count, so line numbers are kept)."""
    # split + join is ~15 % faster than sub() with an empty replacement on colored logs
    return b"".join(_ANSI_BYTES.split(chunk)) if b"\x1b" in chunk else chunk


NARROW_AFTER = 300_000
"""Matches of ignored patterns after which an input's search is rebuilt without them. Each
costs a callback (about 0.6 us measured from Hyperscan's scan, bench/hostile_inputs.py's 1 GiB
log of NCCL watchdog lines): a progress anchor settled on a training log's first line would
otherwise cost one for every later line (a 1 GiB log: 14 s). Rebuilding costs a compile of
about 0.6 s the first time and a cache read after (the narrowed database is kept on disk, per
rule library and set of patterns left out), so 300k callbacks (~0.2 s) is where a cached
rebuild has long paid off and an uncached one costs about what a million more would."""
PIECE_BYTES = 1024 * 1024
"""How much of a chunk one search covers. The matches of a search are held until it is done,
and `ignored` grows only between searches: a pattern that matches every line (a progress
anchor the parser settles on its first line) holds one piece's matches, not 8 MiB's."""
SAMPLE_EVERY = 64
"""While the search is narrowed and the caller wants counts (`ScanTally.counting`), one
piece in this many is searched with every pattern, so that the lines of the patterns left
out are still counted there (and estimated for the rest)."""


class ScanTally:
    """What a scan searched and the matches of ignored patterns it counted, as it goes.

    `searched`: bytes searched; `counted`: bytes searched with every pattern while `counting`,
    where `dropped` counts the matches of each ignored one (bytes a narrowed search covered
    count in `searched` only). The caller reads the counters between candidate lines.
    """

    __slots__ = ("counted", "counting", "dropped", "late", "newlines", "searched")

    def __init__(self) -> None:
        self.searched = 0
        self.counted = 0
        self.dropped: dict[int, int] = {}
        self.late: dict[int, int] = {}
        """Lines a search reported for patterns ignored only after it (each one seen, so
        counted as is: no share of `counted` stands for them)."""
        self.counting = False
        """Whether the caller wants the counts now: a narrowed search then still searches a
        sample of pieces with every pattern, to count there."""
        self.newlines: int | None = None
        """Newlines in the whole input, once the scan has read all of it (the scan counts
        them anyway, for line numbers: the caller need not count them again)."""

    def drop(self, patterns: Iterable[int]) -> None:
        """A line the search reported for `patterns`, dropped as they are now ignored."""
        late = self.late
        for index in patterns:
            late[index] = late.get(index, 0) + 1

    def add(self, size: int, counts: dict[int, int] | None) -> None:
        """One piece of `size` bytes searched; `counts`: the matches it dropped, when they
        were counted with every pattern in the search (else None)."""
        self.searched += size
        if counts is None:
            return
        self.counted += size
        dropped = self.dropped
        for index, count in counts.items():
            dropped[index] = dropped.get(index, 0) + count


def _pieces(chunks: Iterable[bytes], size: int = PIECE_BYTES) -> Iterator[bytes]:
    """The chunks, ANSI escapes removed, cut at newlines into pieces of about `size` bytes (a
    line longer than that is one piece)."""
    for raw_chunk in chunks:
        chunk = strip_ansi(raw_chunk)
        if len(chunk) <= size:
            yield chunk
            continue
        start = 0
        while len(chunk) - start > size:
            cut = chunk.rfind(b"\n", start, start + size)
            if cut < 0:
                cut = chunk.find(b"\n", start + size)
                if cut < 0:
                    break
            yield chunk[start : cut + 1]
            start = cut + 1
        if start < len(chunk):
            yield chunk[start:]


def scan_chunks(
    chunks: Iterable[bytes],
    backend: Backend,
    ignored: set[int] | frozenset[int] = frozenset(),
    tally: ScanTally | None = None,
) -> Iterator[Candidate]:
    """Yield candidate lines, in order, from newline-cut chunks of one input.

    A line proposed only by patterns in `ignored` (which the caller may grow, and shrink, as
    it goes) is not yielded: no slice, no tuple, not even its line number is counted until
    needed. A yielded line lists only the patterns not ignored when its chunk was searched.
    `tally`, when given, counts what was searched and the matches of ignored patterns.
    """
    lines_before = 0
    previous: tuple[bytes, int] | None = None
    narrowed: Backend | None = None
    narrowed_for: frozenset[int] = frozenset()
    dropped = pieces = 0
    for chunk in _pieces(chunks):
        if narrowed is not None and not narrowed_for <= ignored:
            narrowed, narrowed_for, dropped = None, frozenset(), 0  # patterns came back
        if dropped > NARROW_AFTER and not ignored <= narrowed_for:
            # Matches of ignored patterns still cost a callback each: past a point, search
            # without them (a database of the others, compiled once and cached on disk).
            narrowed_for = frozenset(ignored)
            narrowed, dropped = backend.without(narrowed_for), 0
        pieces += 1
        counting = tally is not None and tally.counting
        sample = counting and pieces % SAMPLE_EVERY == 0
        searcher = narrowed if narrowed is not None and not sample else backend
        if previous is not None:
            # Counted only when another chunk follows: a one-chunk log (most) skips its tail.
            lines_before += previous[0].count(b"\n", previous[1])
        by_start: dict[int, list[int]] = {}
        # The line of the previous match, chunk[line_from:line_to]: the ends of one line come
        # together, and looking back to the line's start for each of them cost n^2 on a long
        # line with a match every few bytes (a 2 MB line took 18 s).
        line_from, line_to = 0, -1
        matches = searcher.ends(chunk, ignored)
        dropped += searcher.ignored_matches
        if tally is not None:
            full = counting and searcher is backend
            tally.add(len(chunk), searcher.ignored_counts() if full else None)
        for index, end in matches:
            # A line-safe match never contains "\n", so its last byte is on its line.
            if not line_from <= end - 1 < line_to:
                line_from = chunk.rfind(b"\n", 0, max(end - 1, 0)) + 1 if end else 0
                line_to = chunk.find(b"\n", line_from)
                if line_to < 0:
                    line_to = len(chunk)
            start = line_from
            found = by_start.get(start)
            if found is None:
                by_start[start] = [index]
            else:
                found.append(index)
        counted_to = 0
        lineno = lines_before + 1
        for start in sorted(by_start):
            if ignored and ignored.issuperset(by_start[start]):
                if tally is not None:  # ignored since this piece was searched: count it
                    tally.drop(by_start[start])
                continue
            lineno += chunk.count(b"\n", counted_to, start)
            counted_to = start
            stop = chunk.find(b"\n", start)
            line = chunk[start : stop if stop >= 0 else len(chunk)]
            yield Candidate(lineno, line, frozenset(by_start[start]))
        lines_before = lineno - 1
        previous = (chunk, counted_to)
    if tally is not None:
        tally.newlines = lines_before + (previous[0].count(b"\n", previous[1]) if previous else 0)
