"""The lines that say a run finished, read from the catalog `tables/finish_signs.toml`.

Each launcher, trainer and benchmark ends a healthy run with a line of its own (the Hugging
Face Trainer's `Training completed.`, torchrun's agent finding its worker group SUCCEEDED,
Megatron's `[after training is done]`, `ezpz launch`'s `Execution finished with 0.`). The
catalog keeps each one as a regex fragment with the tool, the file of its source that prints
it, an example line and its scope: `run` (the training or the whole job finished) or
`process` (one process, one node's worker group or one benchmark client ended well, which is
a finish only when nothing else died). The failure detector's `DeathSigns` scans for them
(`FINISH_ANCHOR`) and keeps the last one as `launcher.completed`; `finish_sign` says which
entry a line holds.

The table is read once, at import, like the signals table: a malformed entry is fatal and
names its file and field (`PatternError`), before any input is read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from crashlens.library import tables_dir
from crashlens.parsers.base import line_safety
from crashlens.parsers.tables import FINISH_TABLE, MIN_TEXT, fail, read_table
from crashlens.text.linear import linear_text, ordered_literals
from crashlens.text.literals import required_literals

Scope = Literal["run", "process"]
SCOPES: tuple[Scope, ...] = ("run", "process")
_HEADER_FIELDS = frozenset({"name", "title", "sources"})
_ENTRY_FIELDS = frozenset(
    {"id", "tool", "pattern", "scope", "source", "example", "full_count", "per_request", "opens"}
)
_COUNT_GROUPS = ("done", "total")
"""The named groups of a `full_count` entry's pattern: a progress bar's `done/total`."""


@dataclass(frozen=True, slots=True)
class FinishSign:
    """One tool's line saying its run (or one process of it) ended well."""

    id: str
    tool: str
    pattern: str
    """Line-safe regex fragment of the printed text (one wording, no top-level `|`)."""
    scope: Scope
    source: str
    """The file of the tool's repository, or its documentation page, that prints it."""
    example: str
    full_count: bool = False
    """A progress bar's wording (`Training Progress: 100%|####| 5/5`): a finish only where a
    match's `done` count equals its `total`. tqdm rounds its percentage (199/200 prints
    `100%`), so the counts decide, not the percentage."""
    per_request: bool = False
    """The line sums up one request of a server that goes on, and is printed after a failed
    request too (ComfyUI's `Prompt executed in ...`): no finish where a failure line comes
    before it in the same log (`decide.stop_order.failed_request`)."""
    opens: str | None = None
    """A `per_request` entry's line that opens a request (ComfyUI's `got prompt`), line-safe
    like `pattern`: only a failure after it (or after the request before) is the request's."""

    def found_in(self, text: str) -> bool:
        """Whether the text holds the wording (searched in linear time: `text.linear`), and
        for a progress bar, at its full count (any of the line's `\\r` updates)."""
        linear = linear_text(self.pattern)
        if linear.search(text) is None:
            return False
        if not self.full_count:
            return True
        # the linear form's compiled pattern: guarded like the search above (text.linear)
        return any(
            int(match["done"]) == int(match["total"]) > 0 for match in linear.pattern.finditer(text)
        )


@dataclass(frozen=True, slots=True)
class FinishTable:
    """The validated table."""

    title: str
    sources: tuple[str, ...]
    signs: tuple[FinishSign, ...]
    path: str


