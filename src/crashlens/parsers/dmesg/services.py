"""The deaths a service's own lines print, in a journal or syslog read as a kernel log.

journald and syslog keep a service's stdout and stderr under its identifier (`ollama[6012]: ...`)
beside the kernel's lines (`kernel: ...`), so `journalctl -u <unit>`, /var/log/syslog or
/var/log/messages also tell that service's story. When a service ran the work in a child
process, the death of that child shows in the service's own wording, in one of two conventions:

* Go's os/exec (`ProcessState.String()`): `signal: <name>` for a child a signal ended, with the
  name from Go's signal table (`killed`, `segmentation fault`, `bus error`, `aborted`: glibc's
  strsignal words, lower case) and ` (core dumped)` after it for a core dump, `exit status N`
  for one that exited. Servers written in Go wrap it in their messages (ollama's `llama runner
  process has terminated: signal: killed`, containerd shims, Kubernetes operators).
* systemd, for a unit's main process (`service_sigchld_event`): `Main process exited,
  code=killed, status=9/KILL`, `code=dumped` for a core dump.

Both give `launcher.signal` facts (source `text`, as the launcher parser reads the same words),
and a non-zero Go exit status `process.exit_code` (attr wording), so the failure detector sees
that death in a kernel-log input too. Only lines a service wrote count (a syslog or journal
prefix whose identifier is not `kernel`); the kernel's own reports of a death are read apart
(`kernel.oom_kill`, `kernel.segfault`). A signal that is an outside stop (SIGINT, SIGTERM,
SIGHUP) is left out: in a node's journal it is mostly a unit stopped at shutdown or restart.

The machine's own shutdown from outside (`parsers/machine_shutdown.py`: systemd-logind's `Power
key pressed`, a cloud's preemption notice) is a `platform.shutdown` fact, as in a launcher log.
"""

from __future__ import annotations

import re

from crashlens.model import Fact, Line
from crashlens.parsers.base import fact
from crashlens.parsers.dmesg.prefixes import JOURNAL_ISO, SYSLOG
from crashlens.parsers.launcher.signals import SIGNAL_WORDS, SIGNALS
from crashlens.parsers.machine_shutdown import ANCHOR as SHUTDOWN_ANCHOR
from crashlens.parsers.machine_shutdown import shutdown_kind
from crashlens.text.values import bounded_int

ANCHOR = r"signal: [a-z]|exit status [0-9]|code=(?:killed|dumped), status=[0-9]|" + SHUTDOWN_ANCHOR
"""Line-safe: what the collector must be fed (the handler re-checks with the regexes below)."""
MAX_DEATHS = 50
"""Facts kept per journal (one per signal or exit status and process)."""
STOP_SIGNALS = frozenset({"SIGINT", "SIGTERM", "SIGHUP"})

_GO_SIGNAL = re.compile(
    # the DataLoader's `killed by signal: Killed` is the launcher parser's; a Go name is lower case
    r"(?<!by )\bsignal: ([a-z][a-z/ ]{2,30}?)(?: \(core dumped\))?(?=[\"'\\,;)]|$|\s*$)"
)
_GO_EXIT = re.compile(r"\bexit status ([0-9]{1,3})\b")
_PID = re.compile(r"\[([0-9]+)\]: ?$")
_SYSTEMD = re.compile(r"\bcode=(?:killed|dumped), status=([0-9]{1,2})/[A-Z0-9]+")


def service_identifier(raw: str) -> tuple[str, str] | None:
    """The syslog identifier and pid of a journal or syslog line (`ollama`, `6012` of
    `ollama[6012]:`; the pid empty when not printed), or None for a line without such a prefix."""
    found = SYSLOG.match(raw) or JOURNAL_ISO.match(raw)
    if found is None:
        return None
    pid = _PID.search(raw, 0, found.end())
    return (found[8] if found.re is SYSLOG else found[10]), (pid[1] if pid else "")


class ServiceDeaths:
    """The deaths the services' lines of one journal print (bounded)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.facts: dict[tuple[str, str, str], Fact] = {}

    def read(self, line: Line) -> None:
        service = service_identifier(line.raw.lstrip())
        if service is None or service[0] == "kernel" or len(self.facts) >= MAX_DEATHS:
            return
        ident, pid = service
        if (what := shutdown_kind(line.raw)) is not None:
            self.facts.setdefault(
                ("platform.shutdown", what, ""),
                fact("platform.shutdown", what, self.path, line.lineno, text=line.raw),
            )
        elif (go := _GO_SIGNAL.search(line.text)) is not None:
            number = SIGNAL_WORDS.get(go[1].strip())
            self._signal(SIGNALS.get(number) if number else None, line, ident, pid)
        elif (unit := _SYSTEMD.search(line.text)) is not None:
            self._signal(SIGNALS.get(bounded_int(unit[1]) or 0), line, ident, pid)
        elif (status := _GO_EXIT.search(line.text)) is not None:
            code = bounded_int(status[1])
            if code:
                key = ("process.exit_code", str(code), f"{ident}[{pid}]")
                self.facts.setdefault(
                    key,
                    fact("process.exit_code", code, self.path, line.lineno, text=line.raw,
                         wording="exit status", service=ident),
                )  # fmt: skip

    def _signal(self, name: str | None, line: Line, ident: str, pid: str) -> None:
        if name is None or name in STOP_SIGNALS:
            return
        key = ("launcher.signal", name, f"{ident}[{pid}]")
        self.facts.setdefault(
            key,
            fact("launcher.signal", name, self.path, line.lineno, text=line.raw,
                 host=line.host, source="text", service=ident),
        )  # fmt: skip
