"""AMD ROCm, Intel GPU and Apple MPS failures read through their catalogs
(patterns/tables/hip_errors.toml, xpu_mps_errors.toml), end to end on launcher logs in the
shapes those stacks print (each from a report other than the tables' examples where one
exists, host names, paths and ids replaced):

* ROCr aborting a queue on a memory aperture violation, rocBLAS finding no Tensile library
  for the GPU's gfx target, HIP finding no ROCm-capable device, and an Intel GPU lost under
  the Unified Runtime all name `driver` first;
* HIP's out of memory, PyTorch's XPU allocator, SYCL's PI_ERROR_OUT_OF_RESOURCES on an Arc
  GPU and Metal's out-of-memory command buffer status all name `gpu_oom`;
* Metal's statuses for the command buffers after the first error are no failure of their own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from crashlens.library import tables_dir
from crashlens.match.catalogs import load_catalog
from crashlens.match.rules import shipped_rules
from mechanism_helpers import assert_leads, log_report

TORCHRUN_HEAD = (
    "[2025-03-02 10:14:02,118] torch.distributed.run: [WARNING] *****************************\n"
    "[2025-03-02 10:14:02,118] torch.distributed.run: [WARNING] Setting OMP_NUM_THREADS"
    " environment variable for each process to be 1 in default\n"
    "step 10 loss 2.41\n"
    "step 20 loss 2.18\n"
)


def torchrun_tail(signal: int, name: str) -> str:
    """torchelastic's report of local rank 1 dying of `signal` (its ChildFailedError block)."""
    return (
        "[2025-03-02 10:21:40,533] torch.distributed.elastic.multiprocessing.api: [WARNING]"
        " Sending process 2211 closing signal SIGTERM\n"
        "[2025-03-02 10:21:41,102] torch.distributed.elastic.multiprocessing.api: [ERROR]"
        f" failed (exitcode: {-signal}) local_rank: 1 (pid: 2212) of binary:"
        " /opt/conda/bin/python\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        "============================================================\n"
        "train.py FAILED\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  time      : 2025-03-02_10:21:41\n"
        "  host      : node-07\n"
        "  rank      : 1 (local_rank: 1)\n"
        f"  exitcode  : {-signal} (pid: 2212)\n"
        "  error_file: <N/A>\n"
        f"  traceback : Signal {signal} ({name}) received by PID 2212\n"
        "============================================================\n"
    )


def python_failure(frame: str, error: str) -> str:
    """A rank's traceback ending in `error`, then torchelastic's report of exit code 1."""
    return (
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/workspace/train.py", line 211, in <module>\n'
        "[rank1]:     main()\n"
        f'[rank1]:   File "/workspace/train.py", line 187, in main\n[rank1]:     {frame}\n'
        f"[rank1]: {error}\n"
        "[2025-03-02 10:21:41,102] torch.distributed.elastic.multiprocessing.api: [ERROR]"
        " failed (exitcode: 1) local_rank: 1 (pid: 2212) of binary: /opt/conda/bin/python\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        "============================================================\n"
        "train.py FAILED\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  host      : node-07\n"
        "  rank      : 1 (local_rank: 1)\n"
        "  exitcode  : 1 (pid: 2212)\n"
        "  error_file: <N/A>\n"
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
        "============================================================\n"
    )


