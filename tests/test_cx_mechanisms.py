"""Mechanisms learned from batch 2026-12-06-cx's misses, each tested on lines and logs written for
the test, not taken from the cases: cuBLAS's status messages as cublasGetStatusString gives them
(code that prints the message instead of the name: XLA, ggml, CUDA.jl), ggml's kernels built
without code for the GPU's architecture, ggml's CUDA error report and failed GGML_ASSERT as the
lines of a dying process, the summary TensorFlow's BFC allocator prints when an allocation fails
for good, MATLAB's GPU out-of-memory error, and NCCL's NVLink SHARP multicast bind failing with
its hint about the Fabric Manager; the bare status numbers of the CUDA math libraries
(`printed_codes`) and CuPy's names of NCCL results."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.errors import PatternError
from crashlens.model import Ending
from crashlens.parsers.tables import parse_catalog
from mechanism_helpers import log_report, rules_hitting

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to execute XLA Runtime executable:"
        " run time error: custom call 'xla.gpu.gemm' failed: the GPU program failed to execute.",
        "gpu-oom-cudnn-internal-error",
    ),
    ("CUDA error: the resource allocation failed", "gpu-oom-cublas-cudnn-alloc-failed"),
    (
        "/src/llama.cpp/ggml/src/ggml-cuda/mmq.cuh:3012: ERROR: CUDA kernel mul_mat_q has no"
        " device code compatible with CUDA arch 500. ggml-cuda.cu was compiled for: 610,700,750",
        "driver-no-kernel-image",
    ),
    (
        "2023-07-14 09:01:22.331090: I tensorflow/core/common_runtime/bfc_allocator.cc:1101]"
        " Sum Total of in-use chunks: 7.62GiB",
        "gpu-oom-framework-allocator-exhausted",
    ),
    (
        "Out of memory on device. To view more detail about available memory on the GPU, use"
        " 'gpuDevice()'. If the problem persists, reset the GPU by calling 'gpuDevice(1)'.",
        "gpu-oom-framework-allocator-exhausted",
    ),
    (
        "Failed to bind NVLink SHARP (NVLS) Multicast memory of size 1048576 : CUDA error 800"
        " 'operation not permitted'.",
        "driver-nccl-nvls-cuda-failure",
    ),
    # a math library's bare status number, as check macros print it (printed_codes)
    ("cuBLAS error 13 at /src/ggml/ggml-cuda.cu:6214", "gpu-oom-cudnn-internal-error"),
    ("cublas error 3 at kernels/gemm.cu:41", "gpu-oom-cublas-cudnn-alloc-failed"),
    (
        "Curand error 203 - /opt/marian/src/tensors/gpu/curand_algorithm.cu:52:"
        " curandCreateGenerator(&generator_, CURAND_RNG_PSEUDO_DEFAULT)",
        "driver-cuda-device-unavailable",
    ),
    ("cusolver error 6 at solver/qr.cu:88", "gpu-oom-cudnn-internal-error"),
    # CuPy's names of NCCL results
    (
        "cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_SYSTEM_ERROR: unhandled system error",
        "shm-nccl-system-error",
    ),
    ("cupy.cuda.nccl.NcclError: NCCL_ERROR_INTERNAL_ERROR", "driver-nccl-internal-error"),
]

# read by tests/test_mechanism_endings.py
LOGS_AND_ENDINGS = [
    # ggml aborts after its CUDA error block: its `current device` line is not a warning the
    # program goes on from, even when the paste stops there
    (
        "ggml-cuda-error",
        "llama_new_context_with_model: n_ctx = 8192\n"
        "CUDA error: an illegal memory access was encountered\n"
        "  current device: 1, in function ggml_backend_cuda_synchronize at"
        " /src/ggml/src/ggml-cuda/ggml-cuda.cu:2503\n",
        Ending.DIED,
    ),
    (
        "ggml-assert",
        "llama_model_load: loading model from /models/m.gguf\n"
        "GGML_ASSERT: /src/ggml/src/ggml-cuda.cu:9123: src0->type == GGML_TYPE_F16\n",
        Ending.DIED,
    ),
]


def test_cublas_generic_messages_are_not_taken_from_other_software() -> None:
    """Only cuBLAS's distinctive messages are catalog texts, not its generic ones."""
    assert rules_hitting("error: an internal operation failed, retrying") == []


def test_tensorflows_failed_allocation_summary_is_no_warning_to_go_on_from(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "bfc",
        "Epoch 3/50\n"
        "2023-07-14 09:01:22.331090: I tensorflow/core/common_runtime/bfc_allocator.cc:1101]"
        " Sum Total of in-use chunks: 7.62GiB\n"
        "2023-07-14 09:01:22.331112: I tensorflow/core/common_runtime/bfc_allocator.cc:1103]"
        " total_region_allocated_bytes_: 8192327680 memory_limit_: 8192327680 available bytes: 0\n"
        "2023-07-14 09:01:22.340801: W tensorflow/core/framework/op_kernel.cc:1745]"
        " Resource exhausted: failed to allocate memory\n",
    )
    assert str(report.verdict) == "gpu_oom"


def _handle_failure(free_bytes: int) -> str:
    return (
        "2024-02-03 11:20:41.118201: E external/xla/xla/stream_executor/cuda/cuda_dnn.cc:439]"
        " Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n"
        "2024-02-03 11:20:41.118250: E external/xla/xla/stream_executor/cuda/cuda_dnn.cc:443]"
        f" Memory usage: {free_bytes} bytes free, 25438715904 bytes total.\n"
        "jaxlib.xla_extension.XlaRuntimeError: FAILED_PRECONDITION: DNN library initialization"
        " failed. Look at the errors above for more details.\n"
    )


def test_a_cudnn_handle_failure_with_memory_free_is_not_memory(tmp_path: Path) -> None:
    """Six GiB free when the handle could not be created: the library, not the memory."""
    report = log_report(tmp_path / "free", _handle_failure(6_442_450_944))
    assert str(report.verdict) == "driver"
    assert all(cause.category.value != "gpu_oom" for cause in report.causes)


def test_a_cudnn_handle_failure_with_no_memory_free_keeps_the_memory_reading(
    tmp_path: Path,
) -> None:
    report = log_report(tmp_path / "full", _handle_failure(15_728_640))
    assert "gpu_oom" in {cause.category.value for cause in report.causes}
    assert "driver-cudnn-handle-failed-with-memory-free" not in {
        item.rule for cause in report.causes for item in cause.evidence
    }


def test_a_status_number_is_read_whole() -> None:
    """`error 1 at` (NOT_INITIALIZED) is not a prefix of `error 11 at` (MAPPING_ERROR)."""
    assert "gpu-oom-library-handle-create-failed" not in rules_hitting("cuBLAS error 11 at x.cu:7")


def test_printed_codes_forms_must_name_the_code() -> None:
    table = {
        "catalog": {
            "name": "t",
            "title": "t",
            "sources": ["https://example.org/t"],
            "printed_codes": [{"prefix": "X_", "forms": ["x error at"]}],
        },
        "entry": [
            {
                "id": "X_ONE",
                "code": 1,
                "texts": ["X_ONE"],
                "category": "driver",
                "role": "root",
                "meaning": "m",
                "source": "https://example.org/t",
                "example": "X_ONE",
            }
        ],
    }
    with pytest.raises(PatternError):
        parse_catalog(table, "t.toml")
    table["catalog"]["printed_codes"] = [{"prefix": "X_", "forms": ["x error {code} at"]}]
    assert "x error 1 at" in parse_catalog(table, "t.toml").entries[0].texts
