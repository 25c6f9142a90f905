"""A rule's condition on one parsed fact (`[match] facts` in a rule file): `key op value`,
with qualifiers its attributes must have or must not have."""

from __future__ import annotations

import re
from dataclasses import dataclass

from crashlens.model import Fact, FactValue


@dataclass(frozen=True, slots=True)
class FactCondition:
    """A condition on one parsed fact: `key op value`."""

    key: str
    op: str
    value: FactValue | tuple[FactValue, ...]
    where: tuple[tuple[str, str], ...] = ()
    """Qualifiers the fact must have: (attr, regex) pairs, e.g. mount must match `^/dev/shm$`."""
    where_not: tuple[tuple[str, str], ...] = ()
    """Qualifiers the fact must not have: a fact whose attr matches the regex is rejected."""

    def holds(self, fact: Fact) -> bool:
        """Whether `fact` satisfies this condition."""
        if fact.key != self.key:
            return False
        for name, pattern in self.where:
            value = fact.attr(name)
            if value is None or re.search(pattern, str(value)) is None:
                return False
        for name, pattern in self.where_not:
            value = fact.attr(name)
            if value is not None and re.search(pattern, str(value)) is not None:
                return False
        actual = fact.value
        expected = self.value
        if self.op in ("in", "not_in"):
            assert isinstance(expected, tuple)
            inside = any(_equal(actual, item) for item in expected)
            return inside if self.op == "in" else not inside
        if self.op == "regex":
            return re.search(str(expected), str(actual)) is not None
        if self.op == "eq":
            return _equal(actual, expected)
        if self.op == "ne":
            return not _equal(actual, expected)
        number = _number(actual)
        bound = _number(expected)
        if number is None or bound is None:
            return False
        return {
            "lt": number < bound,
            "le": number <= bound,
            "gt": number > bound,
            "ge": number >= bound,
        }[self.op]


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return None


def _equal(actual: object, expected: object) -> bool:
    if isinstance(actual, bool) or isinstance(expected, bool):
        return str(actual).lower() == str(expected).lower()
    left, right = _number(actual), _number(expected)
    if left is not None and right is not None:
        return left == right
    return str(actual) == str(expected)
