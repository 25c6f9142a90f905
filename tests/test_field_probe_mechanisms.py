"""Mechanisms found by probing the analyzer with the field's own output (torch's capability
check, the Xid catalog's recovery action, the kernel GPU drivers' hang watchdogs, the CUDA
toolkit's and torch's shared libraries, bitsandbytes' CPU build, HTTP 429), not from a corpus batch:
lines written for the tests in each program's real format, each tied to the source that prints
it in its rule's comment."""

from __future__ import annotations

from pathlib import Path

from crashlens.model import Ending
from mechanism_helpers import assert_leads, ending_of, log_report, report_of

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "RuntimeError: ERROR: Cannot create Vulkan instance. This problem is often caused by a"
        " faulty installation of the Vulkan driver or attempting to use a GPU that does not"
        " support Vulkan.",
        "driver-vulkan-driver-unavailable",
    ),
    (
        "    Minimum and Maximum cuda capability supported by this version of PyTorch is",
        "driver-gpu-arch-unsupported-by-torch",
    ),
    (
        "    PyTorch no longer supports this GPU because it is too old.",
        "driver-gpu-arch-unsupported-by-torch",
    ),
    (
        "    Found GPU0 NVIDIA GeForce RTX 3080 which requires CUDA_VERSION >= 11000 to",
        "driver-gpu-arch-unsupported-by-torch",
    ),
    (
        "[Mon Dec  7 03:12:44 2026] NVRM: Xid (PCI:0000:41:00): 154, GPU recovery action changed"
        " from 0x0 (None) to 0x2 (Node Reboot Required)",
        "hardware-xid-154-reset-or-reboot-required",
    ),
    (
        "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring comp_1.1.0 timeout, signaled seq=88,"
        " emitted seq=91",
        "hardware-gpu-hang-watchdog-timeout",
    ),
    (
        "NVRM: RC watchdog: GPU is probably locked!  Notify Timeout Seconds: 7",
        "hardware-gpu-hang-watchdog-timeout",
    ),
    (
        "ImportError: libc10_cuda.so: cannot open shared object file: No such file or directory",
        "driver-library-missing",
    ),
    (
        "OSError: libnvToolsExt.so.1: cannot open shared object file: No such file or directory",
        "driver-library-missing",
    ),
    (
        "UserWarning: The installed version of bitsandbytes was compiled without GPU support."
        " 8-bit optimizers and GPU quantization are unavailable.",
        "driver-bitsandbytes-cpu-library-loaded",
    ),
    (
        "huggingface_hub.errors.HfHubHTTPError: 429 Client Error: Too Many Requests for url:"
        " https://huggingface.co/api/datasets/allenai/c4/paths-info/main",
        "network-http-rate-limited",
    ),
    (
        "cudaMalloc of size 123456789 bytes failed: out of memory",
        "gpu-oom-cuda-allocation-call-failed",
    ),
    (
        "| ERROR:   cudaMalloc GpuBuffer::Allocate failed out of memory",
        "gpu-oom-cuda-allocation-call-failed",
    ),
    (
        "dgl._ffi.base.DGLError: [10:00:00] /opt/dgl/src/runtime/cuda/cuda_device_api.cc:117:"
        " Check failed: e == cudaSuccess || e == cudaErrorCudartUnloading: CUDA: out of memory",
        "gpu-oom-cuda-error-out-of-memory",
    ),
    (
        "Kokkos::Cuda::initialize ERROR: likely mismatch of architecture between compile and run",
        "driver-no-kernel-image",
    ),
    (
        'Exception in thread "main" java.lang.OutOfMemoryError: Java heap space',
        "host-oom-jvm-heap-exhausted",
    ),
    (
        "2024-01-01 10:00:00,000 - distributed.nanny.memory - WARNING - Worker"
        " tcp://10.0.0.1:40123 (pid=1234) exceeded 95% memory budget. Restarting...",
        "host-oom-dask-worker-memory-budget",
    ),
    ("ORTE has lost communication with a remote daemon.", "network-mpi-daemons-unreachable"),
    (
        "MPIDI_OFI_mpi_init_hook(1141): OFI addrinfo() failed"
        " (ofi_init.c:1141:MPIDI_OFI_mpi_init_hook:No data available)",
        "network-mpi-ofi-init-failed",
    ),
    ("cufft error 2 at /src/fft_plan.cu:88", "gpu-oom-cublas-cudnn-alloc-failed"),
    ("call to cuMemAlloc returned error 2: Out of memory", "gpu-oom-cuda-allocation-call-failed"),
    (
        "call to cuModuleLoadData returned error 209: No binary for GPU",
        "driver-no-kernel-image",
    ),
    (
        " CUDA Error in cuda_fock.cu, line 301: out of memory",
        "gpu-oom-cuda-check-at-source-out-of-memory",
    ),
    (
        "RuntimeError: Unable to initialize backend 'tpu': ABORTED: The TPU is already in use by"
        " process with pid 90210. Not attempting to load libtpu.so in this process.",
        "driver-tpu-held-by-another-process",
    ),
    (
        "Error: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=0",
        "driver-container-toolkit-error",
    ),
    ("TimeoutError: The read operation timed out", "network-http-read-timed-out"),
    ("worker.service: Main process exited, code=killed, status=9/KILL", "host-oom-sigkill-exit"),
    (
        "joblib.externals.loky.process_executor.TerminatedWorkerError: ... The exit codes of the"
        " workers are {SIGKILL(-9), EXIT(1)}",
        "host-oom-sigkill-exit",
    ),
    (
        "[2025-02-01 08:00:00 +0000] [7] [ERROR] Worker (pid:88) was sent SIGKILL! Perhaps out"
        " of memory?",
        "host-oom-gunicorn-worker-sigkill",
    ),
    (
        "FATAL ERROR: Ineffective mark-compacts near heap limit Allocation failed - JavaScript"
        " heap out of memory",
        "host-oom-language-runtime-out-of-memory",
    ),
    (
        "Kernel Restarting: The kernel for finetune.ipynb appears to have died. It will restart"
        " automatically.",
        "host-oom-worker-process-vanished",
    ),
    ("signal (7): Bus error", "shm-bus-error-crash"),
    (
        "[Mon Dec  7 05:01:02 2026] amdgpu 0000:c1:00.0: amdgpu: [gfxhub] page fault (src_id:0"
        " ring:24 vmid:3 pasid:32770, for process python3 pid 4411 thread python3 pid 4411)",
        "driver-rocm-gpu-memory-access-fault",
    ),
    (
        "HW Exception by GPU node-2 (Agent handle: 0x55d00a1b2c30) reason :GPU Hang",
        "hardware-gpu-hang-watchdog-timeout",
    ),
    ("dd: error writing '/scratch/probe.bin': Input/output error", "filesystem-io-error"),
    ("optuna: sqlite3.OperationalError: disk I/O error", "filesystem-io-error"),
    (
        "[Mar 03 2025 02:11:40] [ERROR] [tid 841] detected NVSwitch fatal error 12028 on fid 0"
        " on NVSwitch pci bus id 00000000:86:00.0 physical id 1 port 12",
        "hardware-nvswitch-fatal-sxid",
    ),
    (
        "nv-fabricmanager.service: Failed with result 'exit-code'.",
        "driver-cuda-system-not-ready",
    ),
    (
        "  1a | 03/03/2025 | 02:11:38 | Critical Interrupt #0x17 | Bus Fatal Error | Asserted",
        "hardware-bmc-sel-fault-asserted",
    ),
    ("WARNING: infoROM is corrupted at gpu 0000:86:00.0", "hardware-gpu-inforom-corrupted"),
    ("\tGPU 6: FAULTY", "hardware-gpu-burn-faulty"),
    (
        "It appears as if there is not enough space for /dev/shm/vader_segment.gpu-12.5d2e0001.0"
        " (the shared-memory backing",
        "shm-openmpi-shared-memory-backing-file-full",
    ),
    (
        "Faiss assertion 'err == CUBLAS_STATUS_SUCCESS' failed in void faiss::gpu::runMatrixMult"
        "() at faiss/gpu/utils/MatrixMult-inl.cuh:265; details: cublas failed (14): (64, 96)",
        "gpu-oom-cudnn-internal-error",
    ),
    (
        "  Warning  Failed  3s  kubelet  Error: container has runAsNonRoot and image will run as"
        ' root (pod: "infer-7c9d_ml(0a1b)", container: infer)',
        "permissions-k8s-run-as-non-root-image-root",
    ),
    (
        "azure.core.exceptions.ClientAuthenticationError: Server failed to authenticate the"
        " request. Make sure the value of Authorization header is formed correctly.",
        "permissions-cloud-api-access-denied",
    ),
    (
        "/usr/local/cuda-12.1/include/crt/host_config.h:143:2: error: #error -- unsupported GNU"
        " version! gcc versions later than 12 are not supported!",
        "driver-host-compiler-unsupported-by-cuda",
    ),
    (
        "ValueError: The quantization method fp8 is not supported for the current GPU. Minimum"
        " capability: 89. Current capability: 86.",
        "driver-library-rejects-gpu-capability",
    ),
    (
        "RuntimeError: FlashAttention is only supported on CUDA 12.0 and above.  Note: make sure"
        " nvcc has a supported version by running nvcc -V.",
        "driver-cuda-toolkit-missing-for-build",
    ),
    # this session's probes: lower-case Go, Rust Debug, Java and Node forms of EIO, Go's ESTALE,
    # Rust's and Node's allocation failures, CUDA.jl, Apptainer --nv, Slurm's cgroup note and
    # RPC timeouts
    (
        "FATAL:   container creation failed: while mounting image /proc/self/fd/3: failed to"
        " mount squashfs filesystem: input/output error",
        "filesystem-io-error",
    ),
    (
        'Error: Os { code: 5, kind: Uncategorized, message: "Input/output error" }',
        "filesystem-io-error",
    ),
    ("java.io.IOException: Input/output error", "filesystem-io-error"),
    ("Error: EIO: i/o error, read", "filesystem-io-error"),
    ("Error: open /mnt/nfs/shard-7.tar: stale NFS file handle", "filesystem-stale-file-handle"),
    ("memory allocation of 17179869184 bytes failed", "host-oom-language-runtime-out-of-memory"),
    ("ERROR: LoadError: CUDA driver not functional", "driver-julia-cuda-unavailable"),
    ("INFO:    Could not find any nv files on this host!", "driver-apptainer-nv-libraries-missing"),
    (
        "slurmstepd: error: task/cgroup: _oom_check: StepId=77.0 hit memory+swap limit at least"
        " once during execution. This may or may not result in some failure.",
        "host-oom-slurm-cgroup-limit-hit",
    ),
    (
        "srun: error: Task launch for StepId=12.0 failed on node gpu-9: Socket timed out on"
        " send/recv operation",
        "network-slurm-rpc-socket-timeout",
    ),
    (
        "java.lang.OutOfMemoryError: Physical memory usage is too high: physicalBytes (31G) >"
        " maxPhysicalBytes (31G)",
        "host-oom-jvm-heap-exhausted",
    ),
    (
        "tensorflow.python.framework.errors_impl.InternalError: CUDA runtime implicit"
        " initialization on GPU:1 failed. Status: out of memory",
        "gpu-oom-cuda-error-out-of-memory",
    ),
    (
        'OSError: [WinError 127] The specified procedure could not be found. Error loading "C:\\'
        'venv\\lib\\site-packages\\torch\\lib\\torch_cuda.dll" or one of its dependencies.',
        "driver-windows-dll-load-failed",
    ),
    (
        "[ 77.1] mlx5_core 0000:a1:00.1: mlx5_health_check_fatal_sensors:810:(pid 0): Fatal"
        " error 3 detected",
        "hardware-nic-fatal-health-error",
    ),
    ("md/raid:md2: Disk failure on sdc, disabling device.", "hardware-raid-disk-failed"),
    ("[ 12.5] i40e 0000:3d:00.0 ens1f0: Detected Tx Unit Hang", "network-nic-tx-unit-hang"),
    (
        'could not resize shared memory segment "/PostgreSQL.88" to 4194304 bytes: No space left'
        " on device",
        "shm-enospc-dev-shm",
    ),
    (
        "RuntimeError: Couldn't open shared file mapping: <000001A2B3C4D5E6>, error code: <1455>",
        "host-oom-windows-commit-limit",
    ),
    (
        "s3fs: [ERR] curl.cpp:RequestPerform(1190): HTTP response code 403, returning EPERM.",
        "permissions-cloud-api-access-denied",
    ),
    (
        "[ 5.1] amdgpu 0000:29:00.0: amdgpu: 3 uncorrectable hardware errors detected in umc block",
        "hardware-amdgpu-ras-uncorrectable",
    ),
    (
        "ValueError: Some modules are dispatched on the CPU or the disk. Make sure you have enough"
        " GPU RAM to fit the quantized model.",
        "gpu-oom-loader-model-does-not-fit",
    ),
    (
        "ValueError: Your setup doesn't support bf16/gpu. You need torch>=1.10, using Amp or CPU",
        "driver-library-rejects-gpu-capability",
    ),
    ("ValueError: fp16 mixed precision requires a GPU (not 'cpu').", "driver-no-gpu-visible"),
]


