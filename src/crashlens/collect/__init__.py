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

The package, in the order a collection runs: `steps` (the command steps as data, and the
records of their outcomes), `run` (a command with a time limit in its own process group),
`files` (a file's tail, small /proc values), `cgroup` (v2 and v1 memory as one table),
`sources` (container inspect, versions, the named logs), `staging` (the private folder the raw
outputs go to) and `bundle` (redaction, manifest, report, packing). This module wires them.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from crashlens import __version__
from crashlens.collect.bundle import (
    MANIFEST,
    REPORT,
    Bundle,
    CollectError,
    check_out,
    make_redactor,
    write_bundle,
)
from crashlens.collect.cgroup import cgroup_memory_text, cgroup_step
from crashlens.collect.run import run_step
from crashlens.collect.sources import container_step, in_container, logs_step, versions_step
from crashlens.collect.staging import Staging
from crashlens.collect.steps import (
    KERNEL_LOG,
    STEPS,
    Attempt,
    AttemptResult,
    Step,
    StepResult,
    summary_line,
)

DEFAULT_TIMEOUT = 20.0
"""Seconds each command may run (`--timeout`)."""
MAX_LOG_BYTES = 200 * 1024 * 1024
"""A log named on the command line is cut to its last this many bytes (unredacted)."""
MAX_LOG_BYTES_REDACTED = 20 * 1024 * 1024
"""The cut when redacting without Hyperscan (the pure-Python gates run at about 1 MB/s, so
huge logs would take minutes). With Hyperscan redaction keeps up (bench/redact_bench.py) and a
redacted log keeps MAX_LOG_BYTES like a plain one."""


def redacted_log_limit() -> int:
    """How much of each log a redacted bundle keeps on this machine."""
    from crashlens.redact.redactor import gates

    return MAX_LOG_BYTES if gates().backend == "hyperscan" else MAX_LOG_BYTES_REDACTED


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
    """Tail limit for copied logs; None: MAX_LOG_BYTES, or `redacted_log_limit()` when redacting."""
    steps: tuple[Step, ...] | None = None
    """The command steps to run; None: STEPS (tests swap in their own)."""
    cgroup_root: Path = Path("/sys/fs/cgroup")
    proc_self_cgroup: Path = Path("/proc/self/cgroup")
    progress: Callable[[StepResult], None] | None = None


def collect(out: Path, options: CollectOptions | None = None) -> Bundle:
    """Gather every step into `out` (a folder, or a `.tar.gz` when the name says so).

    Raises CollectError only when `out` cannot be written; every step's own failure is
    recorded in the bundle instead.
    """
    options = options or CollectOptions()
    check_out(out)
    redactor = make_redactor() if options.redact else None
    limit = options.max_log_bytes
    if limit is None:
        limit = redacted_log_limit() if options.redact else MAX_LOG_BYTES
    staging = Staging()
    steps: list[StepResult] = []

    def record(result: StepResult) -> None:
        steps.append(result)
        if options.progress is not None:
            options.progress(result)

    try:
        for step in options.steps if options.steps is not None else STEPS:
            record(run_step(step, options.timeout, staging))
        record(cgroup_step(options.cgroup_root, options.proc_self_cgroup, staging))
        record(container_step(options.containers, options.timeout, staging))
        record(versions_step(options.python, options.timeout, staging))
        for given in options.logs:
            record(logs_step(given, staging, limit))
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
        return write_bundle(out, staging, steps, meta, redactor)
    finally:
        staging.cleanup()


__all__ = [
    "DEFAULT_TIMEOUT",
    "MAX_LOG_BYTES",
    "MAX_LOG_BYTES_REDACTED",
    "KERNEL_LOG",
    "MANIFEST",
    "REPORT",
    "STEPS",
    "Attempt",
    "AttemptResult",
    "Bundle",
    "CollectError",
    "CollectOptions",
    "Step",
    "StepResult",
    "cgroup_memory_text",
    "collect",
    "redacted_log_limit",
    "summary_line",
]
