"""Mechanisms learned from batch 2026-12-07-ek's misses (troubleshooting documents kept in
repositories, runs that finished or stopped despite alarming lines, accelerators other than
NVIDIA's, earlier leads), tested on lines written for the tests, none a case's own: IPEX finding
no SYCL device, an undefined symbol of torch's own C++ namespaces without its library's path,
the TPU's scalar memory, XLA's cuBLAS handle, the Apple GPU stack (MPS's macOS check, MLX's
metallib and kernels), the KFD skipping a GPU it does not list and rocminfo's open of it, and
gdb's refused attach in a crash report (no longer a permissions cause)."""

from __future__ import annotations

from mechanism_helpers import rules_hitting

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "RuntimeError: Number of dpcpp devices should be greater than zero!",
        "driver-intel-gpu-unavailable",
    ),
    (
        "ImportError: undefined symbol: _ZN3c1017RegisterOperatorsD1Ev",
        "driver-undefined-symbol",
    ),
    (
        "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out"
        " of memory in memory space smem. Used 1.00M of 1.00M smem. Exceeded smem capacity by"
        " 3.2K.",
        "gpu-oom-xla-tf-resource-exhausted",
    ),
    (
        "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: CustomCall failed:"
        " jaxlib/gpu/blas_kernels.cc:50: operation cublasCreate(&handle) failed: cuBlas has not"
        " been initialized",
        "gpu-oom-library-handle-create-failed",
    ),
    (
        "RuntimeError: The MPS backend is supported on MacOS 14.0+.",
        "driver-apple-gpu-software-unsupported",
    ),
    (
        "RuntimeError: Failed to load the default metallib. This library is using language"
        " version 4.0 which is not supported on this OS",
        "driver-apple-gpu-software-unsupported",
    ),
    (
        "RuntimeError: [metal::Device] Unable to load kernel steel_gemm_fused_nn_float16",
        "driver-apple-gpu-software-unsupported",
    ),
    (
        "[    3.101010] kfd kfd: DID 73bf is missing in supported_devices",
        "driver-rocm-runtime-driver-unsupported",
    ),
    (
        "Unable to open /dev/kfd read-write: Cannot allocate memory",
        "driver-rocm-gpu-unavailable",
    ),
]


def test_a_refused_debugger_attach_in_a_crash_report_names_no_permissions_cause() -> None:
    # ggml's abort prints its backtrace through `gdb -p`, which Yama refuses in containers
    assert "permissions-operation-not-permitted" not in rules_hitting(
        "ptrace: Operation not permitted."
    )
    # a program's own refused call still reads as one
    assert "permissions-operation-not-permitted" in rules_hitting(
        "chown: changing ownership of '/data/run': Operation not permitted"
    )
