"""Mechanisms learned from batch 2026-12-07-dy's misses, tested on lines and logs written for
the tests in each program's format (the sources are in the rules' and tables' comments): a
zero-byte placeholder of an NVIDIA library in a Jetson container, a CUDA package refusing a
newer driver, deviceQuery's arrow line, MediaPipe's EGL check, the Rust hf-hub timeout, and
urllib3's DNS failure class."""

from __future__ import annotations

from pathlib import Path

from crashlens.model import Ending
from mechanism_helpers import ending_of, log_report, report_of

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "./posenet: error while loading shared libraries: /usr/lib/aarch64-linux-gnu/"
        "libnvinfer_plugin.so.8: file too short",
        "driver-library-missing",
    ),
    (
        "│  ┌ Error: This version of CUDA.jl only supports NVIDIA drivers for CUDA 11.x or 12.x"
        " (yours is for CUDA 13.2.0)",
        "driver-toolkit-rejects-newer-driver",
    ),
    (
        "RET_CHECK failure (mediapipe/gpu/gl_context_egl.cc:81) egl_initialized Unable to"
        " initialize EGL",
        "driver-egl-initialize-failed",
    ),
    (
        "Error: request error: https://huggingface.co/openai/whisper-tiny/resolve/main/"
        "model.safetensors: Network Error: timed out reading response",
        "network-http-read-timed-out",
    ),
    (
        "    raise ConnectionError(e, request=request) (Caused by NameResolutionError("
        '"<urllib3.connection.HTTPSConnection object at 0x7f3',
        "network-name-resolution",
    ),
]


def test_device_querys_arrow_line_names_the_runtime_error(tmp_path: Path) -> None:
    log = (
        "./deviceQuery Starting...\n"
        "\n"
        " CUDA Device Query (Runtime API) version (CUDART static linking)\n"
        "\n"
        "cudaGetDeviceCount returned 35\n"
        "-> CUDA driver version is insufficient for CUDA runtime version\n"
        "Result = FAIL\n"
    )
    report = report_of(tmp_path / "case", {"devicequery.log": log})
    assert str(report.verdict) == "driver"
    assert ending_of(report) is Ending.DIED


def test_an_arrow_before_an_ordinary_word_is_not_a_cuda_error(tmp_path: Path) -> None:
    report = log_report(tmp_path / "case", "step 10 -> loss 0.31\nstep 20 -> loss 0.29\n")
    assert report.causes == ()
