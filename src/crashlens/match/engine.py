"""Analyzing one input: read it, detect its kind, find rule hits and collect its facts.

`analyze_source` is a pure function of the input's bytes (plus the rule library), so a batch
scan can map it over thousands of jobs. Logs are streamed: only candidate lines found by the
multi-pattern scan are decoded, and the hits kept per rule are capped, so memory stays flat
whatever the size of the input.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from crashlens.inputs.detect import detect
from crashlens.inputs.discover import Source
from crashlens.inputs.read import (
    binary_reason,
    decode,
    read_head,
    sniff_text,
    text_chunks,
    utf16_encoding,
)
from crashlens.match.budget import WorkBudget, work_limits
from crashlens.match.rules import Rule
from crashlens.match.scan import Backend, ScanPattern, make_backend, scan_chunks
from crashlens.model import (
    Clock,
    Fact,
    Hit,
    InputAnalysis,
    InputKind,
    InputState,
    InputStatus,
    Line,
)
from crashlens.parsers import PARSERS, get_parser
from crashlens.parsers.base import DocumentParser, LogParser, Parser, clean_line
from crashlens.parsers.tail import Tail
from crashlens.text.linear import Linear, linear_text
from crashlens.text.literals import required_literals

MAX_HITS_PER_RULE = 20
"""Hits kept per rule and input (the earliest); a later line a rule's scan pattern proposes
costs nothing for that rule (it is neither confirmed nor decoded for it)."""
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
"""Structured inputs bigger than this are parsed from their first 64 MiB only."""
MAX_TEXT_CHARS = 2000
"""Evidence text longer than this is cut around the match (a 50 MB line stays readable)."""


@dataclass(frozen=True, slots=True)
class _Target:
    """What one scan pattern stands for: a rule, or an anchor of a log parser."""

    rule: Rule | None
    kind: InputKind | None
    anchor: int


@dataclass(frozen=True, slots=True)
class KindScan:
    """The one-pass search for one input kind: its rules' patterns and its parser's anchors.

    One database per kind, not one for all: a pattern of another kind (the launcher's
    `[N]:` anchor matches every `systemd[1]:` line of a kernel log) would still cost a
    callback and a candidate line for every match, only to be thrown away.
    """

    backend: Backend
    targets: tuple[_Target, ...]
    """Per pattern index of `backend`, what it stands for."""
    anchor_patterns: dict[int, int]
    """Per anchor of the kind's parser, its pattern index in `backend`."""
    rule_patterns: dict[str, tuple[int, ...]]
    """Per rule id, the indices of its patterns in `backend`."""


@dataclass(frozen=True, slots=True)
class Matcher:
    """The compiled scans over every rule pattern and parser anchor, built once per process."""

    rules: tuple[Rule, ...]
    prefer: str
    anchors: dict[InputKind, tuple[Linear[str], ...]]
    """Per log kind, its parser's anchors as the line re-check searches them (linear time)."""
    fact_rules: dict[InputKind, dict[str, tuple[Rule, ...]]]
    """Per kind and fact key, the fact rules that can match such a fact."""
    scans: dict[InputKind, KindScan] = field(default_factory=dict)
    """Per kind, built on first use (or all at once by `prepare_all`)."""

    def scan_for(self, kind: InputKind) -> KindScan:
        """The search for inputs of `kind` (compiled, or loaded from the cache, once)."""
        found = self.scans.get(kind)
        if found is None:
            found = self.scans[kind] = _compile_kind(self.rules, kind, self.prefer)
        return found

    def prepare_all(self) -> None:
        """Build every kind's search now (before forking workers, so they inherit them)."""
        for kind in InputKind:
            self.scan_for(kind)


_MATCHERS: dict[tuple[int, str], Matcher] = {}


def build_matcher(rules: tuple[Rule, ...], prefer: str = "auto") -> Matcher:
    """The matcher for `rules`, built once per rule library and process.

    Keyed by the identity of the tuple, not its value: hashing 180 rules for every input
    cost more than scanning a small log. The matcher keeps `rules` alive, so ids stay unique.
    """
    key = (id(rules), prefer)
    matcher = _MATCHERS.get(key)
    if matcher is None or matcher.rules is not rules:
        matcher = _new_matcher(rules, prefer)
        _MATCHERS[key] = matcher
    return matcher


