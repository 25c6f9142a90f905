"""What the messages of a training run say, read into values: CUDA OOM figures, a Python
exception line, library versions, the world layout. The torchelastic error-file parser reads
its message with the same functions."""

from __future__ import annotations

import re

from crashlens.model import FactValue
from crashlens.text.sizes import to_bytes
from crashlens.text.values import bounded_int

EXCEPTION_CHARS = 300
"""Longest exception text kept (the type and the start of the message)."""

SIZE = r"([0-9]+(?:\.[0-9]+)?) ?([KMGT]i?B|bytes|B)"
"""A size as torch prints it (`2.00 GiB`): two groups, the number and the unit (`to_bytes`)."""


_OOM_TRIED = re.compile(r"CUDA out of memory\. Tried to allocate " + SIZE)
_OOM_NEW = re.compile(
    r"GPU ([0-9]+) has a total capac?i?ty of " + SIZE + r" of which " + SIZE + r" is free"
)
_OOM_IN_USE = re.compile(r"has " + SIZE + r" memory in use")
_OOM_NEW_ALLOC = re.compile(
    r"Of the allocated memory "
    + SIZE
    + r" is allocated by PyTorch, and "
    + SIZE
    + r" is reserved by PyTorch but unallocated"
)
_OOM_OLD = re.compile(
    r"\(GPU ([0-9]+); "
    + SIZE
    + r" total capacity; "
    + SIZE
    + r" already allocated; "
    + SIZE
    + r" free;(?: "
    + SIZE
    + r" (?:reserved in total by PyTorch|cached))?"
)
_OOM_BARE = re.compile(r"CUDA error: out of memory|CUDA out of memory")


def parse_cuda_oom(text: str) -> tuple[int, dict[str, FactValue]] | None:
    """Bytes tried and the figures of a CUDA OOM message (all three wording generations)."""
    tried = _OOM_TRIED.search(text)
    if tried is None:
        if _OOM_BARE.search(text):
            return 0, {"wording": "cuda_error"}
        return None
    figures: dict[str, FactValue | None] = {}
    if m := _OOM_NEW.search(text):
        figures["gpu"] = bounded_int(m.group(1))
        figures["total_bytes"] = to_bytes(m.group(2), m.group(3))
        figures["free_bytes"] = to_bytes(m.group(4), m.group(5))
        figures["wording"] = "2.3+" if "non-PyTorch" in text else "2.1"
        if used := _OOM_IN_USE.search(text):
            figures["in_use_bytes"] = to_bytes(used.group(1), used.group(2))
        if alloc := _OOM_NEW_ALLOC.search(text):
            allocated = to_bytes(alloc.group(1), alloc.group(2))
            unallocated = to_bytes(alloc.group(3), alloc.group(4))
            figures["allocated_bytes"] = allocated
            # The new wording gives the unallocated part; keep one meaning: reserved in total.
            if allocated is not None and unallocated is not None:
                figures["reserved_bytes"] = allocated + unallocated
    elif m := _OOM_OLD.search(text):
        figures["gpu"] = bounded_int(m.group(1))
        figures["total_bytes"] = to_bytes(m.group(2), m.group(3))
        figures["allocated_bytes"] = to_bytes(m.group(4), m.group(5))
        figures["free_bytes"] = to_bytes(m.group(6), m.group(7))
        if m.group(8):
            figures["reserved_bytes"] = to_bytes(m.group(8), m.group(9))
        figures["wording"] = "legacy"
    tried_bytes = to_bytes(tried.group(1), tried.group(2))
    if tried_bytes is None:
        return None  # an absurd size: the line is left unparsed
    # a figure too long to be a number is left out, the others kept
    return tried_bytes, {key: value for key, value in figures.items() if value is not None}


_EXCEPTION = re.compile(
    r"^[ \t]*(?:\[[A-Z]+\][ \t]*)?(?:rank[ ]?([0-9]+):[ \t]*)?"
    r"((?:[A-Za-z_][A-Za-z0-9_]*\.)*[A-Z][A-Za-z0-9_]*(?:Error|Exception|Interrupt|Exit))"
    r"(?::[ \t]*(.*))?$"
)
_NOT_WORKER_EXCEPTIONS = frozenset({"ChildFailedError"})
"""The agent's wrapper: its content is the report, read separately."""


def parse_exception(text: str) -> tuple[str, str, int | None] | None:
    """(type, "Type: message", rank named inline) for a Python exception line, else None."""
    m = _EXCEPTION.match(text)
    if m is None:
        return None
    exc_type = m.group(2)
    if exc_type.rsplit(".", 1)[-1] in _NOT_WORKER_EXCEPTIONS:
        return None
    message = (m.group(3) or "").strip()
    value = f"{exc_type}: {message}" if message else exc_type
    rank = bounded_int(m.group(1)) if m.group(1) else None
    return exc_type, value[:EXCEPTION_CHARS], rank


_NCCL_VERSION = re.compile(r"NCCL version ([0-9]+\.[0-9]+\.[0-9]+)(?:\+cuda([0-9]+\.[0-9]+))?")
_TORCH_VERSION = re.compile(
    r"torch==([0-9]+\.[0-9]+[0-9a-z.+]*)|(?:PyTorch|torch) version:? ([0-9]+\.[0-9]+[0-9a-z.+]*)"
)
_CUDA_VERSION = re.compile(r"CUDA (?:[Vv]ersion|used to build PyTorch):? ([0-9]+\.[0-9]+)")
_TORCH_CU = re.compile(r"\+cu([0-9]+)([0-9])$")
_COLLECT_ENV_DRIVER = re.compile(r"^Nvidia driver version: ([0-9]{2,4}(?:\.[0-9]{1,4}){1,2})\b")
"""torch.utils.collect_env's driver line (`Nvidia driver version: 418.39`): the version it read
from nvidia-smi's banner, so a pasted environment report states the driver as nvidia-smi would,
for the CUDA-runtime check (`decide/cuda_versions.py`)."""
_CUDART = re.compile(r"\blibcudart\.so\.([0-9]{1,2})\.([0-9])\b")
"""The CUDA runtime library a framework loads (TensorFlow's `Successfully opened dynamic library
libcudart.so.10.0`, `Could not load dynamic library 'libcudart.so.11.0'`): the CUDA it was built
with."""


