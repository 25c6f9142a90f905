"""Mechanisms learned from batch 2026-12-05-cr, each tested on lines not from its cases: GPU
memory errors outside PyTorch (CatBoost's pool, RAPIDS' RMM, OpenCL, Mitsuba's JIT, a CUDA
check macro's report), RMM's async allocator on an old driver, a device allocator's
std::bad_alloc read as GPU memory, a UCX status thrown as an exception, c10d given an address
of the wrong family."""

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

SCENARIOS = (
    # CatBoost's GPU memory pool, as its Python front end raises it
    Scenario(
        "catboost",
        {
            "train.log": (
                "Learning rate set to 0.05\n"
                "0:\tlearn: 0.6812237\ttest: 0.6815531\tbest: 0.6815531 (0)\ttotal: 1.21s\n"
                "_catboost.CatBoostError: "
                "catboost/cuda/cuda_lib/memory_pool/stack_like_memory_pool.h:"
                "303: Error: Out of memory. Requested 7680 MB; Free 5120.25 MB\n"
            ),
        },
        "gpu_oom",
        "gpu-oom-catboost-gpu-memory-pool",
    ),
    # RMM's pool: GPU memory, though Python shows it as a MemoryError of std::bad_alloc
    Scenario(
        "rmm-pool",
        {
            "train.log": (
                "distributed.worker - INFO - Run out-of-band function 'reinitialize'\n"
                "Traceback (most recent call last):\n"
                '  File "/opt/conda/lib/python3.10/site-packages/cudf/core/frame.py", line 88, in'
                " _from_columns\n"
                "MemoryError: std::bad_alloc: out_of_memory: RMM failure "
                "at:/opt/conda/include/rmm/mr/"
                "device/pool_memory_resource.hpp:183: Maximum pool size exceeded\n"
            ),
        },
        "gpu_oom",
        "gpu-oom-rmm-out-of-memory",
    ),
    # RMM's async allocator on a driver older than CUDA 11.2
    Scenario(
        "rmm-async",
        {
            "train.log": (
                "Traceback (most recent call last):\n"
                '  File "bench.py", line 12, in <module>\n'
                "    rmm.reinitialize(pool_allocator=False, managed_memory=False)\n"
                "RuntimeError: RMM failure at:/opt/conda/include/rmm/mr/device/"
                "cuda_async_memory_resource.hpp:77: cudaMallocAsync not supported with this CUDA "
                "driver/runtime version\n"
            ),
        },
        "driver",
        "driver-rmm-cuda-malloc-async-unsupported",
    ),
)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_a_log_of_the_mechanism_gets_its_verdict(tmp_path: Path, scenario: Scenario) -> None:
    assert_scenario_verdict(tmp_path, scenario)


def test_a_thrust_bad_alloc_is_not_read_as_host_memory() -> None:
    line = "MemoryError: std::bad_alloc: cudaErrorMemoryAllocation: out of memory"
    hits = rules_hitting(line)
    assert not [rule for rule in hits if rule.startswith("host-oom")]
    assert "gpu-oom-cuda-error-out-of-memory" in hits


def test_a_plain_bad_alloc_is_still_host_memory() -> None:
    assert "host-oom-cxx-bad-alloc" in rules_hitting(
        "terminate called after throwing an instance of 'std::bad_alloc'"
    )


def test_gpu_memory_errors_of_other_allocators_name_gpu_memory() -> None:
    lines = {
        "[LightGBM] [Fatal] Memory Object Allocation Failure": "gpu-oom-opencl-mem-object-"
        "allocation-failure",
        "jit_malloc(): out of memory! Could not allocate 2147483648 bytes of device memory.": (
            "gpu-oom-drjit-enoki-malloc"
        ),
        "GPUassert: out of memory src/conv.cu 212": "gpu-oom-cuda-check-at-source-out-of-memory",
    }
    for line, rule in lines.items():
        assert rule in rules_hitting(line), line


def test_a_ucx_status_thrown_as_an_exception_is_not_judged_harmless(tmp_path: Path) -> None:
    text = (
        "24/01/02 10:00:00 INFO RapidsShuffleInternalManager: Initializing UCX transport\n"
        "24/01/02 10:00:01 ERROR Executor: Exception in task 0.0 in stage 2.0 (TID 4)\n"
        "org.openucx.jucx.UcxException: No resources are available to initiate the operation\n"
        "\tat org.openucx.jucx.ucp.UcpWorker.createWorkerNative(Native Method)\n"
        "\tat org.openucx.jucx.ucp.UcpWorker.<init>(UcpWorker.java:45)\n"
    )
    report = log_report(tmp_path / "ucx", text)
    assert str(report.verdict) != "none"
    assert ending_of(report) is not Ending.COMPLETED


def test_c10d_given_an_address_of_the_other_family_is_network() -> None:
    line = (
        "[W socket.cpp:663] [c10d] The IPv4 network addresses of (fe80::a00:27ff:fe4e:66a1, "
        "29500) cannot be retrieved (gai error: -9 - Address family for hostname not supported)."
    )
    assert "network-c10d-address-family-unsupported" in rules_hitting(line)
    name_lookup_failed = line.replace(
        "-9 - Address family for hostname not supported", "-2 - Name or service not known"
    )
    assert "network-c10d-address-family-unsupported" not in rules_hitting(name_lookup_failed)
