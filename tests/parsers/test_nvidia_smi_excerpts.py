"""nvidia-smi output pasted in part, as issues and chat messages hold it (sections cut from the
real dumps of tests/data/samples, and excerpts written for the tests): a `-q` health
section without its GPU block's header (`nvidia-smi -q -d ECC`, `-d ROW_REMAPPER`, or a cut of
a longer dump), and the default table without its banner. Both are read as nvidia-smi and give
the same facts as the whole output; a training log that mentions the same words is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.inputs.detect import detect
from crashlens.model import InputKind
from crashlens.parsers.nvidia_smi import NvidiaSmiParser
from crashlens.pipeline import analyze

from conftest import sample_text

_ECC_SECTION = """\
    ECC Errors
        Volatile
            SRAM Correctable                  : 0
            SRAM Uncorrectable Parity         : 0
            SRAM Uncorrectable SEC-DED        : 0
            DRAM Correctable                  : 3
            DRAM Uncorrectable                : 2
        Aggregate
            SRAM Correctable                  : 0
            DRAM Uncorrectable                : 2
"""
_REMAP_SECTION = """\
$ nvidia-smi -q -d ROW_REMAPPER | tail -6
    Remapped Rows
        Correctable Error                 : 0
        Uncorrectable Error               : 1
        Pending                           : Yes
        Remapping Failure Occurred        : No
"""
_TABLE_WITHOUT_BANNER = """\
+-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|=========================================+========================+======================|
|   0  NVIDIA H100 80GB HBM3          On  |   00000000:19:00.0 Off |                    0 |
| N/A   31C    P0             70W /  700W |   79012MiB /  81559MiB |    100%      Default |
+-----------------------------------------+------------------------+----------------------+
"""


def _facts(text: str) -> dict[str, object]:
    result = NvidiaSmiParser().parse(text, "nvidia-smi.txt")
    return {item.key: item.value for item in result.facts}


def test_an_ecc_section_alone_is_read_as_nvidia_smi() -> None:
    assert detect(_ECC_SECTION, "gpu-ecc.txt").kind is InputKind.NVIDIA_SMI
    assert _facts(_ECC_SECTION)["gpu.ecc_uncorrected"] == 2


def test_a_row_remapper_section_after_its_command_is_read() -> None:
    facts = _facts(_REMAP_SECTION)
    assert facts["gpu.remapped_rows_pending"] is True
    assert facts["gpu.remapped_rows_uncorrectable"] == 1


def test_the_table_without_its_banner_is_read() -> None:
    assert detect(_TABLE_WITHOUT_BANNER, "paste.txt").kind is InputKind.NVIDIA_SMI
    assert _facts(_TABLE_WITHOUT_BANNER)["gpu.memory_used_mib"] == 79012


def test_pending_remapped_rows_pasted_alone_lead_to_hardware(tmp_path: Path) -> None:
    path = tmp_path / "remap.txt"
    path.write_text(_REMAP_SECTION, encoding="utf-8")
    report = analyze([str(path)])
    assert report.causes and report.causes[0].category.value == "hardware"


def test_a_log_that_names_the_sections_is_not_nvidia_smi() -> None:
    log = (
        "epoch 3 step 1200 loss 0.412\n"
        "checking ECC Errors\n"
        "volatile counters are zero\n"
        "epoch 3 step 1300 loss 0.409\n"
    )
    assert detect(log, "train.log").kind is not InputKind.NVIDIA_SMI


def _first_section(text: str, name: str) -> str:
    """`name`'s section of the first GPU block of a real `nvidia-smi -q` dump, as pasted alone:
    its header line and every line indented below it."""
    lines = text.split("\n")
    # the GPU block's own section (4 spaces in), not a MIG device's copy of it further in
    start = lines.index("    " + name)
    depth = 4
    end = start + 1
    while end < len(lines) and len(lines[end]) - len(lines[end].lstrip()) > depth:
        end += 1
    return "\n".join(lines[start:end]) + "\n"


def _first_gpu_facts(text: str, prefix: str) -> set[tuple[str, object]]:
    result = NvidiaSmiParser().parse(text, "nvidia-smi-q.txt")
    return {
        (item.key, item.value)
        for item in result.facts
        if item.key.startswith(prefix) and item.attr("index") in (0, None)
    }


@pytest.mark.parametrize(
    ("sample", "section", "prefix"),
    [
        ("nvidia_smi/q_535.154.05_8xh100.txt", "Remapped Rows", "gpu.remap"),
        ("nvidia_smi/q_460.32.03_8xa100.txt", "Remapped Rows", "gpu.remap"),
        ("nvidia_smi/q_460.32.03_8xa100.txt", "ECC Errors", "gpu.ecc"),
        ("nvidia_smi/q_590.48.01_h100_mig.txt", "ECC Errors", "gpu.ecc"),
    ],
)
def test_a_real_dumps_section_alone_reads_as_in_the_whole_dump(
    sample: str, section: str, prefix: str
) -> None:
    whole = sample_text(sample)
    excerpt = _first_section(whole, section)
    assert detect(excerpt, "paste.txt").kind is InputKind.NVIDIA_SMI
    read = _first_gpu_facts(excerpt, prefix)
    assert read  # the section's counters are read, not skipped
    assert read == _first_gpu_facts(whole, prefix)
