"""Catalog tables: what the software prints, by name, with what each wording means.

A catalog (`patterns/tables/<name>.toml`, format in `patterns/README.md`) lists the exact
texts one piece of software prints (CUDA error names and messages, NCCL results, signals...),
each with a category, a meaning, a vendor source and a real example line. Rules select entries
(`[match] catalog = { table, category | ids }`) instead of copying the strings, and
`coverage` says how many entries the rule library recognises. The Xid table keeps its own
format and loader (`parsers/dmesg/xid.py`); it is read here only to count coverage.
A malformed table is fatal and names its file and field, like a malformed rule.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

from crashlens.errors import PatternError
from crashlens.library import tables_dir
from crashlens.model import Category, Fact, Role
from crashlens.parsers.base import collect_text
from crashlens.parsers.dmesg import KernelLogParser
from crashlens.parsers.dmesg.xid import load_table as load_xid_table

XID_TABLE = "xid"
"""The table with its own format (`[[xid]]`), skipped by `load_catalogs`."""
MIN_TEXT = 4
"""Shorter texts would hit unrelated lines (and give the scan prefilter no hook)."""
NON_CAUSES = frozenset({"application", "noise", "ambiguous"})
"""Entry categories besides the taxonomy's: a bug in the job, a consequence or information,
a wording that can mean several causes (its `also` says which)."""
CATEGORIES = frozenset(category.value for category in Category) | NON_CAUSES

FIELDS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "table": frozenset({"catalog", "entry"}),
        "catalog": frozenset({"name", "title", "sources"}),
        "entry": frozenset(
            {"id", "code", "texts", "category", "also", "role", "meaning", "source", "example"}
        ),
        "reference": frozenset({"table", "category", "ids"}),
    }
)
"""Every field a table (and a rule's `catalog` reference) may hold; others are refused."""

_REGEX_SPECIAL = re.compile(r"([\\.^$*+?{}\[\]|()])")
_XID_EXAMPLE = "NVRM: Xid (PCI:0000:3b:00): {code}, pid=2112, name=python, Ch 00000008"
"""A kernel-log line for an Xid entry that carries no `example` of its own."""


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """One thing the software prints, and what it means for a failed run."""

    id: str
    """The name the software itself uses (`cudaErrorMemoryAllocation`, `SIGBUS`)."""
    code: int | None
    """The numeric value (enum value, errno, signal number), when there is one."""
    texts: tuple[str, ...]
    """Exact printed strings, matched literally anywhere in a line."""
    category: str
    """A taxonomy category, or one of `NON_CAUSES`."""
    also: tuple[tuple[Category, float], ...]
    """Other causes the same wording can mean, with weights."""
    role: Role
    meaning: str
    source: str
    """The vendor page that states the fact."""
    example: str
    """A real printed line that holds one of `texts`."""


@dataclass(frozen=True, slots=True)
class Catalog:
    """One validated table."""

    name: str
    title: str
    sources: tuple[str, ...]
    entries: tuple[CatalogEntry, ...]
    path: str

    def select(
        self, category: Iterable[str] = (), ids: Iterable[str] = ()
    ) -> tuple[CatalogEntry, ...]:
        """The entries of the given categories, then those named by id, in table order."""
        wanted_categories, wanted_ids = set(category), set(ids)
        return tuple(
            entry
            for entry in self.entries
            if entry.category in wanted_categories or entry.id in wanted_ids
        )


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
    ordered = sorted(dict.fromkeys(texts), key=lambda text: (-len(text), text))
    return "(?:" + "|".join(_REGEX_SPECIAL.sub(r"\\\1", text) for text in ordered) + ")"


def _fail(path: str, where: str, message: str) -> PatternError:
    return PatternError(path, f"{where}: {message}")


def _string(data: dict[str, Any], key: str, where: str, path: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise _fail(path, where, f"field `{key}` must be a non-empty string")
    return value


def _strings(data: dict[str, Any], key: str, where: str, path: str) -> tuple[str, ...]:
    value = data.get(key)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise _fail(path, where, f"field `{key}` must be a non-empty list of strings")
    return tuple(value)


def _unknown(data: dict[str, Any], kind: str, where: str, path: str) -> None:
    unknown = set(data) - FIELDS[kind]
    if unknown:
        raise _fail(path, where, f"unknown fields: {', '.join(sorted(unknown))}")


def _url(value: str, field: str, where: str, path: str) -> None:
    if not value.startswith("https://"):
        raise _fail(path, where, f"field `{field}` must be an https:// URL, not {value!r}")


def _texts(entry: dict[str, Any], where: str, path: str) -> tuple[str, ...]:
    texts = _strings(entry, "texts", where, path)
    for text in texts:
        if len(text) < MIN_TEXT:
            raise _fail(path, where, f"field `texts`: {text!r} is shorter than {MIN_TEXT}")
        if "\n" in text or "\r" in text or text != text.strip():
            raise _fail(path, where, f"field `texts`: {text!r} must be one line, not padded")
    return texts


def _also(entry: dict[str, Any], where: str, path: str) -> tuple[tuple[Category, float], ...]:
    table = entry.get("also", {})
    if not isinstance(table, dict):
        raise _fail(path, where, "field `also` must be a table of category = weight")
    also = []
    for name, weight in table.items():
        try:
            category = Category(name)
        except ValueError:
            raise _fail(path, where, f"field `also` names unknown category {name!r}") from None
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 < weight <= 1:
            raise _fail(path, where, f"field `also.{name}` must be a weight in (0, 1]")
        also.append((category, float(weight)))
    return tuple(also)


def _entry(entry: object, index: int, path: str) -> CatalogEntry:
    where = f"entry[{index}]"
    if not isinstance(entry, dict):
        raise _fail(path, where, "must be a table")
    entry_id = _string(entry, "id", where, path)
    where = f"entry[{index}] ({entry_id})"
    _unknown(entry, "entry", where, path)
    code = entry.get("code")
    if code is not None and (isinstance(code, bool) or not isinstance(code, int)):
        raise _fail(path, where, "field `code` must be an integer")
    texts = _texts(entry, where, path)
    category = _string(entry, "category", where, path)
    if category not in CATEGORIES:
        raise _fail(path, where, f"field `category` must be one of {sorted(CATEGORIES)}")
    also = _also(entry, where, path)
    if category == "ambiguous" and not also:
        raise _fail(path, where, "field `also`: an ambiguous entry names the causes it can mean")
    try:
        role = Role(entry.get("role", Role.ROOT.value))
    except ValueError:
        raise _fail(path, where, "field `role` must be root, symptom or context") from None
    source = _string(entry, "source", where, path)
    _url(source, "source", where, path)
    example = _string(entry, "example", where, path)
    if "\n" in example or not any(text in example for text in texts):
        raise _fail(path, where, "field `example` must be one line holding one of `texts`")
    return CatalogEntry(
        id=entry_id,
        code=code,
        texts=texts,
        category=category,
        also=also,
        role=role,
        meaning=_string(entry, "meaning", where, path),
        source=source,
        example=example,
    )


def parse_catalog(data: dict[str, Any], path: str) -> Catalog:
    """Validate one table; its `[catalog] name` must equal the file stem."""
    _unknown(data, "table", "table", path)
    header = data.get("catalog")
    if not isinstance(header, dict):
        raise _fail(path, "catalog", "missing the [catalog] table")
    _unknown(header, "catalog", "catalog", path)
    name = _string(header, "name", "catalog", path)
    if Path(path).suffix == ".toml" and Path(path).stem != name:
        raise _fail(path, "catalog", f"field `name` {name!r} must equal the file name")
    sources = _strings(header, "sources", "catalog", path)
    for source in sources:
        _url(source, "sources", "catalog", path)
    raw_entries = data.get("entry")
    if not isinstance(raw_entries, list) or not raw_entries:
        raise _fail(path, "entry", "a table needs at least one [[entry]]")
    entries = tuple(_entry(raw, index, path) for index, raw in enumerate(raw_entries))
    _unique(entries, path)
    return Catalog(
        name=name,
        title=_string(header, "title", "catalog", path),
        sources=sources,
        entries=entries,
        path=path,
    )


def _unique(entries: Sequence[CatalogEntry], path: str) -> None:
    """Ids are unique, and so are texts: one printed string means one thing in a table."""
    seen: set[str] = set()
    for entry in entries:
        if entry.id in seen:
            raise _fail(path, f"entry ({entry.id})", "field `id` is listed twice")
        seen.add(entry.id)
    text_owner: dict[str, str] = {}
    for entry in entries:
        for text in entry.texts:
            other = text_owner.setdefault(text, entry.id)
            if other != entry.id:
                message = f"field `texts`: {text!r} is also a text of {other}"
                raise _fail(path, f"entry ({entry.id})", message)


def load_catalog(path: Path) -> Catalog:
    """Read and validate one table (parsed once per file version)."""
    try:
        stat = path.stat()
    except OSError as error:
        raise PatternError(str(path), f"cannot read the table: {error}") from None
    return _load(str(path), stat.st_mtime_ns, stat.st_size)


@cache
def _load(path: str, mtime_ns: int, size: int) -> Catalog:
    del mtime_ns, size  # the cache key: a changed file is read afresh
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise PatternError(path, f"cannot read the table: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise PatternError(path, f"not valid TOML: {error}") from None
    return parse_catalog(data, path)


def catalog_paths(directory: Path) -> tuple[Path, ...]:
    """The tables of `directory` in this format (every `*.toml` but the Xid table)."""
    return tuple(p for p in sorted(directory.glob("*.toml")) if p.stem != XID_TABLE)


def load_catalogs(directory: Path | None = None) -> tuple[Catalog, ...]:
    """Every table of `directory` (the shipped `patterns/tables/` by default), by name."""
    return tuple(load_catalog(path) for path in catalog_paths(directory or tables_dir()))


def tables_for(rule_path: str) -> Path:
    """The tables a rule file's references resolve in: its library's, else the shipped ones."""
    beside = Path(rule_path).parent.parent / "tables"
    return beside if os.path.isdir(beside) else tables_dir()


def _reference(spec: object, rule_path: str) -> tuple[CatalogEntry, ...]:
    where = "match.catalog"
    if not isinstance(spec, dict):
        raise _fail(rule_path, where, "each reference is a table { table, category | ids }")
    _unknown(spec, "reference", where, rule_path)
    name = spec.get("table")
    if not isinstance(name, str) or name == XID_TABLE:
        raise _fail(rule_path, where, "field `table` must name a table other than xid")
    path = tables_for(rule_path) / f"{name}.toml"
    if not path.is_file():
        raise _fail(rule_path, where, f"field `table`: no table {name!r} in {path.parent}")
    catalog = load_catalog(path)
    category, ids = spec.get("category"), spec.get("ids")
    if (category is None) == (ids is None):
        raise _fail(rule_path, where, "give exactly one of `category` or `ids`")
    if category is not None:
        if category not in CATEGORIES:
            raise _fail(rule_path, where, f"field `category` {category!r} is not a category")
        selected = catalog.select(category=[category])
        if not selected:
            raise _fail(rule_path, where, f"field `category`: {name} has no {category!r} entry")
        return selected
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise _fail(rule_path, where, "field `ids` must be a non-empty list of entry ids")
    known = {entry.id for entry in catalog.entries}
    unknown = [entry_id for entry_id in ids if entry_id not in known]
    if unknown:
        raise _fail(rule_path, where, f"field `ids`: {name} has no {', '.join(unknown)}")
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


def catalog_patterns(spec: object, rule_path: str) -> tuple[str, ...]:
    """The line patterns a rule's `catalog` value stands for (none when it has none)."""
    entries = referenced_entries(spec, rule_path)
    if not entries:
        return ()
    return (literal_pattern(text for entry in entries for text in entry.texts),)


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


def coverage(
    rules: Sequence[LineMatcher], directory: Path | None = None
) -> tuple[CoverageRow, ...]:
    """One row per table of `directory` (the shipped tables by default), the Xid table too."""
    directory = directory or tables_dir()
    rows = [catalog_coverage(catalog, rules) for catalog in load_catalogs(directory)]
    xid_path = directory / f"{XID_TABLE}.toml"
    if xid_path.is_file():
        rows.append(xid_coverage(xid_path, rules))
    return tuple(sorted(rows, key=lambda row: row.table))