def test_torchs_capability_range_warning_before_a_stop_is_the_driver(tmp_path: Path) -> None:
    # torch 2.7+'s three-line warning for a Pascal GPU under a cu128 build, then the log stops
    log = (
        "/opt/venv/lib/python3.11/site-packages/torch/cuda/__init__.py:287: UserWarning: \n"
        "    Found GPU0 NVIDIA GeForce GTX 1080 Ti which is of cuda capability 6.1.\n"
        "    Minimum and Maximum cuda capability supported by this version of PyTorch is\n"
        "    (7.0) - (12.0)\n"
        "  warnings.warn(\n"
    )
    report = log_report(tmp_path / "case", log)
    assert str(report.verdict) == "driver"
    assert_leads(report, "driver")


def test_a_reboot_required_xid_154_alone_is_a_gpu_fault_not_a_healthy_run(tmp_path: Path) -> None:
    log = (
        "[Mon Dec  7 03:12:40 2026] NVRM: GPU at PCI:0000:41:00:"
        " GPU-5a1f0c3e-2b7d-4e11-9c0a-7d3e2f1b6a90\n"
        "[Mon Dec  7 03:12:44 2026] NVRM: Xid (PCI:0000:41:00): 154, GPU recovery action changed"
        " from 0x0 (None) to 0x2 (Node Reboot Required)\n"
    )
    report = report_of(tmp_path / "case", {"dmesg.txt": log})
    assert str(report.verdict) != "none"
    assert_leads(report, "hardware")


