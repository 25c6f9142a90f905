"""Mechanisms learned in the stop of batch 2026-12-06-cw, each tested on lines and logs written for
the test, not taken from the cases: torch.distributed's store-based barrier timing out (found by
probing before the batch); then, from the batch's misses: the Vulkan loader dropping a driver
whose ICD could not create an instance and SAPIEN finding no supported device, Paddle's warning
that its wheel has no kernels for the GPU's architecture, xFormers without its CUDA kernels,
Kaldi's GPU allocator failing to get a memory region, TensorRT-LLM's executor running out of GPU
memory while created, Vulkan's out-of-device-memory as Unreal Engine and Omniverse print it, a
terminal's `^C` echo followed by the program's own shutdown output (a user's interrupt, a
stop), and a training loop's own `... reached. Stopping training.` (a planned end)."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.model import Ending
from mechanism_helpers import (
    Scenario,
    assert_scenario_verdict,
    ending_of,
    log_report,
    rules_hitting,
)

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "torch.distributed.DistStoreError: Timed out initializing process group in store based"
        " barrier on rank 7, for key: store_based_barrier_key:1 (world_size=16,"
        " num_workers_joined=8, timeout=0:30:00 error=Wait timeout)",
        "network-store-timeout",
    ),
    (
        "WARNING: [Loader Message] Code 0 : terminator_CreateInstance: Failed to CreateInstance"
        " in ICD 2.  Skipping ICD.",
        "driver-vulkan-driver-unavailable",
    ),
    (
        'RuntimeError: Failed to find a supported physical device "cuda:3"',
        "driver-vulkan-driver-unavailable",
    ),
    (
        "W0702 08:11:02.004113 90211 gpu_resources.cc:119] The GPU architecture in your current"
        " machine is Kepler, which is not compatible with Paddle installation with arch: 60 61"
        " 70 75 80 86 ,",
        "driver-gpu-arch-unsupported-by-paddle",
    ),
    (
        "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:",
        "driver-xformers-cuda-kernels-missing",
    ),
    ("    xFormers wasn't build with CUDA support", "driver-xformers-cuda-kernels-missing"),
    (
        "ERROR (nnet3-chain-train[5.5.1060]:AllocateNewRegion():cu-allocator.cc:532) Failed to"
        " allocate a memory region of 268435456 bytes.  Possibly smaller minibatch size would"
        " help.",
        "gpu-oom-kaldi-cu-allocator-region-failed",
    ),
    (
        "[TRT-LLM] [RANK 3] [E] Failed to initialize executor on rank 3: Executor creation"
        " failed due to insufficient GPU memory.",
        "gpu-oom-tensorrt-llm-executor-insufficient-memory",
    ),
    (
        "Out of Device Memory, Requested=131072.00Kb MemTypeIndex=1",
        "gpu-oom-vulkan-engine-out-of-device-memory",
    ),
    (
        "2025-03-02 11:40:09 [15,220ms] [Error] [carb.graphics-vulkan.plugin] VkResult:"
        " ERROR_OUT_OF_DEVICE_MEMORY",
        "gpu-oom-vulkan-out-of-device-memory",
    ),
    (
        "2025-03-02 11:40:09 [15,220ms] [Error] [carb.graphics-vulkan.plugin] VkResult:"
        " ERROR_DEVICE_LOST",
        "driver-vulkan-device-lost",
    ),
]


def test_xformers_other_dispatch_reasons_are_not_a_missing_build() -> None:
    """The dispatcher's reasons about the inputs or the GPU are not xFormers' build."""
    for line in (
        "    requires device with capability > (8, 0) but your GPU has capability (7, 0) (too old)",
        "    dtype=torch.float32 (supported: {torch.bfloat16, torch.float16})",
    ):
        assert "driver-xformers-cuda-kernels-missing" not in rules_hitting(line)


SCENARIOS = (
    # an Unreal Engine simulator server out of GPU memory, ending in its crash handler's signal 11
    Scenario(
        "ue4-vulkan",
        {
            "server.log": (
                "4.26.2-0+++UE4+Release-4.26 522 0\n"
                "Disabling core dumps.\n"
                "LowLevelFatalError [File:Unknown] [Line: 281]\n"
                "Out of Device Memory, Requested=131072.00Kb MemTypeIndex=1\n"
                "Signal 11 caught.\n"
                "CommonUnixCrashHandler: Signal=11\n"
                "Engine crash handling finished; re-raising signal 11 for the default handler."
                " Good bye.\n"
                "Segmentation fault (core dumped)\n"
            ),
        },
        "gpu_oom",
        "gpu-oom-vulkan-engine-out-of-device-memory",
    ),
    # a Kaldi chain recipe's training job on a GPU another job also uses
    Scenario(
        "kaldi",
        {
            "train.1.1.log": (
                "# nnet3-chain-train --use-gpu=yes --apply-deriv-weights=false"
                " 'nnet3-am-copy --raw=true exp/chain/tdnn/0.mdl -|' ark:- exp/chain/tdnn/1.1.raw\n"
                "LOG (nnet3-chain-train[5.5]:SelectGpuId():cu-device.cc:238) CUDA setup"
                " operating under Compute Exclusive Mode.\n"
                "ERROR (nnet3-chain-train[5.5]:AllocateNewRegion():cu-allocator.cc:519) Failed to"
                " allocate a memory region of 1048576000 bytes.  Possibly this is due to sharing"
                " the GPU.  Try switching the GPUs to exclusive mode (nvidia-smi -c 3) and using"
                " the option --use-gpu=wait to scripts like steps/nnet3/chain/train.py.\n"
                "[ Stack-Trace: ]\n"
                "kaldi::MessageLogger::LogMessage() const\n"
                "kaldi::CuMemoryAllocator::AllocateNewRegion(unsigned long)\n"
            ),
        },
        "gpu_oom",
        "gpu-oom-kaldi-cu-allocator-region-failed",
    ),
)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_the_scenario_reaches_its_cause(tmp_path: Path, scenario: Scenario) -> None:
    assert_scenario_verdict(tmp_path, scenario)


SERVER = (
    "INFO:     Started server process [4211]\n"
    "INFO:     Application startup complete.\n"
    "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n"
    'INFO:     10.0.0.12:51234 - "POST /v1/completions HTTP/1.1" 200 OK\n'
)


def test_a_ctrl_c_echo_with_the_programs_shutdown_after_it_is_a_stop(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "echo",
        SERVER + "^CINFO:     Shutting down\n"
        "ERROR:    Traceback of a request cancelled by the shutdown: asyncio.CancelledError\n"
        "INFO:     Waiting for application shutdown.\n",
    )
    assert ending_of(report) is Ending.STOPPED
    assert str(report.verdict) == "none"


def test_a_bare_ctrl_c_at_the_end_is_not_read_as_the_users_stop(tmp_path: Path) -> None:
    """A bare `^C` ending the output is also how a notebook shows a process killed for RAM."""
    report = log_report(tmp_path / "bare", SERVER + "^C\n")
    assert ending_of(report) is not Ending.STOPPED


def test_a_failure_before_the_ctrl_c_is_still_the_failure(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "failed-first",
        "Epoch 1/10\nstep 100 loss 2.31\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a"
        " total capacity of 23.65 GiB of which 1.02 GiB is free.\n"
        "^C[rank0]: shutting down workers\n",
    )
    assert ending_of(report) is Ending.DIED
    assert str(report.verdict) == "gpu_oom"


def test_a_ctrl_c_echo_before_a_traceback_is_left_to_the_traceback(tmp_path: Path) -> None:
    """What a Python traceback after the echo shows is read from its exception: here an error
    the interrupt only brought to light, not a `KeyboardInterrupt`."""
    report = log_report(
        tmp_path / "traceback",
        "Epoch 1/10\nstep 100 loss 2.31\n"
        "^CTraceback (most recent call last):\n"
        '  File "/home/user/serve.py", line 40, in <module>\n'
        "    run()\n"
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n",
    )
    assert ending_of(report) is not Ending.STOPPED


@pytest.mark.parametrize(
    "line",
    [
        "[2025-10-02 22:00:01,311][anemoi.training.diagnostics.callbacks.stopping][INFO] - Time"
        " limit of 6h reached. Stopping training.",
        "[EarlyStopping] Patience reached. Stopping training.",
    ],
)
def test_a_training_loops_planned_stop_is_a_finish(tmp_path: Path, line: str) -> None:
    report = log_report(
        tmp_path / "planned", "Epoch 1/10\nstep 100 loss 2.31\nstep 200 loss 2.10\n" + line + "\n"
    )
    assert ending_of(report) is Ending.COMPLETED
    assert str(report.verdict) == "none"
