"""Catalog tables: what the software prints, by name, with what each wording means.

A catalog (`patterns/tables/<name>.toml`, format in `patterns/README.md`) lists the exact
texts one piece of software prints (CUDA error names and messages, NCCL results, signals...),
each with a category, a meaning, a vendor source and a real example line. Rules select entries
(`[match] catalog = { table, category | ids }`) instead of copying the strings, and
`coverage` says how many entries the rule library recognises. The tables are read and
validated by `parsers/tables.py` (a lower floor, so that parsers read them too); its names
are re-exported here. The Xid table keeps its own format and loader (`parsers/dmesg/xid.py`);
it is read here only to count coverage. So does the finish signs' table
(`parsers/launcher/finish_signs.py`), whose reader is the failure detector, not a rule.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from crashlens.library import tables_dir
from crashlens.model import Fact
from crashlens.parsers.base import collect_text
from crashlens.parsers.dmesg import KernelLogParser
from crashlens.parsers.dmesg.xid import load_table as load_xid_table
from crashlens.parsers.launcher import LauncherParser
from crashlens.parsers.launcher.finish_signs import load_finish_table
from crashlens.parsers.plaintext import PlainTextParser
from crashlens.parsers.tables import (
    CATEGORIES,
    FIELDS,
    FINISH_TABLE,
    MIN_TEXT,
    NON_CAUSES,
    XID_TABLE,
    Catalog,
    CatalogEntry,
    catalog_paths,
    fail,
    load_catalog,
    load_catalogs,
    parse_catalog,
    refuse_unknown,
)

__all__ = [
    "CATEGORIES",
    "FIELDS",
    "MIN_TEXT",
    "NON_CAUSES",
    "PATTERN_BUDGET",
    "XID_TABLE",
    "Catalog",
    "CatalogEntry",
    "CoverageRow",
    "LineMatcher",
    "catalog_coverage",
    "catalog_patterns",
    "catalog_paths",
    "coverage",
    "finish_coverage",
    "literal_pattern",
    "load_catalog",
    "load_catalogs",
    "parse_catalog",
    "referenced_entries",
    "tables_for",
    "xid_coverage",
    "xid_examples",
]

_REGEX_SPECIAL = re.compile(r"([\\.^$*+?{}\[\]|()])")
_XID_EXAMPLE = "NVRM: Xid (PCI:0000:3b:00): {code}, pid=2112, name=python, Ch 00000008"
"""A kernel-log line for an Xid entry that carries no `example` of its own."""


@dataclass(frozen=True, slots=True)
class CoverageRow:
    """How much of one catalog the rule library recognises."""

    table: str
    entries: int
    covered: int
    missing: tuple[str, ...]
    """Ids (Xid codes as text) of the entries whose example no rule hits."""


class LineMatcher(Protocol):
    """What coverage needs of a rule: `match.rules.Rule` is one."""

    def match_line(self, line: str) -> dict[str, str] | None: ...


def literal_pattern(texts: Iterable[str]) -> str:
    """One regex matching any of `texts` literally (longest first: the most specific wins).

    Only regex metacharacters are escaped (`re.escape` would also escape spaces, which
    some scan backends read differently); the result never crosses a line.
    """
    ordered = _longest_first(texts)
    return "(?:" + "|".join(_REGEX_SPECIAL.sub(r"\\\1", text) for text in ordered) + ")"


def _longest_first(texts: Iterable[str]) -> list[str]:
    """`texts` without repeats, longest first (ties in text order)."""
    return sorted(dict.fromkeys(texts), key=lambda text: (-len(text), text))


def tables_for(rule_path: str) -> Path:
    """The tables a rule file's references resolve in: its library's, else the shipped ones."""
    beside = Path(rule_path).parent.parent / "tables"
    return beside if os.path.isdir(beside) else tables_dir()


def _reference(spec: object, rule_path: str) -> tuple[CatalogEntry, ...]:
    where = "match.catalog"
    if not isinstance(spec, dict):
        raise fail(rule_path, where, "each reference is a table { table, category | ids }")
    refuse_unknown(spec, "reference", where, rule_path)
    name = spec.get("table")
    if not isinstance(name, str) or name == XID_TABLE:
        raise fail(rule_path, where, "field `table` must name a table other than xid")
    path = tables_for(rule_path) / f"{name}.toml"
    if not path.is_file():
        raise fail(rule_path, where, f"field `table`: no table {name!r} in {path.parent}")
    catalog = load_catalog(path)
    category, ids = spec.get("category"), spec.get("ids")
    if (category is None) == (ids is None):
        raise fail(rule_path, where, "give exactly one of `category` or `ids`")
    if category is not None:
        if category not in CATEGORIES:
            raise fail(rule_path, where, f"field `category` {category!r} is not a category")
        selected = catalog.select(category=[category])
        if not selected:
            raise fail(rule_path, where, f"field `category`: {name} has no {category!r} entry")
        return selected
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise fail(rule_path, where, "field `ids` must be a non-empty list of entry ids")
    known = {entry.id for entry in catalog.entries}
    unknown = [entry_id for entry_id in ids if entry_id not in known]
    if unknown:
        raise fail(rule_path, where, f"field `ids`: {name} has no {', '.join(unknown)}")
    return catalog.select(ids=ids)


def referenced_entries(spec: object, rule_path: str) -> tuple[CatalogEntry, ...]:
    """The entries a rule's `catalog` value selects: one reference or a list of them."""
    if spec is None:
        return ()
    references = spec if isinstance(spec, list) else [spec]
    entries: dict[str, CatalogEntry] = {}
    for reference in references:
        for entry in _reference(reference, rule_path):
            entries.setdefault(entry.id, entry)
    return tuple(entries.values())