def test_an_xid_154_that_clears_the_action_is_not_a_fault(tmp_path: Path) -> None:
    log = (
        "[Mon Dec  7 03:40:02 2026] NVRM: Xid (PCI:0000:41:00): 154, GPU recovery action changed"
        " from 0x2 (Node Reboot Required) to 0x0 (None)\n"
    )
    report = report_of(tmp_path / "case", {"dmesg.txt": log})
    rules = {e.rule for c in report.causes for e in c.evidence}
    assert "hardware-xid-154-reset-or-reboot-required" not in rules


def test_an_amdgpu_ring_timeout_and_reset_is_a_gpu_hang_not_a_healthy_run(tmp_path: Path) -> None:
    log = (
        "[Mon Dec  7 04:01:10 2026] amdgpu 0000:c3:00.0: amdgpu: ring comp_1.0.0 timeout,"
        " signaled seq=4411, emitted seq=4413\n"
        "[Mon Dec  7 04:01:10 2026] amdgpu 0000:c3:00.0: amdgpu: GPU reset begin!\n"
    )
    report = report_of(tmp_path / "case", {"dmesg.txt": log})
    assert str(report.verdict) != "none"
    assert_leads(report, "hardware")


def test_torchs_missing_cuda_half_is_the_driver(tmp_path: Path) -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/srv/train.py", line 3, in <module>\n'
        "    import torch\n"
        '  File "/opt/conda/lib/python3.10/site-packages/torch/__init__.py", line 237,'
        " in <module>\n"
        "    from torch._C import *  # noqa: F403\n"
        "ImportError: libtorch_cuda.so: cannot open shared object file: No such file or directory\n"
    )
    report = log_report(tmp_path / "case", log)
    assert str(report.verdict) == "driver"
    assert_leads(report, "driver")


