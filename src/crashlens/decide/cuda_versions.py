"""A fact that only two inputs together show: a CUDA runtime newer than the driver can run.

A driver runs CUDA runtimes of its own CUDA version or older; the CUDA version nvidia-smi prints
is the newest its driver supports, and NVIDIA's release notes list the oldest driver each CUDA
release needs (`patterns/tables/versions/cuda_drivers.toml`). A job's logs name the runtime it
brought (`NCCL version 2.18.1+cuda12.1`, `torch 2.1.0+cu121`, `CUDA used to build PyTorch`:
fact `cuda.version`). When the runtime is newer than the driver, the job's CUDA calls fail in
ways that name no version (NCCL's `unhandled cuda error`, `CUDA error: unknown error`, a
segfault while loading), so the pair is a fact of its own, for the rules' explanations:

* `cuda.runtime_newer_than_driver`: str the runtime's CUDA version; attrs `driver_cuda` (the
  newest CUDA the driver runs), `driver_version` (when known), `gap` (`major`: a newer major
  version, which cannot start; `minor`: the same major version from CUDA 11 on, which starts
  under minor version compatibility but fails where it needs the newer driver, as NCCL's
  version check and PTX JIT do; `legacy`: a newer minor version before CUDA 11, which had no
  such compatibility and cannot start), `runtime_at` (`path:line` of the runtime's version),
  `gpu_class` (`datacenter` when the same input names a data-center GPU, `other` when it names
  only other GPUs, `unknown` when it names none). Its line is the driver's (the nvidia-smi
  banner).

Data-center GPUs run a newer CUDA than their driver through the forward-compatibility package
(`cuda-compat`, which NGC containers ship): there the pair may well work, and the rules give it
less weight; GeForce and workstation GPUs have no such bridge.

The driver's CUDA version is nvidia-smi's own, else the newest release the driver version is
new enough for (none for a driver as new as the table's newest release: it may run a newer
one). A `cuda.version` equal to the driver's is often that very banner pasted into a log, and
is no mismatch.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from crashlens.library import tables_dir
from crashlens.model import Fact
from crashlens.parsers.base import fact

NEWER = "cuda.runtime_newer_than_driver"
RUNTIME = "cuda.version"
DRIVER_CUDA = "nvidia_smi.cuda_version"
DRIVER_VERSION = "nvidia_smi.driver_version"
GPU_NAME = "gpu.name"
GPU_CAPABILITY = "gpu.capability"
MAX_DERIVED = 8
_DATACENTER = re.compile(
    r"\b(?:Tesla|DGX|[ABHL][0-9]{1,3}[A-Z]?|GH200|GB200|T4|V100|P100|P40|P4|K80|M60)\b"
)
"""Data-center GPU names as nvidia-smi prints them (`Tesla V100-SXM2-32GB`, `NVIDIA A100-SXM4-80GB`,
`NVIDIA H100 80GB HBM3`, `NVIDIA L40S`): the GPUs CUDA forward compatibility supports."""
_VERSION = re.compile(r"^[ \t]*([0-9]{1,3})\.([0-9]{1,3})(?:\.[0-9]{1,6})*[ \t]*$")
_DRIVER = re.compile(r"^[ \t]*([0-9]{1,4})(?:\.([0-9]{1,4}))?(?:\.([0-9]{1,4}))?")

Version = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class DriverTable:
    """The oldest driver each CUDA release needs, newest release first."""

    releases: tuple[tuple[Version, Version], ...]
    """(CUDA major.minor, minimum driver version) pairs."""
    minor_compatibility_from: int
    """The first CUDA major version whose newer minor versions start on its older drivers."""

    def cuda_of(self, driver: Version) -> Version | None:
        """The newest CUDA release the driver version is new enough for; None for a driver
        older than every release, or at least as new as the newest one the table lists (it may
        run a release newer than the table knows)."""
        if not self.releases or driver >= self.releases[0][1]:
            return None
        for cuda, needed in self.releases:
            if driver >= needed:
                return cuda
        return None


def cuda_version(text: str) -> Version | None:
    """`major.minor` of a CUDA version string (`11.8`, `12.1.105`), or None."""
    m = _VERSION.match(text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def driver_version(text: str) -> Version | None:
    """The numeric parts of a driver version (`515.43.04`, `570.26`), or None."""
    m = _DRIVER.match(text)
    if m is None:
        return None
    return tuple(int(part) for part in m.groups() if part is not None)


@cache
def driver_table() -> DriverTable:
    """The shipped table, newest release first."""
    data = tomllib.loads((tables_dir() / "versions" / "cuda_drivers.toml").read_text("utf-8"))
    pairs: list[tuple[Version, Version]] = []
    for row in data["release"]:
        cuda, driver = cuda_version(str(row["cuda"])), driver_version(str(row["driver"]))
        if cuda is None or driver is None:
            raise ValueError(f"cuda_drivers.toml: malformed release {row!r}")
        pairs.append((cuda, driver))
    pairs.sort(reverse=True)
    return DriverTable(tuple(pairs), int(data["table"]["minor_compatibility_from"]))


def _shown(version: Version) -> str:
    return ".".join(str(part) for part in version)


@dataclass(frozen=True, slots=True)
class _Driver:
    cuda: Version
    source: Fact
    version: str | None
    gpu_class: str


def _gpu_name(item: Fact) -> str | None:
    """The GPU name a fact gives: nvidia-smi's, or the name a log line showed its GPU by (the
    `gpu.capability` a pasted torch.utils.collect_env report's `GPU 0: <name>` gives)."""
    if item.key == GPU_NAME:
        return str(item.value)
    if item.key == GPU_CAPABILITY and (named := item.attr("shown_as")) not in (None, "stated"):
        return str(named)
    return None