def _new_matcher(rules: tuple[Rule, ...], prefer: str) -> Matcher:
    anchors = {
        parser.kind: tuple(linear_text(a) for a in parser.anchors)
        for parser in PARSERS
        if isinstance(parser, LogParser)
    }
    fact_rules: dict[InputKind, dict[str, tuple[Rule, ...]]] = {}
    for kind in InputKind:
        keyed: dict[str, list[Rule]] = {}
        for rule in rules:
            if kind in rule.inputs:
                for key in dict.fromkeys(condition.key for condition in rule.facts):
                    keyed.setdefault(key, []).append(rule)
        fact_rules[kind] = {key: tuple(found) for key, found in keyed.items()}
    return Matcher(rules=rules, prefer=prefer, anchors=anchors, fact_rules=fact_rules)


def _compile_kind(rules: tuple[Rule, ...], kind: InputKind, prefer: str) -> KindScan:
    """One scan over the patterns of the rules for `kind` and the anchors of its parser."""
    patterns: list[ScanPattern] = []
    targets: list[_Target] = []
    for rule in rules:
        if kind not in rule.inputs:
            continue
        for regex in rule.patterns:
            patterns.append(ScanPattern(regex, rule.ignore_case))
            targets.append(_Target(rule=rule, kind=None, anchor=-1))
    for parser in PARSERS:
        if isinstance(parser, LogParser) and parser.kind is kind:
            for index, regex in enumerate(parser.anchors):
                patterns.append(ScanPattern(regex))
                targets.append(_Target(rule=None, kind=kind, anchor=index))
    return KindScan(
        backend=make_backend(patterns, prefer),
        targets=tuple(targets),
        anchor_patterns={t.anchor: i for i, t in enumerate(targets) if t.rule is None},
        rule_patterns=_rule_patterns(targets),
    )


def _rule_patterns(targets: list[_Target]) -> dict[str, tuple[int, ...]]:
    found: dict[str, list[int]] = {}
    for index, target in enumerate(targets):
        if target.rule is not None:
            found.setdefault(target.rule.id, []).append(index)
    return {rule: tuple(indices) for rule, indices in found.items()}


class _HitBuffer:
    """Keeps the earliest hits per rule (a log repeating one line a million times stays small)."""

    def __init__(self) -> None:
        self.kept: dict[str, list[Hit]] = {}
        self.full: set[str] = set()
        """Rules with all their hits kept: a log of a million matching lines costs the
        rule 20 confirmations, not a million."""

    def add(self, hit: Hit) -> None:
        kept = self.kept.setdefault(hit.rule_id, [])
        if len(kept) < MAX_HITS_PER_RULE:
            kept.append(hit)
            if len(kept) == MAX_HITS_PER_RULE:
                self.full.add(hit.rule_id)

    def hits(self) -> tuple[Hit, ...]:
        return tuple(hit for rule_hits in self.kept.values() for hit in rule_hits)


