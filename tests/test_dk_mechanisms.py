"""Mechanisms learned from batch 2026-12-06-dk's misses, each tested on lines written for the
test, not taken from the cases: TensorRT 10 naming a GPU architecture it dropped, ONNX Runtime's
C API failing to load its CUDA provider, llama.cpp's CUDA start-up failing with the runtime's
unknown error, Ray's CLI giving up on the head's GCS, Python refusing a server's TLS
certificate, a Jetson's nvmap allocator out of memory, PyTorch's allocator asserting while it
reports an out-of-memory, NCCL 1's `invalid data type` under an NCCL 2 build, TensorPipe's
InfiniBand transport failing a verbs call, and Julia's InterruptException as a user's stop."""

from __future__ import annotations

from pathlib import Path

from crashlens.model import Ending
from mechanism_helpers import ending_of, log_report, report_of

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "[TRT] [E] IBuilder::buildSerializedNetwork: Error Code 9: API Usage Error (Target GPU"
        " SM 60 is not supported by this TensorRT release.)",
        "driver-tensorrt-gpu-unsupported",
    ),
    (
        "Exception in thread main ai.onnxruntime.OrtException: Error code - ORT_RUNTIME_EXCEPTION"
        " - message: OrtSessionOptionsAppendExecutionProvider_CUDA: Failed to load shared library",
        "driver-onnxruntime-gpu-provider-unavailable",
    ),
    (
        "llama_server: ggml_cuda_init: failed to initialize CUDA: unknown error",
        "driver-cuda-error-unknown",
    ),
    (
        "ConnectionError: Unable to connect to GCS at 10.0.0.9:6380. Check that (1) Ray GCS with"
        " matching version started successfully at the specified address, and (2) there is no"
        " firewall setting preventing access.",
        "network-ray-gcs-connect-timed-out",
    ),
    (
        "ssl.SSLCertVerificationError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed:"
        " unable to get local issuer certificate (_ssl.c:992)",
        "network-tls-certificate-rejected",
    ),
    ("NvMapMemAllocInternalTagged: 1075072517 error 12", "gpu-oom-jetson-nvmap-alloc-failed"),
    (
        "RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at"
        ' "/tmp/pytorch/c10/cuda/CUDACachingAllocator.cpp":1001, please report a bug to PyTorch.',
        "gpu-oom-allocator-nvml-report-assert",
    ),
    (
        "tensorflow.python.framework.errors_impl.UnknownError: ncclBroadcast failed: invalid"
        " data type",
        "driver-nccl-library-type-mismatch",
    ),
    (
        'RuntimeError: In create at tensorpipe/transport/ibv/context_impl.cc:41 "": No such device',
        "network-tensorpipe-ibv-transport-failed",
    ),
]

# read by tests/test_mechanism_endings.py
LOGS_AND_ENDINGS = [
    (
        "julia-ctrl-c",
        "Epoch 3:  40%|████████           | ETA: 0:01:12\nERROR: InterruptException:\n",
        Ending.STOPPED,
    ),
    (
        "julia-script-ctrl-c",
        "step 120 loss 0.41\nERROR: LoadError: InterruptException:\nStacktrace:\n"
        "  [1] poptask(W::Base.IntrusiveLinkedListSynchronized{Task})\n"
        "    @ Base ./task.jl:974\n"
        "  [2] top-level scope\n    @ ~/train.jl:88\nin expression starting at ~/train.jl:80\n",
        Ending.STOPPED,
    ),
    # any other uncaught Julia error, its stack trace ending the log: the run died
    (
        "julia-error-stacktrace",
        "step 7 loss 0.9\nERROR: LoadError: DimensionMismatch: arrays could not be broadcast\n"
        "Stacktrace:\n  [1] _bcs1\n    @ ./broadcast.jl:555\n",
        Ending.DIED,
    ),
    # a message of several lines between the report and its stack trace (CUDA.jl's pool)
    (
        "julia-multiline-error-stacktrace",
        "epoch 2 loss 0.31\nERROR: LoadError: Out of GPU memory trying to allocate 1.953 GiB\n"
        "Effective GPU memory usage: 99.83% (15.734 GiB/15.761 GiB)\n"
        "Memory pool usage: 13.696 GiB (13.719 GiB reserved)\n"
        "Stacktrace:\n  [1] macro expansion\n    @ ~/.julia/packages/CUDA/src/pool.jl:411\n",
        Ending.DIED,
    ),
]


def test_a_julia_error_other_than_an_interrupt_is_a_death(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "julia-error", "step 7 loss 0.9\nERROR: LoadError: DimensionMismatch:\n"
    )
    assert ending_of(report) is Ending.DIED


def test_a_small_memlock_explains_a_local_protection_error(tmp_path: Path) -> None:
    # the queried limit in its own file (`ulimit -l` and its value) meets the verbs completion
    completion = (
        "node-02:1812:1903 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from"
        " peer 10.0.0.3<54012> with status=IBV_WC_LOC_PROT_ERR(4) opcode=0 len=0 vendor err 81"
        " (Recv)\n"
    )
    limited = report_of(
        tmp_path / "limited", {"train.log": completion, "ulimit.txt": "$ ulimit -l\n8192\n"}
    )
    assert str(limited.verdict) == "permissions"
    unlimited = report_of(
        tmp_path / "unlimited", {"train.log": completion, "ulimit.txt": "$ ulimit -l\nunlimited\n"}
    )
    assert str(unlimited.verdict) == "network"
