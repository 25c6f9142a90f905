"""nvidia-smi outputs: the default table, `-q`, `-q -x`, CSV queries, `-L`, `topo -m`, failures.

Every variant is read into the same per-GPU record (`_Gpu`) and emitted the same way, so rules
see one vocabulary whatever command the user ran. GPUs are identified by `index` (the table's
GPU column, the CSV `index` field, or the order of the blocks in `-q` / XML, which nvidia-smi
prints in the same PCI order), `pci` (normalised, see `normalize_pci`), `uuid` and `serial`.

Fact keys (values as documented; attrs in brackets):

* `nvidia_smi.driver_version`: str [smi, label=`KMD` on Windows WDDM]
* `nvidia_smi.cuda_version`: str (the driver's CUDA version; `CUDA UMD Version` on Windows)
* `nvidia_smi.gpu_count`: int GPUs listed (-q / XML: `Attached GPUs`) [source]
* `nvidia_smi.error`: str no_driver | no_devices | driver_library_mismatch | other
  [message, pci, nvml_version]
* `nvidia_smi.nic_count`: int NICs in `topo -m`
* `nvidia_smi.topo_worst_gpu_link`: str the weakest GPU-GPU link in `topo -m` (SYS worst,
  then NODE, PHB, PXB, PIX, NV#) [gpus]
* `gpu.name`: str [index, pci, uuid, serial]
* `gpu.memory_used_mib`: int [index, pci, total_mib]
* `gpu.memory_used_percent`: float 0..100 [index, pci]
* `gpu.mig_memory_used_mib`: int memory used by one MIG slice [index, gi, ci, mig_dev, total_mib]
* `gpu.mig_mode`: str Enabled | Disabled (table row 3, -q `MIG Mode/Current`) [index, pci]
* `gpu.mig_device`: str MIG profile from `-L` (e.g. `3g.40gb`) [index, mig_dev, uuid]
* `gpu.ecc_uncorrected`: int uncorrected ECC errors [index, pci, scope=volatile|aggregate]
* `gpu.retired_pages_pending`: bool; `gpu.remapped_rows_pending`: bool;
  `gpu.remapping_failure`: bool [index, pci]
* `gpu.retired_pages_dbe`: int pages retired for double-bit errors [index, pci]
* `gpu.remapped_rows_uncorrectable`: int rows remapped for uncorrectable errors [index, pci]
* `gpu.reset_required`: bool (-q `GPU Reset Status/Reset Required`, CSV `[GPU requires reset]`)
* `gpu.err_field`: str the field showing `ERR!` / `[Unknown Error]` / `[GPU requires reset]`,
  named as the `--query-gpu` field (`fan.speed`, `power.draw`, ...) when there is one, else the
  input's own label path [index, pci, label (as printed), sentinel]
* `gpu.process`: str process name [pid, index, pci, uuid, used_mib, used_text, type, gi, ci]
* `gpu.lost`: bool `Unable to determine the device handle for GPU...` [pci]

Table facts carry the table line they came from; `-q` and CSV facts their line; XML facts have
no line (ElementTree keeps none).
"""

from __future__ import annotations

import csv
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from crashlens.model import Fact, FactValue, InputKind
from crashlens.parsers.base import DocumentParser, DocumentResult, clean_line, fact
from crashlens.text.ids import normalize_pci
from crashlens.text.literals import Gate

# --- shared ------------------------------------------------------------------------------------

_INT_RE = re.compile(r"^-?\d+$")
_MIB_RE = re.compile(r"^(?P<n>\d+)\s*MiB$", re.IGNORECASE)
_NUM_UNIT_RE = re.compile(r"^(?P<n>-?\d+(?:\.\d+)?)(?:\s*\S+)?$")

_ERR_SENTINELS = {
    "err!": "ERR!",
    "[err!]": "ERR!",
    "unknown error": "Unknown Error",
    "[unknown error]": "Unknown Error",
    "gpu requires reset": "GPU requires reset",
    "[gpu requires reset]": "GPU requires reset",
}
"""Cell values that mean NVML could not read the field (hardware or a lost GPU), by lower case."""

_YES = {"yes", "true", "active", "1"}
_NO = {"no", "false", "not active", "0"}


def _to_int(value: str | None) -> int | None:
    """`40536 MiB`, `0`, `2296 MiB` -> int; `N/A`, `[N/A]`, `10052...` -> None."""
    if value is None:
        return None
    found = _NUM_UNIT_RE.match(value.strip())
    if not found or "." in found.group("n"):
        return None
    return int(found.group("n"))


def _to_bool(value: str | None) -> bool | None:
    """Yes/No (and Active/Not Active) -> bool; N/A and the rest -> None."""
    if value is None:
        return None
    lowered = value.strip().lower()
    if lowered in _YES:
        return True
    if lowered in _NO:
        return False
    return None


def _sentinel(value: str | None) -> str | None:
    """The canonical error sentinel a cell shows (`ERR!`...), or None."""
    if value is None:
        return None
    return _ERR_SENTINELS.get(value.strip().lower())


Located = tuple[FactValue, int | None, str | None]
"""A value with the line number and line text it was read from."""


@dataclass
class _Process:
    """One process holding GPU memory."""

    name: str
    pid: int | None
    lineno: int | None = None
    text: str | None = None
    used_mib: int | None = None
    used_text: str | None = None
    ptype: str | None = None
    gi: str | None = None
    ci: str | None = None
    index: int | None = None
    pci: str | None = None
    uuid: str | None = None


@dataclass
class _Gpu:
    """What one input says about one GPU; every field keeps where it was read."""

    index: int | None = None
    pci: str | None = None
    uuid: str | None = None
    serial: str | None = None
    name: Located | None = None
    mem_used: Located | None = None
    mem_total: int | None = None
    mig_mode: Located | None = None
    ecc: dict[str, Located] = field(default_factory=dict)
    flags: dict[str, Located] = field(default_factory=dict)
    """Bool/int facts by key suffix: retired_pages_pending, remapping_failure, reset_required..."""
    errs: list[tuple[str, str, str, int | None, str | None]] = field(default_factory=list)
    """(canonical field, label, sentinel, lineno, text)."""
    processes: list[_Process] = field(default_factory=list)


