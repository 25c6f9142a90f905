"""`crashlens collect`: gather the evidence crashlens reads, on the machine where a run failed.

Run on the node (or inside the container) after the failure. It writes one folder or
`.tar.gz` that `crashlens analyze` reads back:

* `nvidia-smi.txt`, `nvidia-smi-q.txt`: the GPU table and the full query (driver and CUDA
  versions, ECC and row-remap counters, or nvidia-smi's own failure message);
* `dmesg.txt` / `journalctl-k.txt` / `kern.log`: the kernel log (Xid, OOM killer, MCE, I/O);
* `df-h.txt`, `df-h-dev-shm.txt`, `df-i.txt`: disk, `/dev/shm` and inode use;
* `ulimit-a.txt`, `ipcs-m.txt`, `ipcs-l.txt`: limits and System V shared memory;
* `cgroup-memory.txt`: the cgroup memory limit, usage and OOM-kill counters of this process;
* `docker-inspect*.json`: the container's inspect data, when it can be reached;
* `versions.txt`: kernel, NVIDIA module, Python, torch (CUDA, NCCL, cuDNN), deepspeed;
* `logs/...`: copies of the logs named on the command line (the tail of huge ones);
* `MANIFEST.txt` and `collect-report.json`: every step's outcome, with the reason a step
  gave nothing (not installed, refused, timed out, exit status and its message). `analyze`
  skips these two: a refusal while collecting is not evidence of the failure.

Every command runs from an argv (never through a shell with user input), in its own process
group with a time limit; a missing tool, a permission refusal or a timeout is recorded and the
next step runs. Nothing here needs root or a GPU, and torch is imported only in a child Python.
Text files are redacted by default with one `crashlens.redact.Redactor`, so a host or user gets
the same pseudonym in every file of the bundle.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import getpass
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING

from crashlens import __version__
from crashlens.decide.remedy import human_bytes
from crashlens.inputs.discover import COLLECT_RECORD_MARKERS, Source, iter_inputs
from crashlens.model import InputStatus

if TYPE_CHECKING:
    from crashlens.redact import Redactor

DEFAULT_TIMEOUT = 20.0
"""Seconds each command may run (`--timeout`)."""
MAX_LOG_BYTES = 200 * 1024 * 1024
"""A log named on the command line is cut to its last this many bytes (unredacted)."""
MAX_LOG_BYTES_REDACTED = 20 * 1024 * 1024
"""The same when redacting: redaction reads every line, so huge logs would take minutes."""
KERNEL_FILE_TAIL = 16 * 1024 * 1024
"""How much of /var/log/kern.log (or messages) is kept when no command gave the kernel log."""
MAX_DETAIL = 400
"""Characters of a failed command's stderr kept in the manifest."""
BUNDLE_DIR = "crashlens-collect"
"""The folder every member of a `.tar.gz` bundle sits under."""
MANIFEST = "MANIFEST.txt"
REPORT = "collect-report.json"
LOGS_DIR = "logs"
_CHUNK = 1024 * 1024
_ENV_OVERRIDES = {"LC_ALL": "C", "LANG": "C", "LANGUAGE": "C", "SYSTEMD_PAGER": "", "PAGER": "cat"}
"""Child environment: English messages and C dates (what the parsers read), no pager."""

# --- the steps, as data -----------------------------------------------------------------------


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
"""The command steps. The cgroup, container, versions and log steps are functions below."""

# --- outcomes ---------------------------------------------------------------------------------


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


@dataclass(frozen=True, slots=True)
class CollectOptions:
    """What `collect` was asked to do."""

    logs: tuple[str, ...] = ()
    timeout: float = DEFAULT_TIMEOUT
    redact: bool = True
    containers: tuple[str, ...] = ()
    """Container names or ids to `docker inspect` (inside a container: its own, when reachable)."""
    python: str | None = None
    """The Python the job ran with (versions of torch/deepspeed); default python3 on PATH."""
    max_log_bytes: int | None = None
    """Tail limit for copied logs; None: MAX_LOG_BYTES, or MAX_LOG_BYTES_REDACTED when redacting."""
    steps: tuple[Step, ...] | None = None
    """The command steps to run; None: STEPS (tests swap in their own)."""
    cgroup_root: Path = Path("/sys/fs/cgroup")
    proc_self_cgroup: Path = Path("/proc/self/cgroup")
    progress: Callable[[StepResult], None] | None = None


