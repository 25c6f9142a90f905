"""Required literals: every match of a pattern contains one of them (the Python prefilter)."""

from __future__ import annotations

import re

import pytest

from crashlens.match.engine import build_matcher
from crashlens.match.rules import shipped_rules
from crashlens.model import InputKind
from crashlens.text.literals import required_literals


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("Bus error", ({"Bus error"}, False)),
        ("(?i)Killed", ({"killed"}, True)),
        ("exits with return code = -?[0-9]+", ({"exits with return code = "}, False)),
        (r"torchrun|deepspeed\.launcher", ({"torchrun", "deepspeed.launcher"}, False)),
        ("(?:Bus|Killed): ", ({"Bus", "Killed"}, False)),
        ("a|bc", None),
        ("[0-9]+", None),
    ],
)
def test_required_literals(pattern: str, expected: tuple[set[str], bool] | None) -> None:
    found = required_literals(pattern)
    assert (None if found is None else (set(found[0]), found[1])) == expected


def test_every_match_of_every_shipped_pattern_contains_a_literal() -> None:
    """Checked on every rule's match examples: the prefilter never hides a real match."""
    for rule in shipped_rules():
        for pattern in rule.patterns:
            found = required_literals(pattern)
            if found is None:
                continue
            literals, fold = found
            compiled = re.compile(pattern, re.IGNORECASE if rule.ignore_case else 0)
            for example in rule.examples_match:
                match = compiled.search(example)
                if match is None:
                    continue
                text = match.group(0).lower() if fold or rule.ignore_case else match.group(0)
                assert any(
                    lit.lower() in text if rule.ignore_case else lit in text for lit in literals
                ), (rule.id, pattern, example)


def test_most_scan_patterns_have_a_prefilter() -> None:
    matcher = build_matcher(shipped_rules(), "python")
    for kind in InputKind:
        search = matcher.scan_for(kind)
        whole = search.backend._whole  # type: ignore[attr-defined]
        prefiltered = len(search.targets) - len(whole)
        assert prefiltered >= 0.9 * len(search.targets), kind


def test_a_gate_is_closed_only_when_no_pattern_can_match() -> None:
    from crashlens.text.literals import Gate

    gate = Gate(r"Xid \(PCI:[0-9a-f:.]+\): ([0-9]+)", r"NVRM: GPU has fallen off the bus")
    assert gate.literals is not None
    assert not gate.may_match("kernel: usb 1-1: new high-speed USB device")
    found = gate.search("NVRM: Xid (PCI:0000:3b:00.0): 79, pid=1")
    assert found is not None and found.group(1) == "79"
    assert gate.search("NVRM: GPU has fallen off the bus.") is not None


def test_a_gate_without_usable_literals_stays_open() -> None:
    from crashlens.text.literals import Gate

    open_gate = Gate(r"[0-9]+", r"(?i)killed")
    assert open_gate.literals is None
    assert open_gate.may_match("anything at all")
    assert open_gate.search("Killed") is not None
