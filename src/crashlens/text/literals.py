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
