"""Where in a cited line its rule matched, for a renderer that must shorten the line.

A report's evidence carries the line and the id of the rule that hit it, not the span: the
terminal report finds the span again here when a line is too long for the screen, so the
part that made the line evidence is the part that stays. Renderers cannot import the rule
library (they sit below it), so the command line hands them this as a function.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache

from crashlens.match.rules import Rule
from crashlens.model import Evidence

Span = tuple[int, int]


def evidence_focus(rules: Iterable[Rule]) -> Callable[[Evidence], Span | None]:
    """A function from a cited line to the span its rule's first matching pattern covers;
    None for a fact of a structured input, an unknown rule or a line no pattern matches (a
    redacted or already shortened line)."""
    by_id = {rule.id: rule for rule in rules}

    def focus(item: Evidence) -> Span | None:
        rule = by_id.get(item.rule or "")
        if rule is None:
            return None
        for pattern in rule.patterns:
            found = _compiled(pattern, rule.flags).search(item.text)
            if found is not None and found.end() > found.start():
                return found.span()
        return None

    return focus


@lru_cache(maxsize=4096)
def _compiled(pattern: str, flags: int) -> re.Pattern[str]:
    return re.compile(pattern, flags)