def test_an_amdgpu_hangs_checks_ask_nothing_of_nvidias_driver(tmp_path: Path) -> None:
    log = (
        "[Mon Dec  7 04:01:10 2026] amdgpu 0000:c3:00.0: amdgpu: ring comp_1.0.0 timeout,"
        " signaled seq=4411, emitted seq=4413\n"
        "[Mon Dec  7 04:01:10 2026] amdgpu 0000:c3:00.0: amdgpu: GPU reset begin!\n"
    )
    report = report_of(tmp_path / "case", {"dmesg.txt": log})
    commands = [
        step.command or ""
        for cause in report.causes
        for step in (*cause.remediation, *cause.next_checks)
    ] + [step.command or "" for step in report.next_checks]
    assert commands
    assert not any("NVRM" in c or "nvidia-smi" in c for c in commands)
    assert any("rocm-smi" in c for c in commands)


def test_a_simulation_codes_failed_device_allocation_is_gpu_memory(tmp_path: Path) -> None:
    # GROMACS' fatal-error block around its device-buffer allocator's message
    log = (
        "-------------------------------------------------------\n"
        "Program:     gmx mdrun, version 2023.3\n"
        "Source file: src/gromacs/gpu_utils/devicebuffer.cuh (line 85)\n"
        "\n"
        "Fatal error:\n"
        "cudaMalloc of size 1073741824 bytes failed: out of memory\n"
        "-------------------------------------------------------\n"
    )
    report = log_report(tmp_path / "case", log)
    assert str(report.verdict) == "gpu_oom"
    assert_leads(report, "gpu_oom")


