"""Mechanisms learned from batch 2026-12-07-ea's misses (simulation and science codes, vector
search, GPU sharing on Kubernetes, speech and video tools), tested on lines and logs written
for the tests in each program's format (the sources are in the rules' and tables' comments),
none of them a case's own line: capability refusals of TEI and RAPIDS, nvlink's toolkit check,
GROMACS finding no GPU, ROCm libraries missing, Kokkos' architecture check, the NVIDIA
installer's failed module build, CTranslate2 and OCCA builds without a GPU back end, numba
loading a library without the driver API, the CUDA driver's bare result codes (LAMMPS' Geryon,
NVIDIA Warp), ncnn's bare VkResult numbers, COLMAP's CUDA check and watchdog note, Faiss'
scratch stack, HAMi-core's GPU memory share, MATLAB's host memory error, FFmpeg's failed
writes and vLLM's startup memory check wrapped over two lines."""

from __future__ import annotations

from pathlib import Path

from crashlens.model import Ending
from mechanism_helpers import assert_leads, ending_of, log_report

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "Error: Could not start backend: Runtime compute cap 86 is not compatible with compile"
        " time compute cap 80",
        "driver-library-rejects-gpu-capability",
    ),
    (
        "cuml.common.exceptions.UnsupportedCUDAError: A GPU with NVIDIA Pascal™ (Compute"
        " Capability 6.0) or newer architecture is required.",
        "driver-library-rejects-gpu-capability",
    ),
    (
        "nvlink fatal   : Input file '/tmp/build/kernels.cubin' newer than toolkit (124 vs 121)",
        "driver-xla-cuda-toolkit-missing",
    ),
    (
        "Cannot run PME on a GPU because no GPU is detected.",
        "driver-no-gpu-visible",
    ),
    (
        "ImportError: librocblas.so.4: cannot open shared object file: No such file or directory",
        "driver-library-missing",
    ),
    (
        "Kokkos::Cuda::initialize ERROR: running kernels compiled for compute capability 9.0"
        " (< 9.0) on device with compute capability 8.6 (>=8.0), this would give incorrect"
        " results!",
        "driver-no-kernel-image",
    ),
    (
        'ERROR: An error occurred while performing the step: "Building kernel modules". See'
        " /var/log/nvidia-installer.log for details.",
        "driver-module-not-built-for-kernel",
    ),
    (
        "RuntimeError: Conv1D on GPU currently requires the cuDNN library which is not"
        " integrated in this build",
        "driver-framework-built-without-gpu",
    ),
    (
        "[HIP] mode is not enabled, defaulting to [Serial] mode",
        "driver-framework-built-without-gpu",
    ),
    (
        "numba.cuda.cudadrv.driver.CudaDriverError: driver missing function: cuCtxGetDevice.",
        "driver-numba-cuda-toolkit-missing",
    ),
    (
        "Warp CUDA error: Failed to get driver entry point 'cuCtxGetCurrent' (CUDA error 34)",
        "driver-cuda-toolchain-error",
    ),
    (
        "Cuda driver error 2 in call at file '/opt/lammps/lib/gpu/geryon/nvd_memory.h' in"
        " line 187.",
        "gpu-oom-cuda-error-out-of-memory",
    ),
    ("vkAllocateMemory failed -2", "gpu-oom-vulkan-out-of-device-memory"),
    ("vkQueueSubmit failed -4", "driver-vulkan-device-lost"),
    ("vkCreateInstance failed -9", "driver-vulkan-driver-unavailable"),
    (
        "CUDA error at /opt/colmap/src/colmap/mvs/patch_match_cuda.cu:1482 - out of memory",
        "gpu-oom-cuda-check-at-source-out-of-memory",
    ),
    (
        "This error is likely caused by the graphics card timeout detection mechanism of your"
        " operating system. Please refer to the FAQ in the documentation on how to solve this"
        " problem.",
        "driver-display-watchdog-kernel-timeout",
    ),
    (
        "Faiss assertion 'err == cudaSuccess' failed in char* faiss::gpu::StackDeviceMemory"
        "::Stack::getAlloc(size_t, cudaStream_t) at gpu/utils/StackDeviceMemory.cpp:77",
        "gpu-oom-framework-allocator-exhausted",
    ),
    (
        "[HAMI-core ERROR (pid:88 thread=140122 allocator.c:53)]: Device 0 OOM 6442450944 /"
        " 6291456000",
        "gpu-oom-vgpu-memory-limit",
    ),
    (
        "[HAMI-core ERROR (pid:88 thread=140122 allocator.c:115)]: cuMemoryAllocate failed res=2",
        "gpu-oom-vgpu-memory-limit",
    ),
    (
        "Out of memory. Type HELP MEMORY for your options.",
        "host-oom-matlab-out-of-memory",
    ),
    (
        "av_interleaved_write_frame(): Input/output error",
        "filesystem-ffmpeg-output-write-failed",
    ),
    (
        "ValueError: Free memory on device cuda:0 (1.50/23.64 GiB) on startup is less",
        "gpu-oom-vllm-startup-free-memory",
    ),
    (
        "than desired GPU memory utilization (0.9, 21.28 GiB). Decrease GPU memory",
        "gpu-oom-vllm-startup-free-memory",
    ),
]


