"""Mechanisms learned from batch 2026-12-07-ed's misses (an HPC support forum, centre guides,
vendor troubleshooting docs, serving and vision stacks, Kubernetes operations, stacks outside
Python), tested on lines written for the tests, none a case's own: nvidia-smi's corrupted
infoROM read as the board (a root cause now, not context), `ls -l` entries it could not stat,
coreutils' network errno on a relative path, Triton's unhealthy Python stub, NCCL_NET naming a
network no plugin provides, ggml's and cudarc's missing kernels for this GPU, MATLAB's driver
check and GPU libraries, nvidia-persistenced failing, the GPU Operator's driver pod failing,
Java's AccessDeniedException, a dropped SSH session, and the CUDA.jl forms of library codes."""

from __future__ import annotations

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    ("WARNING: infoROM is corrupted at gpu 0000:41:00.0", "hardware-gpu-inforom-corrupted"),
    ("d?????????? ? ? ? ?            ? datasets", "filesystem-directory-entries-unstatable"),
    (
        "-????????? ? ? ? ?            ? model.safetensors",
        "filesystem-directory-entries-unstatable",
    ),
    (
        "cat: 'run-17/stdout.txt': Communication error on send",
        "filesystem-network-errno-on-a-path",
    ),
    ("Stub process 'tokenizer_0_1' is not healthy", "shm-triton-python-stub-unhealthy"),
    (
        "gpu-03:2211:2290 [1] net.cc:626 NCCL WARN Error: network IB not found.",
        "driver-nccl-no-net-plugin-initialized",
    ),
    (
        "ggml-cuda was compiled without support for the current GPU architecture.",
        "driver-no-kernel-image",
    ),
    (
        'Error: DriverError(CUDA_ERROR_NOT_FOUND, "named symbol not found") when loading rope_f16',
        "driver-no-kernel-image",
    ),
    (
        "    The CUDA driver was found, but it is too old. The CUDA driver on your system supports"
        " CUDA version 10.1. The required CUDA version",
        "driver-matlab-gpu-driver-problem",
    ),
    (
        "libmwgpu.so: cannot open shared object file: No such file or directory",
        "driver-library-missing",
    ),
    (
        "Jan 02 03:04:05 gpu-07 systemd[1]: Failed to start nvidia-persistenced.service.",
        "driver-nvidia-persistenced-failed",
    ),
    (
        "nvidia-driver-daemonset-6x2lp                      0/1     Init:CrashLoopBackOff   5   9m",
        "driver-gpu-operator-driver-pod-failing",
    ),
    (
        "java.nio.file.AccessDeniedException: /shared/models/cache/lock",
        "permissions-permission-denied",
    ),
    ("client_loop: send disconnect: Connection reset by peer", "network-ssh-session-dropped"),
    (
        "CUFFTError(code 2, cuFFT failed to allocate GPU or CPU memory)",
        "gpu-oom-cublas-cudnn-alloc-failed",
    ),
    ("ERROR: LoadError: CUDAdrv.CuError(2, nothing)", "gpu-oom-cuda-error-out-of-memory"),
]
