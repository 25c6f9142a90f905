"""PCI bus ids and GPU UUIDs: the regex fragments written once, and one normal form.

An Xid in dmesg joins its GPU in nvidia-smi only if both sides read the bus id the same way;
every parser builds its patterns from the fragments below and normalises with `normalize_pci`.
"""

from __future__ import annotations

import re

HEX = "[0-9A-Fa-f]"
_BUS_DEVICE = rf"{HEX}{{2}}:{HEX}{{2}}"

PCI_ID = rf"{HEX}{{1,8}}:{_BUS_DEVICE}(?:\.[0-7])?"
"""A bus id with its domain, the function optional: `00000000:3B:00.0` (nvidia-smi, 8-digit
domain), `0000:3b:00` (NVRM drops the function), `8ED0:00:00.0` (Azure)."""
KERNEL_PCI_NAME = rf"{HEX}{{4}}:{_BUS_DEVICE}\.[0-7]"
"""What Linux's `pci_name()` prints (AER, pcieport, pciehp): always `DDDD:BB:DD.F`."""
PCI_ID_CHARS = r"[0-9A-Fa-f:.]+"
"""The characters a bus id is written with, for capturing a possibly damaged id in a fixed
place (`NVRM: Xid (PCI:0000:3b:00): 79`); `pci_label` makes sense of the capture."""
GPU_UUID = rf"GPU-{HEX}{{8}}(?:-{HEX}{{4}}){{3}}-{HEX}{{12}}"
"""A GPU UUID as nvidia-smi and NVRM print it (`GPU-5b1f0e45-...`)."""
GPU_UUID_CHARS = r"GPU-[0-9a-fA-F-]+"
"""A GPU UUID captured in a fixed place, possibly cut short (a truncated line)."""

_PCI_RE = re.compile(
    rf"(?:(?P<domain>{HEX}{{1,8}}):)?(?P<bus>{HEX}{{2}}):(?P<dev>{HEX}{{2}})(?:\.(?P<fn>[0-7]))?"
)


def normalize_pci(text: str) -> str | None:
    """Normalise a PCI bus id to `DDDD:BB:DD.F`, upper-case hex as nvidia-smi prints it.

    nvidia-smi prints an 8-digit domain (`00000000:3B:00.0`), the kernel a 4-digit one in lower
    case (`0000:3b:00.0`) or none with no function (`PCI:0000:3b:00`); Azure VMs have non-zero
    domains (`00008ED0` -> `8ED0`). Domains wider than 4 significant digits are kept whole. A
    missing function becomes `.0`. None when `text` holds no bus id.
    """
    found = _PCI_RE.search(text)
    if not found:
        return None
    domain = (found.group("domain") or "0").lstrip("0").upper().rjust(4, "0")
    fn = found.group("fn") or "0"
    return f"{domain}:{found.group('bus').upper()}:{found.group('dev').upper()}.{fn}"


def pci_label(text: str) -> str:
    """The normalised bus id, or the stripped text when it holds none (kept for display)."""
    return normalize_pci(text) or text.strip()
