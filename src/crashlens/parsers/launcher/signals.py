"""Signal names and numbers, and the `launcher.signal` facts kept once per death."""

from __future__ import annotations

import re

from crashlens.model import Fact, FactValue
from crashlens.parsers.base import fact

SIGNALS: dict[int, str] = {
    1: "SIGHUP",
    2: "SIGINT",
    3: "SIGQUIT",
    4: "SIGILL",
    5: "SIGTRAP",
    6: "SIGABRT",
    7: "SIGBUS",
    8: "SIGFPE",
    9: "SIGKILL",
    10: "SIGUSR1",
    11: "SIGSEGV",
    12: "SIGUSR2",
    13: "SIGPIPE",
    14: "SIGALRM",
    15: "SIGTERM",
    16: "SIGSTKFLT",
    17: "SIGCHLD",
    18: "SIGCONT",
    19: "SIGSTOP",
    20: "SIGTSTP",
    21: "SIGTTIN",
    22: "SIGTTOU",
    23: "SIGURG",
    24: "SIGXCPU",
    25: "SIGXFSZ",
    26: "SIGVTALRM",
    27: "SIGPROF",
    28: "SIGWINCH",
    29: "SIGIO",
    30: "SIGPWR",
    31: "SIGSYS",
}
"""Linux numbering (launchers report Linux signals; Python's `signal` module is per platform)."""

SIGNAL_WORDS: dict[str, int] = {
    "killed": 9,
    "bus error": 7,
    "segmentation fault": 11,
    "aborted": 6,
    "abort": 6,
    "terminated": 15,
    "floating point exception": 8,
    "illegal instruction": 4,
    "hangup": 1,
    "quit": 3,
    "trace/breakpoint trap": 5,
}
"""strsignal() wording used by shells, srun and the DataLoader -> signal number."""

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
