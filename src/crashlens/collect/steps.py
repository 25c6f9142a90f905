"""The command steps as data, and the records of what each step and attempt gave."""

from __future__ import annotations

from dataclasses import dataclass, field

KERNEL_FILE_TAIL = 16 * 1024 * 1024
"""How much of /var/log/kern.log (or messages) is kept when no command gave the kernel log."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """One way to get a step's output: a command (argv) or a file to read the tail of."""

    output: str
    """File name in the bundle (the name helps detection: `dmesg.txt`, `kern.log`)."""
    argv: tuple[str, ...] = ()
    path: str | None = None

    @property
    def source(self) -> str:
        """How the manifest names this attempt."""
        return " ".join(self.argv) if self.argv else str(self.path)


@dataclass(frozen=True, slots=True)
class Step:
    """A piece of evidence: attempts tried in order until one gives output."""

    name: str
    what: str
    attempts: tuple[Attempt, ...]
    timeout: float | None = None
    """Seconds per attempt; None: the `--timeout` given to `collect`."""


KERNEL_LOG = Step(
    "kernel-log",
    "kernel log: Xid, OOM killer, MCE, PCIe and I/O errors",
    (
        Attempt("dmesg.txt", argv=("dmesg", "-T")),
        Attempt("journalctl-k.txt", argv=("journalctl", "-k", "--since", "-2h", "--no-pager")),
        Attempt("kern.log", path="/var/log/kern.log"),
        Attempt("messages.log", path="/var/log/messages"),
    ),
)

STEPS: tuple[Step, ...] = (
    Step(
        "nvidia-smi",
        "GPU table: driver/CUDA versions, memory, processes, or nvidia-smi's failure",
        (Attempt("nvidia-smi.txt", argv=("nvidia-smi",)),),
    ),
    Step(
        "nvidia-smi-q",
        "full GPU query: ECC and row-remap counters, retired pages, throttling",
        (Attempt("nvidia-smi-q.txt", argv=("nvidia-smi", "-q")),),
    ),
    KERNEL_LOG,
    Step("df", "disk use of every mount", (Attempt("df-h.txt", argv=("df", "-h")),)),
    Step(
        "df-shm",
        "/dev/shm size and use",
        (Attempt("df-h-dev-shm.txt", argv=("df", "-h", "/dev/shm")),),
    ),
    Step("df-inodes", "inode use of every mount", (Attempt("df-i.txt", argv=("df", "-i")),)),
    Step(
        "ulimit",
        "resource limits (memlock, open files, stack)",
        (
            Attempt("ulimit-a.txt", argv=("bash", "-c", "ulimit -a")),
            Attempt("ulimit-a.txt", argv=("sh", "-c", "ulimit -a")),
        ),
    ),
    Step(
        "ipcs-m", "System V shared memory segments", (Attempt("ipcs-m.txt", argv=("ipcs", "-m")),)
    ),
    Step("ipcs-l", "System V IPC limits", (Attempt("ipcs-l.txt", argv=("ipcs", "-l")),)),
)
"""The command steps. The cgroup, container, versions and log steps are functions
(`crashlens.collect.cgroup` and `crashlens.collect.sources`)."""


# The two results stay mutable: a step's runner fills them in as its attempts go, and the
# bundle writer copies them with redacted text (`dataclasses.replace`) before recording them.


@dataclass(slots=True)
class AttemptResult:
    """What one attempt gave."""

    source: str
    outcome: str
    """ok, no-output, not-found, permission-denied, timeout, exit N, error."""
    seconds: float = 0.0
    exit_code: int | None = None
    detail: str = ""
    """The command's stderr (cut), or why a file could not be read."""


@dataclass(slots=True)
class StepResult:
    """One step's outcome, as the manifest records it."""

    name: str
    what: str
    status: str = "failed"
    """ok (output kept), partial (output kept, but the command complained), failed, skipped."""
    outputs: list[str] = field(default_factory=list)
    bytes: int = 0
    note: str = ""
    attempts: list[AttemptResult] = field(default_factory=list)

    def reason(self) -> str:
        """One line: why the step gave nothing or only part (empty when it went fine)."""
        parts = [
            f"{a.source}: {a.outcome}" + (f" ({a.detail})" if a.detail else "")
            for a in self.attempts
            if a.outcome != "ok"
        ]
        if self.note:
            parts.append(self.note)
        return "; ".join(parts)


def summary_line(step: StepResult) -> str:
    """One line for the terminal: status, name, outputs and the reason when not ok."""
    outputs = ", ".join(step.outputs) if step.outputs else "-"
    line = f"{step.status:8} {step.name}: {outputs}"
    reason = step.reason()
    if reason:
        line += f"  [{reason}]"
    return line
