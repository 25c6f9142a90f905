"""Mechanisms learned from batch 2026-12-07-dt's misses, each tested on lines written for the
test, not taken from the cases: nvidia-smi's wording of NVML's OPERATING_SYSTEM code (the GPU
blocked by the OS: a cgroup rule, a sandbox), the kernel driver asking for NVIDIA's open kernel
modules (Blackwell and later), CUDA's missing-kernel-image error cut short, CUTLASS DSL kernels
compiled for a GPU older than sm_80, a program's own statement that the GPU lacks memory, and
the Kubernetes API's RBAC refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.pipeline import analyze

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "Failed to initialize NVML: GPU access blocked by the operating system",
        "permissions-gpu-device-access",
    ),
    (
        "Unable to determine the device handle for GPU 0000:65:00.0: The GPU control device has"
        " been blocked by the operating system/cgroups",
        "permissions-gpu-device-access",
    ),
    (
        "Mar 09 07:41:02 node-7 kernel: NVRM: installed in this system requires use of the NVIDIA"
        " open kernel modules.",
        "driver-nvrm-requires-open-kernel-modules",
    ),
    ("[gpu 1] CUDA Error: no kernel image is available", "driver-no-kernel-image"),
    ("  - Target Architecture: sm_70", "driver-cutlass-dsl-gpu-below-sm80"),
    (
        "ERROR    Not enough free VRAM memory to load the refiner, skipping generation.",
        "gpu-oom-program-says-not-enough-gpu-memory",
    ),
    (
        'Error from server (Forbidden): pytorchjobs.kubeflow.org is forbidden: User "bob" cannot'
        ' create resource "pytorchjobs" in API group "kubeflow.org" in the namespace "research"',
        "permissions-kubernetes-rbac-forbidden",
    ),
]


def _verdict(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(analyze([str(path)]).verdict)


def test_a_wrapped_open_module_request_is_a_driver_fault_not_a_healthy_boot(
    tmp_path: Path,
) -> None:
    dmesg = (
        "[    4.120000] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  575.57.08\n"
        "[    4.190001] NVRM: The NVIDIA GPU 0000:81:00.0 (PCI ID: 10de:2bb1)\n"
        "               NVRM: installed in this system requires use of the NVIDIA open kernel"
        " modules.\n"
        "[    4.190020] NVRM: GPU 0000:81:00.0: RmInitAdapter failed! (0x22:0x56:884)\n"
    )
    assert _verdict(tmp_path, "dmesg.txt", dmesg) == "driver"


def test_nvidia_smi_blocked_by_the_os_is_access_not_the_driver(tmp_path: Path) -> None:
    console = (
        "$ nvidia-smi\n"
        "Failed to initialize NVML: GPU access blocked by the operating system\n"
        "$ python3 -c 'import torch; print(torch.cuda.device_count())'\n"
        "0\n"
    )
    assert _verdict(tmp_path, "console.txt", console) == "permissions"


@pytest.mark.parametrize(
    "line",
    [
        "- Target Architecture: sm_80",
        "- Target Architecture: sm_90a",
        "- Target Architecture: sm_120",
    ],
)
def test_a_dsl_compile_error_for_an_ampere_or_newer_target_is_not_read(
    tmp_path: Path, line: str
) -> None:
    assert "driver-cutlass-dsl-gpu-below-sm80" not in _rules(
        tmp_path, f"NVVM Compilation Error:\n{line}\n"
    )


def _rules(tmp_path: Path, text: str) -> set[str]:
    path = tmp_path / "log.txt"
    path.write_text(text, encoding="utf-8")
    return {e.rule for c in analyze([str(path)]).causes for e in c.evidence}


def test_colabfolds_question_is_not_a_statement(tmp_path: Path) -> None:
    line = (
        "2023-01-05 10:00:00,000 Could not predict seq_3. Not Enough GPU memory? INTERNAL:"
        " CustomCall failed: jaxlib/gpu/prng_kernels.cc:33: operation gpuGetLastError() failed\n"
    )
    assert "gpu-oom-program-says-not-enough-gpu-memory" not in _rules(tmp_path, line)
