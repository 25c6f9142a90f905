"""The rule loader: validation errors name the file and field; fact conditions and qualifiers;
remedy blocks that rules use by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.errors import PatternError
from crashlens.match.rules import (
    fact_from_line,
    load_remedies,
    load_rule_file,
    load_rules,
    parse_rule,
)

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


def _library(tmp_path: Path, block: str, rule_steps: str) -> Path:
    """A library with one remedy block `drain.toml` and one rule whose steps are given."""
    (tmp_path / "remedies").mkdir()
    (tmp_path / "remedies" / "drain.toml").write_text(block, encoding="utf-8")
    (tmp_path / "hardware").mkdir()
    rule = f"""
id = 'hardware-test'
category = 'hardware'
role = 'root'
weight = 0.9
title = 'A GPU fault'
[match]
any = ['GPU has fallen off the bus']
[remediation]
steps = {rule_steps}
"""
    (tmp_path / "hardware" / "hardware-test.toml").write_text(rule, encoding="utf-8")
    return tmp_path


DRAIN = """about = 'Take the node out.'
steps = [
  { text = 'Drain {host}.', command = 'scontrol update nodename={host} state=drain' },
  { text = 'Drain the node in the scheduler.' },
]
"""


def test_a_use_item_is_replaced_by_the_block_steps_in_place(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CRASHLENS_CACHE_DIR", str(tmp_path / "cache"))
    steps = "[{ text = 'First.' }, { use = 'drain' }, { text = 'Last.' }]"
    (rule,) = load_rules(_library(tmp_path, DRAIN, steps))
    assert [step.text for step in rule.remediation] == [
        "First.",
        "Drain {host}.",
        "Drain the node in the scheduler.",
        "Last.",
    ]
    assert rule.remediation[1].command == "scontrol update nodename={host} state=drain"
    assert load_rule_file(tmp_path / "hardware" / "hardware-test.toml") == rule


@pytest.mark.parametrize(
    ("block", "steps", "message"),
    [
        (DRAIN, "[{ use = 'drian' }]", r"hardware-test.toml.*`steps` uses unknown remedy 'drian'"),
        (DRAIN, "[{ use = 'drain', text = 'x' }]", "holds only the block's name"),
        ("about = 'x'\nsteps = [{ use = 'drain' }]\n", "[{ text = 'x' }]", "cannot use another"),
        ("about = 'x'\nsteps = []\n", "[{ text = 'x' }]", "at least one item"),
        ("steps = [{ text = 'x' }]\n", "[{ text = 'x' }]", "missing field `about`"),
        (
            "about = 'x'\nsteps = [{ text = '{hots}' }]\n",
            "[{ text = 'x' }]",
            r"unknown placeholder \{hots\}",
        ),
        ("about = 'x'\ngeneric_for = 'disk'\nsteps = ['x']\n", "['x']", "must be a category"),
        ("about = 'x'\ngeneric_for = 'shm'\nsteps = ['{host}']\n", "['x']", "unknown placeholder"),
        ("about = 'x'\nuse = 'y'\nsteps = ['x']\n", "['x']", "unknown fields: use"),
        ("about = 'x'\nunknown_with = 'slurmm'\nsteps = ['x']\n", "['x']", "not 'slurmm'"),
        ("about = 'x'\nunknown_with = []\nsteps = ['x']\n", "['x']", "a name or a list"),
        (
            "about = 'x'\nunknown_with = 'ray'\ngeneric_for = 'shm'\nsteps = ['x']\n",
            "['x']",
            "not both",
        ),
        (
            "about = 'x'\nunknown_with = 'ray'\nsteps = ['{host}']\n",
            "['x']",
            "unknown placeholder",
        ),
    ],
)
def test_remedy_errors_name_the_file_and_field(
    tmp_path, monkeypatch, block: str, steps: str, message: str
) -> None:
    monkeypatch.setenv("CRASHLENS_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(PatternError, match=message):
        load_rules(_library(tmp_path, block, steps))


def test_generic_checks_name_each_category_once(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CRASHLENS_CACHE_DIR", str(tmp_path / "cache"))
    library = _library(tmp_path, "about = 'x'\ngeneric_for = 'hardware'\nsteps = ['a']\n", "['x']")
    (library / "remedies" / "more.toml").write_text(
        "about = 'y'\ngeneric_for = 'hardware'\nsteps = ['b']\n", encoding="utf-8"
    )
    with pytest.raises(PatternError, match=r"more.toml.*also in .*drain.toml"):
        load_remedies(library)


def test_a_launcher_or_input_kind_has_one_block_of_checks(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CRASHLENS_CACHE_DIR", str(tmp_path / "cache"))
    library = _library(tmp_path, "about = 'x'\nunknown_with = 'ray'\nsteps = ['a']\n", "['x']")
    (library / "remedies" / "more.toml").write_text(
        "about = 'y'\nunknown_with = ['kubectl_json', 'ray']\nsteps = ['b']\n", encoding="utf-8"
    )
    with pytest.raises(
        PatternError, match=r"more.toml.*unknown_with = 'ray'.*also in .*drain.toml"
    ):
        load_remedies(library)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"knock-on": True}, "unknown fields: knock-on"),
        ({"knock_on": "yes"}, "`knock_on` must be true or false"),
        ({"failure": 0}, "`failure` must be true or false"),
        ({"also": {"hardware": 1.5}}, r"`also.hardware` must be a weight in \(0, 1\]"),
        ({"also": {"disk": 0.1}}, "unknown category 'disk'"),
        (
            {"summary": "Disk {mountpoint} is full"},
            r"`summary` uses unknown placeholder \{mountpoint\}",
        ),
        ({"summary": "Disk {mount!r} is full"}, "malformed placeholder"),
        ({"summary": "Disk {mount is full"}, "stray brace"),
        ({"remediation": {"steps": [{"text": "{path}: {{x}}"}]}}, "literal braces"),
        ({"remediation": {"step": []}}, "`remediation` has unknown fields: step"),
        ({"remediation": {"steps": [{"text": "x", "cmd": "y"}]}}, "unknown fields: cmd"),
        ({"examples": {"matches": []}}, "`examples` has unknown fields: matches"),
        ({"match": {"any": ["x"], "not": ["y"]}}, "`match` has unknown fields: not"),
        ({"match": {"facts": [{"key": "k", "op": "in", "value": [{"a": 1}]}]}}, "list of strings"),
    ],
)
def test_invalid_fields_are_refused(change: dict[str, object], message: str) -> None:
    data = {**BASE, "match": {"any": ["No space left on device"]}, **change}
    with pytest.raises(PatternError, match=message):
        parse_rule(data, "df-disk-full.toml")


def test_placeholders_a_rule_may_use() -> None:
    groups = {"match": {"any": ["cannot write (?P<target>[^ \n]+)"]}}
    steps = {"steps": [{"text": "Free {mount}; check {target}.", "command": "df -h {path}"}]}
    rule = parse_rule({**BASE, **groups, "remediation": steps}, "df-disk-full.toml")
    assert rule.remediation[0].command == "df -h {path}"
    literal = {"steps": [{"text": "Check it.", "command": "docker inspect -f '{{.State}}' c"}]}
    parse_rule({**BASE, **groups, "remediation": literal}, "df-disk-full.toml")