LOGS = {
    # parthenon-hpc-lab/parthenon#1101 (Frontier): the queue callback, then the abort
    "rocm-hsa-aperture-violation": (
        TORCHRUN_HEAD
        + ":0:rocdevice.cpp            :2660: 556940992572 us: 32834: [tid:0x7f9e41945700]"
        " Device::callbackQueue aborting with error : HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION:"
        " The agent attempted to access memory beyond the largest legal address. code: 0x29\n"
        + torchrun_tail(6, "SIGABRT"),
        "driver",
    ),
    # ROCm/rocBLAS#1339 (a 7800 XT with PyTorch): rocBLAS's abort at the first matmul
    "rocblas-no-tensile-library-for-gfx": (
        "Using device: cuda\n"
        "Epoch 1/10\n"
        "rocBLAS error: Cannot read /opt/venv/lib/python3.10/site-packages/torch/lib/rocblas/"
        "library/TensileLibrary.dat: No such file or directory for GPU arch : gfx1101\n"
        " List of available TensileLibrary Files : \n"
        '"/opt/venv/lib/python3.10/site-packages/torch/lib/rocblas/library/'
        'TensileLibrary_lazy_gfx1100.dat"\n'
        '"/opt/venv/lib/python3.10/site-packages/torch/lib/rocblas/library/'
        'TensileLibrary_lazy_gfx90a.dat"\n'
        "Aborted (core dumped)\n",
        "driver",
    ),
    # PyTorch on ROCm with no usable GPU in the container
    "hip-no-rocm-capable-device": (
        python_failure(
            "model = model.to(device)",
            "RuntimeError: HIP error: no ROCm-capable device is detected",
        ),
        "driver",
    ),
    # pytorch/pytorch#190972 (ComfyUI on an Arc A770): the UR result after a GPU reset
    "xpu-ur-device-lost": (
        "got prompt\n"
        "  0%|          | 0/20 [00:00<?, ?it/s]\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/comfyui/execution.py", line 327, in execute\n'
        "    output_data, output_ui = get_output_data(obj, input_data_all)\n"
        "RuntimeError: level_zero backend failed with error: 20 (UR_RESULT_ERROR_DEVICE_LOST)\n"
        "Prompt executed in 70.98 seconds\n",
        "driver",
    ),
    # HIP's own out-of-memory status through PyTorch's check
    "hip-error-out-of-memory": (
        TORCHRUN_HEAD
        + python_failure(
            "loss.backward()",
            "RuntimeError: HIP error: out of memory",
        ),
        "gpu_oom",
    ),
    # intel/llm-scaler#578 (vLLM with tp=4 on Arc): the XPU allocator's message in a worker
    "xpu-allocator-out-of-memory": (
        "(Worker_TP1 pid=549) ERROR 07-29 21:48:54 [multiproc_executor.py:962]     "
        "self.model_runner.initialize_kv_cache(kv_cache_config)\n"
        "(Worker_TP1 pid=549) ERROR 07-29 21:48:54 [multiproc_executor.py:962] "
        "torch.OutOfMemoryError: XPU out of memory. Tried to allocate 7.50 GiB. GPU 1 has a"
        " total capacity of 23.86 GiB of which 3.12 GiB is free. Of the allocated memory"
        " 18.20 GiB is allocated by PyTorch, and 1.05 GiB is reserved by PyTorch but"
        " unallocated.\n"
        "(Worker_TP1 pid=549) ERROR 07-29 21:48:54 [multiproc_executor.py:962] "
        "WorkerProc hit an exception.\n",
        "gpu_oom",
    ),
    # intel/ipex-llm#9467 (Baichuan2-13B on an Arc GPU): SYCL's PI result in a generate thread
    "ipex-pi-out-of-resources": (
        "Exception in thread Thread-4:\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.9/threading.py", line 980, in _bootstrap_inner\n'
        "    self.run()\n"
        '  File "/workspace/benchmark_util.py", line 2455, in greedy_search\n'
        "    outputs = self(\n"
        "RuntimeError: Native API failed. Native API returns: -5 (PI_ERROR_OUT_OF_RESOURCES)"
        " -5 (PI_ERROR_OUT_OF_RESOURCES)\n",
        "gpu_oom",
    ),
    # ggml-org/llama.cpp#7010: Metal's out-of-memory status as llama.cpp prints it
    "metal-command-buffer-out-of-memory": (
        "llama_new_context_with_model: n_ctx      = 32768\n"
        "ggml_metal_graph_compute: command buffer 6 failed with status 5\n"
        "error: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)\n"
        "GGML_ASSERT: ggml-metal.m:1611: false\n"
        "zsh: abort      ./main -m models/model.gguf -c 32768\n",
        "gpu_oom",
    ),
}


@pytest.mark.parametrize("name", sorted(LOGS))
def test_launcher_log_names_the_cause(tmp_path: Path, name: str) -> None:
    text, category = LOGS[name]
    report = log_report(tmp_path / name, text)
    assert_leads(report, category)
    assert str(report.verdict) != "none"


@pytest.mark.parametrize("table", ["hip_errors", "xpu_mps_errors"])
def test_the_new_tables_are_fully_covered(table: str, shipped_coverage: dict[str, Any]) -> None:
    rows = shipped_coverage
    assert rows[table].missing == ()
    assert rows[table].covered == len(load_catalog(tables_dir() / f"{table}.toml").entries)


def test_metal_statuses_after_the_first_error_are_no_failure() -> None:
    rules = {rule.id: rule for rule in shipped_rules()}
    harmless = rules["driver-gpu-runtime-status-harmless"]
    line = (
        "error: Ignored (for causing prior/excessive GPU errors)"
        " (00000004:kIOAccelCommandBufferCallbackErrorSubmissionsIgnored)"
    )
    assert harmless.match_line(line) is not None
    assert harmless.failure is False
    assert not any(
        rule.match_line(line) is not None and rule.failure
        for rule in rules.values()
        if rule.id != harmless.id
    )
