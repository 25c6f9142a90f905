"""The default `nvidia-smi` table, from the pre-MIG drivers to the 600 series and Windows.

Cells are split on `|`, not on column positions: widths change between driver generations and
with long GPU names. Each GPU takes two or three rows (three since MIG), followed by optional
`MIG devices:` and `Processes:` sections.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from crashlens.parsers.nvidia_smi.gpu import INT_RE, FactEmitter, Gpu, GpuProcess, error_sentinel
from crashlens.text.ids import normalize_pci
from crashlens.text.values import bounded_int

BANNER_RE = re.compile(
    r"NVIDIA-SMI\s+(?P<smi>[^\s|]+)\s+(?P<label>Driver|KMD)\s+Version:\s*(?P<driver>[^\s|]+)"
    r"(?:\s+CUDA(?:\s+UMD)?\s+Version:\s*(?P<cuda>[^\s|]+))?"
)
_MIB_RE = re.compile(r"^(?P<n>\d+)\s*MiB$", re.IGNORECASE)
TABLE_HEADER_RE = re.compile(r"^\|\s*GPU\s+Name\b")
"""The column header row above the GPU rows (`| GPU  Name  Persistence-M | ...`)."""
_SEPARATOR_RE = re.compile(r"^[+|][-=+|]*$")
# Possessive repeats, `(?<!\s)` where a lazy name meets the spaces after it and `(?<!\S)`
# before a searched token keep these linear: the plain forms backtracked cubically when
# several repeats shared one long run of spaces.
_ROW1_LEFT_RE = re.compile(
    r"^\s*+(?P<index>\d++)\s++(?P<name>(?:.*?(?<!\s))??)"
    r"(?:\s++(?P<pm>On|Off|WDDM|TCC|MCDM|N/A|ERR!))?\s*+$"
)
_BUS_CELL_RE = re.compile(
    r"^\s*+(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*+(?P<disp>\S++)?\s*+$"
)
_MEM_CELL_RE = re.compile(
    r"(?<!\S)(?P<used>\S+?)\s*+(?:MiB)?\s*+/\s*+(?P<total>\S+?)\s*+(?:MiB)?\s*+$"
)
_MIG_LEFT_RE = re.compile(r"^\s*(?P<gpu>\d+)\s+(?P<gi>\d+)\s+(?P<ci>\d+)\s+(?P<dev>\d+)\s*$")
_PROC_NEW_RE = re.compile(
    r"^\s*+(?P<gpu>\d++)\s++(?P<gi>\d++|N/A)\s++(?P<ci>\d++|N/A)\s++(?P<pid>\d++)\s++"
    r"(?P<type>[A-Z+]++)\s++(?P<name>.*?)(?<!\s)\s++(?P<mem>\S++)\s*+$"
)
_PROC_OLD_RE = re.compile(
    r"^\s*+(?P<gpu>\d++)\s++(?P<pid>\d++)\s++(?P<type>[A-Z+]++)\s++(?P<name>.*?)(?<!\s)\s++"
    r"(?P<mem>\S++)\s*+$"
)
_ROW2_LEFT_FIELDS = ("fan.speed", "temperature.gpu", "pstate", "power.draw")
_ROW2_LEFT_LABELS = ("Fan", "Temp", "Perf", "Pwr:Usage")


def _cells(line: str) -> list[str] | None:
    """The `|`-separated cells of a table row, or None for lines that are not rows."""
    stripped = line.strip()
    if not stripped.startswith("|") or _SEPARATOR_RE.match(stripped):
        return None
    inner = stripped[1:]
    if inner.endswith("|"):
        inner = inner[:-1]
    return inner.split("|")


@dataclass
class _TableState:
    """Where the table reader is: which section, and the GPU whose rows it is reading."""

    section: str = ""
    gpu: Gpu | None = None
    row: int = 0
    gpus: list[Gpu] = field(default_factory=list)
    closed: bool = False
    """Whether the last table line seen was a closing border (not a cut-off paste)."""


def _err_cells(gpu: Gpu, pairs: list[tuple[str, str, str]], lineno: int, line: str) -> None:
    """Record every (field, label, cell value) whose value is an error sentinel."""
    for name, label, value in pairs:
        sentinel = error_sentinel(value)
        if sentinel:
            gpu.errs.append((name, label, sentinel, lineno, line))


def _table_row1(cells: list[str], lineno: int, line: str) -> Gpu | None:
    """First row of a GPU: index, name, persistence, Bus-Id, Disp.A, volatile ECC."""
    if len(cells) < 3:
        return None
    left = _ROW1_LEFT_RE.match(cells[0])
    bus = _BUS_CELL_RE.match(cells[1])
    if not left or not bus:
        return None
    index = bounded_int(left.group("index"))
    if index is None:
        return None  # an absurd index: the row is left unparsed
    gpu = Gpu(index=index, pci=normalize_pci(bus.group("bus")))
    gpu.name = (left.group("name").strip(), lineno, line)
    ecc = cells[2].strip()
    ecc_count = bounded_int(ecc) if INT_RE.match(ecc) else None
    if ecc_count is not None:
        gpu.ecc["volatile"] = (ecc_count, lineno, line)
    _err_cells(
        gpu,
        [
            ("persistence_mode", "Persistence-M", left.group("pm") or ""),
            ("display_active", "Disp.A", bus.group("disp") or ""),
            ("ecc.errors.uncorrected.volatile.total", "Volatile Uncorr. ECC", ecc),
        ],
        lineno,
        line,
    )
    return gpu


def _table_row2(gpu: Gpu, cells: list[str], lineno: int, line: str) -> None:
    """Second row: fan, temp, perf, power usage/cap, memory used/total, util, compute mode."""
    pairs: list[tuple[str, str, str]] = []
    power = re.split(r"\s+/\s+", cells[0].strip(), maxsplit=1)
    tokens = power[0].split()
    # Read from the right: power is always last; fan may be missing on some boards.
    names = list(zip(_ROW2_LEFT_FIELDS, _ROW2_LEFT_LABELS, strict=True))[-len(tokens) :]
    pairs.extend((name, label, token) for (name, label), token in zip(names, tokens, strict=False))
    if len(power) > 1:
        pairs.append(("power.limit", "Pwr:Cap", power[1].strip()))
    if len(cells) > 1:
        memory = _MEM_CELL_RE.search(cells[1].strip())
        if memory:
            used, total = memory.group("used"), memory.group("total")
            pairs += [
                ("memory.used", "Memory-Usage", used),
                ("memory.total", "Memory-Usage", total),
            ]
            used_mib = bounded_int(used) if INT_RE.match(used) else None
            total_mib = bounded_int(total) if INT_RE.match(total) else None
            if used_mib is not None and total_mib is not None:
                gpu.mem_used = (used_mib, lineno, line)
                gpu.mem_total = total_mib
    if len(cells) > 2:
        right = cells[2].split()
        if right:
            pairs.append(("utilization.gpu", "GPU-Util", right[0]))
            pairs.append(("compute_mode", "Compute M.", " ".join(right[1:])))
    _err_cells(gpu, pairs, lineno, line)


def _table_banner(line: str, lineno: int, out: FactEmitter) -> bool:
    """Emit driver and CUDA versions from the `NVIDIA-SMI ... Driver Version:` line."""
    banner = BANNER_RE.search(line)
    if not banner:
        return False
    label = "KMD" if banner.group("label") == "KMD" else None
    out.add(
        "nvidia_smi.driver_version",
        banner.group("driver"),
        lineno,
        line,
        smi=banner.group("smi"),
        label=label,
    )
    cuda = banner.group("cuda")
    if cuda:
        out.add("nvidia_smi.cuda_version", cuda, lineno, line)
    return True


def _table_process(cells: list[str], lineno: int, line: str, gpus: dict[int, Gpu]) -> None:
    """One row of the Processes table (new GI/CI header or the pre-MIG one)."""
    row = " ".join(cells)
    found = _PROC_NEW_RE.match(row) or _PROC_OLD_RE.match(row)
    if not found:
        return
    groups = found.groupdict()
    index = bounded_int(groups["gpu"])
    if index is None:
        return
    mem = groups["mem"]
    used = _MIB_RE.match(mem)
    proc = GpuProcess(
        name=groups["name"].strip(),
        pid=bounded_int(groups["pid"]),
        lineno=lineno,
        text=line,
        used_mib=bounded_int(used.group("n")) if used else None,
        used_text=None if used else mem,
        ptype=groups["type"],
        gi=groups.get("gi"),
        ci=groups.get("ci"),
        index=index,
    )
    owner = gpus.get(index)
    if owner is not None:
        owner.processes.append(proc)
    else:
        gpus.setdefault(index, Gpu(index=index)).processes.append(proc)


def _table_mig(cells: list[str], lineno: int, line: str, out: FactEmitter) -> None:
    """One MIG slice row: GPU GI CI MIG-Dev | used / total | ..."""
    if len(cells) < 2:
        return
    left = _MIG_LEFT_RE.match(cells[0])
    memory = _MEM_CELL_RE.search(cells[1].strip())
    if not left or not memory:
        return
    used, total = memory.group("used"), memory.group("total")
    used_mib = bounded_int(used) if INT_RE.match(used) else None
    if used_mib is None:
        return
    out.add(
        "gpu.mig_memory_used_mib",
        used_mib,
        lineno,
        line,
        index=bounded_int(left.group("gpu")),
        gi=left.group("gi"),
        ci=left.group("ci"),
        mig_dev=left.group("dev"),
        total_mib=bounded_int(total) if INT_RE.match(total) else None,
    )


def _table_line(state: _TableState, lineno: int, line: str, out: FactEmitter) -> None:
    """Advance the table reader by one line."""
    stripped = line.strip()
    if stripped.startswith(("+", "|")):
        state.closed = stripped.startswith("+") and stripped.endswith("+")
    if "Processes:" in stripped:
        state.section, state.gpu = "processes", None
        return
    if "MIG devices:" in stripped:
        state.section, state.gpu = "mig", None
        return
    if TABLE_HEADER_RE.match(stripped):
        state.section, state.gpu = "gpus", None
        return
    cells = _cells(line)
    if cells is None:
        if _SEPARATOR_RE.match(stripped):
            state.gpu, state.row = None, 0
        return
    if state.section == "gpus":
        _table_gpu_line(state, cells, lineno, line)
    elif state.section == "mig":
        _table_mig(cells, lineno, line, out)


def _table_gpu_line(state: _TableState, cells: list[str], lineno: int, line: str) -> None:
    """A row inside the GPU section: a new GPU's first row, or its second/third row."""
    first = _table_row1(cells, lineno, line)
    if first is not None:
        state.gpu, state.row = first, 1
        state.gpus.append(first)
        return
    if state.gpu is None:
        return
    state.row += 1
    if state.row == 2:
        _table_row2(state.gpu, cells, lineno, line)
    elif state.row == 3 and len(cells) > 2:
        mig = cells[2].strip()
        if mig in ("Enabled", "Disabled"):
            state.gpu.mig_mode = (mig, lineno, line)
        _err_cells(state.gpu, [("mig.mode.current", "MIG M.", mig)], lineno, line)


def parse_table(lines: list[tuple[int, str]], out: FactEmitter) -> None:
    """The default `nvidia-smi` table, any driver generation, split on `|` not on columns."""
    state = _TableState()
    proc_rows: list[tuple[list[str], int, str]] = []
    for lineno, line in lines:
        if _table_banner(line, lineno, out):
            continue
        if state.section == "processes":
            cells = _cells(line)
            if cells is not None:
                proc_rows.append((cells, lineno, line))
        _table_line(state, lineno, line, out)
    by_index = {gpu.index: gpu for gpu in state.gpus if gpu.index is not None}
    for cells, lineno, line in proc_rows:
        _table_process(cells, lineno, line, by_index)
    if state.gpus:
        first = state.gpus[0].name
        out.add(
            "nvidia_smi.gpu_count",
            len(state.gpus),
            first[1] if first else None,
            first[2] if first else None,
            source="table",
        )
    for gpu in by_index.values():
        out.gpu(gpu)
    if not state.closed:
        out.warnings.append("nvidia-smi table ends without its closing border: truncated?")
