"""Mechanisms learned from batch 2026-12-07-ej's misses (robot learning, 3D vision, accelerators
other than NVIDIA's, video and vision-language stacks, MPI codes, Jetson and TensorRT
deployments, distributed wrappers), tested on lines written for the tests, none a case's own:
a symbol missing from a loaded CUDA module (a binary without code for this GPU or platform,
now read as the driver's), the Nsight template's and NVIDIA's multi-GPU examples' check macros
and hypre's, TensorRT's plan magic, its builder resource and its table of Jetson modules,
Vulkan's instance creation answered with out-of-host-memory, EGL wordings of Magnum,
glcontext and dm_control, torch without a backend for a device type, Cray MPICH without its GPU
library, rocminfo's start-up failure, Poplar's stream buffers, netCDF's HDF5 layer, the Hugging
Face hub's free-space check, HCCL's listen port, and an allocation no GPU can hold."""

from __future__ import annotations

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "RuntimeError: Error named symbol not found at line 512 in file /src/csrc/kernels.cu",
        "driver-no-kernel-image",
    ),
    ("RuntimeError: CUDA error: named symbol not found", "driver-no-kernel-image"),
    (
        "Error out of memory at line 88 in file /build/src/ops.cu",
        "gpu-oom-cuda-error-out-of-memory",
    ),
    (
        'ERROR: CUDA RT call "cudaMalloc(&buf, n * sizeof(float))" in line 120 of file'
        " solver.cu failed with out of memory (2).",
        "gpu-oom-cuda-error-out-of-memory",
    ),
    (
        "CUDA ERROR (code = 2, out of memory) at /opt/hypre/src/utilities/memory.c:192",
        "gpu-oom-cuda-error-out-of-memory",
    ),
    (
        "E0712 10:00:01.000001 4242 logging.cc:43] 1: [runtime.cpp::parsePlan::314] Error Code 1:"
        " Serialization (Serialization assertion plan->header.magicTag == rt::kPLAN_MAGIC_TAG"
        " failed.)",
        "driver-tensorrt-engine-incompatible",
    ),
    (
        "[TRT] [E] 6: [libLoader.cpp::Impl::293] Error Code 6: Internal Error (Unable to load"
        " library: libnvinfer_builder_resource.so.10.3.0)",
        "driver-tensorrt-library-missing",
    ),
    (
        "[E] Error[2]: [utils.cpp::checkMemLimit::380] Error Code 2: Internal Error (Assertion"
        " upperBound != 0 failed. Unknown embedded device detected. Please update the table with"
        " the entry: {{2048, 8, 32}, 30000},)",
        "driver-tensorrt-gpu-unsupported",
    ),
    (
        "  what():  vk::createInstance: ErrorOutOfHostMemory",
        "driver-vulkan-driver-unavailable",
    ),
    (
        "ERROR at /build/vulkaninfo/vulkaninfo.h:690:vkCreateInstance failed with"
        " ERROR_OUT_OF_HOST_MEMORY",
        "driver-vulkan-driver-unavailable",
    ),
    (
        "Platform::WindowlessEglApplication::tryCreateContext(): no EGL devices found",
        "driver-renderer-graphics-stack-unusable",
    ),
    ("RuntimeError: eglInitialize failed (0x3008)", "driver-renderer-graphics-stack-unusable"),
    (
        "ImportError: Cannot initialize a headless EGL display.",
        "driver-renderer-graphics-stack-unusable",
    ),
    (
        "RuntimeError: PyTorch is not linked with support for cuda devices",
        "driver-framework-built-without-gpu",
    ),
    (
        "MPICH ERROR [Rank 0] [job id 98765.0] [Tue Mar 04 10:00:00 2025] [nid004321] -"
        " Abort(-1) (rank 0 in comm 0): MPIDI_CRAY_init: GPU_SUPPORT_ENABLED is requested, but"
        " GTL library is not linked",
        "driver-cray-mpich-gtl-not-linked",
    ),
    (
        "Call returned HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the"
        " necessary resources. This error may also occur when the core runtime library needs to"
        " spawn threads or create internal OS-specific events.",
        "driver-rocm-gpu-unavailable",
    ),
    (
        "poptorch.poptorch_core.Error: In poptorch/source/Error.cpp:12:"
        " 'poplar_stream_memory_allocation_error': Out of memory. Single stream of length"
        " 402653184 in bufferIndex 2",
        "ipu-out-of-tile-memory",
    ),
    (
        "OSError: [Errno -101] NetCDF: HDF error: '/lustre/run-3/diag/ta_0007.nc'",
        "filesystem-netcdf-hdf-layer-error",
    ),
    (
        "UserWarning: Not enough free disk space to download the file. The expected file size"
        " is: 3900.11 MB. The target location /cache/hub/models--org--m/blobs only has 120.02 MB"
        " free disk space.",
        "filesystem-hf-cache-not-enough-disk",
    ),
    (
        "[ERROR] HCCL(4242,python):2026-01-01-00:00:00.000.001 [hccl_socket.cc:106]"
        " [4242][HcclSocket][Listen] socket type[0], listen on ip[10.1.2.3] and specific"
        " port[60000] fail. Please check the port status and whether the port is being used by"
        " other process.",
        "network-address-in-use",
    ),
    (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2048.00 GiB. GPU 0 has a"
        " total capacity of 39.38 GiB of which 30.12 GiB is free.",
        "driver-cuda-allocation-size-corrupt",
    ),
]
