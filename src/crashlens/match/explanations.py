"""Cross-file explanations as data: a fact that explains a symptom, or that rules a cause out.

A symptom often means one thing on its own and another once a second input is read: `EROFS`
alone suggests a failing disk, but on a path the container mounted read-only it is the
container's configuration; an NCCL system error alone suggests /dev/shm, but with a 64 KiB
memlock limit and InfiniBand in use it is the locked-memory limit. A rule says so in TOML:

* `[[explains]]`: when every `when` item is met by a fact of any input (an item is a fact
  condition, or a list of them of which any one will do), the hits of `symptom_rules` (or the
  root and symptom hits of `symptom_category`) count for the explaining rule's category, with
  `weight`, and the report says which fact explained which line. Optionally the explanation
  holds only for a path on the mount the first item accepts (`path`), only for a fact naming
  something the job's own logs do not (`foreign`), or only when the facts agree on some
  qualifiers (`same`: the process and the full GPU are the same GPU).
* `[[rules_out]]`: when every `when` item is met, the hits of `rules` stop counting
  (IpcMode `host` makes the container's own ShmSize irrelevant), and the report says why.

This module validates those tables (the rule loader calls it) and says whether one holds;
`decide/explain.py` applies them. Each carries examples, checked by the tests.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from crashlens.errors import PatternError
from crashlens.model import Category, Fact, Hit, Role


class Condition(Protocol):
    """A fact condition (`match.conditions.FactCondition`): a key, and whether a fact meets it."""

    @property
    def key(self) -> str:
        """The fact key the condition is about."""
        ...

    def holds(self, fact: Fact) -> bool:
        """Whether `fact` meets the condition."""
        ...


ConditionParser = Callable[[dict[str, Any], str], tuple[Condition, ...]]
"""Reads `{"facts": [...]}` into conditions (the rule loader's own, so one schema serves both)."""

AnyOf = tuple[Condition, ...]
"""One `when` item: met by a fact that meets any one of its conditions."""


@dataclass(frozen=True, slots=True)
class Example:
    """One example of an explanation or ruling-out: a line (or `key=value` fact) and facts."""

    line: str
    """The symptom's line, or a `key=value` fact when the target rule matches facts."""
    facts: tuple[str, ...]
    """The other inputs' facts, as `key=value name=value ...` lines (see `fact_from_line`)."""


@dataclass(frozen=True, slots=True)
class Explanation:
    """`[[explains]]`: a fact explains a symptom, which then counts for the rule's category."""

    symptom_rules: frozenset[str]
    symptom_category: Category | None
    when: tuple[AnyOf, ...]
    weight: float
    """How likely the explaining rule's category is the cause, given the symptom and the fact."""
    note: str
    path: str | None = None
    """A regex with a `path` group, searched in the symptom's line: the explanation holds only
    for a path on the mount the first `when` condition accepts (the deepest mount point, among
    the facts of that condition's key, that contains the path)."""
    symptom_line: str | None = None
    """A regex the symptom's line must match (`re.search`), to explain only some of its lines."""
    foreign: str | None = None
    """A qualifier of the fact meeting the first condition (e.g. `pid`) whose value no fact of
    another input carries: something the job's own logs do not name."""
    same: tuple[str, ...] = ()
    """Qualifiers (e.g. `index`) the facts meeting the conditions must share, with a value."""
    examples_match: tuple[Example, ...] = ()
    examples_no_match: tuple[Example, ...] = ()

    def selects(self, hit: Hit) -> bool:
        """Whether `hit` is one of the symptoms this explanation is about."""
        if self.symptom_line is not None and re.search(self.symptom_line, hit.text) is None:
            return False
        if hit.rule_id in self.symptom_rules:
            return True
        return hit.category is self.symptom_category and hit.role is not Role.CONTEXT

    def grounds(self, hit: Hit, facts: Sequence[Fact]) -> tuple[Fact, ...] | None:
        """The facts that make this explanation hold for `hit`, one per condition, or None."""
        if not self.selects(hit):
            return None
        first, *rest = self.when
        if self.path is not None:
            path = self.path_of(hit)
            mount = _mount_holding(path, facts, first) if path else None
            leading = [mount] if mount is not None else []
        else:
            leading = [f for f in facts if _meets(first, f) and self._foreign(f, facts)]
        for lead in leading:
            others = _each_met(rest, facts, lead, self.same)
            if others is not None:
                return (lead, *others)
        return None

    def path_of(self, hit: Hit) -> str | None:
        """The path the symptom names (`path` group), when this explanation reads one."""
        if self.path is None:
            return None
        found = re.search(self.path, hit.text)
        return found.group("path") if found else None

    def _foreign(self, item: Fact, facts: Sequence[Fact]) -> bool:
        if self.foreign is None:
            return True
        value = item.attr(self.foreign)
        if value is None:
            return False
        return not any(
            other.path != item.path and str(other.attr(self.foreign)) == str(value)
            for other in facts
        )


@dataclass(frozen=True, slots=True)
class RuleOut:
    """`[[rules_out]]`: a fact that makes the hits of some rules irrelevant."""

    rules: frozenset[str]
    when: tuple[AnyOf, ...]
    note: str
    examples_match: tuple[Example, ...] = ()
    examples_no_match: tuple[Example, ...] = ()

    def grounds(self, hit: Hit, facts: Sequence[Fact]) -> tuple[Fact, ...] | None:
        """The facts that rule `hit` out, one per condition, or None."""
        if hit.rule_id not in self.rules:
            return None
        return _each_met(self.when, facts)


def _meets(item: AnyOf, fact: Fact) -> bool:
    return any(condition.holds(fact) for condition in item)


def _each_met(
    items: Iterable[AnyOf],
    facts: Sequence[Fact],
    lead: Fact | None = None,
    same: tuple[str, ...] = (),
) -> tuple[Fact, ...] | None:
    """A fact meeting each item (sharing `same` qualifiers with `lead`), or None."""
    wanted = [(name, lead.attr(name)) for name in same] if lead is not None else []
    if any(value is None for _, value in wanted):
        return None
    met: list[Fact] = []
    for item in items:
        found = next(
            (
                f
                for f in facts
                if _meets(item, f) and all(str(f.attr(n)) == str(v) for n, v in wanted)
            ),
            None,
        )
        if found is None:
            return None
        met.append(found)
    return tuple(met)


def _mount_holding(path: str, facts: Sequence[Fact], item: AnyOf) -> Fact | None:
    """The fact of the deepest mount point holding `path`, when `item` accepts it."""
    path = posixpath.normpath(path)
    keys = {condition.key for condition in item}
    best: Fact | None = None
    depth = -1
    for fact in facts:
        if fact.key not in keys:
            continue
        mount = posixpath.normpath(str(fact.value))
        inside = mount == "/" or path == mount or path.startswith(mount + "/")
        if inside and mount.startswith("/") and len(mount) > depth:
            best, depth = fact, len(mount)
    return best if best is not None and _meets(item, best) else None


# ---- validation (called by the rule loader) ----------------------------------------------


def _strings(table: dict[str, Any], key: str, where: str, path: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise PatternError(path, f"`{where}.{key}` must be a list of strings")
    return tuple(value)


def _text(table: dict[str, Any], key: str, where: str, path: str) -> str:
    value = table.get(key)
    if not isinstance(value, str) or not value.strip():
        raise PatternError(path, f"`{where}` needs `{key}`, a non-empty string")
    return value


def _conditions(
    table: dict[str, Any], where: str, path: str, parse: ConditionParser
) -> tuple[AnyOf, ...]:
    when = table.get("when")
    if not isinstance(when, list) or not when:
        raise PatternError(path, f"`{where}.when` must be a non-empty list of fact conditions")
    items: list[AnyOf] = []
    for index, item in enumerate(when):
        group = item if isinstance(item, list) else [item]
        if not group:
            raise PatternError(path, f"`{where}.when[{index}]` is an empty list")
        try:
            items.append(parse({"facts": group}, path))
        except PatternError as error:
            detail = str(error).removeprefix(f"{path}: ").replace("`match.facts`", "condition")
            raise PatternError(path, f"`{where}.when[{index}]`: {detail}") from None
    return tuple(items)


def _examples(
    table: dict[str, Any],
    where: str,
    path: str,
    fields: frozenset[str],
    example_fields: frozenset[str],
) -> tuple[tuple[Example, ...], tuple[Example, ...]]:
    examples = table.get("examples")
    if not isinstance(examples, dict):
        raise PatternError(path, f"`{where}` needs `examples` with `match` and `no_match`")
    unknown = set(examples) - fields
    if unknown:
        raise PatternError(
            path, f"`{where}.examples` has unknown fields: {', '.join(sorted(unknown))}"
        )
    parsed: list[tuple[Example, ...]] = []
    for kind in ("match", "no_match"):
        items = examples.get(kind)
        if not isinstance(items, list) or not items:
            raise PatternError(path, f"`{where}.examples.{kind}` needs at least one example")
        found = []
        for item in items:
            label = f"{where}.examples.{kind}"
            if not isinstance(item, dict) or set(item) - example_fields:
                raise PatternError(path, f"`{label}` items are tables of `line` and `facts`")
            line = _text(item, "line", label, path)
            found.append(Example(line=line, facts=_strings(item, "facts", label, path)))
        parsed.append(tuple(found))
    return parsed[0], parsed[1]


def _weight(table: dict[str, Any], where: str, path: str) -> float:
    value = table.get("weight")
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise PatternError(path, f"`{where}.weight` must be a number in (0, 1], not {value!r}")
    return float(value)


def _items(data: dict[str, Any], key: str, path: str) -> list[tuple[str, dict[str, Any]]]:
    items = data.get(key, [])
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise PatternError(path, f"`{key}` must be an array of tables (`[[{key}]]`)")
    return [(f"{key}[{index}]", item) for index, item in enumerate(items)]


def parse_explanations(
    data: dict[str, Any],
    path: str,
    parse: ConditionParser,
    fields: Mapping[str, frozenset[str]],
) -> tuple[Explanation, ...]:
    """The rule's `[[explains]]` tables, validated (`fields`: the loader's FIELDS)."""
    explanations = []
    for where, item in _items(data, "explains", path):
        unknown = set(item) - fields["explains"]
        if unknown:
            raise PatternError(path, f"`{where}` has unknown fields: {', '.join(sorted(unknown))}")
        rules = _strings(item, "symptom_rules", where, path)
        category = item.get("symptom_category")
        if category is not None:
            try:
                category = Category(category)
            except ValueError:
                raise PatternError(
                    path, f"`{where}.symptom_category` is not a category: {category!r}"
                ) from None
        if not rules and category is None:
            raise PatternError(path, f"`{where}` needs `symptom_rules` or `symptom_category`")
        pattern = item.get("path")
        if pattern is not None:
            if not isinstance(pattern, str):
                raise PatternError(path, f"`{where}.path` must be a regex string")
            try:
                compiled = re.compile(pattern)
            except re.error as error:
                raise PatternError(path, f"`{where}.path` does not compile: {error}") from None
            if "path" not in compiled.groupindex:
                raise PatternError(path, f"`{where}.path` needs a `(?P<path>...)` group")
        symptom_line = item.get("symptom_line")
        if symptom_line is not None:
            try:
                re.compile(str(symptom_line))
            except re.error as error:
                raise PatternError(
                    path, f"`{where}.symptom_line` does not compile: {error}"
                ) from None
            if not isinstance(symptom_line, str):
                raise PatternError(path, f"`{where}.symptom_line` must be a regex string")
        foreign = item.get("foreign")
        if foreign is not None and (not isinstance(foreign, str) or not foreign.isidentifier()):
            raise PatternError(path, f"`{where}.foreign` must be a qualifier name, not {foreign!r}")
        if pattern is not None and foreign is not None:
            raise PatternError(path, f"`{where}`: `path` and `foreign` cannot be combined")
        same = _strings(item, "same", where, path)
        if not all(name.isidentifier() for name in same):
            raise PatternError(path, f"`{where}.same` must list qualifier names")
        examples = _examples(
            item, where, path, fields["explanation.examples"], fields["explanation.example"]
        )
        explanations.append(
            Explanation(
                symptom_rules=frozenset(rules),
                symptom_category=category,
                when=_conditions(item, where, path, parse),
                weight=_weight(item, where, path),
                note=_text(item, "note", where, path),
                path=pattern,
                symptom_line=symptom_line,
                foreign=foreign,
                same=same,
                examples_match=examples[0],
                examples_no_match=examples[1],
            )
        )
    return tuple(explanations)


def parse_rules_out(
    data: dict[str, Any],
    path: str,
    parse: ConditionParser,
    fields: Mapping[str, frozenset[str]],
) -> tuple[RuleOut, ...]:
    """The rule's `[[rules_out]]` tables, validated (`fields`: the loader's FIELDS)."""
    found = []
    for where, item in _items(data, "rules_out", path):
        unknown = set(item) - fields["rules_out"]
        if unknown:
            raise PatternError(path, f"`{where}` has unknown fields: {', '.join(sorted(unknown))}")
        rules = _strings(item, "rules", where, path)
        if not rules:
            raise PatternError(path, f"`{where}.rules` must name at least one rule")
        examples = _examples(
            item, where, path, fields["explanation.examples"], fields["explanation.example"]
        )
        found.append(
            RuleOut(
                rules=frozenset(rules),
                when=_conditions(item, where, path, parse),
                note=_text(item, "note", where, path),
                examples_match=examples[0],
                examples_no_match=examples[1],
            )
        )
    return tuple(found)


def check_references(
    named: Iterable[tuple[str, str, Iterable[str]]], roles: dict[str, Role]
) -> None:
    """Every rule an explanation or ruling-out names exists; an explained symptom is not context.

    `named` holds (source file, field, rule ids it names); `roles` is every rule's role."""
    for source, where, ids in named:
        for rule_id in sorted(ids):
            role = roles.get(rule_id)
            if role is None:
                raise PatternError(source, f"`{where}` names unknown rule {rule_id!r}")
            if where.startswith("explains") and role is Role.CONTEXT:
                raise PatternError(
                    source, f"`{where}` names {rule_id!r}, a context rule: explain a failure line"
                )
