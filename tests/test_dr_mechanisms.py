"""Mechanisms learned from batch 2026-12-07-dr's misses, each tested on lines written for the
test, not taken from the cases: Omniverse Kit's form of a Vulkan status and its GPU-device
failures (a host without NVIDIA's graphics libraries), and the GSP firmware's Xid 119/120 read as
the driver's unless a fatal hardware Xid stands beside it (NVIDIA's catalog: INVESTIGATE_SW)."""

from __future__ import annotations

from pathlib import Path

from crashlens.pipeline import analyze

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "2025-04-02 08:00:01 [Error] [carb.graphics-vulkan.plugin] VkResult:"
        " ERROR_INCOMPATIBLE_DRIVER",
        "driver-vulkan-driver-unavailable",
    ),
    (
        "[Error] [carb.graphics-vulkan.plugin] VkResult: ERROR_INITIALIZATION_FAILED",
        "driver-vulkan-driver-unavailable",
    ),
    (
        "[Error] [omni.gpu_foundation_factory.plugin] Failed to create any GPU devices, including"
        " an attempt with compatibility mode.",
        "driver-renderer-graphics-stack-unusable",
    ),
    (
        "[Error] [omni.physx.plugin] CUDA libs are present, but no suitable CUDA GPU was found!",
        "driver-renderer-graphics-stack-unusable",
    ),
    (
        "[Mon Mar  3 10:20:30 2025] NVRM: Xid (PCI:0000:c1:00): 120, pid=4411, name=python3, GSP"
        " task timeout @ pc:0x4c8a1b0, task: 1",
        "driver-xid-119-120-gsp",
    ),
]

GSP = (
    "[Tue Jun 10 02:14:07 2025] NVRM: Xid (PCI:0000:18:00): 119, pid=9120, name=python, Timeout"
    " after 6s of waiting for RPC response from GPU1 GSP! Expected function 76 (GSP_RM_CONTROL)"
    " (0x20800a4c 0x4).\n"
)
NVLINK = (
    "[Tue Jun 10 02:13:51 2025] NVRM: Xid (PCI:0000:18:00): 74, pid=9120, name=python, NVLink:"
    " fatal error detected on link 3(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)\n"
)


def _verdict(tmp_path: Path, dmesg: str) -> str:
    path = tmp_path / "dmesg.txt"
    path.write_text(dmesg, encoding="utf-8")
    return str(analyze([str(path)]).verdict)


def test_gsp_timeouts_alone_are_the_driver(tmp_path: Path) -> None:
    assert _verdict(tmp_path, GSP * 3) == "driver"


def test_gsp_timeouts_after_a_fatal_nvlink_error_are_the_hardware(tmp_path: Path) -> None:
    assert _verdict(tmp_path, NVLINK + GSP * 3) == "hardware"
