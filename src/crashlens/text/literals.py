"""Required literals of a regex: strings one of which every match must contain.

The scan backend for machines without hyperscan would otherwise run hundreds of regexes over
every byte. With the literals it finds, in one Aho-Corasick pass, the lines that hold one, and
runs a pattern's regex only on the lines holding its literals, which gives the same matches.
"""

from __future__ import annotations

import re

# The parser `re` itself uses (private, but stable across 3.11+; the rule tests use it too).
from re import _constants as _sre  # type: ignore[attr-defined]
from re import _parser  # type: ignore[attr-defined]
from typing import Any

MIN_LITERAL = 3
"""Shorter literals hit too often to be worth a prefilter."""

Choice = frozenset[str]


def required_literals(pattern: str) -> tuple[frozenset[str], bool] | None:
    """(literals, ignore case) with every match containing one of the literals, or None."""
    try:
        parsed = _parser.parse(pattern)
    except re.error:
        return None
    ignore_case = bool(parsed.state.flags & re.IGNORECASE)
    best = _sequence(list(parsed))
    if best is None:
        return None
    literals = frozenset(s.lower() for s in best) if ignore_case else best
    return literals, ignore_case


def _better(a: Choice | None, b: Choice | None) -> Choice | None:
    if a is None:
        return b
    if b is None:
        return a
    # Fewer alternatives first, then longer shortest literal: both mean fewer false hits.
    return min((a, b), key=lambda c: (len(c), -min(len(s) for s in c)))


def _sequence(items: list[tuple[Any, Any]]) -> Choice | None:
    best: Choice | None = None
    run: list[str] = []

    def flush() -> None:
        nonlocal best
        if len(run) >= MIN_LITERAL:
            best = _better(best, frozenset({"".join(run)}))
        run.clear()

    for op, arg in items:
        if op is _sre.LITERAL:
            run.append(chr(arg))
            continue
        flush()
        if op is _sre.SUBPATTERN:
            best = _better(best, _sequence(list(arg[-1])))
        elif op is _sre.BRANCH:
            branches = [_sequence(list(branch)) for branch in arg[1]]
            if all(branch is not None for branch in branches):
                best = _better(best, frozenset().union(*branches))  # type: ignore[arg-type]
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and arg[0] >= 1:
            body = list(arg[2])
            if len(body) == 1 and body[0][0] is _sre.LITERAL and arg[0] >= MIN_LITERAL:
                # `={20,}`: the character repeated (a border line), up to 8 of them
                best = _better(best, frozenset({chr(body[0][1]) * min(arg[0], 8)}))
            else:
                best = _better(best, _sequence(body))
    flush()
    return best


class Gate:
    """Regexes with the literals derived from them: a cheap `in` test before any regex runs.

    One idiom for every "skip this line (or this input) unless it could match" shortcut:
    the literals come from the patterns themselves, so they cannot drift from them. Where a
    pattern has no usable literal (or is case-insensitive) the gate is open: `may_match` is
    always true and only the regexes decide, which keeps the shortcut exact.
    """

    __slots__ = ("literals", "patterns")

    def __init__(self, *patterns: str | re.Pattern[str]) -> None:
        self.patterns: tuple[re.Pattern[str], ...] = tuple(
            p if isinstance(p, re.Pattern) else re.compile(p) for p in patterns
        )
        self.literals: tuple[str, ...] | None = _union_literals(self.patterns)

    def may_match(self, text: str) -> bool:
        """False only when no pattern can match `text` (none of the literals is in it)."""
        literals = self.literals
        return literals is None or any(literal in text for literal in literals)

    def search(self, text: str) -> re.Match[str] | None:
        """The first pattern's match in `text` (in pattern order), or None; gated first."""
        if not self.may_match(text):
            return None
        for pattern in self.patterns:
            found = pattern.search(text)
            if found is not None:
                return found
        return None


def _union_literals(patterns: tuple[re.Pattern[str], ...]) -> tuple[str, ...] | None:
    """Substrings one of which every match of any pattern holds (None: the gate stays open)."""
    found: list[str] = []
    for pattern in patterns:
        literals = required_literals(pattern.pattern)
        if literals is None or literals[1] or pattern.flags & re.IGNORECASE:
            return None
        found.extend(sorted(literals[0]))
    return tuple(dict.fromkeys(found))
