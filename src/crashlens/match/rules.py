"""The rule library: one TOML file per rule under `patterns/<category>/`, loaded and validated.

A rule is data: what it matches (line regexes, or conditions on parsed facts), the category
and role of a hit, how much a hit weighs, what to do about it, and examples that must and
must not match (run by the test suite). A malformed rule is fatal and names its file and
field, before any input is read.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from crashlens.errors import PatternError
from crashlens.library import default_pattern_dir
from crashlens.match.diskcache import read_entry, write_entry
from crashlens.model import Category, Fact, FactValue, InputKind, Role
from crashlens.parsers import LOG_KINDS  # what `inputs = ["logs"]` stands for: the log parsers

_OPS = ("eq", "ne", "lt", "le", "gt", "ge", "in", "not_in", "regex")
_FLAGS = {"IGNORECASE": re.IGNORECASE}


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


@dataclass(frozen=True, slots=True)
class Step:
    """A remediation step or check; `{name}` placeholders are filled from the evidence."""

    text: str
    command: str | None = None


@dataclass(frozen=True, slots=True)
class Rule:
    """One validated rule."""

    id: str
    category: Category
    role: Role
    weight: float
    title: str
    summary: str
    inputs: frozenset[InputKind]
    patterns: tuple[str, ...]
    """Line regexes (any one matches); searched in the ANSI-stripped line."""
    excludes: tuple[str, ...]
    """A line matching any of these is never a hit for this rule."""
    facts: tuple[FactCondition, ...]
    """Fact conditions (any one matches a fact)."""
    ignore_case: bool
    also: tuple[tuple[Category, float], ...]
    knock_on: bool
    """A symptom that is usually the consequence of another failure (watchdog, SIGTERM)."""
    against: bool
    """Counter-evidence: a hit lowers its category's score by its weight (a roomy /dev/shm
    speaks against shm) instead of supporting it. Only context rules can be `against`."""
    failure: bool
    """Whether a hit shows that something failed (context rules do not)."""
    remediation: tuple[Step, ...]
    next_checks: tuple[Step, ...]
    references: tuple[str, ...]
    examples_match: tuple[str, ...]
    examples_no_match: tuple[str, ...]
    known_miss: tuple[str, ...]
    source: str
    """The file the rule was loaded from."""

    @property
    def flags(self) -> int:
        """Python `re` flags for this rule's patterns."""
        return re.IGNORECASE if self.ignore_case else 0

    def match_line(self, line: str) -> dict[str, str] | None:
        """The named captures when this rule matches one line (ANSI-stripped), else None.

        This is the authority on a hit: the buffer scanners only propose candidate lines.
        """
        compiled, excluded = _compiled(self)
        for pattern in compiled:
            found = pattern.search(line)
            if found is None:
                continue
            if any(rx.search(line) for rx in excluded):
                return None
            return {k: v for k, v in found.groupdict().items() if v is not None}
        return None

    def match_start(self, line: str) -> int:
        """Where this rule's first pattern match begins in `line` (0 when none does)."""
        compiled, _ = _compiled(self)
        for pattern in compiled:
            found = pattern.search(line)
            if found is not None:
                return found.start()
        return 0

    def match_fact(self, fact: Fact) -> bool:
        """Whether this rule's fact conditions accept one fact."""
        return any(condition.holds(fact) for condition in self.facts)


@cache
def _compiled(rule: Rule) -> tuple[tuple[re.Pattern[str], ...], tuple[re.Pattern[str], ...]]:
    return (
        tuple(re.compile(p, rule.flags) for p in rule.patterns),
        tuple(re.compile(p, rule.flags) for p in rule.excludes),
    )


def _typed(raw: str) -> FactValue:
    if raw in ("true", "false"):
        return raw == "true"
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            continue
    return raw


