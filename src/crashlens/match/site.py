"""Site rules: rule files of your own, added to the shipped library without a rebuild.

`--rules DIR` (repeatable) and the `CRASHLENS_RULES` environment variable (folders separated
by `os.pathsep`) name folders of rule files. A folder holds `<id>.toml` files, directly or in
`<category>/` subfolders (the shipped layout), so a copy of the shipped layout works as is.
Each file is validated exactly as a shipped rule is (`rules.parse_rule`: a bad one names its
file and field), may `use` the shipped remediation blocks, and its id must be new: an id that
clashes with a shipped rule or another site rule is an error naming both files.

The rules decide: a site rule's hit weighs into its category's score like a shipped rule's
does. The shipped classifier was trained on the shipped library, so it has no feature for a
site rule's id; it re-weighs the categories from their scores, and a failure the rules saw is
never talked away as `none` (`decide/rerank.py`). `tests/test_site_rules.py` checks that a
site rule alone decides a job the shipped rules leave `unknown`.

Site rules travel as text. A process that analyzes for another one (a Dask worker of `scan
--dask`, on a machine that does not see the driver's folders) gets the files the driver read
and validated (`SiteRuleFile`: the driver's path, the category folder, the TOML text) and
builds the same library from them (`carried_library`; `carrying` makes `library()` answer
with it in the current thread while a task runs), never reading folders of its own.
"""

from __future__ import annotations

import contextlib
import os
import re
import tomllib
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from re import _constants as _sre  # type: ignore[attr-defined]
from re import _parser  # type: ignore[attr-defined]
from typing import Any

from crashlens.errors import PatternError
from crashlens.library import default_pattern_dir
from crashlens.match.explanations import check_references
from crashlens.match.rules import (
    NOT_RULES,
    Rule,
    fact_from_line,
    load_remedies,
    parse_rule,
    shipped_rules,
)

RULES_ENV = "CRASHLENS_RULES"
"""Folders of site rules, separated by `os.pathsep`; `--rules DIR` adds to them."""


def site_dirs(
    extra: Iterable[str | Path] = (), environ: dict[str, str] | None = None
) -> tuple[Path, ...]:
    """The site-rule folders: `CRASHLENS_RULES` first, then `extra`, each once."""
    value = (os.environ if environ is None else environ).get(RULES_ENV, "")
    named = [part for part in value.split(os.pathsep) if part.strip()] + [str(p) for p in extra]
    return tuple(dict.fromkeys(Path(part).expanduser() for part in named))


def rule_files(directory: Path) -> list[tuple[Path, str | None]]:
    """Rule files of one site folder with the category folder each must match (None: flat).

    A missing folder or a folder that is a file is a PatternError: a typo in `--rules` must
    not silently leave the site rules out.
    """
    if not directory.is_dir():
        raise PatternError(str(directory), "site rule folder does not exist or is not a folder")
    flat = [(path, None) for path in sorted(directory.glob("*.toml"))]
    nested: list[tuple[Path, str | None]] = [
        (path, path.parent.name)
        for path in sorted(directory.glob("*/*.toml"))
        if path.parent.name not in NOT_RULES
    ]
    return flat + nested


@dataclass(frozen=True, slots=True)
class SiteRuleFile:
    """One site rule file as read on the machine that was given the folders."""

    source: str
    """Its path there: what errors and `rules show` name."""
    folder: str | None
    """The category folder it must match; None in a flat folder."""
    text: str


def read_site_files(directories: Sequence[Path]) -> tuple[SiteRuleFile, ...]:
    """The rule files of `directories`, read (each as UTF-8 text), in the loading order."""
    return tuple(
        SiteRuleFile(str(path), folder, _text(path))
        for directory in directories
        for path, folder in rule_files(directory)
    )


