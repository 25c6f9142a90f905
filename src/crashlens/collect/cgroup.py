"""The cgroup memory step: limit, usage and OOM-kill counters of this process's cgroup.

cgroup v2 and v1 name their files differently but are read the same way, so each version is
one row of `_VERSIONS` and one loop reads whichever is mounted (v2 first).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from crashlens.collect.files import read_value
from crashlens.collect.staging import Staging
from crashlens.collect.steps import AttemptResult, StepResult
from crashlens.text.sizes import human_bytes

OUTPUT = "cgroup-memory.txt"
_NO_LIMIT = 2**62
"""Values from here up are the kernel's "max" written as a number (v1 writes no word for it)."""


@dataclass(frozen=True, slots=True)
class _Version:
    """Where one cgroup version keeps the memory files, and which of them are read."""

    name: str
    subfolder: str
    """Under the cgroup root: "" for the v2 unified tree, "memory" for the v1 controller."""
    markers: tuple[str, ...]
    """A folder holding any of these is this version's memory cgroup."""
    values: tuple[str, ...]
    """One-number files, written as `file: value` (sizes in bytes get a readable size)."""
    counters: str
    """A `name count` per line file holding `oom_kill`."""


_VERSIONS = (
    _Version(
        "v2",
        "",
        markers=("memory.events", "memory.max"),
        values=("memory.max", "memory.high", "memory.current", "memory.peak", "memory.swap.max"),
        counters="memory.events",
    ),
    _Version(
        "v1",
        "memory",
        markers=("memory.limit_in_bytes",),
        values=(
            "memory.limit_in_bytes",
            "memory.usage_in_bytes",
            "memory.max_usage_in_bytes",
            "memory.failcnt",
            "memory.memsw.limit_in_bytes",
        ),
        counters="memory.oom_control",
    ),
)
_OOM_KILLED = re.compile(
    "(?:" + "|".join(re.escape(v.counters) for v in _VERSIONS) + ")" + r": oom_kill [1-9]"
)


def cgroup_memory_text(root: Path, proc_self_cgroup: Path) -> tuple[str, str]:
    """The cgroup memory facts of this process as `file: value` lines, and a note.

    cgroup v2: memory.max, memory.current, memory.peak and every memory.events counter
    (`oom_kill` counts processes the OOM killer killed in this cgroup). v1 fallbacks:
    memory.limit_in_bytes, usage, failcnt and memory.oom_control (`oom_kill`, `under_oom`).
    Raises FileNotFoundError when neither is there (no cgroup filesystem, not Linux).
    """
    own = _own_cgroup_paths(proc_self_cgroup)
    for version in _VERSIONS:
        for folder in _candidates(root / version.subfolder, own.get(version.name)):
            if any((folder / marker).is_file() for marker in version.markers):
                lines = _describe(version, folder)
                killed = any(_OOM_KILLED.search(line) for line in lines)
                note = "the cgroup's OOM killer has killed processes" if killed else ""
                return "\n".join(lines) + "\n", note
    raise FileNotFoundError(f"no cgroup memory controller under {root}")


def cgroup_step(root: Path, proc_self_cgroup: Path, staging: Staging) -> StepResult:
    """Stage `cgroup-memory.txt`, or record why there is no cgroup memory to read."""
    result = StepResult("cgroup-memory", "cgroup memory limit, usage and OOM-kill counters")
    source = str(root)
    try:
        text, note = cgroup_memory_text(root, proc_self_cgroup)
    except FileNotFoundError as error:
        result.attempts.append(AttemptResult(source, "not-found", detail=str(error)))
        return result
    except PermissionError as error:
        result.attempts.append(AttemptResult(source, "permission-denied", detail=str(error)))
        return result
    staging.path(OUTPUT).write_text(text, encoding="utf-8")
    staging.add(OUTPUT)
    result.attempts.append(AttemptResult(source, "ok"))
    result.status, result.outputs, result.bytes, result.note = "ok", [OUTPUT], len(text), note
    return result


def _own_cgroup_paths(proc_self_cgroup: Path) -> dict[str, str]:
    """This process's cgroup path per version (v2: the unified line, v1: the memory
    controller's), as /proc says; empty when /proc cannot be read."""
    own: dict[str, str] = {}
    try:
        text = proc_self_cgroup.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return own
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            own["v2"] = parts[2]
        elif "memory" in parts[1].split(","):
            own["v1"] = parts[2]
    return own


def _candidates(base: Path, own: str | None) -> list[Path]:
    """This process's own cgroup folder first, then the root of the tree."""
    found = []
    if own and own.strip("/"):
        found.append(base / own.strip("/"))
    found.append(base)
    return found


def _describe(version: _Version, folder: Path) -> list[str]:
    lines = [f"# cgroup {version.name} memory of this process: {folder}"]
    for name in version.values:
        value = read_value(folder / name)
        if value is not None:
            lines.append(f"{folder / name}: {_with_size(value)}")
    lines.extend(_counters(folder / version.counters))
    return lines


def _with_size(value: str) -> str:
    if value.isdigit() and int(value) >= 1024 * 1024:
        number = int(value)
        if number >= _NO_LIMIT:
            return f"{value} (no limit)"
        return f"{value} ({human_bytes(number)})"
    return value


def _counters(path: Path) -> list[str]:
    text = read_value(path)
    if text is None:
        return []
    return [f"{path}: {line.strip()}" for line in text.splitlines() if line.strip()]