def test_an_mpi_abort_after_lammps_driver_result_code_names_the_driver(tmp_path: Path) -> None:
    # Geryon's bare CUresult (999: CUDA_ERROR_UNKNOWN is ambiguous; 35 insufficient driver is
    # the driver's), then MPICH's abort of every rank
    log = (
        "LAMMPS (2 Aug 2023 - Update 3)\n"
        "Cuda driver error 35 in call at file '/opt/lammps/lib/gpu/geryon/nvd_device.h' in"
        " line 303.\n"
        "Abort(-1) on node 0 (rank 0 in comm 0): application called MPI_Abort(MPI_COMM_WORLD,"
        " -1) - process 0\n"
    )
    report = log_report(tmp_path / "case", log)
    assert str(report.verdict) == "driver"
    assert_leads(report, "driver")


def test_a_gpu_sharing_refusal_before_an_unrecognised_cuda_error_is_gpu_memory(
    tmp_path: Path,
) -> None:
    log = (
        "[HAMI-core Msg(12:140011:libvgpu.c:836)]: Initializing.....\n"
        "[HAMI-core ERROR (pid:12 thread=140019 allocator.c:53)]: Device 0 OOM 9663676416 /"
        " 8589934592\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/infer.py", line 20, in <module>\n'
        "    out = model(batch.cuda())\n"
        "RuntimeError: CUDA error: unrecognized error code\n"
    )
    report = log_report(tmp_path / "case", log)
    assert str(report.verdict) == "gpu_oom"
    assert_leads(report, "gpu_oom")


def test_matlabs_host_memory_error_mid_sort_is_host_memory(tmp_path: Path) -> None:
    log = (
        "1203.11 sec, 801 / 2400 batches, 97 units, nspks: 1204331.0000\n"
        "Out of memory. Type HELP MEMORY for your options.\n"
        "\n"
        "Error in learnTemplates (line 112)\n"
    )
    report = log_report(tmp_path / "case", log)
    assert str(report.verdict) == "host_oom"
    assert ending_of(report) is Ending.DIED


def test_ffmpegs_write_failure_after_its_frame_file_failed_to_open_is_the_disk(
    tmp_path: Path,
) -> None:
    log = (
        "frame= 4201 fps= 61 q=-0.0 size=N/A time=00:02:55.04 bitrate=N/A speed=2.54x\n"
        "[image2 @ 0x55d0c1a2b3c0] Could not open file : /tmp/frames/extracted_4202.png\n"
        "av_interleaved_write_frame(): I/O error\n"
        "Error writing trailer of /tmp/frames/extracted_%d.png: I/O error\n"
    )
    report = log_report(tmp_path / "case", log)
    assert str(report.verdict) == "filesystem"
    assert_leads(report, "filesystem")
