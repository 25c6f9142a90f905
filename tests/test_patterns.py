"""The rule library: every rule file is valid, and every example inside it behaves as stated."""

from __future__ import annotations

import re
import re._constants as _sre
import re._parser as _parser
import shutil
import string
import tomllib
from pathlib import Path

import pytest

from crashlens.errors import PatternError
from crashlens.lab.train import rules_digest
from crashlens.match.catalogs import FIELDS as CATALOG_FIELDS
from crashlens.match.rules import (
    FIELDS,
    PLACEHOLDERS,
    REMEDY_DIR,
    Rule,
    default_pattern_dir,
    fact_from_line,
    load_remedies,
    load_rules,
)
from crashlens.model import Category

RULES = load_rules(default_pattern_dir())
IDS = [rule.id for rule in RULES]
REMEDIES = load_remedies(default_pattern_dir())


def _hits(rule: Rule, example: str) -> bool:
    if rule.facts and re.match(r"^[a-z_][a-z0-9_.]*=", example):
        return rule.match_fact(fact_from_line(example))
    return rule.match_line(example) is not None


def test_library_is_not_empty() -> None:
    assert len(RULES) >= 1


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_rule_examples(rule: Rule) -> None:
    if not rule.patterns and not rule.facts:
        assert rule.explains, f"{rule.source}: a rule without [match] only explains"
        return  # its examples are its explanations' (tests/test_explanations.py)
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
        assert not pattern.endswith((".*", "[^\\n]*")), f"{rule.source}: drop the trailing .*"


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_rule_has_remediation_or_is_context(rule: Rule) -> None:
    assert rule.remediation or rule.next_checks, f"{rule.source}: add remediation steps"
    for reference in rule.references:
        assert reference.startswith("https://"), f"{rule.source}: reference must be a URL"


def test_patterns_ship_in_the_package_tree() -> None:
    assert Path(default_pattern_dir(), "shm").is_dir()


def test_every_category_has_rules() -> None:
    """Each category needs enough rules to be found from more than one kind of evidence."""
    counts = dict.fromkeys(Category, 0)
    for rule in RULES:
        counts[rule.category] += 1
    thin = {category.value: n for category, n in counts.items() if n < 5}
    assert not thin, f"categories with fewer than 5 rules: {thin}"


def test_rule_ids_are_unique() -> None:
    assert len(IDS) == len(set(IDS)), sorted({i for i in IDS if IDS.count(i) > 1})


def _required_literal(items: list[tuple[object, object]]) -> int:
    """Longest run of literal text that every match of this sequence must contain, in UTF-8
    bytes (what the prefilter scans: three CJK characters are as distinctive as nine letters)."""
    best = run = 0
    for op, arg in items:
        if op is _sre.LITERAL:
            run += len(chr(arg).encode())  # type: ignore[call-overload]
            best = max(best, run)
            continue
        run = 0
        if op is _sre.SUBPATTERN:
            best = max(best, _required_literal(list(arg[-1])))  # type: ignore[index]
        elif op is _sre.BRANCH:
            best = max(best, min(_required_literal(list(b)) for b in arg[1]))  # type: ignore[index]
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and arg[0] >= 1:  # type: ignore[index]
            best = max(best, _required_literal(list(arg[2])))  # type: ignore[index]
    return best


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_patterns_have_a_distinctive_literal(rule: Rule) -> None:
    """Prefilters need a literal of 4+ characters that every match of a pattern contains."""
    for pattern in rule.patterns:
        parsed = list(_parser.parse(pattern, re.IGNORECASE if rule.ignore_case else 0))
        assert _required_literal(parsed) >= 4, f"{rule.source}: no 4-char literal in {pattern!r}"


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_placeholders_are_known_and_droppable(rule: Rule) -> None:
    """A `{name}` must be a known placeholder or a named group; one step must need none."""
    groups = {name for p in rule.patterns for name in re.compile(p).groupindex}
    groups |= {"path" for explanation in rule.explains if explanation.path}
    texts = [rule.summary] + [
        t for s in rule.remediation + rule.next_checks for t in (s.text, s.command or "")
    ]
    for text in texts:
        fields = [field for _, field, _, _ in string.Formatter().parse(text) if field is not None]
        assert all(re.fullmatch(r"[a-z_]+", f) for f in fields), f"{rule.source}: stray brace"
        for name in fields:
            assert name in PLACEHOLDERS.keys() | groups, f"{rule.source}: unknown {{{name}}}"
    steps = rule.remediation or rule.next_checks
    assert any("{" not in s.text + (s.command or "") for s in steps), (
        f"{rule.source}: add a step without placeholders (steps with unfilled ones are dropped)"
    )


