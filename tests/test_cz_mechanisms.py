"""Mechanisms learned from batch 2026-12-06-cz's misses, each tested on lines and logs written for
the test, not taken from the cases: TensorFlow's BFC chunk map (printed only when an allocation
failed for good), GNU time's report of its command's exit status, bash's report of a pipeline's
later command killed by a signal (and its `Broken pipe` for the earlier one, which is no
network error), the OpenCL C++ bindings naming the call that found no platform, and CUDA's
specific messages in any program's wording."""

from __future__ import annotations

from pathlib import Path

from crashlens.model import Ending
from mechanism_helpers import ending_of, log_report, rules_hitting

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "I tensorflow/core/common_runtime/bfc_allocator.cc:678] Chunk at 0x7f3a20000000 of size"
        " 2097152",
        "gpu-oom-framework-allocator-exhausted",
    ),
    (
        "2021-03-02 09:14:55.731002: I tensorflow/core/common_runtime/bfc_allocator.cc:1046]"
        " Free at 7f21c4e00000 next 412 of size 65536",
        "gpu-oom-framework-allocator-exhausted",
    ),
    ("Error: OpenCL: clGetPlatformIDs", "driver-opencl-runtime-unavailable"),
    (
        "ggml_opencl: clGetPlatformIDs(NPLAT, platform_ids, &n_platforms) error -1001 at"
        " ggml-opencl.cpp:968",
        "driver-opencl-runtime-unavailable",
    ),
    (
        "Couldn't init a GPU test: Error in load module (drv.cpp:201): a PTX JIT compilation"
        " failed",
        "driver-cuda-toolchain-error",
    ),
]


# read by tests/test_mechanism_endings.py
LOGS_AND_ENDINGS = [
    (
        "gnu-time",
        "iter 20 loss 1.912\n"
        "Command exited with non-zero status 3\n"
        "41.02user 6.71system 0:52.18elapsed 91%CPU (0avgtext+0avgdata 3104224maxresident)k\n",
        Ending.DIED,
    ),
]


def test_a_platform_listing_is_not_a_failure() -> None:
    assert rules_hitting("Calling clGetPlatformIDs to list the OpenCL platforms: 2 found") == []


def test_a_pipelines_killed_command_is_a_sigkill_and_its_broken_pipe_no_network(
    tmp_path: Path,
) -> None:
    report = log_report(
        tmp_path / "pipeline",
        "epoch 1 step 300 loss 0.417\n"
        "run.sh: line 7:  5120 Broken pipe             yes\n"
        "      5121 Killed                  | python3 train.py --epochs 3\n",
    )
    assert ending_of(report) is Ending.DIED
    assert report.assessment is not None and report.assessment.sign is not None
    assert "5121 Killed" in report.assessment.sign.text
    assert "network-connection-reset-or-broken-pipe" not in rules_hitting(
        "run.sh: line 7:  5120 Broken pipe             yes"
    )
