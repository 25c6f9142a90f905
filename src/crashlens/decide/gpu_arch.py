"""A fact that a job's lines show only together: a CUDA build that has no machine code for the GPU.

Each CUDA release builds machine code for a range of compute capabilities, and machine code runs
only on GPUs of the same major capability (`patterns/tables/versions/gpu_architectures.toml`).
A framework built with CUDA 10.2 has none for an RTX 3090 (8.6), one built with CUDA 12.6 none
for an RTX 5090 (12.0), one built with CUDA 13.0 none for a GTX 1080 (6.1, dropped). Its cuBLAS
and cuDNN then fail in words that name no version (`CUBLAS_STATUS_EXECUTION_FAILED`, `Unable to
find a valid cuDNN algorithm`, `CUDNN_STATUS_EXECUTION_FAILED`, `no kernel image is available`),
which alone read as GPU memory or a bad card. When a job's inputs name both the CUDA it was built
with (`torch 1.7.1+cu101`, `CUDA used to build PyTorch: 10.1`, `NCCL version 2.7.8+cuda10.1`:
fact `cuda.version`, or the `+cuXYZ` of `torch.version`) and the GPU (fact `gpu.capability` of a
log line, `gpu.name` of nvidia-smi), the pair is a fact of its own, for the rules' explanations:

* `cuda.build_lacks_gpu`: str the build's CUDA version; attrs `capability` (the GPU's),
  `built_for` (the range the release builds for, `3.5-7.5`), `gap` (`gpu_newer`: a newer
  architecture than the release knows; `gpu_older`: one the release has dropped), `gpu_at` and
  `cuda_at` (`path:line` of each). Its line is the GPU's.

nvidia-smi's `CUDA Version` is the newest CUDA the driver runs, not what the job was built
with, so a `cuda.version` read from that banner is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from crashlens.decide.cuda_versions import cuda_version
from crashlens.errors import PatternError
from crashlens.model import Fact
from crashlens.parsers.base import fact
from crashlens.parsers.gpu_arch import (
    TABLE,
    TABLE_PATH,
    Capability,
    capability,
    capability_of_name,
    shown,
)
from crashlens.parsers.launcher.messages import torch_cuda

LACKS = "cuda.build_lacks_gpu"
MAX_DERIVED = 4
_DRIVER_BANNER = "Driver Version"

Version = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Reach:
    """The capabilities one CUDA release builds machine code for."""

    oldest: Capability
    newest: Capability

    def gap(self, gpu: Capability) -> str | None:
        if gpu[0] > self.newest[0]:
            return "gpu_newer"
        if gpu < self.oldest:
            return "gpu_older"
        return None


@cache
def release_table() -> tuple[tuple[Version, Reach], ...]:
    """(CUDA release, reach), newest release first."""
    try:
        rows = []
        for row in TABLE["release"]:
            cuda = cuda_version(str(row["cuda"]))
            oldest, newest = capability(str(row["oldest"])), capability(str(row["newest"]))
            if cuda is None or oldest is None or newest is None:
                raise ValueError(f"malformed release {row!r}")
            rows.append((cuda, Reach(oldest, newest)))
    except (KeyError, TypeError, ValueError) as e:
        raise PatternError(str(TABLE_PATH), f"cannot read the CUDA release table: {e}") from e
    return tuple(sorted(rows, key=lambda pair: pair[0], reverse=True))


def reach_of(cuda: Version) -> Reach | None:
    """What the newest listed release at or before `cuda` builds for; None before the first."""
    for release, reach in release_table():
        if cuda >= release:
            return reach
    return None


def _where(item: Fact) -> str:
    return f"{item.path}:{item.lineno}" if item.lineno else item.path


def _builds(facts: Sequence[Fact]) -> list[tuple[Version, Fact]]:
    found: list[tuple[Version, Fact]] = []
    for item in facts:
        version: Version | None = None
        if item.key == "cuda.version" and _DRIVER_BANNER not in item.text:
            version = cuda_version(str(item.value))
        elif item.key == "torch.version" and (cuda := torch_cuda(str(item.value))):
            version = cuda_version(cuda)
        # a version older than the table's first release has no reach: left out below
        if version is not None:
            found.append((version, item))
    return found


def _gpus(facts: Sequence[Fact]) -> list[tuple[Capability, Fact]]:
    found: list[tuple[Capability, Fact]] = []
    for item in facts:
        cap: Capability | None = None
        if item.key == "gpu.capability":
            cap = capability(str(item.value))
        elif item.key == "gpu.name":
            cap = capability_of_name(str(item.value))
        if cap is not None:
            found.append((cap, item))
    return found


def build_lacks_gpu(facts: Sequence[Fact]) -> list[Fact]:
    """One `cuda.build_lacks_gpu` fact per CUDA build and GPU it has no machine code for."""
    builds = _builds(facts)
    if not builds:
        return []
    derived: list[Fact] = []
    seen: set[tuple[Version, Capability]] = set()
    for gpu, gpu_fact in _gpus(facts):
        for cuda, cuda_fact in builds:
            reach = reach_of(cuda)
            gap = reach.gap(gpu) if reach is not None else None
            if reach is None or gap is None or (cuda, gpu) in seen:
                continue
            if len(derived) >= MAX_DERIVED:
                return derived
            seen.add((cuda, gpu))
            version = f"{cuda[0]}.{cuda[1]}"
            built_for = f"{shown(reach.oldest)}-{shown(reach.newest)}"
            text = (
                f"the GPU at {_where(gpu_fact)} has compute capability {shown(gpu)}, but the "
                f"CUDA {version} build at {_where(cuda_fact)} makes machine code for "
                f"{built_for} only"
            )
            derived.append(
                fact(
                    LACKS,
                    version,
                    gpu_fact.path,
                    gpu_fact.lineno,
                    text=text,
                    capability=shown(gpu),
                    built_for=built_for,
                    gap=gap,
                    gpu_at=_where(gpu_fact),
                    cuda_at=_where(cuda_fact),
                )
            )
    return derived
