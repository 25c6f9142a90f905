"""Catalog tables, read and validated: what the software prints, by name, with what it means.

A catalog (`patterns/tables/<name>.toml`, format in `patterns/README.md`) lists the exact
texts one piece of software prints (CUDA error names and messages, NCCL results, signals...),
each with a category, a meaning, a vendor source and a real example line. This module only
reads them, so that parsers may read a table too (the failure detector takes the signals and
the words the shell prints for them from `signals.toml`); the rules' references to entries
and the coverage count are `match/catalogs.py`. A malformed table is fatal and names its file
and field, like a malformed rule.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from crashlens.errors import PatternError
from crashlens.library import tables_dir
from crashlens.model import Category, Role

XID_TABLE = "xid"
"""The table with its own format (`[[xid]]`), skipped by `load_catalogs`."""
FINISH_TABLE = "finish_signs"
"""The finish signs' table, in a format of its own (a regex per entry,
`parsers/launcher/finish_signs.py`), skipped by `load_catalogs`."""
MIN_TEXT = 4
"""Shorter texts would hit unrelated lines (and give the scan prefilter no hook)."""
NON_CAUSES = frozenset({"application", "noise", "ambiguous"})
"""Entry categories besides the taxonomy's: a bug in the job, a consequence or information,
a wording that can mean several causes (its `also` says which)."""
CATEGORIES = frozenset(category.value for category in Category) | NON_CAUSES

FIELDS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "table": frozenset({"catalog", "entry"}),
        "catalog": frozenset({"name", "title", "sources", "printed", "printed_codes"}),
        "printed_codes": frozenset({"prefix", "forms"}),
        "entry": frozenset(
            {
                "id",
                "code",
                "texts",
                "shell",
                "category",
                "also",
                "role",
                "meaning",
                "source",
                "example",
                "unless_stopped",
                "message",
            }
        ),
        "reference": frozenset({"table", "category", "ids"}),
    }
)
"""Every field a table (and a rule's `catalog` reference) may hold; others are refused."""


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
    unless_stopped: str = ""
    """The harmless-output table only: where set, the line is harmless only in a log that shows
    the run going on after it (training progress); this says what the line means where the run
    stops at it instead (a version that fails on it), so that a log of nothing else is no
    excerpt of a run going on well."""
    shell: tuple[str, ...] = ()
    """The signals table only: the words a shell prints for a command this signal killed
    (glibc's strsignal text, also in the locale's languages), which the failure detector
    reads at the end of a line; short words (`Quit`) are no `texts` of their own."""
    message: str = ""
    """The error's message string (what the library's error-string function returns), where
    the table's `printed` forms put it into texts of their own."""


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


def fail(path: str, where: str, message: str) -> PatternError:
    """The error for a malformed table or reference: the file, where in it, what is wrong."""
    return PatternError(path, f"{where}: {message}")


def _string(data: dict[str, Any], key: str, where: str, path: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise fail(path, where, f"field `{key}` must be a non-empty string")
    return value


def _optional_string(data: dict[str, Any], key: str, where: str, path: str) -> str:
    return _string(data, key, where, path) if key in data else ""


def _strings(data: dict[str, Any], key: str, where: str, path: str) -> tuple[str, ...]:
    value = data.get(key)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise fail(path, where, f"field `{key}` must be a non-empty list of strings")
    return tuple(value)


def refuse_unknown(data: dict[str, Any], kind: str, where: str, path: str) -> None:
    """Refuse the fields of `data` that a `kind` (see `FIELDS`) may not hold."""
    unknown = set(data) - FIELDS[kind]
    if unknown:
        raise fail(path, where, f"unknown fields: {', '.join(sorted(unknown))}")


def _url(value: str, field: str, where: str, path: str) -> None:
    if not value.startswith("https://"):
        raise fail(path, where, f"field `{field}` must be an https:// URL, not {value!r}")


def _texts(entry: dict[str, Any], where: str, path: str) -> tuple[str, ...]:
    texts = _strings(entry, "texts", where, path)
    for text in texts:
        if len(text) < MIN_TEXT:
            raise fail(path, where, f"field `texts`: {text!r} is shorter than {MIN_TEXT}")
        if "\n" in text or "\r" in text or text != text.strip():
            raise fail(path, where, f"field `texts`: {text!r} must be one line, not padded")
    return texts


def _shell(entry: dict[str, Any], where: str, path: str) -> tuple[str, ...]:
    if "shell" not in entry:
        return ()
    words = _strings(entry, "shell", where, path)
    for word in words:
        if "\n" in word or "\r" in word or word != word.strip():
            raise fail(path, where, f"field `shell`: {word!r} must be one line, not padded")
    return words


def _also(entry: dict[str, Any], where: str, path: str) -> tuple[tuple[Category, float], ...]:
    table = entry.get("also", {})
    if not isinstance(table, dict):
        raise fail(path, where, "field `also` must be a table of category = weight")
    also = []
    for name, weight in table.items():
        try:
            category = Category(name)
        except ValueError:
            raise fail(path, where, f"field `also` names unknown category {name!r}") from None
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 < weight <= 1:
            raise fail(path, where, f"field `also.{name}` must be a weight in (0, 1]")
        also.append((category, float(weight)))
    return tuple(also)


def _entry(entry: object, index: int, path: str) -> CatalogEntry:
    where = f"entry[{index}]"
    if not isinstance(entry, dict):
        raise fail(path, where, "must be a table")
    entry_id = _string(entry, "id", where, path)
    where = f"entry[{index}] ({entry_id})"
    refuse_unknown(entry, "entry", where, path)
    code = entry.get("code")
    if code is not None and (isinstance(code, bool) or not isinstance(code, int)):
        raise fail(path, where, "field `code` must be an integer")
    texts = _texts(entry, where, path)
    category = _string(entry, "category", where, path)
    if category not in CATEGORIES:
        raise fail(path, where, f"field `category` must be one of {sorted(CATEGORIES)}")
    also = _also(entry, where, path)
    if category == "ambiguous" and not also:
        raise fail(path, where, "field `also`: an ambiguous entry names the causes it can mean")
    try:
        role = Role(entry.get("role", Role.ROOT.value))
    except ValueError:
        raise fail(path, where, "field `role` must be root, symptom or context") from None
    source = _string(entry, "source", where, path)
    _url(source, "source", where, path)
    example = _string(entry, "example", where, path)
    if "\n" in example or not any(text in example for text in texts):
        raise fail(path, where, "field `example` must be one line holding one of `texts`")
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
        shell=_shell(entry, where, path),
        unless_stopped=_optional_string(entry, "unless_stopped", where, path),
        message=_optional_string(entry, "message", where, path),
    )


PLACEHOLDER = re.compile(r"\{([a-z]*)\}")
"""A `{name}` in a `printed` form: `{message}` (required) and `{code}`."""


def _printed(header: dict[str, Any], path: str) -> tuple[str, ...]:
    """The table's `printed` forms: how other programs print an entry's message."""
    if "printed" not in header:
        return ()
    forms = _strings(header, "printed", "catalog", path)
    for form in forms:
        names = PLACEHOLDER.findall(form)
        if "message" not in names or set(names) - {"message", "code"} or "\n" in form:
            message = f"field `printed`: {form!r} must be one line with {{message}} (and {{code}})"
            raise fail(path, "catalog", message)
    return forms


CodeForms = tuple[tuple[str, tuple[str, ...]], ...]
"""(id prefix, forms): how programs print the codes of one library's entries."""


def _printed_codes(header: dict[str, Any], path: str) -> CodeForms:
    """The table's `printed_codes`: how programs print an entry's bare number (`cuBLAS error 13
    at <file>:<line>`), per library, the entries of which share an id prefix. A number alone
    means nothing without the library named before it, so each form holds both."""
    raw = header.get("printed_codes", [])
    if not isinstance(raw, list):
        raise fail(path, "catalog", "field `printed_codes` must be a list of tables")
    found: list[tuple[str, tuple[str, ...]]] = []
    for index, item in enumerate(raw):
        where = f"catalog.printed_codes[{index}]"
        if not isinstance(item, dict):
            raise fail(path, where, "must be a table with `prefix` and `forms`")
        refuse_unknown(item, "printed_codes", where, path)
        prefix = _string(item, "prefix", where, path)
        forms = _strings(item, "forms", where, path)
        for form in forms:
            if PLACEHOLDER.findall(form) != ["code"] or form.strip() != form or "\n" in form:
                raise fail(path, where, f"form {form!r} must be one unpadded line with {{code}}")
        found.append((prefix, forms))
    return tuple(found)


def _with_codes(entry: CatalogEntry, code_forms: CodeForms) -> CatalogEntry:
    """`entry` with its number in its library's `printed_codes` forms as texts of its own."""
    if entry.code is None:
        return entry
    texts = list(entry.texts)
    for prefix, forms in code_forms:
        if entry.id.startswith(prefix):
            texts += [form.replace("{code}", str(entry.code)) for form in forms]
    return replace(entry, texts=tuple(dict.fromkeys(texts)))


def _with_printed(entry: CatalogEntry, forms: Sequence[str]) -> CatalogEntry:
    """`entry` with its message in every printed form as texts of its own (a form with
    `{code}` only where the entry has a code)."""
    if not entry.message or not forms:
        return entry
    texts = list(entry.texts)
    for form in forms:
        if "{code}" in form and entry.code is None:
            continue
        text = form.replace("{message}", entry.message).replace("{code}", str(entry.code))
        if text not in texts:
            texts.append(text)
    return replace(entry, texts=tuple(texts))


def parse_catalog(data: dict[str, Any], path: str) -> Catalog:
    """Validate one table; its `[catalog] name` must equal the file stem."""
    refuse_unknown(data, "table", "table", path)
    header = data.get("catalog")
    if not isinstance(header, dict):
        raise fail(path, "catalog", "missing the [catalog] table")
    refuse_unknown(header, "catalog", "catalog", path)
    name = _string(header, "name", "catalog", path)
    if Path(path).suffix == ".toml" and Path(path).stem != name:
        raise fail(path, "catalog", f"field `name` {name!r} must equal the file name")
    sources = _strings(header, "sources", "catalog", path)
    for source in sources:
        _url(source, "sources", "catalog", path)
    raw_entries = data.get("entry")
    if not isinstance(raw_entries, list) or not raw_entries:
        raise fail(path, "entry", "a table needs at least one [[entry]]")
    forms = _printed(header, path)
    code_forms = _printed_codes(header, path)
    entries = tuple(
        _with_codes(_with_printed(_entry(raw, index, path), forms), code_forms)
        for index, raw in enumerate(raw_entries)
    )
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
            raise fail(path, f"entry ({entry.id})", "field `id` is listed twice")
        seen.add(entry.id)
    text_owner: dict[str, str] = {}
    for entry in entries:
        for text in entry.texts:
            other = text_owner.setdefault(text, entry.id)
            if other != entry.id:
                message = f"field `texts`: {text!r} is also a text of {other}"
                raise fail(path, f"entry ({entry.id})", message)


def load_catalog(path: Path) -> Catalog:
    """Read and validate one table (parsed once per file version)."""
    try:
        stat = path.stat()
    except OSError as error:
        raise PatternError(str(path), f"cannot read the table: {error}") from None
    return _load(str(path), stat.st_mtime_ns, stat.st_size)


def read_table(path: Path) -> dict[str, Any]:
    """A table file's TOML; unreadable or invalid TOML is a PatternError naming the file."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise PatternError(str(path), f"cannot read the table: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise PatternError(str(path), f"not valid TOML: {error}") from None


@cache
def _load(path: str, mtime_ns: int, size: int) -> Catalog:
    del mtime_ns, size  # the cache key: a changed file is read afresh
    return parse_catalog(read_table(Path(path)), path)


def catalog_paths(directory: Path) -> tuple[Path, ...]:
    """The tables of `directory` in this format (every `*.toml` but the Xid and finish tables)."""
    own_format = (XID_TABLE, FINISH_TABLE)
    return tuple(p for p in sorted(directory.glob("*.toml")) if p.stem not in own_format)


def load_catalogs(directory: Path | None = None) -> tuple[Catalog, ...]:
    """Every table of `directory` (the shipped `patterns/tables/` by default), by name."""
    return tuple(load_catalog(path) for path in catalog_paths(directory or tables_dir()))