def fact_from_line(line: str, path: str = "<example>") -> Fact:
    """Parse an example like `df.use_percent=100 mount=/ fstype=ext4` into a Fact.

    The first `key=value` is the fact; further space-separated `name=value` pairs are its
    qualifiers (only when the value has no spaces: `key=value with spaces` stays one value).
    """
    head, *rest = line.split(" ")
    qualifiers = [part.partition("=") for part in rest]
    if rest and all(sep and name.isidentifier() for name, sep, _ in qualifiers):
        body = head
        attrs = tuple((name, _typed(value)) for name, _, value in qualifiers)
    else:
        body, attrs = line, ()
    key, _, raw = body.partition("=")
    return Fact(key=key.strip(), value=_typed(raw), path=path, lineno=None, text=line, attrs=attrs)


def _require(data: dict[str, Any], key: str, kind: type | tuple[type, ...], path: str) -> Any:
    if key not in data:
        raise PatternError(path, f"missing field `{key}`")
    value = data[key]
    if not isinstance(value, kind):
        raise PatternError(path, f"field `{key}` has the wrong type ({type(value).__name__})")
    return value


def _strings(data: dict[str, Any], key: str, path: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise PatternError(path, f"field `{key}` must be a list of strings")
    return tuple(value)


def _steps(data: dict[str, Any], key: str, path: str) -> tuple[Step, ...]:
    steps = []
    for item in data.get(key, []):
        if isinstance(item, str):
            steps.append(Step(text=item))
        elif isinstance(item, dict) and isinstance(item.get("text"), str):
            command = item.get("command")
            if command is not None and not isinstance(command, str):
                raise PatternError(path, f"`{key}` command must be a string")
            steps.append(Step(text=item["text"], command=command))
        else:
            raise PatternError(path, f"each `{key}` item needs a `text` string")
    return tuple(steps)


def _kinds(values: tuple[str, ...], path: str) -> frozenset[InputKind]:
    kinds: set[InputKind] = set()
    for value in values:
        if value == "logs":
            kinds |= LOG_KINDS
        elif value == "*":
            kinds |= set(InputKind)
        else:
            try:
                kinds.add(InputKind(value))
            except ValueError:
                known = ", ".join(k.value for k in InputKind)
                raise PatternError(path, f"unknown input kind {value!r} (known: {known})") from None
    return frozenset(kinds)


def _fact_conditions(match: dict[str, Any], path: str) -> tuple[FactCondition, ...]:
    conditions = []
    for item in match.get("facts", []):
        if not isinstance(item, dict):
            raise PatternError(path, "each `match.facts` item must be a table")
        key = _require(item, "key", str, path)
        op = item.get("op", "eq")
        if op not in _OPS:
            raise PatternError(path, f"`match.facts` op {op!r} is not one of {', '.join(_OPS)}")
        value = _require(item, "value", (str, int, float, bool, list), path)
        if op in ("in", "not_in"):
            if not isinstance(value, list):
                raise PatternError(path, f"op {op!r} needs a list value")
            value = tuple(value)
        elif op == "regex":
            try:
                re.compile(str(value))
            except re.error as error:
                raise PatternError(
                    path, f"fact regex {value!r} does not compile: {error}"
                ) from None
        unknown = set(item) - {"key", "op", "value", "where", "where_not"}
        if unknown:
            raise PatternError(
                path, f"`match.facts` has unknown fields: {', '.join(sorted(unknown))}"
            )
        conditions.append(
            FactCondition(
                key=key,
                op=op,
                value=value,
                where=_qualifiers(item.get("where", {}), path),
                where_not=_qualifiers(item.get("where_not", {}), path),
            )
        )
    return tuple(conditions)


def _qualifiers(table: object, path: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise PatternError(path, "`where` / `where_not` must be tables of attr = 'regex'")
    for pattern in table.values():
        try:
            re.compile(pattern)
        except re.error as error:
            raise PatternError(
                path, f"`where` regex {pattern!r} does not compile: {error}"
            ) from None
    return tuple(sorted(table.items()))


def _against(data: dict[str, Any], role: Role, path: str) -> bool:
    against = bool(data.get("against", False))
    if against and role is not Role.CONTEXT:
        raise PatternError(path, "`against = true` needs role = 'context'")
    return against


def parse_rule(
    data: dict[str, Any], path: str, folder: str | None = None, compile_check: bool = True
) -> Rule:
    """Validate one rule's TOML table; `folder` is its category folder when loaded from disk.

    `compile_check=False` skips compiling the line patterns, for tables that already passed
    it (the rule-library cache): compiling ~450 regexes is most of the load time.
    """
    rule_id = _require(data, "id", str, path)
    if not re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", rule_id):
        raise PatternError(path, f"id {rule_id!r} must be kebab-case")
    if Path(path).suffix == ".toml" and Path(path).stem != rule_id:
        raise PatternError(path, f"id {rule_id!r} must equal the file name")
    try:
        category = Category(_require(data, "category", str, path))
    except ValueError:
        raise PatternError(path, f"unknown category {data['category']!r}") from None
    if folder is not None and folder != category.value:
        raise PatternError(path, f"category {category.value!r} must equal its folder {folder!r}")
    try:
        role = Role(_require(data, "role", str, path))
    except ValueError:
        message = f"role must be root, symptom or context, not {data['role']!r}"
        raise PatternError(path, message) from None
    weight = float(_require(data, "weight", (int, float), path))
    if not 0.0 < weight <= 1.0:
        raise PatternError(path, "weight must be in (0, 1]")
    match = _require(data, "match", dict, path)
    patterns = _strings(match, "any", path)
    excludes = _strings(match, "none", path)
    facts = _fact_conditions(match, path)
    if not patterns and not facts:
        raise PatternError(path, "`match` needs `any` patterns or `facts` conditions")
    flags = _strings(data, "flags", path)
    for flag in flags:
        if flag not in _FLAGS:
            raise PatternError(path, f"unknown flag {flag!r}")
    ignore_case = "IGNORECASE" in flags
    for pattern in patterns + excludes if compile_check else ():
        try:
            re.compile(pattern, re.IGNORECASE if ignore_case else 0)
        except re.error as error:
            raise PatternError(path, f"pattern {pattern!r} does not compile: {error}") from None
    also_table = data.get("also", {})
    if not isinstance(also_table, dict):
        raise PatternError(path, "`also` must be a table of category = weight")
    also = []
    for name, value in also_table.items():
        try:
            also.append((Category(name), float(value)))
        except ValueError:
            raise PatternError(path, f"`also` names unknown category {name!r}") from None
    remediation = data.get("remediation", {})
    examples = data.get("examples", {})
    if not isinstance(remediation, dict) or not isinstance(examples, dict):
        raise PatternError(path, "`remediation` and `examples` must be tables")
    return Rule(
        id=rule_id,
        category=category,
        role=role,
        weight=weight,
        title=_require(data, "title", str, path),
        summary=str(data.get("summary", data["title"])),
        inputs=_kinds(_strings(data, "inputs", path) or ("logs",), path),
        patterns=patterns,
        excludes=excludes,
        facts=facts,
        ignore_case=ignore_case,
        also=tuple(also),
        knock_on=bool(data.get("knock_on", False)),
        against=_against(data, role, path),
        failure=bool(data.get("failure", role is not Role.CONTEXT)),
        remediation=_steps(remediation, "steps", path),
        next_checks=_steps(remediation, "next_checks", path),
        references=_strings(remediation, "references", path),
        examples_match=_strings(examples, "match", path),
        examples_no_match=_strings(examples, "no_match", path),
        known_miss=_strings(examples, "known_miss", path),
        source=path,
    )


def load_rule_file(path: Path) -> Rule:
    """Load and validate one rule file."""
    return parse_rule(_table(path, path.read_bytes()), str(path), folder=path.parent.name)


def _table(path: Path, content: bytes) -> dict[str, Any]:
    try:
        return tomllib.loads(content.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise PatternError(str(path), f"not UTF-8: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise PatternError(str(path), f"not valid TOML: {error}") from None


def load_rules(directory: Path) -> tuple[Rule, ...]:
    """Load every `<category>/<id>.toml` under `directory`, sorted by id; ids must be unique.

    The parsed tables of a library that passed validation are cached (as JSON, keyed by a
    digest of every file's path and bytes and the Python version): a scan forks its workers
    only after loading the library, so its load time is paid before any job runs.
    """
    paths = [p for p in sorted(directory.glob("*/*.toml")) if p.parent.name != "tables"]
    contents = [path.read_bytes() for path in paths]
    digest = hashlib.sha256(f"{_LIBRARY_CACHE_FORMAT} {sys.version}".encode())
    for path, content in zip(paths, contents, strict=True):
        digest.update(f"{path.parent.name}/{path.name}\0{len(content)}\0".encode() + content)
    entry = f"rules-{digest.hexdigest()[:24]}.json"
    cached = _cached_tables(entry, len(paths))
    tables = cached or [_table(p, c) for p, c in zip(paths, contents, strict=True)]
    rules: list[Rule] = []
    seen: dict[str, str] = {}
    for path, table in zip(paths, tables, strict=True):
        rule = parse_rule(table, str(path), path.parent.name, compile_check=cached is None)
        if rule.id in seen:
            raise PatternError(str(path), f"duplicate id {rule.id!r} (also in {seen[rule.id]})")
        seen[rule.id] = str(path)
        rules.append(rule)
    if cached is None:  # the whole library is valid: worth keeping
        # A TOML date or time has no JSON form: such a library is just not cached.
        with contextlib.suppress(TypeError, ValueError):
            write_entry(entry, json.dumps(tables, ensure_ascii=False).encode("utf-8"))
    return tuple(sorted(rules, key=lambda r: r.id))


_LIBRARY_CACHE_FORMAT = 1
"""Bump when what a cached table means changes."""


def _cached_tables(entry: str, count: int) -> list[dict[str, Any]] | None:
    data = read_entry(entry)
    if data is None:
        return None
    try:
        tables = json.loads(data)
    except ValueError:
        return None
    if not isinstance(tables, list) or len(tables) != count:
        return None
    return tables if all(isinstance(t, dict) for t in tables) else None


@dataclass(frozen=True, slots=True)
class RuleIndex:
    """Lookups over one rule library that every report needs."""

    rules: Sequence[Rule]
    by_id: dict[str, Rule]
    knock_on: frozenset[str]
    """Ids of the rules whose hits are usually a consequence of another failure."""
    failure: frozenset[str]
    """Ids of the rules whose hits show that something failed."""


_INDEXES: dict[int, RuleIndex] = {}


def rule_index(rules: Sequence[Rule]) -> RuleIndex:
    """The index of `rules`, built once per library tuple (a scan decides thousands of jobs).

    Keyed by identity, as the matcher is: hashing 180 rules per report would cost more than
    building the index. A list (mutable) is indexed afresh every time.
    """
    found = _INDEXES.get(id(rules)) if isinstance(rules, tuple) else None
    if found is not None and found.rules is rules:
        return found
    index = RuleIndex(
        rules=rules,
        by_id={rule.id: rule for rule in rules},
        knock_on=frozenset(rule.id for rule in rules if rule.knock_on),
        failure=frozenset(rule.id for rule in rules if rule.failure),
    )
    if isinstance(rules, tuple):
        _INDEXES[id(rules)] = index
    return index


@cache
def shipped_rules() -> tuple[Rule, ...]:
    """The shipped rule library, loaded once per process."""
    return load_rules(default_pattern_dir())
