"""Mechanisms learned from batch 2026-12-07-dq's misses, each tested on lines written for the
test, not taken from the cases: nvidia-docker 1.x refusing an image newer than the driver, an
Omniverse app refusing the installed driver, a simulator's renderer finding no usable NVIDIA
graphics stack (SAPIEN, MuJoCo's EGL, CUDA-Vulkan interop), the device memory of PhysX, Gaudi's
graph workspace and Tenstorrent's allocator running out, Gaudi's device plugin finding no
devices, and Hugging Face datasets failing to reach a URL."""

from __future__ import annotations

from pathlib import Path

from crashlens.pipeline import analyze

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "nvidia-docker | 2018/06/11 09:02:51 Error: unsupported CUDA version: driver 8.0 < image"
        " 10.0.130",
        "driver-nvidia-docker-cuda-version-unsupported",
    ),
    (
        "2025-02-03T10:11:12Z [20,004ms] [Error] [gpu.foundation.plugin] The currently installed"
        " NVIDIA graphics driver is unsupported or has known issues. Reason for failure: The"
        " minimum Omniverse RTX requirement on Linux Installed driver: 470.1",
        "driver-omniverse-driver-unsupported",
    ),
    (
        "Some required Vulkan extension is not present. You may not use the renderer to render,"
        " however, CPU resources will be still available.",
        "driver-renderer-graphics-stack-unusable",
    ),
    (
        "RuntimeError: The MUJOCO_EGL_DEVICE_ID environment variable must be an integer between 0"
        " and 0 (inclusive), got 2.",
        "driver-renderer-graphics-stack-unusable",
    ),
    (
        "[Error] [carb.gym.plugin] cudaImportExternalMemory failed on segmentationImage buffer"
        " with error 999",
        "driver-renderer-graphics-stack-unusable",
    ),
    (
        "PxgCudaDeviceMemoryAllocator fail to allocate memory 402653184 bytes!! Result = 2",
        "gpu-oom-physx-device-allocator-failed",
    ),
    (
        "RuntimeError: FATAL ERROR :: MODULE:SYNHELPER workspace Allocation of size ::9663676416"
        " failed",
        "gpu-oom-habana-devmem-allocation-failed",
    ),
    (
        "TT_FATAL @ tt_metal/impl/allocator/bank_manager.cpp:141: Out of Memory: Not enough space"
        " to allocate 536870912 B DRAM buffer across 12 banks, where each bank needs to store"
        " 44740608 B",
        "gpu-oom-tenstorrent-buffer-allocation",
    ),
    (
        "E0603 11:40:02.019 main.go:61] failed detecting Habana's devices on the system: get device"
        " name: no habana devices on the system",
        "driver-habana-device-plugin-no-devices",
    ),
    (
        "ConnectionError: Couldn't reach https://raw.githubusercontent.com/example-org/corpora/"
        "main/loader.py",
        "network-datasets-couldnt-reach-url",
    ),
]


def test_physx_running_out_is_the_cause_of_the_illegal_access_after_it(tmp_path: Path) -> None:
    """PhysX goes on with the buffer it could not get, and the next kernel faults: the fault is
    this allocation's knock-on, not a hardware error."""
    log = tmp_path / "train.log"
    log.write_text(
        "Setting seed: 42\n"
        "PxgCudaDeviceMemoryAllocator fail to allocate memory 268435456 bytes!! Result = 2\n"
        "[Error] [carb.gym.plugin] Gym cuda error: an illegal memory access was encountered:"
        " ../../../source/plugins/carb/gym/impl/Gym/GymPhysX.cpp: 4210\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n",
        encoding="utf-8",
    )
    report = analyze([str(log)])
    assert str(report.verdict) == "gpu_oom", [(c.category, c.confidence) for c in report.causes]


def test_a_physx_allocation_failing_for_another_reason_is_not_memory(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        "PxgCudaDeviceMemoryAllocator fail to allocate memory 268435456 bytes!! Result = 999\n",
        encoding="utf-8",
    )
    report = analyze([str(log)])
    assert not any(
        item.rule == "gpu-oom-physx-device-allocator-failed"
        for cause in report.causes
        for item in cause.evidence
    )