def _text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as error:
        raise PatternError(str(path), f"cannot read: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise PatternError(str(path), f"not UTF-8: {error}") from None


def _table(source: str, text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise PatternError(source, f"not valid TOML: {error}") from None


def load_site_rules(
    directories: Sequence[Path], shipped: Sequence[Rule] | None = None
) -> tuple[Rule, ...]:
    """Load and validate the rules of `directories`, sorted by id; ids must be new."""
    return rules_of_files(read_site_files(directories), shipped)


def rules_of_files(
    files: Sequence[SiteRuleFile], shipped: Sequence[Rule] | None = None
) -> tuple[Rule, ...]:
    """Validate site rule files already read, sorted by id; ids must be new."""
    shipped = shipped_rules() if shipped is None else shipped
    remedies = load_remedies(default_pattern_dir())
    seen = {rule.id: rule.source for rule in shipped}
    shipped_ids = frozenset(seen)
    loaded: list[Rule] = []
    for item in files:
        rule = parse_rule(
            _table(item.source, item.text), item.source, item.folder, remedies=remedies
        )
        if rule.id in seen:
            which = "a shipped rule" if rule.id in shipped_ids else "a site rule"
            message = f"id {rule.id!r} is already {which} ({seen[rule.id]})"
            raise PatternError(item.source, message)
        seen[rule.id] = item.source
        loaded.append(rule)
    everything = [*shipped, *loaded]
    check_references(_named(loaded), {rule.id: rule.role for rule in everything})
    return tuple(sorted(loaded, key=lambda r: r.id))


def _named(rules: Iterable[Rule]) -> Iterable[tuple[str, str, frozenset[str]]]:
    for rule in rules:
        for index, explanation in enumerate(rule.explains):
            yield rule.source, f"explains[{index}].symptom_rules", explanation.symptom_rules
        for index, ruling in enumerate(rule.rules_out):
            yield rule.source, f"rules_out[{index}].rules", ruling.rules


@cache
def _files(directories: tuple[Path, ...]) -> tuple[SiteRuleFile, ...]:
    return read_site_files(directories)


def _library(directories: tuple[Path, ...]) -> tuple[Rule, ...]:
    if not directories:
        return shipped_rules()  # the same tuple: the matcher and index caches key on its identity
    return carried_library(_files(directories))


@cache
def carried_library(files: tuple[SiteRuleFile, ...]) -> tuple[Rule, ...]:
    """The shipped library plus site rule files read elsewhere (once per set of files)."""
    shipped = shipped_rules()
    if not files:
        return shipped
    site = rules_of_files(files, shipped)
    return tuple(sorted((*shipped, *site), key=lambda r: r.id))


_CARRIED: ContextVar[tuple[SiteRuleFile, ...] | None] = ContextVar("crashlens_site_rules")
"""Site rule files a task brought along; None: the folders of this machine decide."""


@contextlib.contextmanager
def carrying(files: tuple[SiteRuleFile, ...]) -> Iterator[tuple[Rule, ...]]:
    """While inside, `library()` in this thread (or task) is `carried_library(files)`."""
    rules = carried_library(files)
    token = _CARRIED.set(files)
    try:
        yield rules
    finally:
        _CARRIED.reset(token)


def library(extra: Iterable[str | Path] = ()) -> tuple[Rule, ...]:
    """The rules to analyze with: the shipped library plus the site folders (once per set),
    or the site rule files a task carries here (`carrying`).

    With no site folder this is `shipped_rules()` itself.
    """
    carried = _CARRIED.get(None)
    if carried is not None:
        return carried_library(carried)
    return _library(site_dirs(extra))


def site_files(extra: Iterable[str | Path] = ()) -> tuple[SiteRuleFile, ...]:
    """The site rule files this process analyzes with, to send along to another one: those
    it carries, else those of its folders (validated first, so an error stops it here)."""
    carried = _CARRIED.get(None)
    if carried is not None:
        return carried
    directories = site_dirs(extra)
    carried_library(_files(directories))
    return _files(directories)


@dataclass(frozen=True, slots=True)
class ExampleResult:
    """What `crashlens rules test` found for one rule."""

    rule: Rule
    problems: tuple[str, ...]
    """Empty when the rule passed: each item is one failed example or check."""

    @property
    def passed(self) -> bool:
        """Whether every example and check passed."""
        return not self.problems


def check_rule(rule: Rule) -> ExampleResult:
    """Run one rule's examples and the shipped library's pattern checks on it."""
    problems: list[str] = []
    if (rule.patterns or rule.facts) and not rule.examples_match:
        problems.append("no [examples] match line")
    if (rule.patterns or rule.facts) and not rule.examples_no_match:
        problems.append("no [examples] no_match line")
    problems += [f"should match: {e!r}" for e in rule.examples_match if not _hits(rule, e)]
    problems += [f"should not match: {e!r}" for e in rule.examples_no_match if _hits(rule, e)]
    problems += [f"known_miss matches now: {e!r}" for e in rule.known_miss if _hits(rule, e)]
    for pattern in rule.patterns:
        problems += line_safety_problems(pattern, rule.ignore_case)
    if not (rule.remediation or rule.next_checks):
        problems.append("no remediation steps or next checks")
    problems += [f"reference is not https: {r!r}" for r in rule.references if r[:8] != "https://"]
    return ExampleResult(rule=rule, problems=tuple(problems))


def _hits(rule: Rule, example: str) -> bool:
    if rule.facts and re.match(r"^[A-Za-z_][\w.]*=", example):
        return rule.match_fact(fact_from_line(example))
    return rule.match_line(example) is not None


MIN_LITERAL = 4
"""Characters of literal text every match of a pattern must contain (the prefilter's hook)."""


def line_safety_problems(pattern: str, ignore_case: bool = False) -> list[str]:
    """Why `pattern` is not line-safe (`patterns/README.md`, "Writing patterns"); [] if it is."""
    problems = []
    if "\\s" in pattern:
        problems.append(f"use [ \\t] instead of \\s in {pattern!r}")
    if "(?<" in pattern.replace("(?P<", ""):
        problems.append(f"no lookbehind in {pattern!r}")
    if any("\\n" not in cls for cls in re.findall(r"\[\^[^\]]*\]", pattern)):
        problems.append(f"negated classes must exclude \\n in {pattern!r}")
    if pattern.endswith((".*", "[^\\n]*")):
        problems.append(f"drop the trailing .* of {pattern!r}")
    try:
        parsed = list(_parser.parse(pattern, re.IGNORECASE if ignore_case else 0))
    except re.error as error:
        return [*problems, f"{pattern!r} does not compile: {error}"]
    if required_literal(parsed) < MIN_LITERAL:
        problems.append(f"no {MIN_LITERAL}-character literal in {pattern!r}")
    return problems


def required_literal(items: list[tuple[Any, Any]]) -> int:
    """Longest run of literal characters that every match of this parsed sequence contains."""
    best = run = 0
    for op, arg in items:
        if op is _sre.LITERAL:
            run += 1
            best = max(best, run)
            continue
        run = 0
        if op is _sre.SUBPATTERN:
            best = max(best, required_literal(list(arg[-1])))
        elif op is _sre.BRANCH:
            best = max(best, min(required_literal(list(b)) for b in arg[1]))
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and arg[0] >= 1:
            best = max(best, required_literal(list(arg[2])))
    return best


def skeleton(rule_id: str, category: str) -> str:
    """A commented rule file for `crashlens rules new`: it loads as it is, and its test
    (`crashlens rules test`) passes once the pattern and the examples are filled in."""
    return _SKELETON.format(rule_id=rule_id, category=category)


_SKELETON = """\
# A site rule for crashlens (the fields: patterns/README.md of the crashlens source).
# Load it with `crashlens analyze --rules DIR ...` or CRASHLENS_RULES=DIR; check it with
# `crashlens rules test DIR`. The file name must stay `<id>.toml`.
id = '{rule_id}'
category = '{category}'
# root: the line names the cause itself; symptom: a failure whose cause must be inferred;
# context: a condition that makes the cause plausible without being a failure.
role = 'root'
# How likely the category is the cause given this hit alone: root 0.85-0.97, strong
# symptom 0.5-0.8, ambiguous symptom 0.2-0.45, context 0.2-0.5.
weight = 0.9
title = 'EDIT: a few words naming the failure'
summary = 'EDIT: one sentence a person can act on.'
# Where the rule looks: logs = launcher output + kernel log + other text files.
inputs = ['logs']
flags = ['IGNORECASE']

[match]
# Python regexes searched in one line each: [ \\t] instead of \\s, negated classes that
# exclude \\n ([^)\\n]*), no trailing .*, and a literal of 4+ characters in every match.
any = ['EDIT: a distinctive literal part of the line']
# none = ['a line matching this is never a hit']

[remediation]
steps = [
  {{ text = 'EDIT: what to do first.' }},
  # {{ use = 'resume-on-healthy-nodes' }},  # a shipped block (patterns/remedies/)
]
next_checks = [
  {{ text = 'EDIT: what to run to confirm the cause.', command = 'dmesg -T | tail -n 50' }},
]
references = []

[examples]
# Real lines the rule must hit (at least one) and near misses it must not (at least one).
match = []
no_match = []
"""
