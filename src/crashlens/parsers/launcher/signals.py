"""Signal names and numbers, and the `launcher.signal` facts kept once per death.

The names, numbers and the words a shell prints for each come from the signals catalog
(`patterns/tables/signals.toml`), which the rules read too.
"""

from __future__ import annotations

import re
from functools import cache

from crashlens.library import tables_dir
from crashlens.model import Fact, FactValue
from crashlens.parsers.base import fact
from crashlens.parsers.tables import CatalogEntry, load_catalog

SIGNALS_TABLE = "signals.toml"
MAX_SIGNAL = 31
"""Standard Linux signals (the real-time ones above it are named by number only)."""
_NAME = re.compile(r"SIG[A-Z0-9]+")
ZSH_WORDS: dict[str, int] = {"abort": 6}
"""zsh's own lower-case job-table names that glibc's strsignal does not print (`zsh: abort`)."""


@cache
def _signal_entries() -> tuple[CatalogEntry, ...]:
    """The signals catalog's entries for the standard signals, by number (`patterns/tables/`)."""
    table = load_catalog(tables_dir() / SIGNALS_TABLE)
    return tuple(
        entry
        for entry in table.entries
        if entry.code is not None and 0 < entry.code <= MAX_SIGNAL and _NAME.fullmatch(entry.id)
    )


SIGNALS: dict[int, str] = {entry.code: entry.id for entry in _signal_entries() if entry.code}
"""Linux numbering (launchers report Linux signals; Python's `signal` module is per platform),
read from the signals catalog."""

SIGNAL_WORDS: dict[str, int] = {
    **{
        entry.shell[0].lower(): entry.code
        for entry in _signal_entries()
        if entry.code and entry.shell
    },
    **ZSH_WORDS,
}
"""strsignal() wording used by shells, srun and the DataLoader (the C locale's, lower-case) ->
signal number."""
LOCALE_SIGNAL_WORDS: dict[str, int] = {
    word: entry.code for entry in _signal_entries() if entry.code for word in entry.shell[1:]
}
"""Signal words of other locales (glibc's translations of strsignal: zh_CN, de, fr, ja) ->
signal number."""
ENGLISH_SIGNAL_WORDS: tuple[str, ...] = tuple(
    entry.shell[0] for entry in _signal_entries() if entry.shell
)
"""The C locale's words, as printed (`Killed`, `Bus error`, `Trace/breakpoint trap`)."""

SIGNAL_RECEIVED = re.compile(r"Signal ([0-9]+) \((SIG[A-Z0-9]+)\) received by PID ([0-9]+)")
"""torchelastic's wording, in a report's `msg` / `traceback` field or a log line."""


class SignalLog:
    """The `launcher.signal` facts of one log, one per death, at most `limit`."""

    def __init__(self, path: str, limit: int) -> None:
        self.path = path
        self.limit = limit
        self.facts: dict[tuple[str, str | None], Fact] = {}

    def add(self, name: str, lineno: int, text: str, **attrs: FactValue | None) -> None:
        """Record a signal once per (signal, pid): the agent line and the report name the same
        death, and the report's entry (it knows the global rank) is the better one to keep."""
        pid, rank = attrs.get("pid"), attrs.get("rank")
        key = (name, _s(pid)) if pid is not None else (name, f"{rank}@{attrs.get('host')}")
        known = self.facts.get(key)
        if known is not None and (rank is None or known.attr("rank") is not None):
            return
        if known is None and len(self.facts) >= self.limit:
            return
        self.facts[key] = fact("launcher.signal", name, self.path, lineno, text=text, **attrs)

    def add_exit_code(self, code: int, lineno: int, text: str, **attrs: FactValue | None) -> None:
        """The signal a negative exit code names (-9: SIGKILL), if any."""
        name = SIGNALS.get(-code)
        if name:
            self.add(name, lineno, text, source="exit-code", **attrs)


def _s(value: FactValue | None) -> str | None:
    return None if value is None else str(value)
