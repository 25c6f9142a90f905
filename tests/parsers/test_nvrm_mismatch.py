"""The NVIDIA driver's API-mismatch report, in the older wording and the newer one that names
the client program and its pid, its versions on the same line or on the NVRM lines below."""

from __future__ import annotations

from crashlens.model import Fact
from crashlens.parsers.base import collect_text
from crashlens.parsers.dmesg import KernelLogParser

PARSER = KernelLogParser()


def mismatches(text: str) -> list[Fact]:
    facts = collect_text(PARSER, text, "kern.log")[1]
    return [f for f in facts if f.key == "kernel.nvrm_mismatch"]


def test_the_newer_wording_with_the_versions_on_the_lines_below() -> None:
    (found,) = mismatches(
        "[  812.334102] NVRM: API mismatch: the client 'nvidia-smi' (pid 48211)\n"
        "[  812.334105] NVRM: has the version 550.90.07, but\n"
        "[  812.334106] NVRM: this kernel module has the version 535.183.01.  Please\n"
        "[  812.334107] NVRM: make sure that this kernel module and all NVIDIA driver\n"
        "[  812.334108] NVRM: components have the same version.\n"
    )
    assert found.attr("client_version") == "550.90.07"
    assert found.attr("module_version") == "535.183.01"
    assert found.attr("client_process") == "nvidia-smi"
    assert found.lineno == 1 and "API mismatch" in found.text


def test_the_newer_wording_with_the_client_version_on_its_first_line() -> None:
    (found,) = mismatches(
        "Mar 03 09:12:44 gpu07 kernel: NVRM: API mismatch: the client 'python3' (pid 991) "
        "has the version 560.35.03,\n"
        "Mar 03 09:12:44 gpu07 kernel: NVRM: but this kernel module has the version 555.42.06\n"
    )
    assert (found.attr("client_version"), found.attr("module_version")) == (
        "560.35.03",
        "555.42.06",
    )
    assert found.attr("client_process") == "python3"


def test_the_newer_wording_on_one_line_and_without_a_pid() -> None:
    (found,) = mismatches(
        "NVRM: API mismatch: the client 'Xorg' has the version 470.256.02, but this kernel "
        "module has the version 470.239.06.  Please make sure that this kernel module and all\n"
    )
    assert found.value == "client 470.256.02, kernel module 470.239.06"
    assert found.attr("client_process") == "Xorg"


def test_the_older_wording_still_reads() -> None:
    (found,) = mismatches(
        "[ 5.1] NVRM: API mismatch: the client has the version 418.87.01, but\n"
        "[ 5.1] NVRM: this kernel module has the version 418.67.  Please\n"
    )
    assert found.attr("client_version") == "418.87.01"
    assert found.attr("module_version") == "418.67"
    assert found.attr("client_process") is None


def test_a_report_cut_off_before_its_versions_still_counts() -> None:
    (found,) = mismatches("[ 9.0] NVRM: API mismatch: the client 'nvidia-smi' (pid 7)\n")
    assert found.attr("client_version") is None and found.attr("module_version") is None
    assert found.value == "client unknown, kernel module unknown"


def test_a_module_version_far_below_the_report_is_not_its_own() -> None:
    filler = "".join(f"[ 9.{i}] usb 1-1: new device {i}\n" for i in range(40))
    (found,) = mismatches(
        "[ 9.0] NVRM: API mismatch: the client 'nvidia-smi' (pid 7)\n"
        + filler
        + "[ 9.9] NVRM: this kernel module has the version 535.1.  Please\n"
    )
    assert found.attr("module_version") is None
