"""The NVIDIA Xid catalog: what an Xid code means and what to do about it.

The data lives in `patterns/tables/xid.toml` (shipped with the rule library, found the same way
as the rules: `crashlens.library.default_pattern_dir()`), so a new code is a data change, not a
code change. `lookup(code)` returns an `XidInfo` or None for codes the catalog does not list.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from crashlens.errors import PatternError
from crashlens.library import default_pattern_dir

CATEGORIES = frozenset({"hardware", "driver", "application", "noise"})
"""How crashlens reads an Xid: a fault of the GPU, of the driver, of the job, or a consequence."""
SEVERITIES = frozenset({"critical", "error", "warning", "info"})
_REQUIRED = ("code", "name", "meaning", "category", "action", "bucket", "severity")


@dataclass(frozen=True, slots=True)
class XidInfo:
    """One catalog entry."""

    code: int
    name: str
    meaning: str
    category: str
    """`hardware`, `driver`, `application` or `noise` (never a root cause on its own)."""
    action: str
    """What to do, in crashlens's words."""
    bucket: str
    """NVIDIA's immediate resolution bucket (RESTART_APP, RESET_GPU, RESTART_BM, ...); may be ''."""
    severity: str
    """`critical`, `error`, `warning` or `info`."""
    investigatory: str = ""
    """NVIDIA's investigatory bucket (CONTACT_SUPPORT, INVESTIGATE_SW, ...); may be ''."""


def table_path() -> Path:
    """Where the shipped Xid table is."""
    return default_pattern_dir() / "tables" / "xid.toml"


def load_table(path: Path) -> dict[int, XidInfo]:
    """Read and validate an Xid table; a bad entry is a PatternError naming the file."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise PatternError(str(path), f"cannot read the Xid table: {exc}") from exc
    entries = data.get("xid")
    if not isinstance(entries, list):
        raise PatternError(str(path), "expected [[xid]] entries")
    table: dict[int, XidInfo] = {}
    for index, entry in enumerate(entries):
        info = _entry(path, index, entry)
        if info.code in table:
            raise PatternError(str(path), f"xid {info.code} is listed twice")
        table[info.code] = info
    return table


def _entry(path: Path, index: int, entry: Any) -> XidInfo:
    where = f"xid[{index}]"
    if not isinstance(entry, dict):
        raise PatternError(str(path), f"{where}: expected a table")
    for name in _REQUIRED:
        if name not in entry:
            raise PatternError(str(path), f"{where}: missing field {name!r}")
    code = entry["code"]
    if not isinstance(code, int) or isinstance(code, bool) or code <= 0:
        raise PatternError(str(path), f"{where}: code must be a positive integer")
    texts = {name: entry.get(name, "") for name in (*_REQUIRED[1:], "investigatory")}
    for name, value in texts.items():
        if not isinstance(value, str):
            raise PatternError(str(path), f"{where}: {name} must be a string")
    if texts["category"] not in CATEGORIES:
        raise PatternError(str(path), f"{where}: category must be one of {sorted(CATEGORIES)}")
    if texts["severity"] not in SEVERITIES:
        raise PatternError(str(path), f"{where}: severity must be one of {sorted(SEVERITIES)}")
    return XidInfo(
        code=code,
        name=texts["name"],
        meaning=texts["meaning"],
        category=texts["category"],
        action=texts["action"],
        bucket=texts["bucket"],
        severity=texts["severity"],
        investigatory=texts["investigatory"],
    )


@cache
def catalog() -> dict[int, XidInfo]:
    """The shipped table, loaded once per process."""
    return load_table(table_path())


def lookup(code: int) -> XidInfo | None:
    """The catalog entry for one Xid code, or None when the catalog does not list it."""
    return catalog().get(code)