def _library_with_remedies(tmp_path: Path) -> Path:
    """A library folder holding the shipped remedy blocks and no rules yet."""
    library = tmp_path / "patterns"
    shutil.copytree(default_pattern_dir() / REMEDY_DIR, library / REMEDY_DIR)
    return library


def test_library_cache_gives_the_same_rules_and_survives_damage(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CRASHLENS_CACHE_DIR", str(tmp_path / "cache"))
    library = _library_with_remedies(tmp_path)
    for rule in RULES[:5]:
        source = Path(rule.source)
        (library / source.parent.name).mkdir(parents=True, exist_ok=True)
        (library / source.parent.name / source.name).write_bytes(source.read_bytes())
    fresh = load_rules(library)
    entries = list((tmp_path / "cache").glob("rules-*.json"))
    assert len(entries) == 1
    assert load_rules(library) == fresh  # from the cache
    entries[0].write_bytes(b"{not json")
    assert load_rules(library) == fresh  # a damaged entry is rebuilt
    first = Path(RULES[0].source)
    first = library / first.parent.name / first.name
    edited = round(RULES[0].weight + 0.01, 3)  # a weight the rule does not have, whatever it has
    first.write_text(
        first.read_text().replace("weight = ", f"weight = {edited} #"), encoding="utf-8"
    )
    assert load_rules(library) != fresh  # an edited file is not served from the cache
    assert len(list((tmp_path / "cache").glob("rules-*.json"))) == 2


def test_a_broken_rule_is_reported_even_when_a_cache_exists(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CRASHLENS_CACHE_DIR", str(tmp_path / "cache"))
    library = _library_with_remedies(tmp_path)
    # a rule with its own `any` list and no catalog reference (it loads without the tables)
    source = next(
        Path(rule.source)
        for rule in RULES
        if "any = [" in (text := Path(rule.source).read_text(encoding="utf-8"))
        and "catalog" not in text
    )
    (library / source.parent.name).mkdir(parents=True)
    target = library / source.parent.name / source.name
    target.write_bytes(source.read_bytes())
    load_rules(library)
    text = target.read_text(encoding="utf-8")
    target.write_text(text.replace("any = [", 'any = ["(unclosed", ', 1), encoding="utf-8")
    with pytest.raises(PatternError, match="does not compile"):
        load_rules(library)


def test_a_changed_remedy_reaches_its_rules_through_the_cache(tmp_path, monkeypatch) -> None:
    """Rule tables come from the cache, blocks are read afresh: an edit to a block shows."""
    monkeypatch.setenv("CRASHLENS_CACHE_DIR", str(tmp_path / "cache"))
    library = _library_with_remedies(tmp_path)
    rule = next(r for r in RULES if "{ use = 'shm-resize' }" in Path(r.source).read_text())
    (library / "shm").mkdir()
    shutil.copy(rule.source, library / "shm")
    assert load_rules(library)[0].remediation == rule.remediation
    block = library / REMEDY_DIR / "shm-resize.toml"
    block.write_text(block.read_text().replace("Stopgap while", "Until then,"), encoding="utf-8")
    changed = load_rules(library)[0].remediation
    assert changed != rule.remediation
    assert any(step.text.startswith("Until then,") for step in changed)
    block.unlink()
    with pytest.raises(PatternError, match="unknown remedy 'shm-resize'"):
        load_rules(library)


def _own_steps(rule: Rule) -> dict[str, list[tuple[str, str | None]]]:
    """The steps written in the rule's file (not those its `use` items bring in)."""
    table = tomllib.loads(Path(rule.source).read_text(encoding="utf-8"))["remediation"]
    return {
        key: [
            (item["text"], item.get("command")) for item in table.get(key, []) if "use" not in item
        ]
        for key in ("steps", "next_checks")
    }


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_rule_does_not_copy_a_whole_remedy_block(rule: Rule) -> None:
    """Shared steps are written once: a rule that needs a whole block uses it by name."""
    for key, own in _own_steps(rule).items():
        for remedy in REMEDIES.values():
            block = [(step.text, step.command) for step in remedy.steps]
            runs = [own[i : i + len(block)] for i in range(len(own) - len(block) + 1)]
            assert block not in runs, (
                f"{rule.source}: `{key}` copies the steps of {remedy.source}: "
                f"write {{ use = '{remedy.name}' }} instead"
            )


def test_every_remedy_block_is_used() -> None:
    used = {
        item["use"]
        for rule in RULES
        for key in ("steps", "next_checks")
        for item in tomllib.loads(Path(rule.source).read_text(encoding="utf-8"))
        .get("remediation", {})
        .get(key, [])
        if isinstance(item, dict) and "use" in item
    }
    idle = {
        name
        for name, remedy in REMEDIES.items()
        if name not in used and not remedy.generic_for and not remedy.unknown_with
    }
    assert not idle, f"remedy blocks no rule uses: {sorted(idle)}"


def test_every_category_and_the_unknown_verdict_have_generic_checks() -> None:
    generic = {remedy.generic_for for remedy in REMEDIES.values()}
    assert generic >= {category.value for category in Category} | {"unknown"}


def test_classifier_digest_follows_what_features_read_and_nothing_else(
    tmp_path, monkeypatch
) -> None:
    """Rewording a rule or its remediation keeps the shipped model fresh; a weight does not."""
    monkeypatch.setenv("CRASHLENS_CACHE_DIR", str(tmp_path / "cache"))
    library = tmp_path / "patterns"
    shutil.copytree(default_pattern_dir(), library)
    before = rules_digest(library)
    assert before == rules_digest()
    target = library / "shm" / "shm-docker-small.toml"
    original = target.read_text(encoding="utf-8")
    reworded = original.replace("title = '", "title = 'Reworded: ", 1)
    reworded = re.sub(r"(?m)^summary = .*$", "summary = 'New words.'", reworded)
    target.write_text(reworded, encoding="utf-8")
    block = library / REMEDY_DIR / "shm-resize.toml"
    block.write_text(block.read_text().replace("Stopgap", "Until then"), encoding="utf-8")
    xid = library / "tables" / "xid.toml"
    table = xid.read_text(encoding="utf-8")
    xid.write_text(table.replace('meaning = "', 'meaning = "Reworded: ', 1), encoding="utf-8")
    assert rules_digest(library) == before
    xid.write_text(table.replace('severity = "error"', 'severity = "info"', 1), encoding="utf-8")
    assert rules_digest(library) != before  # a rule may select Xid facts by severity
    xid.write_text(table, encoding="utf-8")
    target.write_text(original.replace("weight = 0.", "weight = 0.0", 1), encoding="utf-8")
    assert rules_digest(library) != before


README = Path(default_pattern_dir(), "README.md").read_text(encoding="utf-8")
README_SECTIONS = {
    "rule": "### Top level",
    "match": "### `[match]`",
    "match.facts": "### `[match] facts` conditions",
    "remediation": "### `[remediation]`",
    "step": "### Step items",
    "examples": "### `[examples]`",
    "remedy": "## Remedy blocks: `patterns/remedies/<name>.toml`",
    "explains": "### `[[explains]]`",
    "rules_out": "### `[[rules_out]]`",
    "explanation.examples": "### Explanation `examples`",
    "explanation.example": "### Explanation example items",
}


def _first_table_after(heading: str) -> list[str]:
    """The first cells of the Markdown table that follows `heading` (header row left out)."""
    lines = README.split("\n")
    assert heading in lines, f"patterns/README.md lost its section {heading!r}"
    rows: list[str] = []
    fenced = False
    for line in lines[lines.index(heading) + 1 :]:
        fenced ^= line.startswith("```")
        if line.startswith("|"):
            rows.append(line.split("|")[1].strip())
        elif rows or (line.startswith("#") and not fenced):
            break
    return rows[2:]


@pytest.mark.parametrize("kind", sorted(FIELDS))
def test_readme_names_every_field_the_loader_accepts(kind: str) -> None:
    documented = {cell.strip("`[]") for cell in _first_table_after(README_SECTIONS[kind])}
    assert documented == set(FIELDS[kind]), (
        f"patterns/README.md {README_SECTIONS[kind]!r}: missing "
        f"{sorted(FIELDS[kind] - documented)}, not accepted {sorted(documented - FIELDS[kind])}"
    )


def test_readme_placeholder_table_is_the_registry() -> None:
    table = "\n".join(
        ["| placeholder | value |", "|---|---|"]
        + [f"| `{name}` | {meaning} |" for name, meaning in PLACEHOLDERS.items()]
    )
    assert table in README, f"paste into patterns/README.md, section Placeholders:\n{table}"


def test_readme_names_every_catalog_field() -> None:
    named = set(re.findall(r"`\[*([a-z_]+)\]*`", README))
    missing = {name for names in CATALOG_FIELDS.values() for name in names} - named
    assert not missing, f"patterns/README.md does not name the catalog fields {sorted(missing)}"
