"""nvidia-smi failing as a whole (no driver, no devices, a version mismatch) or losing one GPU.

These are one-line messages in place of (or before) any other output, so they are read first
and whatever other format follows is read as usual.
"""

from __future__ import annotations

import re

from crashlens.parsers.nvidia_smi.gpu import FactEmitter
from crashlens.text.ids import normalize_pci
from crashlens.text.literals import Gate

FAILURES: tuple[tuple[re.Pattern[str], str], ...] = (
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
"""Failure messages and the `nvidia_smi.error` kind each one means, most specific first."""

_NVML_VERSION_RE = re.compile(r"^NVML library version:\s*(\S+)")
_DEVICE_HANDLE_RE = re.compile(r"^Unable to determine the device handle for (?:GPU|gpu)\s*(\S+)")
_BAD_FIELD_RE = re.compile(r'^Field "[^"]*" is not a valid field to query')


_FAILURE_GATE = Gate(*(rx for rx, _ in FAILURES), _BAD_FIELD_RE)
"""Derived from those patterns: most outputs hold none of them and skip the line loop."""


def parse_failures(text: str, lines: list[tuple[int, str]], out: FactEmitter) -> None:
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
        for pattern, kind in FAILURES:
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