def test_dask_workers_restarted_over_their_memory_budget_are_host_memory(tmp_path: Path) -> None:
    log = (
        "2024-01-01 10:00:00,000 - distributed.nanny.memory - WARNING - Worker"
        " tcp://10.0.0.1:40123 (pid=1234) exceeded 95% memory budget. Restarting...\n"
        "2024-01-01 10:00:01,000 - distributed.nanny - WARNING - Restarting worker\n"
        "distributed.scheduler.KilledWorker: Attempted to run task ('read-parquet-abc', 3) on 4"
        " different workers, but all those workers died while running it.\n"
    )
    report = log_report(tmp_path / "case", log)
    assert str(report.verdict) == "host_oom"
    assert_leads(report, "host_oom")


def test_the_pytorch_tutorials_last_line_is_a_finish(tmp_path: Path) -> None:
    log = (
        "[2,  2000] loss: 1.302\n"
        "/opt/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py:617: UserWarning:"
        " This DataLoader will create 8 worker processes in total.\n"
        "Finished Training\n"
    )
    report = log_report(tmp_path / "case", log)
    assert str(report.verdict) == "none"
    assert ending_of(report) is Ending.COMPLETED


def test_a_tgi_shard_killed_by_signal_9_is_a_death_and_host_memory(tmp_path: Path) -> None:
    log = (
        "2024-05-02T10:11:02.000000Z  INFO shard-manager: text_generation_launcher: Waiting for"
        " shard to be ready... rank=0\n"
        "2024-05-02T10:11:12.000000Z ERROR shard-manager: text_generation_launcher: Shard process"
        " was signaled to shutdown with signal 9 rank=0\n"
        "2024-05-02T10:11:12.100000Z ERROR text_generation_launcher: Shard 0 failed to start\n"
        "Error: ShardCannotStart\n"
    )
    report = log_report(tmp_path / "case", log)
    # the rules alone leave a bare SIGKILL below the verdict threshold; the classifier names it
    assert str(report.verdict) != "none"
    assert_leads(report, "host_oom")
    assert ending_of(report) is Ending.DIED
    assert report.inputs[0].kind.value != "dmesg"


def test_julias_signal_report_is_a_death(tmp_path: Path) -> None:
    log = (
        "[ Info: epoch 4, loss 0.173\n"
        "\n"
        "signal (7): Bus error\n"
        "in expression starting at /srv/train.jl:41\n"
        "unsafe_load at ./pointer.jl:119 [inlined]\n"
    )
    report = log_report(tmp_path / "case", log)
    assert ending_of(report) is Ending.DIED
    assert_leads(report, "shm")


def test_htcondor_job_event_log_reports_a_death_and_a_clean_exit(tmp_path: Path) -> None:
    """HTCondor's job event log says how the job ended under `Job terminated.`: a signal, or
    the program's return value."""
    killed = (
        "001 (4711.000.000) 2025-03-03 02:00:00 Job executing on host: <10.0.0.9:9618>\n"
        "005 (4711.000.000) 2025-03-03 02:41:07 Job terminated.\n"
        "\t(0) Abnormal termination (signal 9)\n"
    )
    assert ending_of(log_report(tmp_path / "killed", killed)) is Ending.DIED
    failed = killed.replace(
        "(0) Abnormal termination (signal 9)", "(1) Normal termination (return value 2)"
    )
    assert ending_of(log_report(tmp_path / "failed", failed)) is Ending.DIED
    clean = killed.replace(
        "(0) Abnormal termination (signal 9)", "(1) Normal termination (return value 0)"
    )
    report = log_report(tmp_path / "clean", clean)
    assert ending_of(report) is Ending.COMPLETED
    assert str(report.verdict) == "none"