def _shorten(text: str, around: int = 0) -> str:
    if len(text) <= MAX_TEXT_CHARS:
        return text
    start = max(0, min(around - MAX_TEXT_CHARS // 2, len(text) - MAX_TEXT_CHARS))
    return ("…" if start else "") + text[start : start + MAX_TEXT_CHARS] + "…"


def _segment(raw: str, rule: Rule) -> str:
    """For a line redrawn with `\\r` (progress bars), the redraw that holds the match."""
    if "\r" not in raw:
        return raw
    for segment in raw.split("\r"):
        if rule.match_line(segment) is not None:
            return segment
    return raw


def _hit(
    rule: Rule,
    path: str,
    lineno: int | None,
    text: str,
    captures: dict[str, str],
    rank: int | None = None,
    host: str | None = None,
    timestamp: float | None = None,
    clock: Clock | None = None,
) -> Hit:
    return Hit(
        rule_id=rule.id,
        category=rule.category,
        role=rule.role,
        weight=rule.weight,
        path=path,
        lineno=lineno,
        text=text,
        captures=tuple(sorted(captures.items())),
        rank=rank,
        host=host,
        timestamp=timestamp,
        clock=clock,
        also=rule.also,
        against=rule.against,
    )


def line_hits(rule: Rule, line: Line, captures: dict[str, str]) -> Hit:
    """A Hit for `rule` on `line`, its text centred on the match."""
    shown = _segment(line.raw, rule).strip()
    text = _shorten(shown, rule.match_start(shown))
    origin = (line.rank, line.host, line.timestamp, line.clock)
    return _hit(rule, line.path, line.lineno, text, captures, *origin)


def fact_hit(rule: Rule, fact: Fact) -> Hit:
    """A Hit for a fact rule on a fact (qualifiers become captures)."""
    captures = {name: str(value) for name, value in fact.attrs}
    captures.setdefault("value", str(fact.value))
    rank = fact.attr("rank")
    host = fact.attr("host")
    return _hit(
        rule,
        fact.path,
        fact.lineno,
        _shorten(fact.text),
        captures,
        rank if isinstance(rank, int) else None,
        str(host) if host is not None else None,
    )


def _scan(
    chunks: Iterable[bytes],
    path: str,
    kind: InputKind,
    parser: Parser,
    matcher: Matcher,
    buffer: _HitBuffer,
    settled: AbstractSet[int] = frozenset(),
    budget: WorkBudget | None = None,
) -> Iterator[tuple[Line, frozenset[int]]]:
    """Rule hits into `buffer`; yields each line that matched parser anchors, with them.

    `settled`: anchors the collector needs no more lines of (it may grow as lines are fed); a
    line proposed for those alone is skipped undecoded (every rank repeating one NCCL line
    was almost half the candidate lines of a scan). `budget`: the middle of a long input is
    thinned (`match.budget`).
    """
    kind_anchors = matcher.anchors.get(kind, ())
    search = matcher.scan_for(kind)
    # The scan patterns of settled anchors and of rules whose hits are all kept: a line
    # proposed by those alone is not even cut out of its chunk. `steady` holds them;
    # `ignored` (what the scan reads) also the patterns thinned in the middle.
    if budget is None:
        ignored: set[int] = set()
        steady: set[int] = set()
        tally, split = None, chunks
    else:
        ignored, steady, tally = budget.ignored, budget.steady, budget.tally
        split = budget.regions.split(chunks)
    full = buffer.full
    settled_before = full_before = 0
    for candidate in scan_chunks(split, search.backend, ignored, tally):
        if len(settled) > settled_before:
            settled_before = len(settled)
            steady.update(search.anchor_patterns[a] for a in settled)
            ignored.update(steady)
        if len(full) > full_before:
            full_before = len(full)
            steady.update(i for rule in full for i in search.rule_patterns.get(rule, ()))
            ignored.update(steady)
        patterns = candidate.patterns if budget is None else budget.take(candidate.patterns)
        if steady.issuperset(patterns):
            continue  # settled while this line was already on its way, or thinned
        targets = [search.targets[i] for i in patterns]
        raw = clean_line(decode(candidate.line))
        line: Line | None = None  # prefixes are split only for a line that is kept
        seen: set[str] = set()
        for target in targets:
            rule = target.rule
            if rule is None or rule.id in seen or rule.id in full:
                continue
            seen.add(rule.id)
            captures = rule.match_line(raw)
            if captures is not None:
                line = line or parser.located(path, candidate.lineno, raw)
                buffer.add(line_hits(rule, line, captures))
        wanted = {t.anchor for t in targets if t.kind is kind}
        matched = frozenset(i for i in wanted if kind_anchors[i].search(raw))
        if matched:
            yield line or parser.located(path, candidate.lineno, raw), matched


def _pattern_name(search: KindScan, index: int) -> str:
    """A scan pattern as the report names it: its rule's id, or the parser line it finds."""
    target = search.targets[index]
    if target.rule is not None:
        return target.rule.id
    parser = get_parser(target.kind) if target.kind is not None else None
    if not isinstance(parser, LogParser) or not 0 <= target.anchor < len(parser.anchors):
        return "a parser's lines"
    regex = parser.anchors[target.anchor]
    found = required_literals(regex)
    words = max(sorted(found[0]), key=len).strip() if found and found[0] else regex
    return f"the {parser.name} lines holding '{words}'"


def _fact_hits(facts: Iterable[Fact], kind: InputKind, matcher: Matcher) -> list[Hit]:
    by_key = matcher.fact_rules[kind]
    return [
        fact_hit(rule, f) for f in facts for rule in by_key.get(f.key, ()) if rule.match_fact(f)
    ]


def analyze_source(
    source: Source,
    rules: tuple[Rule, ...],
    forced_kind: InputKind | None = None,
    prefer_backend: str = "auto",
) -> InputAnalysis:
    """Read, detect, scan and parse one input. Never raises for bad input: it is skipped."""
    try:
        return _analyze(source, rules, forced_kind, prefer_backend)
    except (OSError, EOFError, ValueError) as error:
        reason = f"could not be read: {error}"
    except MemoryError:
        reason = "could not be read: out of memory"
    except Exception as error:  # zstandard/lzma/tar raise their own types mid-stream
        reason = f"could not be read: {type(error).__name__}: {error}"
    status = InputStatus(path=source.path, kind=None, status=InputState.SKIPPED, reason=reason)
    return InputAnalysis(status=status)


def _analyze(
    source: Source,
    rules: tuple[Rule, ...],
    forced_kind: InputKind | None,
    prefer_backend: str,
) -> InputAnalysis:
    with source.open() as stream:
        head = read_head(stream)
        if not head:
            return InputAnalysis(
                status=InputStatus(
                    source.path, None, InputState.SKIPPED, "empty file", source.size_bytes
                )
            )
        utf16 = utf16_encoding(head)
        reason = binary_reason(head) if forced_kind is None else None
        if reason is not None:
            return InputAnalysis(
                status=InputStatus(source.path, None, InputState.SKIPPED, reason, source.size_bytes)
            )
        detection = detect(sniff_text(head), source.name, forced_kind)
        parser = get_parser(detection.kind)
        matcher = build_matcher(rules, prefer_backend)
        buffer = _HitBuffer()
        warnings: list[str] = []
        facts: list[Fact]
        chunks = text_chunks(stream, head)  # the same stream: each input is opened once
        if isinstance(parser, DocumentParser):
            facts, parse_warnings = _parse_document(
                parser, chunks, source.path, detection.kind, matcher, buffer
            )
            warnings.extend(parse_warnings)
            if source.size_bytes and source.size_bytes > MAX_DOCUMENT_BYTES:
                warnings.append(f"only the first {MAX_DOCUMENT_BYTES >> 20} MiB were parsed")
        else:
            assert isinstance(parser, LogParser)
            collector = parser.collector(source.path)
            tail = Tail()  # how the log ends: the failure detector reads it
            budget = WorkBudget(work_limits())
            for line, anchors in _scan(
                tail.watch(chunks, count=False),
                source.path,
                detection.kind,
                parser,
                matcher,
                buffer,
                collector.settled,
                budget,
            ):
                collector.feed(line, anchors)
            assert budget.tally.newlines is not None  # the scan read the whole input
            tail.newlines = budget.tally.newlines
            collector.end(tail.lines(parser, source.path), tail.terminated)
            facts = collector.finish()
            thinned = budget.note(
                functools.partial(_pattern_name, matcher.scan_for(detection.kind))
            )
            if thinned is not None:
                warnings.append(thinned)
    for hit in _fact_hits(facts, detection.kind, matcher):
        buffer.add(hit)
    if utf16:
        warnings.append(f"decoded as {utf16}")
    warnings.extend(source.notes())  # how it was read: a link followed, a cut, a damaged stream
    note = "; ".join(warnings) if warnings else None
    status = InputStatus(
        path=source.path,
        kind=detection.kind,
        status=InputState.ANALYZED,
        reason=note,
        size_bytes=source.size_bytes,
    )
    return InputAnalysis(status=status, hits=buffer.hits(), facts=tuple(facts))


def _parse_document(
    parser: DocumentParser,
    chunks: Iterable[bytes],
    path: str,
    kind: InputKind,
    matcher: Matcher,
    buffer: _HitBuffer,
) -> tuple[list[Fact], tuple[str, ...]]:
    """Parse a structured input read whole; its text lines are scanned by the rules too."""
    kept: list[bytes] = []
    size = 0
    for chunk in chunks:
        kept.append(chunk)
        size += len(chunk)
        if size >= MAX_DOCUMENT_BYTES:
            break
    data = b"".join(kept)
    for _line, _anchors in _scan([data], path, kind, parser, matcher, buffer):
        pass
    result = parser.parse(decode(data).replace("\x00", ""), path)
    return list(result.facts), result.warnings