def torch_cuda(version: str) -> str | None:
    """The CUDA a torch build names in its local version (`2.1.0+cu121` -> `12.1`), or None."""
    cu = _TORCH_CU.search(version)
    if cu and (major := bounded_int(cu.group(1))) is not None:
        return f"{major}.{cu.group(2)}"
    return None


def version_facts(text: str) -> list[tuple[str, str]]:
    """(key, value) pairs for the nccl / cuda / torch versions a line names, and the driver
    version torch.utils.collect_env reports (`nvidia_smi.driver_version`: nvidia-smi's)."""
    found: list[tuple[str, str]] = []
    if m := _COLLECT_ENV_DRIVER.search(text):
        found.append(("nvidia_smi.driver_version", m.group(1)))
    if m := _NCCL_VERSION.search(text):
        found.append(("nccl.version", m.group(1)))
        if m.group(2):
            found.append(("cuda.version", m.group(2)))
    if m := _TORCH_VERSION.search(text):
        version = (m.group(1) or m.group(2)).rstrip(".")
        found.append(("torch.version", version))
        if (cuda := torch_cuda(version)) is not None:
            found.append(("cuda.version", cuda))
    if m := _CUDA_VERSION.search(text):
        found.append(("cuda.version", m.group(1)))
    if m := _CUDART.search(text):
        found.append(("cuda.version", f"{m.group(1)}.{m.group(2)}"))
    return found


# the dict stops at another `WORLD INFO DICT` (else each one rescans the rest of the line)
_WORLD_DICT = re.compile(r"WORLD INFO DICT: \{((?:(?!WORLD INFO DICT: ).)*)\}")
_WORLD_HOST = re.compile(r"'[^']*': \[([0-9, ]*)\]")
_DS_PROCS = re.compile(r"nnodes=([0-9]+), num_local_procs=([0-9]+)")
_WORLD_SIZE = re.compile(
    r"(?:^|[^A-Za-z_])(?:dist_|global_)?(?:world_size|WORLD_SIZE|world size)['\"]?[ \t]*[:=][ \t]*"
    r"([0-9]+)"
)
_NPROC_FLAG = re.compile(r"--nproc[_-]per[_-]node[= ]([0-9]+)")
_NNODES_FLAG = re.compile(r"--nnodes[= ](?:[0-9]+:)?([0-9]+)")
_ACCEL_VALUE = re.compile(r"`--(num_processes|num_machines)` was set to a value of `([0-9]+)`")
_ACCEL_FLAG = re.compile(r"--(num_processes|num_machines)[= ]([0-9]+)")
# `[ \t]*[:= ][ \t]*` (a run of spaces with a space in it) written so that no two repeats
# share a space: the plain form backtracked quadratically on a long run of spaces.
_NUM_WORKERS = re.compile(
    r"(?<![A-Za-z_])(?:dataloader_)?num_workers['\"]?"
    r"(?:[ \t]*+[:=][ \t]*+|(?=[ \t]*\x20)[ \t]++)([0-9]+)"
)


def world_facts(text: str) -> list[tuple[str, int]]:
    """(key, value) pairs for the world layout a line states: `launcher.nnodes`,
    `launcher.nproc_per_node`, `launcher.world_size` (torchelastic's WORLD INFO DICT,
    deepspeed's num_local_procs, world_size values, torchrun and accelerate flags)."""
    found: list[tuple[str, int | None]] = []
    if m := _WORLD_DICT.search(text):
        sizes = [
            len([r for r in ranks.split(",") if r.strip()])
            for ranks in _WORLD_HOST.findall(m.group(1))
        ]
        if sizes:
            found.append(("launcher.nnodes", len(sizes)))
            found.append(("launcher.nproc_per_node", max(sizes)))
            found.append(("launcher.world_size", sum(sizes)))
    if m := _DS_PROCS.search(text):
        found.append(("launcher.nnodes", bounded_int(m.group(1))))
        found.append(("launcher.nproc_per_node", bounded_int(m.group(2))))
    if m := _WORLD_SIZE.search(text):
        found.append(("launcher.world_size", bounded_int(m.group(1))))
    if m := _NPROC_FLAG.search(text):
        found.append(("launcher.nproc_per_node", bounded_int(m.group(1))))
    if m := _NNODES_FLAG.search(text):
        found.append(("launcher.nnodes", bounded_int(m.group(1))))
    flags = () if "unintended" in text else tuple(_ACCEL_FLAG.finditer(text))
    for m in (*_ACCEL_VALUE.finditer(text), *flags):
        key = "launcher.world_size" if m.group(1) == "num_processes" else "launcher.nnodes"
        found.append((key, bounded_int(m.group(2))))
    return [(key, value) for key, value in found if value is not None]


def num_workers(text: str) -> int | None:
    """The DataLoader worker count a command line or an args dump states."""
    m = _NUM_WORKERS.search(text)
    return bounded_int(m.group(1)) if m else None
