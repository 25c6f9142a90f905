"""Windows NTSTATUS exit statuses (`tables/windows_ntstatus.toml`), for the failure detector.

A Windows process that dies of an exception, or cannot load a DLL it links against, exits with
the NTSTATUS code as its status: `-1073741819` or `3221225477` is an access violation, not a
signal 1073741819. The table is read on first use (the detector meets such a status rarely).
"""

from __future__ import annotations

from functools import cache

from crashlens.library import tables_dir
from crashlens.parsers.tables import CatalogEntry, load_catalog

_TABLE = "windows_ntstatus.toml"
_ERRORS = range(0xC0000000, 0xD0000000)
"""NTSTATUS codes with both severity bits set are errors, the range a crash exits with; the
ones programs exit with have small facility numbers (0xC0000005, 0xC0000409, 0xC06D007E),
and the top of the signed range (-1 to -64 as 0xFFFFFFxx) is Python's `-signal`, left out."""


@cache
def _by_code() -> dict[int, CatalogEntry]:
    catalog = load_catalog(tables_dir() / _TABLE)
    return {entry.code: entry for entry in catalog.entries if entry.code is not None}


def windows_status(status: int) -> CatalogEntry | None:
    """The NTSTATUS entry an exit status is, printed signed or unsigned; None otherwise."""
    unsigned = _unsigned(status)
    return _by_code().get(unsigned) if unsigned in _ERRORS else None


def is_windows_error_status(status: int) -> bool:
    """Whether an exit status lies in NTSTATUS's error range (known to the table or not):
    such a status is never `-signal` or `128 + signal`."""
    return _unsigned(status) in _ERRORS


def _unsigned(status: int) -> int:
    """The status as the DWORD Windows keeps (programs print it signed or unsigned)."""
    return status + 2**32 if -(2**31) <= status < 0 else status
