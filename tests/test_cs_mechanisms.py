"""Mechanisms learned from batch 2026-12-06-cs, each tested on lines not from its cases: the
shells' own reports of a command a signal ended (fish names the signal, zsh prints its own
lower-case words), a platform's prose for a container killed at its memory limit, the local
ptxas older than the PTX a framework hands it, the AMDGPU assembler refusing an instruction
for the GPU a library assembles kernels for, PaddlePaddle 1.x's allocator and RELION's
check macro."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.model import Ending
from mechanism_helpers import (
    Scenario,
    assert_scenario_verdict,
    ending_of,
    log_report,
)

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "fish: Job 2, 'torchrun train.py' terminated by signal SIGKILL (Forced quit)",
        "host-oom-sigkill-exit",
    ),
    (
        "fish: Job 1, 'python finetune.py' terminated by signal SIGBUS (Misaligned address error)",
        "shm-bus-error-crash",
    ),
    (
        "fish: Job 1, 'python infer.py' terminated by signal SIGSEGV (Address boundary error)",
        "driver-sigsegv-exit",
    ),
    ("zsh: bus error (core dumped)  python pretrain.py --workers 8", "shm-bus-error-crash"),
    ("zsh: segmentation fault  python infer.py", "driver-sigsegv-exit"),
    ("zsh: abort      python serve.py", "network-sigabrt-exit"),
    (
        "2025-02-03 11:02:09 [INFO] container trainer is oom-killed.",
        "host-oom-platform-container-oom-killed",
    ),
    (
        "Status reason: OutOfMemoryError: Container killed due to memory usage",
        "host-oom-platform-container-oom-killed",
    ),
    (
        "ptxas /tmp/tmpxft_0042-9, line 5; fatal   : Unsupported .version 8.7;"
        " current version is '8.4'",
        "driver-xla-cuda-toolkit-missing",
    ),
    (
        "<instantiation>:12:5: error: instruction not supported on this GPU",
        "driver-rocm-no-code-for-gpu-target",
    ),
    (
        "Enforce failed. Expected allocating <= available, but received"
        " allocating:2147483648 > available:104857600.",
        "gpu-oom-framework-allocator-exhausted",
    ),
    (
        "ERROR: out of memory in /opt/relion-4.0/src/acc/cuda/cuda_mem_utils.h"
        " at line 88 (error-code 2)",
        "gpu-oom-cuda-check-at-source-out-of-memory",
    ),
]


SCENARIOS = (
    # fish's report of a SIGBUS after a DataLoader's progress: shared memory, as bash's would be
    Scenario(
        "fish-sigbus",
        {
            "train.log": (
                "Epoch 3:  41%|████      | 410/1000 [02:13<03:11,  3.08it/s]\n"
                "fish: Job 1, 'python train.py' terminated by signal SIGBUS (Misaligned address "
                "error)\n"
            ),
        },
        "shm",
        "shm-bus-error-crash",
    ),
    # a workload manager's status lines: the container hit its memory limit
    Scenario(
        "platform-oom-killed",
        {
            "train.log": (
                "2025-02-03 11:02:09 [INFO] container trainer is oom-killed.\n"
                "2025-02-03 11:02:09 [INFO] Workload status changed to stopping\n"
                "2025-02-03 11:02:40 [INFO] Pod deleted.\n"
            ),
        },
        "host_oom",
        "host-oom-platform-container-oom-killed",
    ),
    # JAX hands ptxas PTX of a newer ISA than the installed toolkit reads
    Scenario(
        "ptxas-older-than-ptx",
        {
            "train.log": (
                "I0104 10:00:01.000000 140 service.cc:145] XLA service initialized for platform "
                "CUDA\n"
                "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: ptxas exited with non-zero "
                "error code "
                "65280, output: ptxas /tmp/tempfile-node-7-1f2e, line 5; fatal   : Unsupported "
                ".version "
                "8.5; current version is '8.2'\n"
                "ptxas fatal   : Ptx assembly aborted due to errors\n"
            ),
        },
        "driver",
        "driver-xla-cuda-toolkit-missing",
    ),
    # PaddlePaddle 1.x's allocator refusing a request larger than the card's free memory
    Scenario(
        "paddle-1x",
        {
            "train.log": (
                "W0521 10:11:12.123456  4242 device_context.cc:259] Please NOTE: device: 0,"
                " CUDA Capability: 70\n"
                "paddle.fluid.core_avx.EnforceNotMet: \n"
                "Enforce failed. Expected allocating <= available, but received "
                "allocating:8589934592 > "
                "available:1073741824.\n"
                "Insufficient GPU memory to allocation."
                " at [/paddle/paddle/fluid/platform/gpu_info.cc:262]\n"
            ),
        },
        "gpu_oom",
        "gpu-oom-framework-allocator-exhausted",
    ),
)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_a_log_of_the_mechanism_gets_its_verdict(tmp_path: Path, scenario: Scenario) -> None:
    assert_scenario_verdict(tmp_path, scenario)


def test_a_shell_report_of_a_signal_shows_the_run_died(tmp_path: Path) -> None:
    """fish's and zsh's reports are death signs for the failure detector, as bash's are."""
    for name, line in [
        (
            "fish",
            "fish: Job 1, 'python train.py' terminated by signal SIGSEGV (Address boundary error)",
        ),
        ("zsh", "zsh: segmentation fault  python train.py"),
    ]:
        report = log_report(tmp_path / name, "step 10 loss 2.31\n" + line + "\n")
        assert ending_of(report) is Ending.DIED, name