PATTERN_BUDGET = 6000
"""Characters one pattern of a rule's catalog texts may take: a rule that selects many entries
(each in several printed forms) gets several patterns, as Hyperscan refuses a pattern past its
length limit and any one of a rule's patterns may match."""


def catalog_patterns(spec: object, rule_path: str) -> tuple[str, ...]:
    """The line patterns a rule's `catalog` value stands for (none when it has none)."""
    entries = referenced_entries(spec, rule_path)
    texts = _longest_first(text for entry in entries for text in entry.texts)
    groups: list[list[str]] = []
    size = PATTERN_BUDGET
    for text in texts:  # longest first in every group, so the most specific text still wins
        if size + len(text) + 1 > PATTERN_BUDGET:
            groups.append([])
            size = 0
        groups[-1].append(text)
        size += len(text) + 1
    return tuple(literal_pattern(group) for group in groups)


def _covered(example: str, rules: Sequence[LineMatcher]) -> bool:
    return any(rule.match_line(example) is not None for rule in rules)


def catalog_coverage(catalog: Catalog, rules: Sequence[LineMatcher]) -> CoverageRow:
    """How many entries of `catalog` have an example some rule hits."""
    missing = tuple(entry.id for entry in catalog.entries if not _covered(entry.example, rules))
    return CoverageRow(
        table=catalog.name,
        entries=len(catalog.entries),
        covered=len(catalog.entries) - len(missing),
        missing=missing,
    )


def xid_examples(path: Path) -> dict[int, str]:
    """A kernel-log line per Xid code: the entry's own `example` when it has one."""
    examples = {code: _XID_EXAMPLE.format(code=code) for code in load_xid_table(path)}
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    for entry in data.get("xid", []):
        if isinstance(entry, dict) and isinstance(entry.get("example"), str):
            examples[entry["code"]] = entry["example"]
    return examples


def _xid_fact_covered(line: str, rules: Sequence[LineMatcher]) -> bool:
    """Whether a fact rule (keyed on the catalog's category) takes the line's `kernel.xid`."""
    _, facts = collect_text(KernelLogParser(), line, "<example>")
    fact_rules = [match for rule in rules if (match := getattr(rule, "match_fact", None))]
    return any(match(item) for item in facts if isinstance(item, Fact) for match in fact_rules)


def xid_coverage(path: Path, rules: Sequence[LineMatcher]) -> CoverageRow:
    """Coverage of the Xid table, whose entries are codes seen in kernel-log lines (taken by
    a line rule, or by a fact rule on the parsed line)."""
    examples = xid_examples(path)
    missing = tuple(
        str(code)
        for code, line in examples.items()
        if not (_covered(line, rules) or _xid_fact_covered(line, rules))
    )
    return CoverageRow(
        table=XID_TABLE,
        entries=len(examples),
        covered=len(examples) - len(missing),
        missing=missing,
    )


def _read_as_finish(line: str) -> bool:
    """Whether the failure detector's collectors (launcher and plain-text logs) read the line
    as the run's completion (`launcher.completed`)."""
    return all(
        any(isinstance(item, Fact) and item.key == "launcher.completed" for item in facts)
        for facts in (collect_text(parser, line, "<example>")[1] for parser in _FINISH_READERS)
    )


_FINISH_READERS = (LauncherParser(), PlainTextParser())


def finish_coverage(path: Path) -> CoverageRow:
    """Coverage of the finish signs' table, whose reader is the failure detector, not a rule:
    the entries whose example it reads as the run's completion."""
    signs = load_finish_table(path).signs
    missing = tuple(sign.id for sign in signs if not _read_as_finish(sign.example))
    return CoverageRow(
        table=FINISH_TABLE,
        entries=len(signs),
        covered=len(signs) - len(missing),
        missing=missing,
    )


def coverage(
    rules: Sequence[LineMatcher], directory: Path | None = None
) -> tuple[CoverageRow, ...]:
    """One row per table of `directory` (the shipped tables by default), the Xid table and
    the finish signs' table too."""
    directory = directory or tables_dir()
    rows = [catalog_coverage(catalog, rules) for catalog in load_catalogs(directory)]
    xid_path = directory / f"{XID_TABLE}.toml"
    if xid_path.is_file():
        rows.append(xid_coverage(xid_path, rules))
    finish_path = directory / f"{FINISH_TABLE}.toml"
    if finish_path.is_file():
        rows.append(finish_coverage(finish_path))
    return tuple(sorted(rows, key=lambda row: row.table))