class _Out:
    """Collects facts and warnings for one input."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.facts: list[Fact] = []
        self.warnings: list[str] = []

    def add(
        self,
        key: str,
        value: FactValue,
        lineno: int | None = None,
        text: str | None = None,
        **attrs: FactValue | None,
    ) -> None:
        """Add one fact (text defaults to `key = value`)."""
        self.facts.append(fact(key, value, self.path, lineno, text, **attrs))

    def gpu(self, gpu: _Gpu) -> None:
        """Emit every fact known about one GPU."""
        ident: dict[str, FactValue | None] = {"index": gpu.index, "pci": gpu.pci}
        if gpu.name is not None:
            value, lineno, text = gpu.name
            self.add("gpu.name", value, lineno, text, **ident, uuid=gpu.uuid, serial=gpu.serial)
        if gpu.mem_used is not None:
            used, lineno, text = gpu.mem_used
            self.add("gpu.memory_used_mib", used, lineno, text, **ident, total_mib=gpu.mem_total)
            if gpu.mem_total and isinstance(used, int):
                percent = round(100.0 * used / gpu.mem_total, 2)
                self.add("gpu.memory_used_percent", percent, lineno, text, **ident)
        if gpu.mig_mode is not None:
            self.add("gpu.mig_mode", gpu.mig_mode[0], gpu.mig_mode[1], gpu.mig_mode[2], **ident)
        for scope, (count, lineno, text) in gpu.ecc.items():
            self.add("gpu.ecc_uncorrected", count, lineno, text, **ident, scope=scope)
        for suffix, (value, lineno, text) in gpu.flags.items():
            self.add(f"gpu.{suffix}", value, lineno, text, **ident)
        for name, label, sentinel, lineno, text in gpu.errs:
            self.add("gpu.err_field", name, lineno, text, **ident, label=label, sentinel=sentinel)
        for proc in gpu.processes:
            proc.index = gpu.index if proc.index is None else proc.index
            proc.pci = proc.pci or gpu.pci
            proc.uuid = proc.uuid or gpu.uuid
            self.process(proc)

    def process(self, proc: _Process) -> None:
        """Emit one `gpu.process` fact."""
        self.add(
            "gpu.process",
            proc.name,
            proc.lineno,
            proc.text,
            pid=proc.pid,
            index=proc.index,
            pci=proc.pci,
            uuid=proc.uuid,
            used_mib=proc.used_mib,
            used_text=proc.used_text,
            type=proc.ptype,
            gi=proc.gi,
            ci=proc.ci,
        )


# --- failures ------------------------------------------------------------------------------------

_FAILURES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"),
        "no_driver",
    ),
    (re.compile(r"NVIDIA-SMI couldn't find libnvidia-ml\.so"), "no_driver"),
    (re.compile(r"^No devices were found"), "no_devices"),
    (
        re.compile(r"Failed to initialize NVML: Driver/library version mismatch"),
        "driver_library_mismatch",
    ),
    (re.compile(r"^Failed to initialize NVML: "), "other"),
    (re.compile(r"^Unable to determine the device handle for (?:GPU|gpu)\s*\S+"), "other"),
)
_NVML_VERSION_RE = re.compile(r"^NVML library version:\s*(\S+)")
_DEVICE_HANDLE_RE = re.compile(r"^Unable to determine the device handle for (?:GPU|gpu)\s*(\S+)")
_BAD_FIELD_RE = re.compile(r'^Field "[^"]*" is not a valid field to query')


_FAILURE_GATE = Gate(*(rx for rx, _ in _FAILURES), _BAD_FIELD_RE)
"""Derived from those patterns: most outputs hold none of them and skip the line loop."""


def _parse_failures(text: str, lines: list[tuple[int, str]], out: _Out) -> None:
    """Whole-output failures, and per-GPU `Unable to determine the device handle` lines."""
    if "\x1b" not in text and not _FAILURE_GATE.may_match(text):
        return  # (ANSI escapes could split a literal: then every line is looked at)
    nvml_version = next(
        (m.group(1) for _, line in lines if (m := _NVML_VERSION_RE.match(line.strip()))), None
    )
    for lineno, line in lines:
        stripped = line.strip()
        if _BAD_FIELD_RE.match(stripped):
            out.warnings.append(f"nvidia-smi rejected the query: {stripped}")
            continue
        for pattern, kind in _FAILURES:
            if not pattern.search(stripped):
                continue
            pci = None
            handle = _DEVICE_HANDLE_RE.match(stripped)
            if handle:
                pci = normalize_pci(handle.group(1))
                out.add("gpu.lost", True, lineno, line, pci=pci)
            version = nvml_version if kind == "driver_library_mismatch" else None
            out.add(
                "nvidia_smi.error",
                kind,
                lineno,
                line,
                message=stripped[:300],
                pci=pci,
                nvml_version=version,
            )
            break


# --- default table -------------------------------------------------------------------------------

_BANNER_RE = re.compile(
    r"NVIDIA-SMI\s+(?P<smi>[^\s|]+)\s+(?P<label>Driver|KMD)\s+Version:\s*(?P<driver>[^\s|]+)"
    r"(?:\s+CUDA(?:\s+UMD)?\s+Version:\s*(?P<cuda>[^\s|]+))?"
)
_SEPARATOR_RE = re.compile(r"^[+|][-=+|]*$")
_ROW1_LEFT_RE = re.compile(
    r"^\s*(?P<index>\d+)\s+(?P<name>.*?)\s*(?:\s(?P<pm>On|Off|WDDM|TCC|MCDM|N/A|ERR!))?\s*$"
)
_BUS_CELL_RE = re.compile(
    r"^\s*(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*(?P<disp>\S+)?\s*$"
)
_MEM_CELL_RE = re.compile(r"(?P<used>\S+?)\s*(?:MiB)?\s*/\s*(?P<total>\S+?)\s*(?:MiB)?\s*$")
_MIG_LEFT_RE = re.compile(r"^\s*(?P<gpu>\d+)\s+(?P<gi>\d+)\s+(?P<ci>\d+)\s+(?P<dev>\d+)\s*$")
_PROC_NEW_RE = re.compile(
    r"^\s*(?P<gpu>\d+)\s+(?P<gi>\d+|N/A)\s+(?P<ci>\d+|N/A)\s+(?P<pid>\d+)\s+(?P<type>[A-Z+]+)\s+"
    r"(?P<name>.*?)\s+(?P<mem>\S+)\s*$"
)
_PROC_OLD_RE = re.compile(
    r"^\s*(?P<gpu>\d+)\s+(?P<pid>\d+)\s+(?P<type>[A-Z+]+)\s+(?P<name>.*?)\s+(?P<mem>\S+)\s*$"
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
    gpu: _Gpu | None = None
    row: int = 0
    gpus: list[_Gpu] = field(default_factory=list)
    closed: bool = False
    """Whether the last table line seen was a closing border (not a cut-off paste)."""


def _err_cells(gpu: _Gpu, pairs: list[tuple[str, str, str]], lineno: int, line: str) -> None:
    """Record every (field, label, cell value) whose value is an error sentinel."""
    for name, label, value in pairs:
        sentinel = _sentinel(value)
        if sentinel:
            gpu.errs.append((name, label, sentinel, lineno, line))


def _table_row1(cells: list[str], lineno: int, line: str) -> _Gpu | None:
    """First row of a GPU: index, name, persistence, Bus-Id, Disp.A, volatile ECC."""
    if len(cells) < 3:
        return None
    left = _ROW1_LEFT_RE.match(cells[0])
    bus = _BUS_CELL_RE.match(cells[1])
    if not left or not bus:
        return None
    gpu = _Gpu(index=int(left.group("index")), pci=normalize_pci(bus.group("bus")))
    gpu.name = (left.group("name").strip(), lineno, line)
    ecc = cells[2].strip()
    if _INT_RE.match(ecc):
        gpu.ecc["volatile"] = (int(ecc), lineno, line)
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


def _table_row2(gpu: _Gpu, cells: list[str], lineno: int, line: str) -> None:
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
            if _INT_RE.match(used) and _INT_RE.match(total):
                gpu.mem_used = (int(used), lineno, line)
                gpu.mem_total = int(total)
    if len(cells) > 2:
        right = cells[2].split()
        if right:
            pairs.append(("utilization.gpu", "GPU-Util", right[0]))
            pairs.append(("compute_mode", "Compute M.", " ".join(right[1:])))
    _err_cells(gpu, pairs, lineno, line)


def _table_banner(line: str, lineno: int, out: _Out) -> bool:
    """Emit driver and CUDA versions from the `NVIDIA-SMI ... Driver Version:` line."""
    banner = _BANNER_RE.search(line)
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


def _table_process(cells: list[str], lineno: int, line: str, gpus: dict[int, _Gpu]) -> None:
    """One row of the Processes table (new GI/CI header or the pre-MIG one)."""
    row = " ".join(cells)
    found = _PROC_NEW_RE.match(row) or _PROC_OLD_RE.match(row)
    if not found:
        return
    groups = found.groupdict()
    index = int(groups["gpu"])
    mem = groups["mem"]
    used = _MIB_RE.match(mem)
    proc = _Process(
        name=groups["name"].strip(),
        pid=int(groups["pid"]),
        lineno=lineno,
        text=line,
        used_mib=int(used.group("n")) if used else None,
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
        gpus.setdefault(index, _Gpu(index=index)).processes.append(proc)


def _table_mig(cells: list[str], lineno: int, line: str, out: _Out) -> None:
    """One MIG slice row: GPU GI CI MIG-Dev | used / total | ..."""
    if len(cells) < 2:
        return
    left = _MIG_LEFT_RE.match(cells[0])
    memory = _MEM_CELL_RE.search(cells[1].strip())
    if not left or not memory:
        return
    used, total = memory.group("used"), memory.group("total")
    if not _INT_RE.match(used):
        return
    out.add(
        "gpu.mig_memory_used_mib",
        int(used),
        lineno,
        line,
        index=int(left.group("gpu")),
        gi=left.group("gi"),
        ci=left.group("ci"),
        mig_dev=left.group("dev"),
        total_mib=int(total) if _INT_RE.match(total) else None,
    )


def _table_line(state: _TableState, lineno: int, line: str, out: _Out) -> None:
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
    if re.match(r"^\|\s*GPU\s+Name\b", stripped):
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


def _parse_table(lines: list[tuple[int, str]], out: _Out) -> None:
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


# --- nvidia-smi -q -----------------------------------------------------------------------------

_Q_GPU_RE = re.compile(r"^GPU\s+(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])")
_Q_FIELDS = {
    "fan speed": "fan.speed",
    "performance state": "pstate",
    "fb memory usage.used": "memory.used",
    "fb memory usage.total": "memory.total",
    "temperature.gpu current temp": "temperature.gpu",
    "power readings.power draw": "power.draw",
    "gpu power readings.power draw": "power.draw",
    "gpu power readings.instantaneous power draw": "power.draw",
    "gpu power readings.average power draw": "power.draw.average",
    "utilization.gpu": "utilization.gpu",
    "product name": "name",
}
"""-q label paths (lower case) -> the `--query-gpu` field name used in `gpu.err_field`."""


_Q_TOP_KEYS = {
    "driver version": "nvidia_smi.driver_version",
    "kmd version": "nvidia_smi.driver_version",
    "cuda version": "nvidia_smi.cuda_version",
    "cuda umd version": "nvidia_smi.cuda_version",
}


@dataclass
class _QueryState:
    """The -q reader: the section stack and the GPU block being read."""

    stack: list[tuple[int, str]] = field(default_factory=list)
    gpu: _Gpu | None = None
    gpus: list[_Gpu] = field(default_factory=list)
    pending_ids: dict[str, str] = field(default_factory=dict)
    attached: tuple[int, int, str] | None = None
    versions: set[str] = field(default_factory=set)
    """Version keys already emitted (`Driver Version` wins over the later `KMD Version`)."""


def _q_split(line: str) -> tuple[int, str, str | None]:
    """(indent, key, value or None) of one -q line; keys can carry trailing spaces."""
    expanded = line.replace("\t", "    ") if "\t" in line else line
    body = expanded.lstrip(" ")
    indent = len(expanded) - len(body)
    key, colon, value = body.partition(":")
    if not colon:
        return indent, body.strip(), None
    return indent, key.strip(), value.strip()


def _q_ecc(gpu: _Gpu, path: list[str], value: str, lineno: int, line: str) -> None:
    """Add one ECC counter: `*uncorrectable*` (A100+) or `Double Bit/Total` (older)."""
    if len(path) < 3 or path[1] not in ("volatile", "aggregate"):
        return
    counted = (len(path) == 3 and "uncorrectable" in path[2]) or path[2:] == ["double bit", "total"]
    count = _to_int(value)
    if not counted or count is None:
        return
    scope = path[1]
    previous = gpu.ecc.get(scope)
    if previous is None:
        gpu.ecc[scope] = (count, lineno, line)
        return
    total = int(previous[0]) + count
    # Cite the first line with a non-zero count: that is the evidence worth showing.
    keep_new = int(previous[0]) == 0 and count > 0
    gpu.ecc[scope] = (total, lineno if keep_new else previous[1], line if keep_new else previous[2])


def _q_flag(gpu: _Gpu, path: list[str], value: str, lineno: int, line: str) -> None:
    """Retired pages, remapped rows and reset status fields."""
    section, key = path[0], path[-1]
    found: tuple[str, FactValue | None] | None = None
    if section == "retired pages" and len(path) == 2 and key.startswith("pending"):
        found = ("retired_pages_pending", _to_bool(value))
    elif section == "retired pages" and key == "double bit ecc":
        found = ("retired_pages_dbe", _to_int(value))
    elif section == "remapped rows" and key == "pending":
        found = ("remapped_rows_pending", _to_bool(value))
    elif section == "remapped rows" and key.startswith("remapping failure"):
        found = ("remapping_failure", _to_bool(value))
    elif section == "remapped rows" and key == "uncorrectable error":
        found = ("remapped_rows_uncorrectable", _to_int(value))
    elif section == "gpu reset status" and key == "reset required":
        found = ("reset_required", _to_bool(value))
    if found is None:
        return
    suffix, parsed = found
    if parsed is None:
        return
    previous = gpu.flags.get(suffix)
    # Several keys can feed one flag (Pending Page Blacklist / Pending Page Retirement): any
    # `Yes` wins.
    if previous is None or (parsed is True and previous[0] is not True):
        gpu.flags[suffix] = (parsed, lineno, line)


def _q_process(
    state: _QueryState, gpu: _Gpu, path: list[str], value: str, ln: int, line: str
) -> None:
    """Fields of the `Processes` section; `Process ID` starts a record."""
    key = path[-1]
    if len(path) == 2 and key in ("gpu instance id", "compute instance id"):
        state.pending_ids[key] = value
    elif len(path) == 2 and key == "process id":
        gpu.processes.append(
            _Process(
                name="",
                pid=_to_int(value),
                lineno=ln,
                text=line,
                gi=state.pending_ids.pop("gpu instance id", None),
                ci=state.pending_ids.pop("compute instance id", None),
            )
        )
    elif gpu.processes and len(path) == 3:
        proc = gpu.processes[-1]
        if key == "name":
            proc.name = value
        elif key == "type":
            proc.ptype = value
        elif key == "used gpu memory":
            proc.used_mib = _to_int(value)
            proc.used_text = None if proc.used_mib is not None else value


_Q_READ_SECTIONS = frozenset(
    {
        "product name",
        "serial number",
        "gpu uuid",
        "pci",
        "fb memory usage",
        "mig mode",
        "ecc errors",
        "processes",
        "retired pages",
        "remapped rows",
        "gpu reset status",
    }
)
"""The -q sections (first path element) `_q_field` reads beyond error sentinels."""


def _q_field(state: _QueryState, path: list[str], value: str, lineno: int, line: str) -> None:
    """One `Key : Value` inside a GPU block."""
    gpu = state.gpu
    if gpu is None:
        return
    sentinel = _sentinel(value)
    if not sentinel and path[0] not in _Q_READ_SECTIONS:
        return  # clocks, power, temperatures...: only an error sentinel there matters
    joined = ".".join(path)
    if sentinel:
        label = " / ".join(path)
        gpu.errs.append((_Q_FIELDS.get(joined, joined), label, sentinel, lineno, line))
    if joined == "product name":
        gpu.name = (value, lineno, line)
    elif joined == "serial number" and value not in ("N/A", ""):
        gpu.serial = value
    elif joined == "gpu uuid":
        gpu.uuid = value
    elif joined == "pci.bus id":
        gpu.pci = normalize_pci(value) or gpu.pci
    elif joined == "fb memory usage.used" and (used := _to_int(value)) is not None:
        gpu.mem_used = (used, lineno, line)
    elif joined == "fb memory usage.total":
        gpu.mem_total = _to_int(value)
    elif joined == "mig mode.current" and value in ("Enabled", "Disabled"):
        gpu.mig_mode = (value, lineno, line)
    elif path[0] == "ecc errors":
        _q_ecc(gpu, path, value, lineno, line)
    elif path[0] == "processes":
        _q_process(state, gpu, path, value, lineno, line)
    else:
        _q_flag(gpu, path, value, lineno, line)


def _q_line(state: _QueryState, lineno: int, line: str, out: _Out) -> None:
    """Advance the -q reader by one line."""
    if not line.strip() or "NVSMI LOG" in line:
        return
    indent, key, value = _q_split(line)
    header = _Q_GPU_RE.match(line) if indent == 0 else None
    if header:
        state.gpu = _Gpu(index=len(state.gpus), pci=normalize_pci(header.group("bus")))
        state.gpus.append(state.gpu)
        state.stack, state.pending_ids = [], {}
        return
    lowered = key.lower()
    if indent == 0 and value is not None:
        _q_top(state, lowered, value, lineno, line, out)
        return
    # A mis-indented key joins the nearest previous section with a smaller indent.
    while state.stack and state.stack[-1][0] >= indent:
        state.stack.pop()
    path = [k for _, k in state.stack] + [lowered]
    state.stack.append((indent, lowered))
    if value is not None:
        _q_field(state, path, value, lineno, line)


def _q_top(state: _QueryState, key: str, value: str, lineno: int, line: str, out: _Out) -> None:
    """Top-level keys before the GPU blocks."""
    # 610+ appends `[Deprecated; ... Use KMD Version instead]`; keep the version only.
    value = value.split(" [", 1)[0].strip()
    target = _Q_TOP_KEYS.get(key)
    if target is not None and target not in state.versions:
        state.versions.add(target)
        label = "KMD" if key == "kmd version" else None
        out.add(target, value, lineno, line, label=label)
    elif key == "attached gpus" and _INT_RE.match(value):
        state.attached = (int(value), lineno, line)


def _parse_query(lines: list[tuple[int, str]], out: _Out) -> None:
    """`nvidia-smi -q`: an indentation tree, 4 spaces a level, one block per GPU."""
    state = _QueryState()
    started = False
    # Most of a dump is sections nothing reads (clocks, power, temperatures): their lines are
    # set aside unparsed, and parsed after all only if an error sentinel shows up there (its
    # label needs the section path). Leaving the section drops them: they could only have
    # been stack entries below it, which leaving pops anyway.
    unread_below: int | None = None
    set_aside: list[tuple[int, str]] = []
    for lineno, line in lines:
        # A pasted tail may lack the banner: the first `GPU 0000...` block header also starts.
        started = started or "NVSMI LOG" in line or bool(_Q_GPU_RE.match(line))
        if not started:
            continue
        if unread_below is not None and line.strip() and "\t" not in line:
            if len(line) - len(line.lstrip(" ")) <= unread_below:
                unread_below = None
                set_aside.clear()
            else:
                lowered = line.lower()
                if "err" not in lowered and "reset" not in lowered:  # no sentinel possible
                    set_aside.append((lineno, line))
                    continue
        for held_lineno, held in set_aside:
            _q_line(state, held_lineno, held, out)
        set_aside.clear()
        _q_line(state, lineno, line, out)
        stack = state.stack
        if state.gpu is not None and len(stack) == 1 and stack[0][1] not in _Q_READ_SECTIONS:
            unread_below = stack[0][0]
    if state.attached is not None:
        count, lineno, text = state.attached
        out.add("nvidia_smi.gpu_count", count, lineno, text, source="attached")
        if len(state.gpus) < count:
            out.warnings.append(
                f"nvidia-smi -q lists {len(state.gpus)} of {count} attached GPUs: truncated?"
            )
    elif state.gpus:
        out.add("nvidia_smi.gpu_count", len(state.gpus), source="blocks")
    for gpu in state.gpus:
        gpu.processes = [p for p in gpu.processes if p.name or p.pid is not None]
        out.gpu(gpu)


# --- nvidia-smi -q -x --------------------------------------------------------------------------

_XML_TOKEN_RE = re.compile(
    r"<!--.*?-->|<\?.*?\?>|<!\[CDATA\[.*?\]\]>|<![^>]*>"
    r"|<(?P<close>/)?(?P<tag>[A-Za-z_][\w.:-]*)(?P<attrs>[^<>]*?)(?P<empty>/)?>"
    r"|(?P<text>[^<]+)",
    re.DOTALL,
)
_XML_ATTR_RE = re.compile(r"""([\w.:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_XML_ENTITIES = {"&lt;": "<", "&gt;": ">", "&amp;": "&", "&quot;": '"', "&apos;": "'"}


_XML_FIELDS = {
    "fan_speed": "fan.speed",
    "performance_state": "pstate",
    "fb_memory_usage.used": "memory.used",
    "fb_memory_usage.total": "memory.total",
    "temperature.gpu_temp": "temperature.gpu",
    "power_readings.power_draw": "power.draw",
    "gpu_power_readings.power_draw": "power.draw",
    "gpu_power_readings.instant_power_draw": "power.draw",
    "gpu_power_readings.average_power_draw": "power.draw.average",
    "utilization.gpu_util": "utilization.gpu",
    "product_name": "name",
}
"""XML element paths -> the `--query-gpu` field name used in `gpu.err_field`."""


def _tolerant_xml(text: str) -> ET.Element | None:
    """Build a tree from possibly truncated XML: unclosed elements are closed at the end."""
    root: ET.Element | None = None
    stack: list[ET.Element] = []
    for token in _XML_TOKEN_RE.finditer(text):
        tag = token.group("tag")
        if tag is None:
            chunk = token.group("text")
            if chunk and stack:
                for entity, char in _XML_ENTITIES.items():
                    chunk = chunk.replace(entity, char)
                stack[-1].text = (stack[-1].text or "") + chunk
            continue
        if token.group("close"):
            # Pop to the matching open element; a stray close tag is ignored.
            if any(el.tag == tag for el in stack):
                while stack and stack.pop().tag != tag:
                    pass
            continue
        attrs = {
            m.group(1): m.group(2) or m.group(3) or ""
            for m in _XML_ATTR_RE.finditer(token.group("attrs") or "")
        }
        element = ET.Element(tag, attrs)
        if stack:
            stack[-1].append(element)
        elif root is None:
            root = element
        else:
            continue
        if not token.group("empty"):
            stack.append(element)
    return root


def _xml_text(element: ET.Element | None, path: str) -> str | None:
    """Stripped text at a sub-path, or None when absent or empty."""
    if element is None:
        return None
    found = element.find(path)
    if found is None or found.text is None:
        return None
    return found.text.strip() or None


def _xml_ecc(gpu: _Gpu, ecc: ET.Element | None) -> None:
    """Sum uncorrectable counters per scope (new `*uncorrectable*` or old `double_bit/total`)."""
    if ecc is None:
        return
    for scope in ("volatile", "aggregate"):
        block = ecc.find(scope)
        if block is None:
            continue
        values = [_to_int(child.text) for child in block if "uncorrectable" in child.tag]
        values.append(_to_int(_xml_text(block, "double_bit/total")))
        counts = [v for v in values if v is not None]
        if counts:
            gpu.ecc[scope] = (sum(counts), None, None)


def _xml_flags(gpu: _Gpu, element: ET.Element) -> None:
    """Retired pages, remapped rows (a subtree or `N/A`) and reset status."""
    retired = element.find("retired_pages")
    if retired is not None:
        pending = [_to_bool(child.text) for child in retired if child.tag.startswith("pending")]
        known = [p for p in pending if p is not None]
        if known:
            gpu.flags["retired_pages_pending"] = (any(known), None, None)
        dbe = _to_int(_xml_text(retired, "double_bit_retirement/retired_count"))
        if dbe is not None:
            gpu.flags["retired_pages_dbe"] = (dbe, None, None)
    remapped = element.find("remapped_rows")
    for child in remapped if remapped is not None else []:
        if "pending" in child.tag and (flag := _to_bool(child.text)) is not None:
            gpu.flags["remapped_rows_pending"] = (flag, None, None)
        elif "failure" in child.tag and (flag := _to_bool(child.text)) is not None:
            gpu.flags["remapping_failure"] = (flag, None, None)
        elif child.tag.endswith("_unc") and (count := _to_int(child.text)) is not None:
            gpu.flags["remapped_rows_uncorrectable"] = (count, None, None)
    reset = _to_bool(_xml_text(element, "gpu_reset_status/reset_required"))
    if reset is not None:
        gpu.flags["reset_required"] = (reset, None, None)


def _xml_errs(gpu: _Gpu, element: ET.Element, prefix: str = "") -> None:
    """Every leaf under the GPU whose text is an error sentinel."""
    for child in element:
        path = f"{prefix}{child.tag}"
        if len(child):
            _xml_errs(gpu, child, path + ".")
            continue
        sentinel = _sentinel(child.text)
        if sentinel:
            gpu.errs.append((_XML_FIELDS.get(path, path), path, sentinel, None, None))


def _xml_gpu(element: ET.Element, index: int) -> _Gpu:
    """One `<gpu id=...>` element."""
    bus = _xml_text(element, "pci/pci_bus_id") or element.get("id") or ""
    gpu = _Gpu(
        index=index,
        pci=normalize_pci(bus),
        uuid=_xml_text(element, "uuid"),
        serial=_xml_text(element, "serial"),
    )
    name = _xml_text(element, "product_name")
    if name:
        gpu.name = (name, None, None)
    used = _to_int(_xml_text(element, "fb_memory_usage/used"))
    if used is not None:
        gpu.mem_used = (used, None, None)
    gpu.mem_total = _to_int(_xml_text(element, "fb_memory_usage/total"))
    mig = _xml_text(element, "mig_mode/current_mig")
    if mig in ("Enabled", "Disabled"):
        gpu.mig_mode = (mig, None, None)
    _xml_ecc(gpu, element.find("ecc_errors"))
    _xml_flags(gpu, element)
    _xml_errs(gpu, element)
    for info in element.findall("processes/process_info"):
        used_text = _xml_text(info, "used_memory")
        proc_used = _to_int(used_text)
        gpu.processes.append(
            _Process(
                name=_xml_text(info, "process_name") or "",
                pid=_to_int(_xml_text(info, "pid")),
                used_mib=proc_used,
                used_text=None if proc_used is not None else used_text,
                ptype=_xml_text(info, "type"),
                gi=_xml_text(info, "gpu_instance_id"),
                ci=_xml_text(info, "compute_instance_id"),
            )
        )
    return gpu


def _parse_xml(text: str, out: _Out) -> None:
    """`nvidia-smi -q -x`, with ElementTree; truncated XML goes to the tolerant reader."""
    start = text.find("<")
    body = text[start:] if start >= 0 else ""
    root: ET.Element | None
    try:
        # The DOCTYPE names a SYSTEM DTD; expat does not fetch it, so this stays offline.
        root = ET.fromstring(body)
    except ET.ParseError as error:
        out.warnings.append(f"truncated or malformed XML ({error}): read with the tolerant reader")
        root = _tolerant_xml(body)
    if root is None:
        return
    if root.tag != "nvidia_smi_log":
        found = root.find(".//nvidia_smi_log")
        root = found if found is not None else root
    driver = _xml_text(root, "driver_version")
    if driver:
        out.add("nvidia_smi.driver_version", driver)
    cuda = _xml_text(root, "cuda_version")
    if cuda:
        out.add("nvidia_smi.cuda_version", cuda)
    gpus = root.findall("gpu")
    attached = _to_int(_xml_text(root, "attached_gpus"))
    if attached is not None:
        out.add("nvidia_smi.gpu_count", attached, source="attached")
    elif gpus:
        out.add("nvidia_smi.gpu_count", len(gpus), source="blocks")
    for index, element in enumerate(gpus):
        out.gpu(_xml_gpu(element, index))


# --- CSV queries -------------------------------------------------------------------------------

# fmt: off
_CSV_KNOWN = frozenset({
    "index", "name", "gpu_name", "pci.bus_id", "gpu_bus_id", "uuid", "gpu_uuid", "serial",
    "gpu_serial", "pid", "process_name", "used_gpu_memory", "used_memory", "driver_version",
    "count", "timestamp", "pstate", "temperature.gpu", "utilization.gpu", "memory.used",
    "memory.total", "memory.free", "power.draw", "fan.speed", "compute_mode", "persistence_mode",
})
_CSV_PREFIXES = (
    "memory.", "ecc.", "pci.", "temperature.", "power.", "clocks", "utilization.",
    "retired_pages.", "remapped_rows.", "fan.", "pcie.", "mig.", "enforced.", "inforom.",
)
# fmt: on
_CSV_UNIT_RE = re.compile(r"^(?P<name>[\w.]+)(?:\s*\[(?P<unit>[^\]]*)\])?$")
_CSV_ALIASES = {
    "gpu_name": "name",
    "gpu_bus_id": "pci.bus_id",
    "gpu_uuid": "uuid",
    "gpu_serial": "serial",
    "used_memory": "used_gpu_memory",
}
_CSV_FLAGS = {
    "retired_pages.pending": "retired_pages_pending",
    "remapped_rows.pending": "remapped_rows_pending",
    "remapped_rows.failure": "remapping_failure",
    "retired_pages.dbe": "retired_pages_dbe",
    "retired_pages.double_bit.count": "retired_pages_dbe",
    "remapped_rows.uncorrectable": "remapped_rows_uncorrectable",
}


def _csv_header(line: str) -> list[str] | None:
    """Field names of a `--format=csv` header (units dropped), or None when not a header."""
    names: list[str] = []
    for cell in line.split(","):
        found = _CSV_UNIT_RE.match(cell.strip())
        if not found:
            return None
        names.append(found.group("name"))
    known = sum(1 for n in names if n in _CSV_KNOWN or n.startswith(_CSV_PREFIXES))
    return names if names and known >= max(1, len(names) // 2) else None


def _csv_rows(lines: list[tuple[int, str]]) -> list[tuple[int, str, list[str]]]:
    """Non-empty lines split as CSV with the `, ` separator nvidia-smi writes."""
    rows = []
    for lineno, line in lines:
        if line.strip():
            cells = next(csv.reader([line], skipinitialspace=True), [])
            rows.append((lineno, line, [c.strip() for c in cells]))
    return rows


def _csv_gpu_row(row: dict[str, str], lineno: int, line: str, ordinal: int) -> _Gpu:
    """One `--query-gpu` row."""
    index_text = row.get("index")
    index = int(index_text) if index_text and _INT_RE.match(index_text) else ordinal
    gpu = _Gpu(
        index=index,
        pci=normalize_pci(row.get("pci.bus_id", "")),
        uuid=row.get("uuid"),
        serial=row.get("serial"),
    )
    name = row.get("name")
    if name and not name.startswith("["):
        gpu.name = (name, lineno, line)
    used = _to_int(row.get("memory.used"))
    if used is not None:
        gpu.mem_used = (used, lineno, line)
    gpu.mem_total = _to_int(row.get("memory.total"))
    for scope in ("volatile", "aggregate"):
        count = _to_int(row.get(f"ecc.errors.uncorrected.{scope}.total"))
        if count is not None:
            gpu.ecc[scope] = (count, lineno, line)
    for column, suffix in _CSV_FLAGS.items():
        raw = row.get(column)
        parsed = _to_int(raw) if suffix.endswith(("_dbe", "_uncorrectable")) else _to_bool(raw)
        if parsed is not None:
            gpu.flags[suffix] = (parsed, lineno, line)
    for column, value in row.items():
        sentinel = _sentinel(value)
        if sentinel:
            gpu.errs.append((column, column, sentinel, lineno, line))
            if sentinel == "GPU requires reset":
                gpu.flags["reset_required"] = (True, lineno, line)
    return gpu


def _csv_process_row(row: dict[str, str], lineno: int, line: str, out: _Out) -> None:
    """One `--query-compute-apps` row."""
    used_text = row.get("used_gpu_memory")
    used = _to_int(used_text)
    index_text = row.get("index") or row.get("gpu_index")
    out.process(
        _Process(
            name=row.get("process_name", ""),
            pid=_to_int(row.get("pid")),
            lineno=lineno,
            text=line,
            used_mib=used,
            used_text=None if used is not None else used_text,
            index=int(index_text) if index_text and _INT_RE.match(index_text) else None,
            pci=normalize_pci(row.get("pci.bus_id", "")),
            uuid=row.get("uuid"),
        )
    )


def _csv_noheader(rows: list[tuple[int, str, list[str]]], out: _Out) -> None:
    """`--format=csv,noheader`: the columns are unknown, so only sentinels and the count."""
    out.warnings.append("CSV without a header: column names unknown, read the error cells only")
    firsts = [cells[0] for _, _, cells in rows]
    indexed = firsts == [str(i) for i in range(len(rows))]
    for ordinal, (lineno, line, cells) in enumerate(rows):
        index = ordinal if indexed else None
        for column, value in enumerate(cells, start=1):
            sentinel = _sentinel(value)
            if sentinel:
                out.add(
                    "gpu.err_field",
                    f"column{column}",
                    lineno,
                    line,
                    index=index,
                    label=f"column {column}",
                    sentinel=sentinel,
                )
    if indexed:
        out.add("nvidia_smi.gpu_count", len(rows), rows[0][0], rows[0][1], source="csv-noheader")


def _parse_csv(lines: list[tuple[int, str]], out: _Out) -> None:
    """`--query-gpu` / `--query-compute-apps` with `--format=csv[,noheader][,nounits]`."""
    rows = _csv_rows(lines)
    if not rows:
        return
    header = _csv_header(rows[0][1])
    if header is None:
        _csv_noheader(rows, out)
        return
    names = [_CSV_ALIASES.get(n, n) for n in header]
    gpus: list[_Gpu] = []
    for lineno, line, cells in rows[1:]:
        if _csv_header(line) is not None:
            continue
        row = dict(zip(names, cells, strict=False))
        if len(cells) < len(names):
            out.warnings.append(f"line {lineno}: {len(cells)} of {len(names)} CSV cells")
        if "pid" in row:
            _csv_process_row(row, lineno, line, out)
            continue
        if "driver_version" in row and not any(f.key.endswith("driver_version") for f in out.facts):
            out.add("nvidia_smi.driver_version", row["driver_version"], lineno, line)
        gpus.append(_csv_gpu_row(row, lineno, line, len(gpus)))
    if gpus:
        out.add("nvidia_smi.gpu_count", len(gpus), rows[1][0], rows[1][1], source="csv")
    for gpu in gpus:
        out.gpu(gpu)


# --- -L and topo -m ------------------------------------------------------------------------------

_TABLE_HEADER_RE = re.compile(r"^\|\s*GPU\s+Name\b")
_LIST_GPU_RE = re.compile(r"^GPU (?P<index>\d+): (?P<name>.+?) \(UUID: (?P<uuid>GPU-[^)\s]+)\)")
_LIST_MIG_RE = re.compile(
    r"^\s+MIG\s+(?P<profile>\S+)\s+Device\s+(?P<dev>\d+): \(UUID: (?P<uuid>MIG-[^)\s]+)\)"
)
_TOPO_HEADER_RE = re.compile(r"^\s*GPU0(?:\t|\s{2,}).*(?:CPU Affinity|NUMA Affinity|GPU1|NIC0)")
_TOPO_ROW_RE = re.compile(r"^(?P<kind>GPU|NIC)(?P<n>\d+)\t")
_LINK_RANK = {"SYS": 5, "NODE": 4, "PHB": 3, "PXB": 2, "PIX": 1}


def _parse_list(lines: list[tuple[int, str]], out: _Out) -> None:
    """`nvidia-smi -L`: one line per GPU, indented MIG children."""
    count = 0
    parent: int | None = None
    first: tuple[int, str] | None = None
    for lineno, line in lines:
        gpu = _LIST_GPU_RE.match(line.strip())
        if gpu:
            count += 1
            parent = int(gpu.group("index"))
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


def _parse_topo(lines: list[tuple[int, str]], out: _Out) -> None:
    """`nvidia-smi topo -m`: count GPUs and NICs, and name the weakest GPU-GPU link."""
    columns: list[str] = []
    gpus: list[tuple[int, str]] = []
    nics = 0
    worst: tuple[int, str, str, int, str] | None = None
    for lineno, line in lines:
        if not columns and _TOPO_HEADER_RE.match(line):
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


# --- detection -----------------------------------------------------------------------------------

_FAILURE_SNIFF = tuple(pattern for pattern, _ in _FAILURES)
_TABLE_LINE_RE = re.compile(r"^\s*[|+]")
_CSV_NUMBER_RE = re.compile(r"^-?\d+(?:\.\d+)?(?: ?(?:MiB|%|W|MHz|C))?$")
_SNIFF_TOP = 8
"""How many non-blank lines may come before the banner (a date line, a shell prompt, ```)."""


def _nonblank(text: str, limit: int | None = None) -> list[str]:
    """Cleaned non-blank lines, at most `limit`."""
    kept: list[str] = []
    for raw in text.split("\n"):
        line = clean_line(raw).strip()
        if line:
            kept.append(line)
            if limit is not None and len(kept) >= limit:
                break
    return kept


def _sniff_lines(lines: list[str]) -> float:
    """Score cleaned non-blank lines (at most 64 KiB of them)."""
    if not lines:
        return 0.0
    top = lines[:_SNIFF_TOP]
    joined = "\n".join(top)
    if "NVSMI LOG" in joined or "<nvidia_smi_log" in joined:
        return 1.0
    if any(_BANNER_RE.search(line) for line in top):
        # Job scripts often print the table before the training log: only a mostly-table
        # input is certain to be nvidia-smi output.
        share = sum(1 for line in lines if _TABLE_LINE_RE.match(line)) / len(lines)
        return 1.0 if share >= 0.6 else 0.45
    if any(p.search(line) for p in _FAILURE_SNIFF for line in top[:3]):
        return 1.0 if len(lines) <= 6 else 0.45
    if _looks_like_query(lines[:_SNIFF_TOP]):
        return 0.9
    if _LIST_GPU_RE.match(lines[0]):
        return 0.95
    if any(_TOPO_HEADER_RE.match(line) for line in top[:2]):
        return 0.95
    return _sniff_csv(lines)


def _sniff_csv(lines: list[str]) -> float:
    """CSV query output: a header of nvidia-smi fields, or uniform rows with `[N/A]` cells."""
    if _csv_header(lines[0]) is not None and "," in lines[0]:
        return 0.9
    widths = {line.count(",") for line in lines[:50]}
    if len(widths) != 1 or not widths.pop():
        return 0.0
    if any(
        _sentinel(cell) or cell.strip() in ("[N/A]", "[Not Supported]")
        for line in lines[:50]
        for cell in line.split(",")
    ):
        return 0.6
    numeric = all(
        _CSV_NUMBER_RE.match(cell.strip()) for line in lines[:50] for cell in line.split(",")
    )
    return 0.3 if numeric and len(lines) > 1 else 0.0


def _looks_like_query(lines: list[str]) -> bool:
    """A `-q` block without its banner: `GPU 0000...` at column 0, then `    Product Name`."""
    header = False
    for line in lines:
        if _Q_GPU_RE.match(line):
            header = True
        elif header and line.strip().startswith(("Product Name", "Product Brand")):
            return True
    return False


def _detect(lines: list[tuple[int, str]]) -> set[str]:
    """Which nvidia-smi outputs this input holds (a file may concatenate several)."""
    found: set[str] = set()
    texts = [line for _, line in lines]
    stripped = [t.strip() for t in texts if t.strip()]
    # Each per-line test is gated by a literal its regex needs, looked for in the whole text.
    whole = "\n".join(texts)
    if ("NVIDIA-SMI" in whole and any(_BANNER_RE.search(t) for t in texts)) or (
        "Name" in whole and any(_TABLE_HEADER_RE.match(t) for t in stripped)
    ):
        found.add("table")
    if "NVSMI LOG" in whole or ("Product " in whole and _looks_like_query(texts)):
        found.add("query")
    if "<nvidia_smi_log" in whole:
        found.add("xml")
    if "(UUID: GPU-" in whole and any(_LIST_GPU_RE.match(t) for t in stripped):
        found.add("list")
    if "GPU0" in whole and any(_TOPO_HEADER_RE.match(t) for t in texts):
        found.add("topo")
    if not found and stripped and _sniff_csv(stripped) >= 0.5:
        found.add("csv")
    return found


class NvidiaSmiParser(DocumentParser):
    """Every nvidia-smi output a user is likely to paste, read into per-GPU facts."""

    kind = InputKind.NVIDIA_SMI
    name = "nvidia-smi"
    filenames = ("nvidia-smi*", "nvidia_smi*", "*nvsmi*", "smi*.txt", "smi*.xml", "gpu*.csv")

    @staticmethod
    def sniff(head: str) -> float:
        """1.0 for the banner, NVSMI LOG, <nvidia_smi_log> or a failure line on its own."""
        return _sniff_lines(_nonblank(head, 2000))

    def parse(self, text: str, path: str) -> DocumentResult:
        """Read whichever nvidia-smi outputs the input holds; never raises on odd input."""
        out = _Out(path)
        lines = [(n, clean_line(raw)) for n, raw in enumerate(text.split("\n"), start=1)]
        _parse_failures(text, lines, out)
        kinds = _detect(lines)
        if "xml" in kinds:
            _parse_xml(text, out)
        if "query" in kinds:
            _parse_query(lines, out)
        if "table" in kinds:
            _parse_table(lines, out)
        if "list" in kinds:
            _parse_list(lines, out)
        if "topo" in kinds:
            _parse_topo(lines, out)
        if "csv" in kinds:
            _parse_csv(lines, out)
        if not out.facts and text.strip():
            out.warnings.append("no nvidia-smi output recognised")
        return DocumentResult(facts=tuple(out.facts), warnings=tuple(out.warnings))


__all__ = ["NvidiaSmiParser"]
