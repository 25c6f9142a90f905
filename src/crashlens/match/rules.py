"""The rule library: one TOML file per rule under `patterns/<category>/`, loaded and validated.

A rule is data: what it matches (line regexes, or conditions on parsed facts), the category
and role of a hit, how much a hit weighs, what to do about it, and examples that must and
must not match (run by the test suite). Remediation steps that several rules share are
written once, as named blocks in `patterns/remedies/`, and a rule includes one with
`{ use = '<name>' }` where the block's steps belong. A malformed rule or block is fatal and
names its file and field, before any input is read. This module is the authority on the
schema: `FIELDS` lists every field it accepts and `PLACEHOLDERS` every `{name}` a text may use.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
import sys
import tomllib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from crashlens.errors import PatternError
from crashlens.library import default_pattern_dir
from crashlens.match.catalogs import catalog_patterns
from crashlens.match.conditions import FactCondition
from crashlens.match.diskcache import read_entry, write_entry
from crashlens.match.explanations import (
    Explanation,
    RuleOut,
    check_references,
    parse_explanations,
    parse_rules_out,
)
from crashlens.model import Category, Fact, FactValue, InputKind, Role
from crashlens.parsers import LOG_KINDS  # what `inputs = ["logs"]` stands for: the log parsers
from crashlens.parsers.launcher.tools import PLATFORM_NAMES, TOOL_NAMES
from crashlens.text.linear import Linear, linear_text

_OPS = ("eq", "ne", "lt", "le", "gt", "ge", "in", "not_in", "regex")
_FLAGS = {"IGNORECASE": re.IGNORECASE}

FIELDS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "rule": frozenset(
            {
                "id", "category", "role", "weight", "title", "summary", "inputs", "flags",
                "knock_on", "failure", "against", "also", "match", "remediation", "examples",
                "explains", "rules_out",
            }
        ),
        "match": frozenset({"any", "none", "facts", "catalog"}),
        "match.facts": frozenset({"key", "op", "value", "where", "where_not"}),
        "remediation": frozenset({"steps", "next_checks", "references", "generic_checks"}),
        "step": frozenset({"text", "command", "lang", "use"}),
        "examples": frozenset({"match", "no_match", "known_miss"}),
        "remedy": frozenset({"about", "steps", "generic_for", "accelerator", "unknown_with"}),
        "explains": frozenset(
            {"symptom_rules", "symptom_category", "symptom_line", "when", "path", "foreign",
             "same", "weight", "note", "examples"}
        ),
        "rules_out": frozenset({"rules", "when", "note", "examples"}),
        "explanation.examples": frozenset({"match", "no_match"}),
        "explanation.example": frozenset({"line", "facts"}),
    }
)  # fmt: skip
"""Every field the loader accepts, by table (`also` is open: its keys are categories).

