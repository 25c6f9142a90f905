"""text.ids: the PCI id and GPU UUID fragments, and the one normal form of a bus id."""

from __future__ import annotations

import re

import pytest

from crashlens.text.ids import (
    GPU_UUID,
    GPU_UUID_CHARS,
    KERNEL_PCI_NAME,
    PCI_ID,
    PCI_ID_CHARS,
    normalize_pci,
    pci_label,
)


@pytest.mark.parametrize(
    ("text", "pci_id", "kernel_name"),
    [
        ("00000000:3B:00.0", True, False),  # nvidia-smi: 8-digit domain
        ("0000:3b:00.0", True, True),  # the kernel's pci_name()
        ("0000:3b:00", True, False),  # NVRM drops the function
        ("8ED0:00:00.0", True, True),  # Azure: a non-zero domain
        ("3b:00.0", False, False),  # no domain
        ("0000:3b:0.0", False, False),  # one-digit device
    ],
)
def test_pci_fragments(text: str, pci_id: bool, kernel_name: bool) -> None:
    assert (re.fullmatch(PCI_ID, text) is not None) is pci_id
    assert (re.fullmatch(KERNEL_PCI_NAME, text) is not None) is kernel_name
    assert re.fullmatch(PCI_ID_CHARS, text) is not None


def test_uuid_fragments() -> None:
    uuid = "GPU-509665ad-b600-ac93-3616-d754b23d636d"
    assert re.fullmatch(GPU_UUID, uuid)
    assert re.fullmatch(GPU_UUID, uuid[:-4]) is None  # cut short
    assert re.fullmatch(GPU_UUID_CHARS, uuid[:-4])


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("00000000:3B:00.0", "0000:3B:00.0"),
        ("PCI:0000:3b:00", "0000:3B:00.0"),
        ("00008ED0:00:00.0", "8ED0:00:00.0"),
        ("no bus id here", None),
    ],
)
def test_normalize_pci(text: str, normal: str | None) -> None:
    assert normalize_pci(text) == normal
    assert pci_label(text) == (normal or text.strip())
