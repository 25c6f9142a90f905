"""`--query-gpu` / `--query-compute-apps` with `--format=csv[,noheader][,nounits]`.

The header names the fields (`memory.used [MiB]`); without it only error sentinels and the row
count can be read.
"""

from __future__ import annotations

import csv
import re

from crashlens.parsers.nvidia_smi.gpu import INT_RE, FactEmitter, Gpu, GpuProcess, error_sentinel
from crashlens.text.ids import normalize_pci
from crashlens.text.values import bounded_int, int_with_unit, yes_no

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
_CSV_NUMBER_RE = re.compile(r"^-?\d+(?:\.\d+)?(?: ?(?:MiB|%|W|MHz|C))?$")
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


def csv_header(line: str) -> list[str] | None:
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
            try:
                cells = next(csv.reader([line], skipinitialspace=True), [])
            except csv.Error:  # a field over csv's size limit, a NUL: this row is left out
                continue
            rows.append((lineno, line, [c.strip() for c in cells]))
    return rows


def _csv_gpu_row(row: dict[str, str], lineno: int, line: str, ordinal: int) -> Gpu:
    """One `--query-gpu` row."""
    index_text = row.get("index")
    number = bounded_int(index_text) if index_text and INT_RE.match(index_text) else None
    index = number if number is not None else ordinal
    gpu = Gpu(
        index=index,
        pci=normalize_pci(row.get("pci.bus_id", "")),
        uuid=row.get("uuid"),
        serial=row.get("serial"),
    )
    name = row.get("name")
    if name and not name.startswith("["):
        gpu.name = (name, lineno, line)
    used = int_with_unit(row.get("memory.used"))
    if used is not None:
        gpu.mem_used = (used, lineno, line)
    gpu.mem_total = int_with_unit(row.get("memory.total"))
    for scope in ("volatile", "aggregate"):
        count = int_with_unit(row.get(f"ecc.errors.uncorrected.{scope}.total"))
        if count is not None:
            gpu.ecc[scope] = (count, lineno, line)
    for column, suffix in _CSV_FLAGS.items():
        raw = row.get(column)
        parsed = int_with_unit(raw) if suffix.endswith(("_dbe", "_uncorrectable")) else yes_no(raw)
        if parsed is not None:
            gpu.flags[suffix] = (parsed, lineno, line)
    for column, value in row.items():
        sentinel = error_sentinel(value)
        if sentinel:
            gpu.errs.append((column, column, sentinel, lineno, line))
            if sentinel == "GPU requires reset":
                gpu.flags["reset_required"] = (True, lineno, line)
    return gpu


def _csv_process_row(row: dict[str, str], lineno: int, line: str, out: FactEmitter) -> None:
    """One `--query-compute-apps` row."""
    used_text = row.get("used_gpu_memory")
    used = int_with_unit(used_text)
    index_text = row.get("index") or row.get("gpu_index")
    out.process(
        GpuProcess(
            name=row.get("process_name", ""),
            pid=int_with_unit(row.get("pid")),
            lineno=lineno,
            text=line,
            used_mib=used,
            used_text=None if used is not None else used_text,
            index=bounded_int(index_text) if index_text and INT_RE.match(index_text) else None,
            pci=normalize_pci(row.get("pci.bus_id", "")),
            uuid=row.get("uuid"),
        )
    )


def _csv_noheader(rows: list[tuple[int, str, list[str]]], out: FactEmitter) -> None:
    """`--format=csv,noheader`: the columns are unknown, so only sentinels and the count."""
    out.warnings.append("CSV without a header: column names unknown, read the error cells only")
    firsts = [cells[0] for _, _, cells in rows]
    indexed = firsts == [str(i) for i in range(len(rows))]
    for ordinal, (lineno, line, cells) in enumerate(rows):
        index = ordinal if indexed else None
        for column, value in enumerate(cells, start=1):
            sentinel = error_sentinel(value)
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


def parse_csv(lines: list[tuple[int, str]], out: FactEmitter) -> None:
    """`--query-gpu` / `--query-compute-apps` with `--format=csv[,noheader][,nounits]`."""
    rows = _csv_rows(lines)
    if not rows:
        return
    header = csv_header(rows[0][1])
    if header is None:
        _csv_noheader(rows, out)
        return
    names = [_CSV_ALIASES.get(n, n) for n in header]
    gpus: list[Gpu] = []
    for lineno, line, cells in rows[1:]:
        if csv_header(line) is not None:
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


def sniff_csv(lines: list[str]) -> float:
    """CSV query output: a header of nvidia-smi fields, or uniform rows with `[N/A]` cells."""
    if csv_header(lines[0]) is not None and "," in lines[0]:
        return 0.9
    widths = {line.count(",") for line in lines[:50]}
    if len(widths) != 1 or not widths.pop():
        return 0.0
    if any(
        error_sentinel(cell) or cell.strip() in ("[N/A]", "[Not Supported]")
        for line in lines[:50]
        for cell in line.split(",")
    ):
        return 0.6
    numeric = all(
        _CSV_NUMBER_RE.match(cell.strip()) for line in lines[:50] for cell in line.split(",")
    )
    return 0.3 if numeric and len(lines) > 1 else 0.0