def _text(data: dict[str, Any], key: str, where: str, path: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip() or "\n" in value:
        raise fail(path, where, f"field `{key}` must be a non-empty one-line string")
    return value


def _url(data: dict[str, Any], key: str, where: str, path: str) -> str:
    value = _text(data, key, where, path)
    if not value.startswith("https://"):
        raise fail(path, where, f"field `{key}` must be an https:// URL, not {value!r}")
    return value


def _check(pattern: str, where: str, path: str, field: str = "pattern") -> re.Pattern[str]:
    """The compiled fragment, once it is line-safe, one wording, and has a prefilter hook."""
    try:
        regex = re.compile(pattern)
    except re.error as error:
        raise fail(path, where, f"field `{field}` does not compile: {error}") from None
    bare = re.sub(r"\\.|\[\^", "", pattern)  # escapes and negated classes hold no anchor
    if (unsafe := line_safety(pattern)) is not None or "^" in bare or "$" in bare:
        why = unsafe or "no ^ or $: the prefixes and the scan's buffer decide where lines start"
        raise fail(path, where, f"field `{field}` is not line-safe: {why}")
    if len(ordered_literals(pattern)) != 1:
        raise fail(path, where, f"field `{field}` must be one wording (no top-level `|`)")
    literals = required_literals(pattern)
    if literals is None or min(len(text) for text in literals[0]) < MIN_TEXT:
        message = f"field `{field}` needs a literal of {MIN_TEXT}+ characters in every match"
        raise fail(path, where, message)
    return regex


def _sign(entry: object, index: int, path: str) -> FinishSign:
    where = f"entry[{index}]"
    if not isinstance(entry, dict):
        raise fail(path, where, "must be a table")
    sign_id = _text(entry, "id", where, path)
    where = f"entry[{index}] ({sign_id})"
    if unknown := set(entry) - _ENTRY_FIELDS:
        raise fail(path, where, f"unknown fields: {', '.join(sorted(unknown))}")
    pattern = _text(entry, "pattern", where, path)
    regex = _check(pattern, where, path)
    scope = entry.get("scope")
    if scope not in SCOPES:
        raise fail(path, where, f"field `scope` must be one of {', '.join(SCOPES)}")
    full_count = entry.get("full_count", False)
    if not isinstance(full_count, bool):
        raise fail(path, where, "field `full_count` must be true or false")
    if full_count and set(_COUNT_GROUPS) - set(regex.groupindex):
        message = "a `full_count` pattern needs the groups (?P<done>) and (?P<total>)"
        raise fail(path, where, message)
    per_request = entry.get("per_request", False)
    if not isinstance(per_request, bool) or (per_request and scope != "process"):
        raise fail(path, where, "field `per_request` must be true or false (true: scope process)")
    opens = entry.get("opens")
    if opens is not None:
        if not per_request:
            raise fail(path, where, "field `opens` needs `per_request = true`")
        _check(_text(entry, "opens", where, path), where, path, "opens")
    example = _text(entry, "example", where, path)
    if not regex.search(example):
        raise fail(path, where, "field `example` must be a line the pattern finds")
    return FinishSign(
        id=sign_id,
        tool=_text(entry, "tool", where, path),
        pattern=pattern,
        scope=scope,
        source=_url(entry, "source", where, path),
        example=example,
        full_count=full_count,
        per_request=per_request,
        opens=opens,
    )


def parse_finish_table(data: dict[str, Any], path: str) -> FinishTable:
    """Validate the table: its header, then each entry; ids and patterns are unique."""
    if unknown := set(data) - {"catalog", "entry"}:
        raise fail(path, "table", f"unknown fields: {', '.join(sorted(unknown))}")
    header = data.get("catalog")
    if not isinstance(header, dict) or set(header) - _HEADER_FIELDS:
        raise fail(path, "catalog", f"a [catalog] table of {', '.join(sorted(_HEADER_FIELDS))}")
    if _text(header, "name", "catalog", path) != FINISH_TABLE:
        raise fail(path, "catalog", f"field `name` must be {FINISH_TABLE!r}")
    sources = header.get("sources")
    if not isinstance(sources, list) or not sources:
        raise fail(path, "catalog", "field `sources` must be a non-empty list of URLs")
    for source in sources:
        _url({"sources": source}, "sources", "catalog", path)
    raw = data.get("entry")
    if not isinstance(raw, list) or not raw:
        raise fail(path, "entry", "a table needs at least one [[entry]]")
    signs = tuple(_sign(entry, index, path) for index, entry in enumerate(raw))
    for key in ("id", "pattern"):
        values = [getattr(sign, key) for sign in signs]
        if twice := sorted({value for value in values if values.count(value) > 1}):
            raise fail(path, "entry", f"field `{key}` listed twice: {', '.join(twice)}")
    return FinishTable(
        title=_text(header, "title", "catalog", path),
        sources=tuple(sources),
        signs=signs,
        path=path,
    )


def load_finish_table(path: Path | None = None) -> FinishTable:
    """Read and validate the table (the shipped one by default)."""
    where = path or tables_dir() / f"{FINISH_TABLE}.toml"
    return parse_finish_table(read_table(where), str(where))


@cache
def _shipped() -> FinishTable:
    return load_finish_table()


FINISH_SIGNS: tuple[FinishSign, ...] = _shipped().signs
"""The shipped table's entries, in table order."""
FINISH_ANCHOR = "|".join(sign.pattern for sign in FINISH_SIGNS)
"""One scan pattern for every entry (each is one line-safe wording, so a plain alternation)."""
OPENS_ANCHOR = "|".join(sign.opens for sign in FINISH_SIGNS if sign.opens)
"""The same for the lines that open a server's request (`FinishSign.opens`)."""


def finish_sign(text: str) -> FinishSign | None:
    """The first entry, in table order, whose pattern the text holds; None for none."""
    return next((sign for sign in FINISH_SIGNS if sign.found_in(text)), None)


def request_opened(text: str) -> FinishSign | None:
    """The first `per_request` entry whose `opens` wording the text holds; None for none."""
    return next(
        (sign for sign in FINISH_SIGNS if sign.opens and linear_text(sign.opens).search(text)),
        None,
    )