Any other field is refused, so a misspelt one (`knock-on`) cannot be silently ignored.
`step` is an item of `steps` / `next_checks`; `remedy` is a file of `patterns/remedies/`;
`explains` / `rules_out` are a rule's cross-file explanations (`match/explanations.py`), whose
`examples` hold `explanation.example` items."""

SNIPPET_LANGS = ("shell", "yaml", "python", "conf")
"""What a step's `command` may be (`lang`, default `shell`): a command for a shell prompt, a
YAML file's lines (docker compose, Kubernetes), Python code, or lines of a `key value` config
file (`/etc/security/limits.conf`, `/etc/sysctl.conf`). Only `shell` is shown behind `$`."""

PLACEHOLDERS: Mapping[str, str] = MappingProxyType(
    {
        "shm_recommend": "recommended --shm-size (e.g. `16g`), computed from the GPU count and "
        "DataLoader workers; unset when neither is known",
        "shm_basis": "what that size is computed from, e.g. `4 GPUs x 4 DataLoader workers each`",
        "shm_size_h": "the current /dev/shm size, human-readable",
        "gpu_count": "GPUs on the node (nvidia-smi, else the launcher's nproc_per_node, else "
        "docker's GPU request)",
        "num_workers": "DataLoader workers, from the command line",
        "gpu_index": "index of the GPU the evidence points at (the hit's `gpu` or `index` "
        "group, a CUDA OOM's device, or nvidia-smi's GPU at the Xid's PCI id)",
        "gpu_pci": "PCI bus id of that GPU (the hit's `pci` group or the Xid's)",
        "gpu_serial": "serial number of that GPU (nvidia-smi)",
        "gpu_uuid": "UUID of that GPU (nvidia-smi)",
        "host": "the failing node (the hit's, else the launcher's first failure)",
        "rank": "the failing global rank (the hit's, else the launcher's first failure)",
        "exit_code": "the exit code of the launcher's first failure",
        "xid": "the Xid code",
        "xid_meaning": "what the Xid means (patterns/tables/xid.toml)",
        "xid_action": "what to do about the Xid (patterns/tables/xid.toml)",
        "oom_victim": "the process the OOM killer killed",
        "anon_rss_h": "the victim's resident memory, human-readable",
        "memory_limit_h": "the container's memory limit (docker inspect), human-readable",
        "tried_h": "the memory a CUDA OOM tried to allocate, human-readable",
        "total_h": "the GPU's total memory in a CUDA OOM, human-readable",
        "free_h": "the GPU's free memory in a CUDA OOM, human-readable",
        "mount": "mount point of the fullest filesystem (95 % or more used)",
        "path": "the path that failed (a named group of the rule's pattern)",
        "driver_version": "the NVIDIA driver version (nvidia-smi)",
        "cuda_version": "the CUDA version the driver supports (nvidia-smi)",
        "module_version": "the kernel module's version in an API mismatch",
        "client_version": "the user-space client's version in an API mismatch",
    }
)
"""Every `{name}` a summary or step may use besides the rule's own named groups, with what
it holds (`decide/remedy.py` computes them from the evidence; the README's table is checked
against this one). A step whose placeholder has no value in a report is dropped."""

_FORMATTER = string.Formatter()
_GROUP_NAME = re.compile(r"\(\?P<([A-Za-z_][A-Za-z0-9_]*)>")
REMEDY_DIR = "remedies"
"""The folder of shared remediation blocks, beside the category folders."""
NOT_RULES = frozenset({"tables", REMEDY_DIR})
"""Folders of the library that hold data, not rules."""
GENERIC_UNKNOWN = "unknown"
"""`generic_for` value of the checks that an `unknown` verdict ends with."""
ACCELERATORS = ("amd", "intel", "neuron", "ascend")
"""Accelerator families a `generic_for` block may be written for (`accelerator`), replacing
the NVIDIA-centric default of its category on a run whose evidence shows that family."""
UNKNOWN_WITH_NAMES = (*TOOL_NAMES, *PLATFORM_NAMES, *(kind.value for kind in InputKind))
"""What a block's `unknown_with` may name, in the order an `unknown` verdict shows their checks:
the launchers (`launcher.tool`, most specific first), the hosting platforms (`platform.name`),
then the input kinds."""


@dataclass(frozen=True, slots=True)
class Step:
    """A remediation step or check; `{name}` placeholders are filled from the evidence."""

    text: str
    command: str | None = None
    lang: str = "shell"
    """What `command` is (one of `SNIPPET_LANGS`): a shell command, or a snippet of a file."""


@dataclass(frozen=True, slots=True)
class Remedy:
    """A named block of steps in `patterns/remedies/<name>.toml`, written once for many rules.

    A rule includes it with `{ use = '<name>' }` in its `steps` or `next_checks`; the block's
    steps take that item's place, in order.
    """

    name: str
    about: str
    """What the block is for, in one sentence (for the person choosing it)."""
    steps: tuple[Step, ...]
    generic_for: str | None
    """A category whose every cause ends its next checks with these steps (they also lead the
    checks of an `unknown` verdict when that category ranks first), or `unknown`: the checks
    an `unknown` verdict ends with. None for a block only rules use."""
    source: str
    accelerator: str | None = None
    """With `generic_for`: the accelerator family (`ACCELERATORS`) these checks are for; None:
    the default (NVIDIA's tools), used for every other run."""
    unknown_with: tuple[str, ...] = ()
    """Launchers (`launcher.tool`, or one the log shows it ran under), hosting platforms
    (`platform.name`) or input kinds: the checks an `unknown` verdict adds for a run one of them
    is seen in, where it keeps what the logs lack (each rank's own output, the scheduler's
    accounting, a node's worker logs, a crashed container's output before its restart, a hosted
    app's own logs)."""


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
    explains: tuple[Explanation, ...] = ()
    """Facts that explain other rules' symptoms: those hits then count for this category."""
    rules_out: tuple[RuleOut, ...] = ()
    """Facts that make other rules' hits irrelevant."""
    generic_checks: bool = True
    """Whether a cause this rule leads ends with its category's generic checks (the
    `generic_for` block). False for a mechanism those checks do not fit: a download that failed
    on the network gets no NCCL checks, which are for traffic between ranks."""

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
def _compiled(rule: Rule) -> tuple[tuple[Linear[str], ...], tuple[Linear[str], ...]]:
    # Searched with a linear-time pre-check: lines are untrusted (crashlens.text.linear).
    return (
        tuple(linear_text(p, rule.flags) for p in rule.patterns),
        tuple(linear_text(p, rule.flags) for p in rule.excludes),
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


def _unknown_fields(table: dict[str, Any], kind: str, where: str, path: str) -> None:
    unknown = set(table) - FIELDS[kind]
    if unknown:
        raise PatternError(path, f"`{where}` has unknown fields: {', '.join(sorted(unknown))}")


def _steps(
    data: dict[str, Any], key: str, path: str, remedies: Mapping[str, Remedy] | None
) -> tuple[Step, ...]:
    """The steps of list `key`; a `{ use = name }` item is replaced by that block's steps.

    `remedies` is None while reading a block itself: blocks do not include other blocks.
    """
    items = data.get(key, [])
    if not isinstance(items, list):
        raise PatternError(path, f"`{key}` must be a list")
    steps: list[Step] = []
    for item in items:
        if isinstance(item, str):
            steps.append(Step(text=item))
        elif isinstance(item, dict) and "use" in item:
            steps.extend(_used(item, key, path, remedies))
        elif isinstance(item, dict) and isinstance(item.get("text"), str):
            _unknown_fields(item, "step", f"{key}` item `{item['text'][:30]}…", path)
            command = item.get("command")
            if command is not None and not isinstance(command, str):
                raise PatternError(path, f"`{key}` command must be a string")
            steps.append(Step(text=item["text"], command=command, lang=_lang(item, key, path)))
        else:
            raise PatternError(path, f"each `{key}` item needs a `text` string or a `use` name")
    return tuple(steps)


def _lang(item: dict[str, Any], key: str, path: str) -> str:
    """The item's `lang`: what its `command` is, so a YAML snippet is not shown as a command."""
    lang = item.get("lang", "shell")
    if lang not in SNIPPET_LANGS:
        known = ", ".join(SNIPPET_LANGS)
        raise PatternError(path, f"`{key}` item's `lang` must be one of {known}, not {lang!r}")
    if "command" not in item and "lang" in item:
        raise PatternError(path, f"`{key}` item has a `lang` but no `command` for it to describe")
    return str(lang)


def _used(
    item: dict[str, Any], key: str, path: str, remedies: Mapping[str, Remedy] | None
) -> tuple[Step, ...]:
    name = item["use"]
    if set(item) != {"use"} or not isinstance(name, str):
        raise PatternError(path, f"a `{key}` item with `use` holds only the block's name")
    if remedies is None:
        raise PatternError(path, f"`{key}` uses {name!r}: a remedy block cannot use another")
    remedy = remedies.get(name)
    if remedy is None:
        known = ", ".join(sorted(remedies)) or "none"
        raise PatternError(
            path, f"`{key}` uses unknown remedy {name!r} (patterns/{REMEDY_DIR}/ has: {known})"
        )
    return remedy.steps


def _check_placeholders(
    texts: Iterable[tuple[str, str]], allowed: Collection[str], path: str
) -> None:
    """Each `{name}` must be a known placeholder (or one of the rule's named groups).

    A text without placeholders is shown as written, so it may hold literal braces (docker's
    `{{.State.OOMKilled}}`); one with placeholders goes through `str.format`, so it may not.
    """
    for field, text in texts:
        try:
            parsed = list(_FORMATTER.parse(text))
        except ValueError as error:
            raise PatternError(path, f"`{field}` has a stray brace ({error}): {text!r}") from None
        names = [
            (name, spec, conversion) for _, name, spec, conversion in parsed if name is not None
        ]
        for name, spec, conversion in names:
            if not name.isidentifier() or spec or conversion:
                raise PatternError(path, f"`{field}` has a malformed placeholder {{{name}}}")
            if name not in allowed:
                raise PatternError(path, f"`{field}` uses unknown placeholder {{{name}}}")
        if names and ("{{" in text or "}}" in text):
            raise PatternError(path, f"`{field}` mixes placeholders with literal braces: {text!r}")


def _step_texts(key: str, steps: Iterable[Step]) -> Iterable[tuple[str, str]]:
    for step in steps:
        yield f"{key}", step.text
        if step.command is not None:
            yield f"{key}` command `{step.command[:30]}…", step.command


_MESSAGE_KINDS = frozenset(
    {InputKind.KUBECTL_TEXT, InputKind.KUBECTL_JSON, InputKind.DOCKER_INSPECT}
)
"""Records that quote a log's lines: a pod's termination and waiting messages (the runtime's
error that kept a container from starting; the last lines of its log, with
`FallbackToLogsOnError`), its events' messages, and docker inspect's `State.Error` (the
runtime's error for a container that never started) carry the programs' own words, so the log
rules read them there too."""


def _kinds(values: tuple[str, ...], path: str) -> frozenset[InputKind]:
    kinds: set[InputKind] = set()
    for value in values:
        if value == "logs":
            kinds |= LOG_KINDS | _MESSAGE_KINDS
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
            if not isinstance(value, list) or not all(
                isinstance(v, str | int | float | bool) for v in value
            ):
                raise PatternError(path, f"op {op!r} needs a list of strings or numbers")
            value = tuple(value)
        elif op == "regex":
            try:
                re.compile(str(value))
            except re.error as error:
                raise PatternError(
                    path, f"fact regex {value!r} does not compile: {error}"
                ) from None
        _unknown_fields(item, "match.facts", "match.facts", path)
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


def _flag(data: dict[str, Any], key: str, default: bool, path: str) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise PatternError(path, f"`{key}` must be true or false, not {value!r}")
    return value


def _against(data: dict[str, Any], role: Role, path: str) -> bool:
    against = _flag(data, "against", False, path)
    if against and role is not Role.CONTEXT:
        raise PatternError(path, "`against = true` needs role = 'context'")
    return against


def _table_field(data: dict[str, Any], key: str, path: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise PatternError(path, f"`{key}` must be a table")
    return value


def _also(data: dict[str, Any], path: str) -> tuple[tuple[Category, float], ...]:
    table = data.get("also", {})
    if not isinstance(table, dict):
        raise PatternError(path, "`also` must be a table of category = weight")
    also = []
    for name, value in table.items():
        try:
            category = Category(name)
        except ValueError:
            raise PatternError(path, f"`also` names unknown category {name!r}") from None
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
            raise PatternError(path, f"`also.{name}` must be a weight in (0, 1], not {value!r}")
        also.append((category, float(value)))
    return tuple(also)


def parse_rule(
    data: dict[str, Any],
    path: str,
    folder: str | None = None,
    compile_check: bool = True,
    remedies: Mapping[str, Remedy] | None = None,
) -> Rule:
    """Validate one rule's TOML table; `folder` is its category folder when loaded from disk.

    `remedies` are the blocks its `{ use = name }` steps may name (none by default).
    `compile_check=False` skips compiling the line patterns, for tables that already passed
    it (the rule-library cache): compiling ~450 regexes is most of the load time.
    """
    _unknown_fields(data, "rule", "rule", path)
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
    explains = parse_explanations(data, path, _fact_conditions, FIELDS)
    # A rule that only explains others' symptoms has no hits of its own, so no `[match]`.
    match = _require(data, "match", dict, path) if "match" in data or not explains else {}
    _unknown_fields(match, "match", "match", path)
    patterns = _strings(match, "any", path) + catalog_patterns(match.get("catalog"), path)
    excludes = _strings(match, "none", path)
    facts = _fact_conditions(match, path)
    if not patterns and not facts and not explains:
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
    remediation = _table_field(data, "remediation", path)
    _unknown_fields(remediation, "remediation", "remediation", path)
    examples = _table_field(data, "examples", path)
    _unknown_fields(examples, "examples", "examples", path)
    title = _require(data, "title", str, path)
    summary = data.get("summary", title)
    if not isinstance(summary, str):
        raise PatternError(path, "`summary` must be a string")
    own_groups = {name for pattern in patterns for name in _GROUP_NAME.findall(pattern)}
    own_groups |= {"path" for explanation in explains if explanation.path is not None}
    steps = _steps(remediation, "steps", path, remedies or {})
    next_checks = _steps(remediation, "next_checks", path, remedies or {})
    texts = [("summary", summary), *_step_texts("remediation.steps", steps)]
    texts += _step_texts("remediation.next_checks", next_checks)
    _check_placeholders(texts, PLACEHOLDERS.keys() | own_groups, path)
    return Rule(
        id=rule_id,
        category=category,
        role=role,
        weight=weight,
        title=title,
        summary=summary,
        inputs=_kinds(_strings(data, "inputs", path) or ("logs",), path),
        patterns=patterns,
        excludes=excludes,
        facts=facts,
        ignore_case=ignore_case,
        also=_also(data, path),
        knock_on=_flag(data, "knock_on", False, path),
        against=_against(data, role, path),
        failure=_flag(data, "failure", role is not Role.CONTEXT, path),
        remediation=steps,
        next_checks=next_checks,
        references=_strings(remediation, "references", path),
        examples_match=_strings(examples, "match", path),
        examples_no_match=_strings(examples, "no_match", path),
        known_miss=_strings(examples, "known_miss", path),
        source=path,
        explains=explains,
        rules_out=parse_rules_out(data, path, _fact_conditions, FIELDS),
        generic_checks=_flag(remediation, "generic_checks", True, path),
    )


def load_rule_file(path: Path) -> Rule:
    """Load and validate one rule file (its library's remedies are beside its folder)."""
    remedies = load_remedies(path.parent.parent)
    table = _table(path, path.read_bytes())
    return parse_rule(table, str(path), folder=path.parent.name, remedies=remedies)


def _unknown_with(value: object, path: str) -> tuple[str, ...]:
    """A block's `unknown_with`: a launcher, a platform or an input kind, or a list of them."""
    if value is None:
        return ()
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not values:
        raise PatternError(path, "`unknown_with` must be a name or a list of names")
    for name in values:
        if name not in UNKNOWN_WITH_NAMES:
            names = ", ".join(UNKNOWN_WITH_NAMES)
            message = (
                f"`unknown_with` names a launcher, a platform or an input kind ({names}), "
                f"not {name!r}"
            )
            raise PatternError(path, message)
    return tuple(values)


def parse_remedy(data: dict[str, Any], path: str) -> Remedy:
    """Validate one remediation block; its name is its file name."""
    _unknown_fields(data, "remedy", "remedy", path)
    name = Path(path).stem
    if not re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", name):
        raise PatternError(path, f"remedy name {name!r} must be kebab-case")
    about = _require(data, "about", str, path)
    steps = _steps(data, "steps", path, None)
    if not steps:
        raise PatternError(path, "a remedy needs at least one item in `steps`")
    generic_for = data.get("generic_for")
    allowed = {category.value for category in Category} | {GENERIC_UNKNOWN}
    if generic_for is not None and generic_for not in allowed:
        raise PatternError(
            path, f"`generic_for` must be a category or {GENERIC_UNKNOWN!r}, not {generic_for!r}"
        )
    accelerator = data.get("accelerator")
    if accelerator is not None and (generic_for is None or accelerator not in ACCELERATORS):
        raise PatternError(path, f"`accelerator` is one of {ACCELERATORS} on a `generic_for` block")
    sources = _unknown_with(data.get("unknown_with"), path)
    if sources and generic_for is not None:
        raise PatternError(path, "a block is `generic_for` or `unknown_with`, not both")
    # An unknown verdict shows the generic checks as written: nothing there fills a placeholder.
    names = () if generic_for is not None or sources else PLACEHOLDERS.keys()
    _check_placeholders(_step_texts("steps", steps), names, path)
    return Remedy(
        name=name,
        about=about,
        steps=steps,
        generic_for=generic_for,
        source=path,
        accelerator=accelerator,
        unknown_with=sources,
    )


def load_remedies(directory: Path) -> dict[str, Remedy]:
    """The blocks of `directory/remedies/` by name; each `generic_for` and each `unknown_with`
    value at most once."""
    remedies: dict[str, Remedy] = {}
    generic: dict[tuple[str, str], str] = {}
    for path in sorted((directory / REMEDY_DIR).glob("*.toml")):
        remedy = parse_remedy(_table(path, path.read_bytes()), str(path))
        # one default block per category, and one per category and accelerator family
        named = []
        if remedy.generic_for:
            named = [("generic_for", f"{remedy.generic_for}/{remedy.accelerator or 'default'}")]
        for field, value in [*named, *(("unknown_with", v) for v in remedy.unknown_with)]:
            if (field, value) in generic:
                also = generic[(field, value)]
                raise PatternError(str(path), f"`{field} = {value!r}` is also in {also}")
            generic[(field, value)] = str(path)
        remedies[remedy.name] = remedy
    return remedies


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
    only after loading the library, so its load time is paid before any job runs. The
    remedy blocks are read afresh each time (a few small files), so the rules that use them
    are checked against the blocks as they are now.
    """
    remedies = load_remedies(directory)
    paths = [p for p in sorted(directory.glob("*/*.toml")) if p.parent.name not in NOT_RULES]
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
        rule = parse_rule(
            table, str(path), path.parent.name, compile_check=cached is None, remedies=remedies
        )
        if rule.id in seen:
            raise PatternError(str(path), f"duplicate id {rule.id!r} (also in {seen[rule.id]})")
        seen[rule.id] = str(path)
        rules.append(rule)
    check_references(_named_rules(rules), {rule.id: rule.role for rule in rules})
    if cached is None:  # the whole library is valid (so JSON types only): worth keeping
        write_entry(entry, json.dumps(tables, ensure_ascii=False).encode("utf-8"))
    return tuple(sorted(rules, key=lambda r: r.id))


def _named_rules(rules: Iterable[Rule]) -> Iterable[tuple[str, str, frozenset[str]]]:
    for rule in rules:
        for index, explanation in enumerate(rule.explains):
            yield rule.source, f"explains[{index}].symptom_rules", explanation.symptom_rules
        for index, ruling in enumerate(rule.rules_out):
            yield rule.source, f"rules_out[{index}].rules", ruling.rules


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
