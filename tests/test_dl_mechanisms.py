"""Mechanisms learned from batch 2026-12-06-dl's misses, each tested on lines written for the
test, not taken from the cases: cuRAND's launch failure read as an old CUDA library on a newer
GPU (and decided by the GPU and CUDA pair where both show), a kernel OOM kill with its pid
masked, TensorFlow's distributed runtime unable to reach a task, and ProcessGroupNCCL's exit
warning in its `before we destruct ProcessGroupNCCL` wording as a finish."""

from __future__ import annotations

from pathlib import Path

from crashlens.model import Ending
from mechanism_helpers import ending_of, report_of

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "F1201 08:00:01.000001 31337 math_functions.cu:408] Check failed: status =="
        " CURAND_STATUS_SUCCESS (201 vs. 0)  CURAND_STATUS_LAUNCH_FAILURE",
        "driver-curand-launch-failure",
    ),
    (
        "[Mon Dec  1 08:00:00 2025] Out of memory: Killed process XXXX (python3)"
        " total-vm:9123456kB, anon-rss:8123456kB",
        "host-oom-kernel-killed-process",
    ),
    (
        "2018-06-08 05:55:09.075000: E tensorflow/core/distributed_runtime/master.cc:269]"
        " Master init: Unavailable: OS Error",
        "network-tf-distributed-task-unavailable",
    ),
]

_PG_EXIT_WARNING = (
    "{'train_runtime': 812.4, 'train_loss': 0.41, 'epoch': 3.0}\n"
    "[rank0]:[W601 10:00:00.123456789 ProcessGroupNCCL.cpp:1250] Warning:\n"
    "WARNING: process group has NOT been destroyed before we destruct ProcessGroupNCCL.\n"
    "On normal program exit, the application should call destroy_process_group\n"
    "to ensure that any pending NCCL operations have finished in this process.\n"
)

# read by tests/test_mechanism_endings.py
LOGS_AND_ENDINGS = [
    ("process-group-exit-warning", _PG_EXIT_WARNING, Ending.COMPLETED),
]


def test_the_exit_warning_after_an_uncaught_exception_is_no_finish(tmp_path: Path) -> None:
    # Python exits the same way after an uncaught exception: the warning is that exit's
    report = report_of(
        tmp_path / "after-error",
        {
            "train.log": "Traceback (most recent call last):\n"
            '  File "train.py", line 9, in <module>\n'
            "RuntimeError: CUDA error: an illegal memory access was encountered\n"
            + _PG_EXIT_WARNING.split("\n", 1)[1]
        },
    )
    assert ending_of(report) is not Ending.COMPLETED
    assert str(report.verdict) != "none"


def test_the_gpu_and_cuda_pair_decides_a_curand_launch_failure(tmp_path: Path) -> None:
    # a Pascal GPU (6.1) with CUDA 7.5's runtime loaded: cuRAND has no kernels for it
    report = report_of(
        tmp_path / "pascal",
        {
            "train.log": "I1201 08:00:00.000001 31337 caffe.cpp:210] Using GPUs 0\n"
            "I1201 08:00:00.000002 31337 caffe.cpp:215] GPU 0: GeForce GTX 1080\n"
            "\tlibcudart.so.7.5 => /usr/local/cuda-7.5/lib64/libcudart.so.7.5 (0x00007f3a)\n"
            "F1201 08:00:01.000001 31337 math_functions.cu:408] Check failed: status =="
            " CURAND_STATUS_SUCCESS (201 vs. 0)  CURAND_STATUS_LAUNCH_FAILURE\n",
        },
    )
    assert str(report.verdict) == "driver"
    rules = {item.rule for item in report.causes[0].evidence}
    # the pair explains the launch failure (CUDA 7.x builds up to 5.3; a GTX 1080 is 6.1)
    assert "driver-cuda-build-lacks-gpu-arch" in rules
