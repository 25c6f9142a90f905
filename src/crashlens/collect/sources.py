"""The steps that are not one command: the container's inspect data, versions, named logs."""

from __future__ import annotations

import os
import re
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

from crashlens.collect.files import copy_tail, read_value
from crashlens.collect.run import run_command, run_step
from crashlens.collect.staging import LOGS_DIR, Staging
from crashlens.collect.steps import Attempt, AttemptResult, Step, StepResult
from crashlens.inputs.discover import Source, iter_inputs
from crashlens.model import InputStatus

_NVIDIA_MODULE = "/proc/driver/nvidia/version"
_UNSAFE = re.compile(r"[^A-Za-z0-9._+=@,-]+")
"""Characters never kept in a bundle name (a log's path can hold anything)."""

# --- container --------------------------------------------------------------------------------


def in_container() -> bool:
    """Whether this process looks like it runs in a Docker/Podman container."""
    return Path("/.dockerenv").exists() or Path("/run/.containerenv").exists()


def container_step(containers: tuple[str, ...], timeout: float, staging: Staging) -> StepResult:
    """`docker inspect` (or podman's) each named container; inside one, its own when reachable."""
    result = StepResult(
        "container", "docker/podman inspect: ShmSize, memory limit, OOMKilled, exit code"
    )
    names = list(containers)
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
        one = run_step(step, timeout, staging)
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


def versions_step(python: str | None, timeout: float, staging: Staging) -> StepResult:
    """Stage `versions.txt`: the kernel, the NVIDIA module, and what the job's Python has."""
    result = StepResult("versions", "kernel, NVIDIA module, Python, torch/CUDA/NCCL, deepspeed")
    lines = ["# versions (crashlens collect)"]
    uname = os.uname()
    lines.append(f"kernel: {uname.sysname} {uname.release} {uname.machine}")
    module = read_value(Path(_NVIDIA_MODULE))
    if module:
        lines.extend(
            f"nvidia module: {line.strip()}" for line in module.splitlines() if line.strip()
        )
        result.attempts.append(AttemptResult(_NVIDIA_MODULE, "ok"))
    else:
        result.attempts.append(
            AttemptResult(_NVIDIA_MODULE, "not-found", detail="no NVIDIA kernel module loaded here")
        )
    python = python or shutil.which("python3") or sys.executable
    with tempfile.TemporaryFile() as out:
        attempt = run_command((python, "-c", VERSION_SCRIPT), timeout, out)
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


def logs_step(given: str, staging: Staging, limit: int) -> StepResult:
    """Copy the tail (`limit` bytes) of every log under `given`: a file, folder or archive."""
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
                note = copy_tail(stream, out, limit)
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