@dataclass(frozen=True, slots=True)
class Bundle:
    """What `collect` wrote."""

    path: Path
    steps: tuple[StepResult, ...]
    redacted: bool
    redactor: Redactor | None = None
    """Holds the pseudonym -> original mapping when redacted (never written into the bundle)."""


class CollectError(Exception):
    """The bundle itself could not be written (bad --out): the only fatal failure."""


# --- running commands -------------------------------------------------------------------------


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(_ENV_OVERRIDES)
    return env


def _detail(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace").strip()
    text = " | ".join(line.strip() for line in text.splitlines() if line.strip())
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 3] + "..."


def run_command(argv: Sequence[str], timeout: float, stdout: IO[bytes]) -> AttemptResult:
    """Run `argv` with its stdout going to `stdout`; never raises for the command's failures.

    The child gets its own process group, and on timeout the whole group is killed, so a
    wrapper script's children cannot keep it alive (subprocess.run's timeout kills only the
    direct child, then waits for pipes its children still hold).
    """
    source = " ".join(argv)
    started = time.monotonic()
    with tempfile.TemporaryFile() as stderr:
        try:
            process = subprocess.Popen(  # noqa: S603 (argv from the step table, no shell)
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                env=_child_env(),
                start_new_session=True,
            )
        except FileNotFoundError:
            return AttemptResult(source, "not-found", detail="not installed or not on PATH")
        except PermissionError as error:
            return AttemptResult(source, "permission-denied", detail=str(error.strerror))
        except OSError as error:
            return AttemptResult(source, "error", detail=str(error.strerror or error))
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            seconds = time.monotonic() - started
            return AttemptResult(source, "timeout", seconds, detail=f"killed after {timeout:g} s")
        seconds = time.monotonic() - started
        stderr.seek(0)
        detail = _detail(stderr.read(64 * 1024))
    outcome = "ok" if code == 0 else f"exit {code}"
    return AttemptResult(source, outcome, seconds, exit_code=code, detail=detail)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):  # a process stuck in D state
        process.wait(timeout=5)


def _refused(detail: str) -> bool:
    lower = detail.lower()
    return "not permitted" in lower or "permission denied" in lower or "access denied" in lower


# --- the bundle being written (raw, before redaction) -----------------------------------------


class _Staging:
    """A private temporary folder the raw outputs go to before redaction and packing."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="crashlens-collect-")
        self.root = Path(self._tmp.name)
        os.chmod(self.root, 0o700)
        self.files: list[str] = []
        """Bundle names in the order they were written."""
        self.logs: set[str] = set()

    def path(self, name: str) -> Path:
        target = self.root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        return target

    def add(self, name: str, *, log: bool = False) -> None:
        if name not in self.files:
            self.files.append(name)
        if log:
            self.logs.add(name)

    def unique(self, name: str) -> str:
        if name not in self.files:
            return name
        stem, dot, suffix = name.rpartition(".")
        if not stem or "/" in suffix:
            stem, dot, suffix = name, "", ""
        n = 2
        while True:
            candidate = f"{stem}-{n}{dot}{suffix}"
            if candidate not in self.files:
                return candidate
            n += 1

    def cleanup(self) -> None:
        self._tmp.cleanup()


def _run_step(step: Step, default_timeout: float, staging: _Staging) -> StepResult:
    """Try the step's attempts in order; the first with output wins (even on a non-zero exit:
    `nvidia-smi` prints its own failure, which is evidence, and exits 9)."""
    result = StepResult(step.name, step.what)
    timeout = step.timeout if step.timeout is not None else default_timeout
    for attempt in step.attempts:
        target = staging.path(attempt.output)
        if attempt.argv:
            with target.open("wb") as stream:
                outcome = run_command(attempt.argv, timeout, stream)
        else:
            outcome = _read_tail(Path(str(attempt.path)), target, KERNEL_FILE_TAIL)
        result.attempts.append(outcome)
        if target.exists() and _has_content(target):
            staging.add(attempt.output)
            result.outputs.append(attempt.output)
            result.bytes = target.stat().st_size
            if outcome.outcome == "ok" and not (attempt.argv and outcome.detail):
                result.status = "ok"
            else:
                result.status = "partial"
                if outcome.outcome != "ok":
                    outcome.outcome += ", output kept"
            return result
        target.unlink(missing_ok=True)
        if outcome.outcome == "ok":
            outcome.outcome = "no-output"
        elif outcome.outcome.startswith("exit") and _refused(outcome.detail):
            outcome.outcome = f"permission-denied ({outcome.outcome})"
    return result


_NO_CONTENT = re.compile(rb"^(?:-- No entries --|Hint: [^\n]*|\[\]|\s*)$")


def _has_content(path: Path) -> bool:
    """False for empty output and journalctl's 'No entries' / 'Hint:' lines alone."""
    with path.open("rb") as stream:
        head = stream.read(4096)
    lines = head.splitlines()
    return any(not _NO_CONTENT.match(line) for line in lines) or len(head) == 4096


