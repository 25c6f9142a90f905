"""Mechanisms learned from batch 2026-12-07-eg's misses (RL and simulation, scientific
applications, speech, RAPIDS, LLM training, JAX/XLA, older frameworks, storage layers), tested
on lines written for the tests, none a case's own: pinned host memory refused with CUDA's
out-of-memory code, Python 2's `exceptions.MemoryError`, toolchains too old for the GPU or the
build (ptxas, LLVM's PTX target check, nvcc's C++ standard, GCC 11's headers under nvcc 11.x),
GPUDirect Storage's driver missing, OpenGL on Mesa's software renderer, Cython's signature
check between CUDA bindings, TensorStore's lock on a filesystem without locks, TensorFlow's
`<path>; Input/output error` and corrupted records, programs that refuse root, and Unreal
Engine's harmless xdg-user-dir lookup; an agent's bare SIGTERM is no healthy ending."""

from __future__ import annotations

from pathlib import Path

from crashlens.pipeline import AnalyzeOptions, analyze

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "2023-03-02 08:15:11.000001: E tensorflow/compiler/xla/stream_executor/cuda/"
        "cuda_driver.cc:733] failed to alloc 8589934592 bytes on host: CUDA_ERROR_OUT_OF_MEMORY:"
        " out of memory",
        "host-oom-cuda-pinned-host-alloc-failed",
    ),
    (
        "W tensorflow/core/common_runtime/gpu/gpu_host_allocator.h:49] could not allocate pinned"
        " host memory of size: 8589934592",
        "host-oom-cuda-pinned-host-alloc-failed",
    ),
    (
        "exceptions.MemoryError: Unable to allocate 6.1 GiB for an array with shape"
        " (20000, 3, 160, 160) and data type float64",
        "host-oom-python-memoryerror",
    ),
    (
        "ptxas fatal   : Value 'sm_100a' is not defined for option 'gpu-name'",
        "driver-nvcc-unsupported-gpu-architecture",
    ),
    (
        "Reason: PTX version 8.4 does not support target 'sm_100a'.",
        "driver-nvcc-unsupported-gpu-architecture",
    ),
    (
        "nvcc fatal   : Value 'c++17' is not defined for option 'std'",
        "driver-nvcc-older-than-build-needs",
    ),
    (
        "/usr/include/c++/11/bits/std_function.h:435:145: error: parameter packs not expanded"
        " with '...':",
        "driver-host-compiler-unsupported-by-cuda",
    ),
    (
        "RuntimeError: cuFile error (5033): NVFS driver initialization error",
        "driver-gds-cufile-unavailable",
    ),
    (
        "OpenGL renderer string: llvmpipe (LLVM 17.0.6, 256 bits)",
        "driver-opengl-software-renderer",
    ),
    (
        "TypeError: C function cuda.ccudart.cudaMemcpyAsync has wrong signature (expected"
        " __pyx_t_4cuda_7ccudart_cudaError_t (void *), got cudaError_t (void *))",
        "driver-cuda-python-binding-mismatch",
    ),
    (
        'ValueError: FAILED_PRECONDITION: Error writing local file "/lustre/u/run/ckpt/4/'
        '_CHECKPOINT_METADATA": Failed to acquire lock on file: /lustre/u/run/ckpt/4/'
        "_CHECKPOINT_METADATA.__lock [OS error: Function not implemented]",
        "filesystem-lock-not-supported",
    ),
    (
        "tensorflow.python.framework.errors_impl.UnknownError: /mnt/fuse/coco/train-0007;"
        " Input/output error [Op:IteratorGetNext]",
        "filesystem-io-error",
    ),
    (
        "tensorflow.python.framework.errors_impl.DataLossError: truncated record at 1048576",
        "filesystem-record-file-corrupt",
    ),
    ("Refusing to run with the root privileges.", "permissions-program-refuses-root"),
    (
        "[rank3]: RuntimeError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!",
        "driver-no-gpu-visible",
    ),
    ("sh: 1: xdg-user-dir: not found", "driver-ue4-xdg-user-dir-missing-harmless"),
]


def _verdict(tmp_path: Path, text: str) -> str:
    (tmp_path / "train.log").write_text(text, encoding="utf-8")
    return str(analyze([str(tmp_path)], AnalyzeOptions()).verdict)


def test_a_pinned_host_buffer_refused_is_host_memory_not_the_gpu(tmp_path: Path) -> None:
    text = (
        "E tensorflow/stream_executor/cuda/cuda_driver.cc:868] failed to alloc 2147483648 bytes"
        " on host: CUDA_ERROR_OUT_OF_MEMORY: out of memory\n"
        "W ./tensorflow/core/common_runtime/gpu/cuda_host_allocator.h:44] could not allocate"
        " pinned host memory of size: 2147483648\n"
    )
    assert _verdict(tmp_path, text) == "host_oom"


def test_an_agent_ended_by_an_unnamed_sigterm_is_not_called_healthy(tmp_path: Path) -> None:
    """SIGTERM alone: a deliberate stop and a watchdog's kill read the same (unknown)."""
    for received in ("15", "Signals.SIGTERM"):
        text = (
            f"WARNING:torch.distributed.elastic.agent.server.api:Received {received} death"
            " signal, shutting down workers\n"
            "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 812 closing"
            " signal SIGTERM\n"
        )
        assert _verdict(tmp_path, text) == "unknown", received


def test_an_agent_stopped_by_ctrl_c_or_a_cancelled_job_is_still_a_stop(tmp_path: Path) -> None:
    ctrl_c = (
        "^CWARNING:torch.distributed.elastic.agent.server.api:Received 2 death signal,"
        " shutting down workers\n"
    )
    assert _verdict(tmp_path, ctrl_c) == "none"
    cancelled = (
        "WARNING:torch.distributed.elastic.agent.server.api:Received Signals.SIGTERM death"
        " signal, shutting down workers\n"
        "slurmstepd: error: *** JOB 4242 ON node-01 CANCELLED AT 2026-01-01T10:00:00 ***\n"
    )
    assert _verdict(tmp_path, cancelled) == "none"
