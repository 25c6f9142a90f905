"""Mechanisms learned from batch 2026-12-06-dj's misses, each tested on lines written for the
test, not taken from the cases: ONNX Runtime binding a GPU input with no GPU provider registered,
PaddlePaddle's dynamic loader failing to open a CUDA library (its line quoted alone), and
Paddle's device check when the CUDA runtime counts no GPU."""

from __future__ import annotations

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "RuntimeError: Error when binding output: There's no data transfer registered for copying"
        " tensors from Device:[DeviceType:1 MemoryType:0 DeviceId:1] to Device:[DeviceType:0"
        " MemoryType:0 DeviceId:0]",
        "driver-onnxruntime-gpu-provider-unavailable",
    ),
    (
        "W1203 08:14:27.510 dynamic_loader.cc:307] Error: Cannot load cufft shared library.",
        "driver-paddle-dynload-library-missing",
    ),
    (
        "  (InvalidArgument) Expected id < GetCUDADeviceCount(), but received id:2 >="
        " GetCUDADeviceCount():0.",
        "driver-no-gpu-visible",
    ),
]