def _read_tail(source: Path, target: Path, limit: int) -> AttemptResult:
    started = time.monotonic()
    try:
        with source.open("rb") as stream, target.open("wb") as out:
            note = _copy_tail(stream, out, limit)
    except FileNotFoundError:
        return AttemptResult(str(source), "not-found", detail="no such file")
    except PermissionError:
        return AttemptResult(str(source), "permission-denied", detail="not readable by this user")
    except OSError as error:
        return AttemptResult(str(source), "error", detail=error.strerror or str(error))
    return AttemptResult(str(source), "ok", time.monotonic() - started, detail=note)


def _copy_tail(stream: IO[bytes], out: IO[bytes], limit: int) -> str:
    """Copy `stream` to `out`, keeping only its last `limit` bytes cut at a line start.

    Returns a note when something was cut off, else "".
    """
    seekable = False
    try:
        seekable = stream.seekable()
    except (OSError, ValueError):
        seekable = False
    if seekable:
        end = stream.seek(0, os.SEEK_END)
        if end <= limit:
            stream.seek(0)
            shutil.copyfileobj(stream, out, _CHUNK)
            return ""
        stream.seek(end - limit)
        stream.readline()  # drop the partial first line
        dropped = stream.tell()
        shutil.copyfileobj(stream, out, _CHUNK)
        return f"kept the last {human_bytes(end - dropped)} of {human_bytes(end)}"
    chunks: collections.deque[bytes] = collections.deque()
    kept = total = 0
    while chunk := stream.read(_CHUNK):
        chunks.append(chunk)
        kept += len(chunk)
        total += len(chunk)
        while kept - len(chunks[0]) >= limit:
            kept -= len(chunks.popleft())
    data = b"".join(chunks)
    if total > limit:
        data = data[len(data) - limit :]
        newline = data.find(b"\n")
        data = data[newline + 1 :] if newline >= 0 else data
        out.write(data)
        return f"kept the last {human_bytes(len(data))} of {human_bytes(total)}"
    out.write(data)
    return ""


# --- cgroup memory ----------------------------------------------------------------------------


def _own_cgroup_paths(proc_self_cgroup: Path) -> tuple[str | None, str | None]:
    """This process's cgroup path: (v2 unified, v1 memory controller), as /proc says."""
    unified = memory = None
    try:
        text = proc_self_cgroup.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None, None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            unified = parts[2]
        elif "memory" in parts[1].split(","):
            memory = parts[2]
    return unified, memory


def _candidates(base: Path, own: str | None) -> list[Path]:
    found = []
    if own and own.strip("/"):
        found.append(base / own.strip("/"))
    found.append(base)
    return found


_V2_FILES = ("memory.max", "memory.high", "memory.current", "memory.peak", "memory.swap.max")
_V1_FILES = (
    "memory.limit_in_bytes",
    "memory.usage_in_bytes",
    "memory.max_usage_in_bytes",
    "memory.failcnt",
    "memory.memsw.limit_in_bytes",
)


