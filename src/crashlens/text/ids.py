"""PCI bus ids, written one way everywhere so an Xid in dmesg joins its GPU in nvidia-smi."""

from __future__ import annotations

import re

_PCI_RE = re.compile(
    r"(?:(?P<domain>[0-9A-Fa-f]{1,8}):)?(?P<bus>[0-9A-Fa-f]{2}):(?P<dev>[0-9A-Fa-f]{2})"
    r"(?:\.(?P<fn>[0-7]))?"
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
