"""How big a pod's containers' /dev/shm is, from the pod spec (fact `k8s.shm_private_bytes`).

Kubernetes sets no shared-memory size of its own: each container gets the container
runtime's default /dev/shm, 64 MiB (containerd and CRI-O, like Docker), unless the pod mounts
an `emptyDir` volume with `medium: Memory` at `/dev/shm` (a tmpfs as large as its `sizeLimit`,
else bounded only by the pod's memory) or shares the host's IPC namespace (`hostIPC: true`).
A DataLoader or NCCL job in a pod without that volume runs with 64 MiB of shared memory, the
same as a bare `docker run`, and dies with a Bus error or `No space left on device`.

Fact (one per container of a pod spec; none where /dev/shm is the host's or a memory volume
with no size limit):

* `k8s.shm_private_bytes`: int the container's /dev/shm size in bytes; attrs pod, container,
  `default` (True: no /dev/shm volume, the runtime's 64 MiB), `volume` (the memory volume
  mounted there, with its `sizeLimit`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from crashlens.parsers.kubernetes.common import quantity_bytes

RUNTIME_DEFAULT_SHM = 64 * 1024 * 1024
"""The /dev/shm size containerd, CRI-O and Docker give a container that sets none."""
SHM_PATH = "/dev/shm"


@dataclass(frozen=True, slots=True)
class ShmSize:
    """One container's /dev/shm as its pod spec sets it."""

    container: str | None
    size: int
    default: bool
    volume: str | None


def _dicts(value: object) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _true(value: object) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def _memory_volumes(spec: dict[str, Any]) -> dict[str, int | None]:
    """The pod's memory-backed emptyDir volumes, by name, with their size limit (None: none)."""
    found: dict[str, int | None] = {}
    for volume in _dicts(spec.get("volumes")):
        empty = volume.get("emptyDir")
        name = volume.get("name")
        if isinstance(empty, dict) and isinstance(name, str) and empty.get("medium") == "Memory":
            found[name] = quantity_bytes(empty.get("sizeLimit"))
    return found


def shm_sizes(spec: dict[str, Any]) -> Iterator[ShmSize]:
    """The /dev/shm of each container of a pod spec that the spec bounds (module docstring)."""
    if _true(spec.get("hostIPC")):
        return
    memory = _memory_volumes(spec)
    for container in _dicts(spec.get("containers")):
        name = container.get("name") if isinstance(container.get("name"), str) else None
        mount = next(
            (
                m
                for m in _dicts(container.get("volumeMounts"))
                if str(m.get("mountPath", "")).rstrip("/") == SHM_PATH
            ),
            None,
        )
        if mount is None:
            yield ShmSize(name, RUNTIME_DEFAULT_SHM, True, None)
            continue
        volume = mount.get("name")
        if isinstance(volume, str) and volume in memory and memory[volume] is not None:
            yield ShmSize(name, int(memory[volume] or 0), False, volume)
