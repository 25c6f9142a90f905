"""Mechanisms learned from batch 2026-12-07-dv's miss, tested on lines written for the test: the
NVIDIA kernel module cannot be built because the running kernel's headers are missing, as
NVIDIA's .run installer and DKMS say it."""

from __future__ import annotations

from pathlib import Path

from crashlens.pipeline import analyze

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "ERROR: Unable to find the kernel source tree for the currently running kernel.",
        "driver-module-not-built-for-kernel",
    ),
    (
        "Error! Your kernel headers for kernel 5.15.0-125-generic cannot be found at"
        " /lib/modules/5.15.0-125-generic/build or /lib/modules/5.15.0-125-generic/source.",
        "driver-module-not-built-for-kernel",
    ),
]


def test_the_installers_failure_after_a_reboot_is_the_driver(tmp_path: Path) -> None:
    log = (
        "Verifying archive integrity... OK\n"
        "Uncompressing NVIDIA Accelerated Graphics Driver for Linux-x86_64 550.127.05\n"
        "ERROR: Unable to find the kernel source tree for the currently running kernel.  Please\n"
        "       make sure you have installed the kernel source files for your kernel.\n"
        "ERROR: Installation has failed.  Please see the file '/var/log/nvidia-installer.log'\n"
        "       for details.\n"
    )
    path = tmp_path / "install.log"
    path.write_text(log, encoding="utf-8")
    assert str(analyze([str(path)]).verdict) == "driver"
