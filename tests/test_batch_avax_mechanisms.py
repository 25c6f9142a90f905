"""Mechanisms learned from blind batches av and ax (MLX on Metal, CuPy, Torch7, YOLOv5's size
probe, NVLink containment, Ray's GCS address), end to end on lines that are not the cases' own
(other reports of the same messages, and the formats of the programs that print them):

* MLX's allocator in its own words is gpu_oom: one array over the Metal device's largest buffer
  (`[metal::malloc] Attempting to allocate ... greater than the maximum allowed buffer size`),
  the memory limit reached (`[malloc_or_wait] Unable to allocate N bytes`, whatever N), and a
  command buffer aborted for memory (`[METAL] Command buffer execution failed: Insufficient
  Memory`, with or without Metal's code).
* CuPy's memory pool before v7 (`out of memory to allocate N bytes (total M bytes)`) is gpu_oom.
* Torch7's THAlloc (`not enough memory: you tried to allocate NGB. Buy new RAM!`) is host_oom.
* cudaErrorContained's message (`Invalid access of peer GPU memory over nvlink or a hardware
  error`) is hardware.
* A Ray GCS address with no host (`:6379`) is network, named as a missing address; a GCS
  connection that timed out is network too.
* An out-of-memory error that YOLOv5's or Ultralytics' profile() caught and printed bare under
  its table (AutoBatch trying batch sizes) is a report the run went on from, not its ending;
  the same message uncaught (its type, a traceback) is still gpu_oom.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.model import Ending, Verdict
from crashlens.parsers.launcher.probes import WINDOW, ProbeTracker
from mechanism_helpers import Scenario, assert_scenario_verdict, ending_of, log_report

METAL = "gpu-oom-apple-metal-out-of-memory"

SCENARIOS = (
    # an mlx-vlm generation step on a 128 GB Mac (a vision model's attention over one image)
    Scenario(
        "mlx-metal-malloc-over-max-buffer",
        {
            "generate.log": "Traceback (most recent call last):\n"
            '  File "/opt/homebrew/lib/python3.13/site-packages/mlx_vlm/generate.py", line 352,'
            " in generate_step\n"
            "    mx.async_eval(y)\n"
            "RuntimeError: [metal::malloc] Attempting to allocate 135383101952 bytes which is "
            "greater than the maximum allowed buffer size of 86586540032 bytes.\n"
        },
        "gpu_oom",
        METAL,
    ),
    # ml-explore/mlx#63: growing arrays a GB at a time on an 8 GB Mac
    Scenario(
        "mlx-malloc-or-wait",
        {
            "test.log": "".join(f"{n} GB\n" for n in range(10))
            + "libc++abi: terminating due to uncaught exception of type std::runtime_error: "
            "[malloc_or_wait] Unable to allocate 9663676416 bytes.\n"
            "zsh: abort      python3 test4.py\n"
        },
        "gpu_oom",
        METAL,
    ),
    # a server whose MLX build throws the command buffer's description without Metal's code
    Scenario(
        "mlx-command-buffer-insufficient-memory",
        {
            "server.log": "INFO:     127.0.0.1:52114 - POST /v1/chat/completions HTTP/1.1 200\n"
            "libc++abi: terminating due to uncaught exception of type std::runtime_error: "
            "[METAL] Command buffer execution failed: Insufficient Memory\n"
        },
        "gpu_oom",
        METAL,
    ),
    # motokimura/spacenet_building_detection#3: Chainer's trainer on CuPy 5
    Scenario(
        "cupy-v5-pool-out-of-memory",
        {
            "train.log": "# Minibatch-size: 16\n# epoch: 50\n"
            "Exception in main training loop: out of memory to allocate 163840000 bytes "
            "(total 1673061376 bytes)\n"
            "Traceback (most recent call last):\n"
            '  File "/opt/conda/lib/python3.6/site-packages/chainer/training/trainer.py",'
            " line 304, in run\n"
            "    update()\n"
            "cupy.cuda.memory.OutOfMemoryError: out of memory to allocate 163840000 bytes "
            "(total 1673061376 bytes)\n"
        },
        "gpu_oom",
        "gpu-oom-framework-allocator-exhausted",
    ),
    # Torch7 under luajit, THGeneral.c's THAlloc
    Scenario(
        "torch7-thalloc",
        {
            "train.log": "/home/user/torch/install/bin/luajit: $ Torch: not enough memory: you "
            "tried to allocate 4GB. Buy new RAM! at /home/user/torch/pkg/torch/lib/TH/"
            "THGeneral.c:270\n"
        },
        "host_oom",
        "host-oom-cpu-allocator-failed",
    ),
    # a rank's NCCL watchdog on an NVLink node
    Scenario(
        "cuda-contained-nvlink",
        {
            "train.log": "[rank5]:[E ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 5] Process group watchdog thread terminated with exception: CUDA error: "
            "Invalid access of peer GPU memory over nvlink or a hardware error\n"
        },
        "hardware",
        "hardware-cuda-error-contained",
    ),
    # Ray node.py's assertion on an address with no host
    Scenario(
        "ray-gcs-empty-host",
        {
            "train.log": "+ ray start --address=:6380 --num-gpus 4 --block\n"
            "AssertionError: Failed to connect to GCS at address=:6380. Last exception: None\n"
        },
        "network",
        "network-ray-gcs-address-empty-host",
    ),
    # Jiayi-Pan/TinyZero#75: a head that was not listening
    Scenario(
        "ray-gcs-connect-timed-out",
        {
            "train.log": "02-16 16:05:50,467 INFO worker.py:1636 -- Connecting to existing Ray "
            "cluster at address: 172.23.15.13:20000...\n"
            "[2025-02-16 16:05:55,537 E 350061 350061] gcs_rpc_client.h:179: Failed to connect "
            "to GCS at address 172.23.15.13:20000 within 5 seconds.\n"
            "[2025-02-16 16:06:26,552 W 350061 350061] gcs_client.cc:178: Failed to get cluster "
            "ID from GCS server: TimedOut: Timed out while waiting for GCS to become available.\n"
        },
        "network",
        "network-ray-gcs-connect-timed-out",
    ),
)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_batch_avax_scenarios(tmp_path: Path, scenario: Scenario) -> None:
    assert_scenario_verdict(tmp_path, scenario)


HEADER = (
    "      Params      GFLOPs  GPU_mem (GB)  forward (ms) backward (ms)"
    "                   input                  output\n"
)
ROW = (
    "     7235389       16.53         {mem:.3f}         25.41         41.62      ({n}, 3, 640, 640)"
)
OOM = (
    "CUDA out of memory. Tried to allocate 100.00 MiB (GPU 0; 3.82 GiB total capacity; "
    "2.61 GiB already allocated; 86.75 MiB free; 2.75 GiB reserved in total by PyTorch)\n"
)


def _probe(last: str = "") -> str:
    rows = "".join(ROW.format(mem=0.4 * n, n=n) + "                    list\n" for n in (1, 2, 4))
    return (
        "AutoBatch: Computing optimal batch size for --imgsz 640\n"
        "AutoBatch: CUDA:0 (NVIDIA GeForce GTX 1650) 3.82G total, 0.07G reserved, 0.05G "
        "allocated, 3.70G free\n" + HEADER + rows + OOM + last
    )


@pytest.mark.parametrize(
    "last",
    ["", "AutoBatch: Using batch-size 5 for CUDA:0 2.21G/3.82G (58%) \u2705\n"],
    ids=["ends-at-the-oom", "goes-on"],
)
def test_a_size_probe_s_caught_oom_is_no_failure(tmp_path: Path, last: str) -> None:
    report = log_report(tmp_path, _probe(last))
    assert ending_of(report) is Ending.ONGOING
    assert report.verdict is Verdict.NONE


def test_an_uncaught_oom_after_the_probe_table_still_fails(tmp_path: Path) -> None:
    text = _probe().replace(
        OOM,
        'Traceback (most recent call last):\n  File "train.py", line 9,'
        " in <module>\ntorch.OutOfMemoryError: " + OOM,
    )
    report = log_report(tmp_path, text)
    assert ending_of(report) is Ending.DIED
    assert report.verdict is Verdict.GPU_OOM


def test_a_bare_oom_without_a_probe_table_still_fails(tmp_path: Path) -> None:
    report = log_report(tmp_path, "epoch 1 step 10 loss 2.3\n" + OOM)
    assert report.verdict is Verdict.GPU_OOM


def test_the_probe_window() -> None:
    tracker = ProbeTracker()
    assert not tracker.caught(OOM, 5)
    tracker.read_header(10)
    assert tracker.caught(OOM, 11)
    assert tracker.caught(OOM, 10 + WINDOW)
    assert not tracker.caught(OOM, 11 + WINDOW)
    assert not tracker.caught("torch.OutOfMemoryError: " + OOM, 12)
