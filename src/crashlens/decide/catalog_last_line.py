"""A log's last output that is an error the catalogs know: the program gave up on it.

A CUDA or NCCL error printed as the last thing a log shows (`tables/cuda_errors.toml`,
`tables/nccl.toml`) is where the program stopped, whatever wrapped it; so is the start of one
cut mid-word where a paste or a killed writer ended (`CUDA error: an illegal memory access was
enc`). The failure detector (`decide.failure`) reads both as a death.
"""

from __future__ import annotations

from functools import cache

from crashlens.decide.harmless_output import harmless_entry
from crashlens.match.catalogs import load_catalogs

LAST_LINE_CATALOGS = ("cuda_errors", "nccl")
"""Catalogs whose errors, printed as a log's last output, show that the program gave up on
them (`patterns/tables/`; their `noise` entries, success statuses, are left out)."""


@cache
def _catalog_texts() -> tuple[tuple[str, str], ...]:
    """(printed text, entry id) of the errors in `LAST_LINE_CATALOGS`, longest text first."""
    wanted = {c.name: c for c in load_catalogs() if c.name in LAST_LINE_CATALOGS}
    pairs = [
        (text, entry.id)
        for name in LAST_LINE_CATALOGS
        if name in wanted
        for entry in wanted[name].entries
        if entry.category != "noise"
        for text in entry.texts
    ]
    return tuple(sorted(pairs, key=lambda pair: -len(pair[0])))


def catalog_error(text: str) -> str | None:
    """The catalog entry (CUDA or NCCL error) a line prints, or None. A line its own project
    calls harmless names no error here, though it quotes one (Warp printing the CUDA error of
    an OpenGL interop it then does without: `tables/harmless_output.toml`)."""
    if harmless_entry(text) is not None:
        return None
    return next((entry for printed, entry in _catalog_texts() if printed in text), None)


CUT_PREFIX = 24
"""Characters of a catalog text a cut last line must end with to count as that error: fewer
(`an illegal memory`) are ordinary words as often as an error's start."""


def cut_catalog_error(text: str) -> str | None:
    """The catalog entry whose text a log's last line ends with the start of (a paste or a
    log cut mid-message: `CUDA error: an illegal memory access was enc`), or None."""
    tail = text.rstrip()
    if len(tail) < CUT_PREFIX or harmless_entry(text) is not None:
        return None
    end = tail[-CUT_PREFIX:]
    for printed, entry in _catalog_texts():
        if end not in printed:  # cheap: most texts hold no piece of the line's end
            continue
        for size in range(len(printed) - 1, CUT_PREFIX - 1, -1):
            if tail.endswith(printed[:size]):
                return entry
    return None
