"""`nvidia-smi -L` (one line per GPU and MIG device) and `nvidia-smi topo -m` (the link matrix)."""

from __future__ import annotations

import re

from crashlens.parsers.nvidia_smi.gpu import FactEmitter
from crashlens.text.values import bounded_int

LIST_GPU_RE = re.compile(r"^GPU (?P<index>\d+): (?P<name>.+?) \(UUID: (?P<uuid>GPU-[^)\s]+)\)")
_LIST_MIG_RE = re.compile(
    r"^\s+MIG\s+(?P<profile>\S+)\s+Device\s+(?P<dev>\d+): \(UUID: (?P<uuid>MIG-[^)\s]+)\)"
)
TOPO_HEADER_RE = re.compile(r"^\s*+GPU0(?:\t|\s{2,}+).*(?:CPU Affinity|NUMA Affinity|GPU1|NIC0)")
_TOPO_ROW_RE = re.compile(r"^(?P<kind>GPU|NIC)(?P<n>\d+)\t")
_LINK_RANK = {"SYS": 5, "NODE": 4, "PHB": 3, "PXB": 2, "PIX": 1}


def parse_list(lines: list[tuple[int, str]], out: FactEmitter) -> None:
    """`nvidia-smi -L`: one line per GPU, indented MIG children."""
    count = 0
    parent: int | None = None
    first: tuple[int, str] | None = None
    for lineno, line in lines:
        gpu = LIST_GPU_RE.match(line.strip())
        index = bounded_int(gpu.group("index")) if gpu else None
        if gpu and index is not None:
            count += 1
            parent = index
            first = first or (lineno, line)
            out.add(
                "gpu.name", gpu.group("name"), lineno, line, index=parent, uuid=gpu.group("uuid")
            )
            continue
        mig = _LIST_MIG_RE.match(line)
        if mig:
            out.add(
                "gpu.mig_device",
                mig.group("profile"),
                lineno,
                line,
                index=parent,
                mig_dev=mig.group("dev"),
                uuid=mig.group("uuid"),
            )
    if count and first:
        out.add("nvidia_smi.gpu_count", count, first[0], first[1], source="list")


def parse_topo(lines: list[tuple[int, str]], out: FactEmitter) -> None:
    """`nvidia-smi topo -m`: count GPUs and NICs, and name the weakest GPU-GPU link."""
    columns: list[str] = []
    gpus: list[tuple[int, str]] = []
    nics = 0
    worst: tuple[int, str, str, int, str] | None = None
    for lineno, line in lines:
        if not columns and TOPO_HEADER_RE.match(line):
            columns = [c.strip() for c in line.strip().split("\t")]
            continue
        row = _TOPO_ROW_RE.match(line)
        if not columns or not row:
            continue
        if row.group("kind") == "NIC":
            nics += 1
            continue
        gpus.append((lineno, line))
        cells = [c.strip() for c in line.split("\t")[1:]]
        for column, cell in zip(columns, cells, strict=False):
            rank = 0 if cell.startswith("NV") else _LINK_RANK.get(cell)
            if rank is None or not column.startswith("GPU"):
                continue
            pair = f"GPU{row.group('n')}-{column}"
            if worst is None or rank > worst[0]:
                worst = (rank, cell, pair, lineno, line)
    if gpus:
        out.add("nvidia_smi.gpu_count", len(gpus), gpus[0][0], gpus[0][1], source="topo")
    if columns:
        out.add("nvidia_smi.nic_count", nics)
    if worst is not None:
        out.add("nvidia_smi.topo_worst_gpu_link", worst[1], worst[3], worst[4], gpus=worst[2])