def cgroup_memory_text(root: Path, proc_self_cgroup: Path) -> tuple[str, str]:
    """The cgroup memory facts of this process as `file: value` lines, and a note.

    cgroup v2: memory.max, memory.current, memory.peak and every memory.events counter
    (`oom_kill` counts processes the OOM killer killed in this cgroup). v1 fallbacks:
    memory.limit_in_bytes, usage, failcnt and memory.oom_control (`oom_kill`, `under_oom`).
    Raises FileNotFoundError when neither is there (no cgroup filesystem, not Linux).
    """
    unified, memory = _own_cgroup_paths(proc_self_cgroup)
    lines: list[str] = []
    for directory in _candidates(root, unified):
        if (directory / "memory.events").is_file() or (directory / "memory.max").is_file():
            lines.append(f"# cgroup v2 memory of this process: {directory}")
            for name in _V2_FILES:
                value = _read_value(directory / name)
                if value is not None:
                    lines.append(f"{directory / name}: {_with_size(value)}")
            lines.extend(_counters(directory / "memory.events"))
            break
    if not lines:
        for directory in _candidates(root / "memory", memory):
            if (directory / "memory.limit_in_bytes").is_file():
                lines.append(f"# cgroup v1 memory of this process: {directory}")
                for name in _V1_FILES:
                    value = _read_value(directory / name)
                    if value is not None:
                        lines.append(f"{directory / name}: {_with_size(value)}")
                lines.extend(_counters(directory / "memory.oom_control"))
                break
    if not lines:
        raise FileNotFoundError(f"no cgroup memory controller under {root}")
    note = ""
    if any(re.search(r"(?:memory\.events|memory\.oom_control): oom_kill [1-9]", x) for x in lines):
        note = "the cgroup's OOM killer has killed processes"
    return "\n".join(lines) + "\n", note


