"""The rule library: every rule file is valid, and every example inside it behaves as stated."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from crashlens.rules import Rule, default_pattern_dir, fact_from_line, load_rules

RULES = load_rules(default_pattern_dir())
IDS = [rule.id for rule in RULES]


def _hits(rule: Rule, example: str) -> bool:
    if rule.facts and re.match(r"^[a-z_][a-z0-9_.]*=", example):
        return rule.match_fact(fact_from_line(example))
    return rule.match_line(example) is not None


def test_library_is_not_empty() -> None:
    assert len(RULES) >= 1


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_rule_examples(rule: Rule) -> None:
    assert rule.examples_match, f"{rule.source}: add at least one [examples] match line"
    assert rule.examples_no_match, f"{rule.source}: add at least one [examples] no_match line"
    for example in rule.examples_match:
        assert _hits(rule, example), f"{rule.source}: should match: {example!r}"
    for example in rule.examples_no_match:
        assert not _hits(rule, example), f"{rule.source}: should not match: {example!r}"


@pytest.mark.parametrize("rule", [r for r in RULES if r.known_miss], ids=lambda r: r.id)
def test_known_misses_still_miss(rule: Rule) -> None:
    for example in rule.known_miss:
        assert not _hits(rule, example), (
            f"{rule.source}: {example!r} matches now: move it from known_miss to match"
        )


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_rule_is_line_safe(rule: Rule) -> None:
    """Buffer scanners see many lines at once: a pattern must not be able to cross one."""
    for pattern in rule.patterns:
        assert "\\s" not in pattern, f"{rule.source}: use [ \\t] instead of \\s in {pattern!r}"
        assert "(?<" not in pattern.replace("(?P<", ""), f"{rule.source}: no lookbehind"
        assert not re.search(r"\[\^[^\]]*\]", pattern) or all(
            "\\n" in cls for cls in re.findall(r"\[\^[^\]]*\]", pattern)
        ), f"{rule.source}: negated classes must exclude \\n: {pattern!r}"


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_rule_has_remediation_or_is_context(rule: Rule) -> None:
    assert rule.remediation or rule.next_checks, f"{rule.source}: add remediation steps"
    for reference in rule.references:
        assert reference.startswith("https://"), f"{rule.source}: reference must be a URL"


def test_patterns_ship_in_the_package_tree() -> None:
    assert Path(default_pattern_dir(), "shm").is_dir()
