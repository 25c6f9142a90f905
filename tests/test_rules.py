"""The rule loader: validation errors name the field; fact conditions and qualifiers."""

from __future__ import annotations

import pytest

from crashlens.errors import PatternError
from crashlens.match.rules import fact_from_line, parse_rule

BASE = {
    "id": "df-disk-full",
    "category": "filesystem",
    "role": "symptom",
    "weight": 0.6,
    "title": "A disk is full",
}


def _rule(**match: object):
    return parse_rule({**BASE, "match": match}, "df-disk-full.toml")


def test_where_and_where_not_qualify_a_fact() -> None:
    rule = _rule(
        facts=[
            {"key": "df.use_percent", "op": "ge", "value": 98, "where_not": {"mount": "^/dev/shm$"}}
        ]
    )
    assert rule.match_fact(fact_from_line("df.use_percent=100 mount=/data"))
    assert not rule.match_fact(fact_from_line("df.use_percent=100 mount=/dev/shm"))
    assert not rule.match_fact(fact_from_line("df.use_percent=50 mount=/data"))
    shm = _rule(
        facts=[{"key": "df.use_percent", "op": "ge", "value": 95, "where": {"mount": "shm"}}]
    )
    assert shm.match_fact(fact_from_line("df.use_percent=99 mount=/dev/shm"))
    assert not shm.match_fact(fact_from_line("df.use_percent=99"))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"category": "disk"}, "unknown category"),
        ({"role": "cause"}, "role must be"),
        ({"weight": 1.5}, "weight must be"),
        ({"id": "Bad_Id"}, "kebab-case"),
        ({"match": {"any": ["(unclosed"]}}, "does not compile"),
        ({"match": {}}, "needs `any` patterns or `facts`"),
        (
            {"match": {"facts": [{"key": "x", "op": "eq", "value": 1, "wher": {}}]}},
            "unknown fields",
        ),
        ({"inputs": ["syslogd"]}, "unknown input kind"),
    ],
)
def test_invalid_rules_name_the_problem(change: dict[str, object], message: str) -> None:
    data = {**BASE, "match": {"any": ["No space left on device"]}, **change}
    with pytest.raises(PatternError, match=message):
        parse_rule(data, "df-disk-full.toml")


def test_operators() -> None:
    rule = _rule(facts=[{"key": "kernel.xid", "op": "in", "value": [48, 79]}])
    assert rule.match_fact(fact_from_line("kernel.xid=79"))
    assert not rule.match_fact(fact_from_line("kernel.xid=45"))
    boolean = _rule(facts=[{"key": "docker.oom_killed", "value": True}])
    assert boolean.match_fact(fact_from_line("docker.oom_killed=true"))
    assert not boolean.match_fact(fact_from_line("docker.oom_killed=false"))
