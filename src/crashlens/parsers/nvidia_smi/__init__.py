"""nvidia-smi outputs: the default table, `-q`, `-q -x`, CSV queries, `-L`, `topo -m`, failures.

Every variant is read into the same per-GPU record (`gpu.Gpu`) and emitted the same way
(`gpu.FactEmitter`), so rules see one vocabulary whatever command the user ran. One module per
format: `failures`, `table`, `query` (-q), `xml` (-q -x), `csv`, `listing` (-L, topo -m); this
one tells which formats an input holds and runs their readers.

GPUs are identified by `index` (the table's GPU column, the CSV `index` field, or the order of
the blocks in `-q` / XML, which nvidia-smi prints in the same PCI order), `pci` (normalised,
see `normalize_pci`), `uuid` and `serial`.

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
* `gpu.process`: str process name [pid, index, pci, uuid, used_mib, used_text, type, gi, ci,
  share_percent (its memory as a share of the GPU's total, 0..100, when the input gives both)]
* `gpu.lost`: bool `Unable to determine the device handle for GPU...` [pci]

Table facts carry the table line they came from; `-q` and CSV facts their line; XML facts have
no line (ElementTree keeps none).
"""

from __future__ import annotations

import re

from crashlens.model import InputKind
from crashlens.parsers.base import DocumentParser, DocumentResult, clean_line
from crashlens.parsers.nvidia_smi.csv import parse_csv, sniff_csv
from crashlens.parsers.nvidia_smi.failures import FAILURES, parse_failures
from crashlens.parsers.nvidia_smi.gpu import FactEmitter
from crashlens.parsers.nvidia_smi.listing import LIST_GPU_RE, TOPO_HEADER_RE, parse_list, parse_topo
from crashlens.parsers.nvidia_smi.query import looks_like_query, parse_query, section_excerpt
from crashlens.parsers.nvidia_smi.table import BANNER_RE, TABLE_HEADER_RE, parse_table
from crashlens.parsers.nvidia_smi.xml import parse_query_xml

_FAILURE_SNIFF = tuple(pattern for pattern, _ in FAILURES)
_TABLE_LINE_RE = re.compile(r"^\s*[|+]")
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
    if any(BANNER_RE.search(line) for line in top):
        # Job scripts often print the table before the training log: only a mostly-table
        # input is certain to be nvidia-smi output.
        share = sum(1 for line in lines if _TABLE_LINE_RE.match(line)) / len(lines)
        return 1.0 if share >= 0.6 else 0.45
    if any(p.search(line) for p in _FAILURE_SNIFF for line in top[:3]):
        return 1.0 if len(lines) <= 6 else 0.45
    if looks_like_query(lines[:_SNIFF_TOP]):
        return 0.9
    if section_excerpt(lines[:_SNIFF_TOP]):
        return 0.85
    if any(TABLE_HEADER_RE.match(line) for line in top):
        # the table pasted without its banner (a cut-down paste in an issue): certain only
        # when the input is mostly table lines
        share = sum(1 for line in lines if _TABLE_LINE_RE.match(line)) / len(lines)
        return 0.85 if share >= 0.6 else 0.3
    if LIST_GPU_RE.match(lines[0]):
        return 0.95
    if any(TOPO_HEADER_RE.match(line) for line in top[:2]):
        return 0.95
    return sniff_csv(lines)


def _detect(lines: list[tuple[int, str]]) -> set[str]:
    """Which nvidia-smi outputs this input holds (a file may concatenate several)."""
    found: set[str] = set()
    texts = [line for _, line in lines]
    stripped = [t.strip() for t in texts if t.strip()]
    # Each per-line test is gated by a literal its regex needs, looked for in the whole text.
    whole = "\n".join(texts)
    if ("NVIDIA-SMI" in whole and any(BANNER_RE.search(t) for t in texts)) or (
        "Name" in whole and any(TABLE_HEADER_RE.match(t) for t in stripped)
    ):
        found.add("table")
    excerpt = section_excerpt([t for t in texts if t.strip()][:_SNIFF_TOP])
    if "NVSMI LOG" in whole or ("Product " in whole and looks_like_query(texts)) or excerpt:
        found.add("query")
    if "<nvidia_smi_log" in whole:
        found.add("xml")
    if "(UUID: GPU-" in whole and any(LIST_GPU_RE.match(t) for t in stripped):
        found.add("list")
    if "GPU0" in whole and any(TOPO_HEADER_RE.match(t) for t in texts):
        found.add("topo")
    if not found and stripped and sniff_csv(stripped) >= 0.5:
        found.add("csv")
    return found


class NvidiaSmiParser(DocumentParser):
    """Every nvidia-smi output a user is likely to paste, read into per-GPU facts."""

    kind = InputKind.NVIDIA_SMI
    name = "nvidia-smi"
    filenames = ("nvidia-smi*", "nvidia_smi*", "*nvsmi*", "smi*.txt", "smi*.xml", "gpu*.csv")

    @staticmethod
    def sniff(head: str) -> float:
        """1.0 for the banner, NVSMI LOG, <nvidia_smi_log> or a failure line on its own; 0.85
        for a `-q` health section or the table pasted without their headers."""
        return _sniff_lines(_nonblank(head, 2000))

    def parse(self, text: str, path: str) -> DocumentResult:
        """Read whichever nvidia-smi outputs the input holds; never raises on odd input."""
        out = FactEmitter(path)
        lines = [(n, clean_line(raw)) for n, raw in enumerate(text.split("\n"), start=1)]
        parse_failures(text, lines, out)
        kinds = _detect(lines)
        if "xml" in kinds:
            parse_query_xml(text, out)
        if "query" in kinds:
            parse_query(lines, out)
        if "table" in kinds:
            parse_table(lines, out)
        if "list" in kinds:
            parse_list(lines, out)
        if "topo" in kinds:
            parse_topo(lines, out)
        if "csv" in kinds:
            parse_csv(lines, out)
        if not out.facts and text.strip():
            out.warnings.append("no nvidia-smi output recognised")
        return DocumentResult(facts=tuple(out.facts), warnings=tuple(out.warnings))


__all__ = ["NvidiaSmiParser"]
