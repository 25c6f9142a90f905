"""Output its own project calls harmless, read from the catalog `tables/harmless_output.toml`.

Some programs print lines that read like failures and are not: a thread pool dropped after a
fork, a provider library that could not be loaded at import, a single-copy read an
unprivileged container refuses, a backend that is not implemented yet. The project that prints
each one has said so (its documentation, a maintainer, the change that silenced it); the
catalog keeps the printed text, why it is harmless and that source, and rules of the library
own its entries so that each such line is a hit. The failure detector asks here whether a line
is one of them (`harmless_entry`) and says why (`why`), so that a log that ends at such a line,
or goes on past it, reads as a run going on well, with each line judged in the report.
"""

from __future__ import annotations

from functools import cache

from crashlens.match.catalogs import CatalogEntry, load_catalogs

TABLE = "harmless_output"
STATUS_TABLES = ("nvml_errors",)
"""Catalogs whose `noise` entries are harmless output too: NVML's statuses that say a query
succeeded or that the device does not offer it (NOT_SUPPORTED, NO_DATA, DEPRECATED), by
NVIDIA's own definition of each code. A monitoring loop (Triton's metrics poller, a GPU
exporter) prints them every few seconds and goes on."""


@cache
def _entries() -> tuple[CatalogEntry, ...]:
    return tuple(
        entry
        for c in load_catalogs()
        for entry in c.entries
        if c.name == TABLE or (c.name in STATUS_TABLES and entry.category == "noise")
    )


def harmless_entry(line: str) -> CatalogEntry | None:
    """The catalog entry whose printed text the line holds, or None."""
    return next((e for e in _entries() if any(text in line for text in e.texts)), None)


def why(entry: CatalogEntry) -> str:
    """Why a line of this entry is harmless, as a clause with its source."""
    return f"known harmless: {entry.meaning.rstrip('.')} (source: {entry.source})"
