"""ggml (llama.cpp, whisper.cpp), PaddlePaddle and libtorch-from-other-languages failures read
through their catalogs (patterns/tables/ggml_backends.toml, paddle_errors.toml) and the
existing PyTorch rules, end to end on logs in the shapes those programs print (built from the
vendors' sources and public reports, not from any one corpus case; sizes, hosts and paths
changed):

* llama.cpp running out of a Vulkan, SYCL or ROCm GPU's memory, and Paddle's
  `CUDA error(2), out of memory` block, name `gpu_oom`; ggml's host buffer failing names
  `host_oom`; Paddle's NCCL failure with /dev/shm's errno names `shm`; a lost Vulkan device and
  Paddle's segmentation fault after cuDNN failed to load name `driver`;
* PyTorch's messages wrapped by TorchSharp's ExternalException and R torch's `Error in cpp_...`
  still hit the PyTorch rules;
* ggml's fallback from pinned host memory, with the server then serving, is no failure;
* every entry of the two tables is recognised, by exactly one failure rule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from crashlens.library import tables_dir
from crashlens.match.catalogs import load_catalog
from crashlens.match.rules import shipped_rules
from mechanism_helpers import assert_leads, log_report

LLAMA_HEAD = (
    "llama_model_loader: loaded meta data with 29 key-value pairs and 339 tensors\n"
    "load_tensors: offloading 28 repeating layers to GPU\n"
    "load_tensors: offloaded 29/29 layers to GPU\n"
)

PADDLE_CXX_HEAD = (
    "--------------------------------------\n"
    "C++ Traceback (most recent call last):\n"
    "--------------------------------------\n"
    "0   paddle::imperative::Tracer::TraceOp(std::string const&, paddle::imperative::NameVarMap"
    "<paddle::imperative::VarBase> const&)\n"
    "1   phi::GPUContext::Impl::Init()\n"
    "\n"
    "----------------------\n"
    "Error Message Summary:\n"
    "----------------------\n"
)

LOGS = {
    # A llama-server on a Radeon through Vulkan, the KV cache not fitting (the shape of a
    # public benchmark note's log).
    "llamacpp-vulkan-kv-cache": (
        LLAMA_HEAD + "load_tensors:      Vulkan0 model buffer size =  7165.44 MiB\n"
        "llama_new_context_with_model: n_ctx      = 32768\n"
        "ggml_vulkan: Device memory allocation of size 1879048192 failed.\n"
        "ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory\n"
        "llama_kv_cache_init: failed to allocate buffer for kv cache\n"
        "llama_new_context_with_model: llama_kv_cache_init() failed for self-attention cache\n"
        "main: error: unable to load model\n",
        "gpu_oom",
    ),
    # llama.cpp's SYCL guide: an Arc GPU with a model too large for it.
    "llamacpp-sycl-model-too-large": (
        LLAMA_HEAD + "ggml_backend_sycl_buffer_type_alloc_buffer: can't allocate 8589934592 Bytes"
        " of memory on device\n"
        "alloc_tensor_range: failed to allocate SYCL0 buffer of size 8589934592\n"
        "llama_model_load: error loading model: unable to allocate backend buffer\n"
        "llama_load_model_from_file: failed to load model\n",
        "gpu_oom",
    ),
    # ggml-alloc.c on a ROCm build: the compute graph does not fit.
    "llamacpp-rocm-compute-buffer": (
        LLAMA_HEAD + "ggml_gallocr_reserve_n: failed to allocate ROCm0 buffer of size 4294967296\n"
        "llama_new_context_with_model: failed to allocate compute buffers\n"
        "common_init_from_params: failed to create context with model 'model.gguf'\n",
        "gpu_oom",
    ),
    # A CPU-only whisper.cpp / llama.cpp run: the host buffer does not fit.
    "ggml-cpu-buffer": (
        "whisper_init_from_file_with_params_no_state: loading model from 'ggml-large-v3.bin'\n"
        "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size"
        " 34359738368\n"
        "ggml_gallocr_reserve_n: failed to allocate CPU buffer of size 34359738368\n",
        "host_oom",
    ),
    # A Vulkan device lost mid-generation (vulkan.hpp's exception uncaught).
    "vulkan-device-lost": (
        LLAMA_HEAD + "main: prompt processed, generating\n"
        "terminate called after throwing an instance of 'vk::DeviceLostError'\n"
        "  what():  vk::Queue::submit: ErrorDeviceLost\n"
        "Aborted (core dumped)\n",
        "driver",
    ),
    # PaddlePaddle 2.x dygraph training: a CUDA allocation fails, enforce.h's ExternalError.
    "paddle-cuda-error-2": (
        "W0612 10:11:03.112233  2211 gpu_resources.cc:119] Please NOTE: device: 0, GPU Compute"
        " Capability: 8.0, Driver API Version: 12.0, Runtime API Version: 11.8\n"
        "Epoch 0 step 120 loss 2.3011\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 88, in <module>\n'
        "    loss.backward()\n"
        "OSError: \n\n" + PADDLE_CXX_HEAD + "ExternalError: CUDA error(2), out of memory.\n"
        "  [Hint: 'cudaErrorMemoryAllocation'. The API call failed because it was unable to"
        " allocate enough memory to perform the requested operation. ] (at"
        " /paddle/paddle/phi/backends/gpu/gpu_info.cc:301)\n",
        "gpu_oom",
    ),
    # paddle.distributed.launch in a container with the default /dev/shm: NCCL's shared-memory
    # transport fails and enforce.h prints its errno and advice.
    "paddle-nccl-shm": (
        "LAUNCH INFO 2024-03-02 10:14:02,118 -----------  Configuration  ----------------------\n"
        "LAUNCH INFO 2024-03-02 10:14:02,118 devices: 0,1,2,3\n"
        "OSError: (External) NCCL error(2), unhandled system error.  Detail: No space left on"
        " device\n"
        "Please try one of the following solutions:\n"
        "1. export NCCL_SHM_DISABLE=1;\n"
        "2. export NCCL_P2P_LEVEL=SYS;\n"
        "3. Increase shared memory by setting the -shm-size option when starting docker"
        " container, e.g., setting  -shm-size=2g.\n"
        "  [Hint: 'ncclSystemError'. A call to the OS failed. ]"
        " (at /paddle/paddle/fluid/platform/collective_helper.cc:70)\n",
        "shm",
    ),
    # A PaddleOCR container whose image lacks cuDNN: the loader's warning, then the segfault.
    "paddle-segfault-after-cudnn-missing": (
        "W1111 17:02:31.435693    46 dynamic_loader.cc:314] The third-party dynamic library"
        " (libcudnn.so) that Paddle depends on is not configured correctly. (error code is"
        " /usr/local/cuda/lib64/libcudnn.so: cannot open shared object file: No such file or"
        " directory)\n" + PADDLE_CXX_HEAD + "FatalError: `Segmentation fault` is detected by the"
        " operating system.\n"
        '  [TimeInfo: *** Aborted at 1699722151 (unix time) try "date -d @1699722151" if you'
        " are using GNU date ***]\n"
        "  [SignalInfo: *** SIGSEGV (@0x0) received by PID 46 (TID 0x7f5e8a9c2740) from PID 0"
        " ***]\n",
        "driver",
    ),
    # TorchSharp (.NET): PyTorch's allocator message inside the wrapper's exception.
    "torchsharp-cuda-oom": (
        "Epoch 3, batch 200: loss 0.4182\n"
        "Unhandled exception. System.Runtime.InteropServices.ExternalException (0x80004005):"
        " CUDA out of memory. Tried to allocate 512.00 MiB (GPU 0; 7.79 GiB total capacity;"
        " 6.53 GiB already allocated; 117.44 MiB free; 6.59 GiB reserved in total by PyTorch)\n"
        "   at TorchSharp.PInvoke.NativeMethods.THSTensor_matmul(IntPtr left, IntPtr right)\n"
        "   at TorchSharp.torch.Tensor.matmul(Tensor target)\n",
        "gpu_oom",
    ),
    # R torch: the same message through Rcpp's `Error in cpp_...`.
    "r-torch-cuda-oom": (
        "Epoch 2 | Train loss 0.8831\n"
        "Error in cpp_torch_namespace_matmul_self_Tensor_other_Tensor(self, other) :"
        " CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of"
        " 23.65 GiB of which 1.19 GiB is free.\n"
        "Calls: <Anonymous> ... torch_matmul -> call_c_function -> do_call -> do.call\n"
        "Execution halted\n",
        "gpu_oom",
    ),
    # R torch on a node whose driver is older than the bundled CUDA runtime.
    "r-torch-driver-too-old": (
        "Error in cpp_cuda_is_available() : CUDA error: CUDA driver version is insufficient"
        " for CUDA runtime version\n"
        "Execution halted\n",
        "driver",
    ),
}


@pytest.mark.parametrize("name", sorted(LOGS))
def test_log_names_the_cause(tmp_path: Path, name: str) -> None:
    text, category = LOGS[name]
    report = log_report(tmp_path / name, text)
    assert_leads(report, category)
    assert str(report.verdict) != "none"


def test_pinned_memory_fallback_with_the_server_serving_is_no_failure(tmp_path: Path) -> None:
    # A llama-server on two Vulkan GPUs with a KV cache kept on the host (the shape of a public
    # report's log): the older two-line warning, then the context is built and requests served.
    text = (
        "init:        CPU KV buffer size = 48000.00 MiB\n"
        "ggml_vulkan: Failed to allocate pinned memory.\n"
        "ggml_vulkan: Requested buffer size exceeds device memory allocation limit:"
        " ErrorOutOfDeviceMemory\n"
        "llama_context:    Vulkan0 compute buffer size =   616.06 MiB\n"
        "llama_context: Vulkan_Host compute buffer size = 21014.01 MiB\n"
        "main: server is listening on http://127.0.0.1:8080 - starting the main loop\n"
        "srv  update_slots: all slots are idle\n"
        "slot      release: id  0 | task 0 | stop processing: n_past = 412, truncated = 0\n"
        "srv  log_server_r: request: POST /completion 127.0.0.1 200\n"
    )
    report = log_report(tmp_path / "pinned", text)
    assert str(report.verdict) == "none", [
        (c.category.value, round(c.confidence, 2)) for c in report.causes
    ]


@pytest.mark.parametrize("table", ["ggml_backends", "paddle_errors"])
def test_the_new_tables_are_fully_covered(table: str, shipped_coverage: dict[str, Any]) -> None:
    rows = shipped_coverage
    assert rows[table].missing == ()
    assert rows[table].covered == len(load_catalog(tables_dir() / f"{table}.toml").entries)


@pytest.mark.parametrize("table", ["ggml_backends", "paddle_errors"])
def test_each_example_counts_once(table: str) -> None:
    """One failure rule per printed line: the new tables do not re-count a message that
    another table's rule already owns."""
    failing = [rule for rule in shipped_rules() if rule.failure]
    for entry in load_catalog(tables_dir() / f"{table}.toml").entries:
        hits = [rule.id for rule in failing if rule.match_line(entry.example) is not None]
        assert len(hits) == 1, (entry.id, hits)


WRAPPED = {
    # TorchSharp's ExternalException and R torch's Rcpp error around PyTorch's own messages.
    "System.Runtime.InteropServices.ExternalException (0x80004005): CUDA error: an illegal"
    " memory access was encountered": "hardware-cuda-illegal-memory-access",
    "Error in cpp_cuda_synchronize(device) : CUDA error: an illegal memory access was"
    " encountered": "hardware-cuda-illegal-memory-access",
    "System.Runtime.InteropServices.ExternalException (0x80004005): DataLoader worker"
    " (pid 1234) is killed by signal: Bus error.": "shm-dataloader-bus-error",
    "System.Runtime.InteropServices.ExternalException (0x80004005): NCCL error in:"
    " ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, unhandled system error, NCCL"
    " version 2.18.1": "shm-nccl-system-error",
    "Error in (function (self, other) : CUDA error: device-side assert"
    " triggered": "hardware-cuda-programming-error",
}


@pytest.mark.parametrize("line", sorted(WRAPPED))
def test_pytorch_rules_see_through_other_languages_wrappers(line: str) -> None:
    hits = {rule.id for rule in shipped_rules() if rule.match_line(line) is not None}
    assert WRAPPED[line] in hits, hits