def _gpu_classes(facts: Sequence[Fact]) -> dict[str, str]:
    """Per input: `datacenter` when it names a data-center GPU, else `other`."""
    classes: dict[str, str] = {}
    for item in facts:
        if (name := _gpu_name(item)) is not None:
            datacenter = _DATACENTER.search(name) is not None
            if datacenter or item.path not in classes:
                classes[item.path] = "datacenter" if datacenter else "other"
    return classes


def _drivers(facts: Sequence[Fact], table: DriverTable) -> list[_Driver]:
    """One driver per input that shows it: nvidia-smi's CUDA version, else the table's."""
    versions = {f.path: str(f.value) for f in facts if f.key == DRIVER_VERSION}
    classes = _gpu_classes(facts)
    found: dict[str, _Driver] = {}
    for item in facts:
        if item.key == DRIVER_CUDA and (cuda := cuda_version(str(item.value))) is not None:
            gpu_class = classes.get(item.path, "unknown")
            found.setdefault(item.path, _Driver(cuda, item, versions.get(item.path), gpu_class))
    for item in facts:
        if item.key != DRIVER_VERSION or item.path in found:
            continue
        numbers = driver_version(str(item.value))
        cuda = table.cuda_of(numbers) if numbers is not None else None
        if cuda is not None:
            gpu_class = classes.get(item.path, "unknown")
            found[item.path] = _Driver(cuda, item, str(item.value), gpu_class)
    return list(found.values())


def _gap(runtime: Version, driver: Version, table: DriverTable) -> str:
    if runtime[0] > driver[0]:
        return "major"
    return "minor" if runtime[0] >= table.minor_compatibility_from else "legacy"


def runtime_newer_than_driver(facts: Sequence[Fact]) -> list[Fact]:
    """One `cuda.runtime_newer_than_driver` fact per driver and newer runtime version."""
    runtimes = [
        (version, item)
        for item in facts
        if item.key == RUNTIME and (version := cuda_version(str(item.value))) is not None
    ]
    if not runtimes:
        return []
    table = driver_table()
    derived: list[Fact] = []
    seen: set[tuple[str, Version]] = set()
    for driver in _drivers(facts, table):
        for runtime, item in sorted(runtimes, key=lambda pair: pair[0], reverse=True):
            key = (driver.source.path, runtime)
            if runtime <= driver.cuda or key in seen or len(derived) >= MAX_DERIVED:
                continue
            seen.add(key)
            where = f"{item.path}:{item.lineno}" if item.lineno else item.path
            named = f"driver {driver.version}" if driver.version else "the driver"
            shown = (
                f"{named} runs CUDA {_shown(driver.cuda)} at most, but {where} names a "
                f"CUDA {_shown(runtime)} runtime"
            )
            derived.append(
                fact(
                    NEWER,
                    _shown(runtime),
                    driver.source.path,
                    driver.source.lineno,
                    text=shown,
                    driver_cuda=_shown(driver.cuda),
                    driver_version=driver.version,
                    gap=_gap(runtime, driver.cuda, table),
                    runtime_at=where,
                    gpu_class=driver.gpu_class,
                )
            )
    return derived
