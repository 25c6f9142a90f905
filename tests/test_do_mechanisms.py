"""Mechanisms learned from batch 2026-12-07-do's misses, each tested on lines written for the
test, not taken from the cases: Apptainer refused a mount in its unprivileged mode, TensorRT's
builder found no format for a plugin (memory, per NVIDIA's TensorRT-LLM troubleshooting), and
NVIDIA's container hook failing without its own message (the host's driver side)."""

from __future__ import annotations

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "FATAL:   container creation failed: mount /gpfs/datasets->/gpfs/datasets error: while"
        " mounting /gpfs/datasets: could not mount /gpfs/datasets: operation not supported",
        "permissions-apptainer-unprivileged-mount-refused",
    ),
    (
        "[12/01/2024-08:00:00] [TRT] [E] 9: QWenForCausalLM/transformer/layers/11/attention/"
        "dense/PLUGIN_V2_Gemm_0: could not find any supported formats consistent with"
        " input/output data types",
        "gpu-oom-tensorrt-plugin-no-supported-formats",
    ),
    (
        "Error: OCI runtime error: runc: error executing hook `/usr/bin/nvidia-container-toolkit`"
        " (exit code: 1)",
        "driver-container-gpu-hook-failed",
    ),
]
