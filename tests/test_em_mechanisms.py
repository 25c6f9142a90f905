"""Mechanisms learned from batch 2026-12-07-em's misses (the CUDA, NCCL and errno catalogs'
rarer wordings, Kubernetes/Slurm and CI runners, accelerators, HPC codes, troubleshooting
documents, robotics simulators), tested on lines written for the tests, none a case's own:
Unreal Engine's Vulkan finding no device, Taichi's and Warp's loaders finding no libcuda.so,
CUDAdrv.jl's unknown error at cuInit, NCCL's rings that do not close, Open MPI's banner for a
component it cannot open, Theano's device allocation error as forums render it, vLLM's
/dev/shm capacity check, Isaac Gym's PhysX pipeline failing in its kernels, CUDA's
`OS call failed` read as a refused call (a seccomp filter) before a driver fault, Python 2's
one-line report of a finalizer's exception it ignores as no ending, and (from an older case)
Open MPI's openib transport disabling itself on a port as known-harmless output."""

from __future__ import annotations

from pathlib import Path

from crashlens.model import Ending, Verdict
from crashlens.parsers.launcher.teardown import py2_unraisable
from fuzz_harnesses import deadline
from mechanism_helpers import assert_leads, ending_of, log_report, rules_hitting

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "[2026.01.05-10.00.00:000][  0]LogVulkanRHI: Error: Vulkan failed to select physical"
        " device after passing profile checks.",
        "driver-vulkan-driver-unavailable",
    ),
    (
        "[W 01/05/26 10:00:00.001 777] [cuda_driver.cpp:load_lib@36] libcuda.so lib not found.",
        "driver-cuda-driver-library-unloadable",
    ),
    ("Warp CUDA error: Could not open libcuda.so.", "driver-cuda-driver-library-unloadable"),
    (
        "ERROR: LoadError: Initializing CUDA driver failed: unknown error (code 999).",
        "driver-cuda-unknown-init-error",
    ),
    (
        "node-03:4242:4300 [1] graph/rings.cc:38 NCCL WARN Error : ring 1 does not loop back to"
        " start (3 != 9).",
        "driver-nccl-internal-error",
    ),
    (
        "A requested component was not found, or was unable to be opened.  This",
        "driver-openmpi-component-unavailable",
    ),
    (
        "Error allocating 1610612736 bytes of device memory < out of memory >. Driver report"
        " 524288 bytes free and 8589934592 bytes total",
        "gpu-oom-framework-allocator-exhausted",
    ),
    (
        "RuntimeError: Insufficient space in /dev/shm: 2047/2048 MiB required, 512 MiB free",
        "shm-serving-stack-shared-memory-too-small",
    ),
    (
        "[Error] [carb.gym.plugin] Gym cuda error: an illegal memory access was encountered:"
        " ../../../source/plugins/carb/gym/impl/Gym/GymPhysX.cpp: 2211",
        "gpu-oom-physx-gpu-pipeline-kernel-failed",
    ),
    (
        "/buildAgent/work/abc/source/physx/src/NpScene.cpp (3000) : internal error : PhysX"
        " Internal CUDA error. Simulation can not continue!",
        "gpu-oom-physx-gpu-pipeline-kernel-failed",
    ),
    (
        "[Error] [omni.rtx] CUDA error 304: cudaErrorOperatingSystem - OS call failed or"
        " operation not supported on this OS",
        "permissions-cuda-os-call-refused",
    ),
    (
        "[node-02:4242] 7 more processes have sent help message"
        " help-mpi-btl-openib-cpc-base.txt / no cpcs for port",
        "network-openmpi-openib-port-disabled-harmless",
    ),
]


def test_isaac_gyms_illegal_access_is_no_longer_read_as_a_faulty_gpu() -> None:
    line = (
        "[Error] [carb.gym.plugin] Gym cuda error: an illegal memory access was encountered:"
        " ../../../source/plugins/carb/gym/impl/Gym/GymPhysX.cpp: 2211"
    )
    assert "hardware-cuda-illegal-memory-access" not in rules_hitting(line)
    # the plain status elsewhere still reads as the catalog says
    assert "hardware-cuda-illegal-memory-access" in rules_hitting(
        "RuntimeError: CUDA error: an illegal memory access was encountered"
    )


def test_cudas_os_call_failure_is_no_longer_a_device_the_driver_could_not_claim() -> None:
    line = "RuntimeError: CUDA error: OS call failed or operation not supported on this OS"
    hits = rules_hitting(line)
    assert "permissions-cuda-os-call-refused" in hits
    assert "driver-cuda-device-unavailable" not in hits


# Python 2's unraisable report: one line, the finalizer's exception in it (written for the test)
PY2_IGNORED = (
    "Exception pycuda._driver.LogicError: 'cuCtxDetach failed: invalid context' in <bound method"
    " GPUBackend.__del__ of <model.backend.GPUBackend object at 0x7f0000001000>> ignored\n"
)


def test_python2s_ignored_finalizer_report_is_not_how_a_log_ended(tmp_path: Path) -> None:
    report = log_report(tmp_path, "Epoch 12 done, bleu 27.1\n" + PY2_IGNORED)
    assert ending_of(report) is Ending.ONGOING
    assert report.verdict is Verdict.NONE


def test_a_traceback_after_python2s_ignored_report_still_ends_the_run(tmp_path: Path) -> None:
    report = log_report(
        tmp_path,
        PY2_IGNORED + "Traceback (most recent call last):\n"
        '  File "train.py", line 9, in <module>\n'
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
    )
    assert ending_of(report) is Ending.DIED


TORCHRUN_HEADER = (
    "WARNING:torch.distributed.run:\n"
    "*****************************************\n"
    "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid"
    " your system being overloaded, please further tune the variable for optimal performance in"
    " your application as needed.\n"
    "*****************************************\n"
)


def test_a_rule_line_inside_python2s_ignored_report_is_no_evidence(tmp_path: Path) -> None:
    # the finalizer's exception names a CUDA error, but Python went on from it: the run was
    # killed later, and that kill is the only cause the report may show
    ignored = (
        "Exception RuntimeError: 'CUDA error: an illegal memory access was encountered' in"
        " <bound method Session.__del__ of <tf.Session object at 0x7f3a>> ignored\n"
    )
    report = log_report(
        tmp_path, TORCHRUN_HEADER + "Epoch 1 loss 2.1\n" + ignored + "Epoch 2 loss 1.9\nKilled\n"
    )
    assert_leads(report, "host_oom")
    rules = {item.rule for cause in report.causes for item in cause.evidence}
    assert "hardware-cuda-illegal-memory-access" not in rules


def test_python2s_report_is_read_in_linear_time_and_only_in_its_own_shape() -> None:
    assert py2_unraisable(PY2_IGNORED) == (
        "pycuda._driver.LogicError",
        "'cuCtxDetach failed: invalid context'",
    )
    assert py2_unraisable("Exception in thread Thread-3: <x> ignored") is None
    assert py2_unraisable("Exception ValueError: bad value in <lambda>") is None
    long_line = "Exception KeyError: " + " in <x" * 200_000 + "> ignored"
    with deadline(5):
        assert py2_unraisable(long_line) is not None
