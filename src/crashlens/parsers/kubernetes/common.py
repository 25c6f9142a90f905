"""What both Kubernetes forms share: quantities, eviction messages, and the fact builder."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from crashlens.model import Fact, FactValue
from crashlens.parsers.base import fact

MAX_FACTS = 400
"""Facts kept from one input (a list of thousands of pods or events says no more)."""

_QUANTITY_RE = re.compile(
    r"^([0-9]+(?:\.[0-9]+)?)(?:[eE]([0-9]+))?(Ki|Mi|Gi|Ti|Pi|Ei|k|K|M|G|T|P|E|m)?$"
)
_BINARY = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60}
_DECIMAL = {"k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
MAX_BYTES = 1 << 62
"""A memory quantity above this is no real limit (int64 bounds): not kept."""

_EVICTION_RE = re.compile(
    r"low on resource: \[?([A-Za-z-]+)\]?"
    r"|had condition: \[([A-Za-z]+)\]"
    r"|(ephemeral local storage|local ephemeral storage|EmptyDir volume)"
)


def quantity_bytes(text: object) -> int | None:
    """Bytes of a Kubernetes quantity (`64Gi`, `96G`, `128974848`, `129e6`); None otherwise."""
    if isinstance(text, bool):
        return None
    if isinstance(text, int):
        return text if 0 <= text <= MAX_BYTES else None
    if not isinstance(text, str):
        return None
    found = _QUANTITY_RE.match(text.strip())
    if found is None or len(text) > 40:
        return None
    number, exponent, unit = found.groups()
    value = float(number) * (10 ** int(exponent) if exponent else 1)
    if unit == "m":
        value /= 1000
    elif unit:
        value *= _BINARY.get(unit) or _DECIMAL[unit]
    return int(value) if 0 <= value <= MAX_BYTES else None


def eviction_resource(message: str) -> str | None:
    """The resource an eviction message names (`memory`, `ephemeral-storage`, ...)."""
    found = _EVICTION_RE.search(message)
    if found is None:
        return None
    if found.group(1):
        return found.group(1)
    if found.group(2):
        return found.group(2)
    return "ephemeral-storage"


@dataclass(slots=True)
class FactSink:
    """Facts of one input, bounded, each (key, value, attrs) once."""

    path: str
    facts: list[Fact] = field(default_factory=list)
    seen: set[tuple[str, str, str]] = field(default_factory=set)

    def add(
        self,
        key: str,
        value: FactValue,
        lineno: int | None,
        text: str | None,
        **attrs: FactValue | None,
    ) -> None:
        if len(self.facts) >= MAX_FACTS:
            return
        mark = (key, str(value), repr(sorted((k, v) for k, v in attrs.items() if v is not None)))
        if mark in self.seen:
            return
        self.seen.add(mark)
        self.facts.append(fact(key, value, self.path, lineno, text=text, **attrs))