def _read_value(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def _with_size(value: str) -> str:
    if value.isdigit() and int(value) >= 1024 * 1024:
        number = int(value)
        if number >= 2**62:
            return f"{value} (no limit)"
        return f"{value} ({human_bytes(number)})"
    return value


def _counters(path: Path) -> list[str]:
    text = _read_value(path)
    if text is None:
        return []
    return [f"{path}: {line.strip()}" for line in text.splitlines() if line.strip()]


def _cgroup_step(options: CollectOptions, staging: _Staging) -> StepResult:
    result = StepResult("cgroup-memory", "cgroup memory limit, usage and OOM-kill counters")
    source = str(options.cgroup_root)
    try:
        text, note = cgroup_memory_text(options.cgroup_root, options.proc_self_cgroup)
    except FileNotFoundError as error:
        result.attempts.append(AttemptResult(source, "not-found", detail=str(error)))
        return result
    except PermissionError as error:
        result.attempts.append(AttemptResult(source, "permission-denied", detail=str(error)))
        return result
    name = "cgroup-memory.txt"
    staging.path(name).write_text(text, encoding="utf-8")
    staging.add(name)
    result.attempts.append(AttemptResult(source, "ok"))
    result.status, result.outputs, result.bytes, result.note = "ok", [name], len(text), note
    return result


# --- container --------------------------------------------------------------------------------


def in_container() -> bool:
    """Whether this process looks like it runs in a Docker/Podman container."""
    return Path("/.dockerenv").exists() or Path("/run/.containerenv").exists()


def _container_step(options: CollectOptions, staging: _Staging) -> StepResult:
    result = StepResult(
        "container", "docker/podman inspect: ShmSize, memory limit, OOMKilled, exit code"
    )
    names = list(options.containers)
    if not names:
        if not in_container():
            result.status = "skipped"
            result.note = "not inside a container; pass --container NAME on the host to inspect one"
            return result
        names = [socket.gethostname()]  # Docker's default hostname is the short container id
        result.note = "inside a container: tried its hostname as the container id"
    for index, name in enumerate(names, start=1):
        output = "docker-inspect.json" if index == 1 else f"docker-inspect-{index}.json"
        step = Step(
            "container",
            result.what,
            (
                Attempt(output, argv=("docker", "inspect", name)),
                Attempt(output, argv=("podman", "inspect", name)),
            ),
        )
        one = _run_step(step, options.timeout, staging)
        result.attempts.extend(one.attempts)
        result.outputs.extend(one.outputs)
        result.bytes += one.bytes
    if result.outputs:
        result.status = "ok" if len(result.outputs) == len(names) else "partial"
    return result


# --- versions ---------------------------------------------------------------------------------

VERSION_SCRIPT = r"""
import sys
print("python:", sys.version.split()[0], sys.executable)
import importlib.metadata as metadata
installed = {}
for name in ("torch", "deepspeed", "nvidia-nccl-cu12", "nvidia-nccl-cu11", "transformers",
             "accelerate", "triton", "flash-attn", "vllm"):
    try:
        installed[name] = metadata.version(name)
    except Exception:
        continue
    print(name + ":", installed[name])
if "torch" in installed:
    try:
        import torch
    except Exception as error:
        message = str(error).splitlines()[0][:200] if str(error) else ""
        print("torch import failed:", type(error).__name__ + ":", message)
    else:
        print("torch.version.cuda:", torch.version.cuda)
        try:
            v = torch.cuda.nccl.version()
            print("torch.cuda.nccl:", ".".join(map(str, v)) if isinstance(v, tuple) else v)
        except Exception:
            pass
        try:
            print("torch.backends.cudnn:", torch.backends.cudnn.version())
        except Exception:
            pass
"""
"""Printed by a child Python: torch is never imported in the crashlens process (and CUDA is
never initialised: only version numbers are read)."""


def _versions_step(options: CollectOptions, staging: _Staging) -> StepResult:
    result = StepResult("versions", "kernel, NVIDIA module, Python, torch/CUDA/NCCL, deepspeed")
    lines = ["# versions (crashlens collect)"]
    uname = os.uname()
    lines.append(f"kernel: {uname.sysname} {uname.release} {uname.machine}")
    module = _read_value(Path("/proc/driver/nvidia/version"))
    if module:
        lines.extend(
            f"nvidia module: {line.strip()}" for line in module.splitlines() if line.strip()
        )
        result.attempts.append(AttemptResult("/proc/driver/nvidia/version", "ok"))
    else:
        result.attempts.append(
            AttemptResult(
                "/proc/driver/nvidia/version",
                "not-found",
                detail="no NVIDIA kernel module loaded here",
            )
        )
    python = options.python or shutil.which("python3") or sys.executable
    with tempfile.TemporaryFile() as out:
        attempt = run_command((python, "-c", VERSION_SCRIPT), options.timeout, out)
        out.seek(0)
        text = out.read(256 * 1024).decode("utf-8", errors="replace")
    attempt.source = f"{python} -c <versions script>"
    result.attempts.append(attempt)
    if attempt.outcome == "ok":
        lines.extend(line for line in text.splitlines() if line.strip())
    name = "versions.txt"
    content = "\n".join(lines) + "\n"
    staging.path(name).write_text(content, encoding="utf-8")
    staging.add(name)
    result.outputs, result.bytes = [name], len(content)
    result.status = "ok" if all(a.outcome == "ok" for a in result.attempts) else "partial"
    return result


# --- logs named on the command line -----------------------------------------------------------

_UNSAFE = re.compile(r"[^A-Za-z0-9._+=@,-]+")


def _bundle_name(given: str, source: Source) -> str:
    """`logs/<name>`: the file's name, or its path under the folder/archive that was named."""
    base = Path(given.rstrip("/")).name or "stdin"
    if source.path == given:
        parts = [source.name or base]
    else:
        rest = source.path[len(given) :] if source.path.startswith(given) else source.path
        parts = [base, *re.split(r"[/!\\]+", rest.strip("/!"))]
        parts[-1] = source.name or parts[-1]
    clean = [_UNSAFE.sub("_", p).lstrip(".") or "_" for p in parts if p and p not in (".", "..")]
    return "/".join([LOGS_DIR, *clean])


def _logs_step(given: str, options: CollectOptions, staging: _Staging, limit: int) -> StepResult:
    result = StepResult("log", f"a log named on the command line: {given}")
    notes: list[str] = []
    for item in iter_inputs([given]):
        if isinstance(item, InputStatus):
            result.attempts.append(AttemptResult(item.path, "skipped", detail=item.reason or ""))
            continue
        name = staging.unique(_bundle_name(given, item))
        started = time.monotonic()
        try:
            with item.open() as stream, staging.path(name).open("wb") as out:
                note = _copy_tail(stream, out, limit)
        except OSError as error:
            detail = error.strerror or str(error)
            outcome = "permission-denied" if isinstance(error, PermissionError) else "error"
            result.attempts.append(AttemptResult(item.path, outcome, detail=detail))
            staging.path(name).unlink(missing_ok=True)
            continue
        staging.add(name, log=True)
        size = staging.path(name).stat().st_size
        result.attempts.append(
            AttemptResult(item.path, "ok", time.monotonic() - started, detail=note)
        )
        result.outputs.append(name)
        result.bytes += size
        if note:
            notes.append(f"{name}: {note}")
    result.note = "; ".join(notes)
    if result.outputs:
        failed = any(a.outcome != "ok" for a in result.attempts)
        result.status = "partial" if failed or notes else "ok"
    return result


# --- redaction and writing --------------------------------------------------------------------


def _make_redactor() -> Redactor:
    from crashlens.redact import Redactor

    hosts = [socket.gethostname()]
    users = [os.environ.get(v, "") for v in ("USER", "LOGNAME", "SUDO_USER")]
    with contextlib.suppress(KeyError, OSError):
        users.append(getpass.getuser())
    return Redactor(
        known_hosts=[h for h in hosts if h],
        known_users=sorted({u for u in users if u}),
    )


def _text_chunks(stream: IO[bytes]) -> Iterator[str]:
    """Decoded text in ~1 MiB pieces cut after a newline (bytes that are not UTF-8 survive)."""
    pending = b""
    while chunk := stream.read(_CHUNK):
        data = pending + chunk
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            pending = data
            continue
        pending = data[cut:]
        yield data[:cut].decode("utf-8", errors="surrogateescape")
    if pending:
        yield pending.decode("utf-8", errors="surrogateescape")


def _write_redacted(source: Path, target: Path, redactor: Redactor | None) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if redactor is None:
        shutil.copyfile(source, target)
        return
    with source.open("rb") as stream, target.open("wb") as out:
        for text in _text_chunks(stream):
            out.write(redactor.text(text).encode("utf-8", errors="surrogateescape"))


def _learn(staging: _Staging, redactor: Redactor) -> None:
    """First pass over the small system outputs: hosts and users named anywhere are known
    everywhere (logs are read once, in the second pass, to keep big ones affordable)."""
    for name in staging.files:
        if name in staging.logs:
            continue
        with staging.path(name).open("rb") as stream:
            for text in _text_chunks(stream):
                redactor.text(text)


def _final_names(staging: _Staging, redactor: Redactor | None) -> dict[str, str]:
    """Bundle names: a copied log's name can hold a host or user name, so it is redacted too."""
    names: dict[str, str] = {}
    for name in staging.files:
        shown = name
        if redactor is not None and name in staging.logs:
            shown = redactor.text(name).replace(" ", "_")
        while shown in names.values():
            shown = "_" + shown if "/" not in shown else shown.replace("/", "/_", 1)
        names[name] = shown
    return names


def _shown_steps(
    steps: Sequence[StepResult], names: dict[str, str], redactor: Redactor | None
) -> list[StepResult]:
    """The steps as the bundle records them: paths, messages and notes redacted."""

    def text(value: str) -> str:
        return redactor.text(value) if redactor is not None and value else value

    shown = []
    for step in steps:
        attempts = [
            dataclasses.replace(a, source=text(a.source), detail=text(a.detail))
            for a in step.attempts
        ]
        shown.append(
            dataclasses.replace(
                step,
                name=text(step.name),
                what=text(step.what),
                outputs=[names.get(o, o) for o in step.outputs],
                note=text(step.note),
                attempts=attempts,
            )
        )
    return shown


def _report_json(meta: dict[str, object], steps: Sequence[StepResult]) -> str:
    document: dict[str, object] = {"crashlens_collect": 1, **meta}
    document["steps"] = [dataclasses.asdict(s) for s in steps]
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    assert text.encode().startswith(COLLECT_RECORD_MARKERS[1])
    return text


def _manifest(meta: dict[str, object], steps: Sequence[StepResult]) -> str:
    lines = [
        "# crashlens collect manifest: what was gathered and why a step gave nothing.",
        "# `crashlens analyze` skips this file and collect-report.json (not evidence).",
        "",
    ]
    lines.extend(f"{key}: {value}" for key, value in meta.items())
    lines.append("")
    for step in steps:
        outputs = ", ".join(step.outputs) if step.outputs else "-"
        lines.append(f"{step.status:8} {step.name:14} {outputs}")
        reason = step.reason()
        if reason:
            lines.append(f"{'':23} {reason}")
    text = "\n".join(lines) + "\n"
    assert text.encode().startswith(COLLECT_RECORD_MARKERS[0])
    return text


def is_archive_path(path: Path) -> bool:
    """Whether `--out` names a `.tar.gz` bundle (else a folder)."""
    return path.name.lower().endswith((".tar.gz", ".tgz"))


def _check_out(out: Path) -> None:
    if is_archive_path(out):
        if out.is_dir():
            raise CollectError(f"{out} is a folder")
        if not out.parent.is_dir():
            raise CollectError(f"folder {out.parent} does not exist")
        if not os.access(out.parent, os.W_OK):
            raise CollectError(f"cannot write in {out.parent}")
        return
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise CollectError(f"{out} exists and is not an empty folder")
    if not out.exists() and not out.parent.is_dir():
        raise CollectError(f"folder {out.parent} does not exist")


def _pack(folder: Path, out: Path) -> None:
    """A gzip tar of `folder`, members under BUNDLE_DIR/, without owner names or ids."""
    descriptor = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as archive:
        now = int(time.time())
        for path in sorted(folder.rglob("*"), key=_member_order):
            if not path.is_file():
                continue
            info = tarfile.TarInfo(f"{BUNDLE_DIR}/{path.relative_to(folder).as_posix()}")
            info.size = path.stat().st_size
            info.mode, info.mtime, info.uid, info.gid, info.uname, info.gname = (
                0o644,
                now,
                0,
                0,
                "",
                "",
            )
            with path.open("rb") as stream:
                archive.addfile(info, stream)


def _member_order(path: Path) -> tuple[int, str]:
    first = {MANIFEST: 0, REPORT: 1}.get(path.name, 2)
    return (first if path.parent.name != LOGS_DIR else 3, path.as_posix())


# --- the entry point --------------------------------------------------------------------------


def collect(out: Path, options: CollectOptions | None = None) -> Bundle:
    """Gather every step into `out` (a folder, or a `.tar.gz` when the name says so).

    Raises CollectError only when `out` cannot be written; every step's own failure is
    recorded in the bundle instead.
    """
    options = options or CollectOptions()
    _check_out(out)
    redactor = _make_redactor() if options.redact else None
    limit = options.max_log_bytes
    if limit is None:
        limit = MAX_LOG_BYTES_REDACTED if options.redact else MAX_LOG_BYTES
    staging = _Staging()
    steps: list[StepResult] = []

    def record(result: StepResult) -> None:
        steps.append(result)
        if options.progress is not None:
            options.progress(result)

    try:
        for step in options.steps if options.steps is not None else STEPS:
            record(_run_step(step, options.timeout, staging))
        record(_cgroup_step(options, staging))
        record(_container_step(options, staging))
        record(_versions_step(options, staging))
        for given in options.logs:
            record(_logs_step(given, options, staging, limit))
        meta: dict[str, object] = {
            "crashlens_version": __version__,
            "collected_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "host": socket.gethostname(),
            "uid": os.getuid(),
            "in_container": in_container(),
            "redacted": redactor is not None,
            "timeout_s": options.timeout,
            "max_log_bytes": limit,
        }
        if redactor is not None:
            _learn(staging, redactor)
        return _finish(out, staging, steps, meta, redactor)
    finally:
        staging.cleanup()


def _finish(
    out: Path,
    staging: _Staging,
    steps: list[StepResult],
    meta: dict[str, object],
    redactor: Redactor | None,
) -> Bundle:
    names = _final_names(staging, redactor)
    shown = _shown_steps(steps, names, redactor)
    if redactor is not None:
        meta = {k: redactor.text(v) if isinstance(v, str) else v for k, v in meta.items()}
    archive = is_archive_path(out)
    with tempfile.TemporaryDirectory(prefix="crashlens-bundle-") as tmp:
        final = Path(tmp) if archive else out
        final.mkdir(parents=True, exist_ok=True)
        os.chmod(final, 0o700)
        for name in staging.files:
            _write_redacted(staging.path(name), final / names[name], redactor)
        (final / REPORT).write_text(_report_json(meta, shown), encoding="utf-8")
        (final / MANIFEST).write_text(_manifest(meta, shown), encoding="utf-8")
        if archive:
            _pack(final, out)
    return Bundle(path=out, steps=tuple(shown), redacted=redactor is not None, redactor=redactor)


def summary_line(step: StepResult) -> str:
    """One line for the terminal: status, name, outputs and the reason when not ok."""
    outputs = ", ".join(step.outputs) if step.outputs else "-"
    line = f"{step.status:8} {step.name}: {outputs}"
    reason = step.reason()
    if reason:
        line += f"  [{reason}]"
    return line


__all__ = [
    "DEFAULT_TIMEOUT",
    "KERNEL_LOG",
    "STEPS",
    "Attempt",
    "Bundle",
    "CollectError",
    "CollectOptions",
    "Step",
    "StepResult",
    "collect",
]
