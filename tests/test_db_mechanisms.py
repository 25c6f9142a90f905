"""Mechanisms learned from batch 2026-12-06-db's misses, each tested on lines and logs written for
the test, not taken from the cases: a kernel oops whose instruction pointer lies in the NVIDIA
driver's module, a CUDA error the loaded driver library could not name, PyTorch's check of CUDA
driver API calls, cudarc's failure to load a CUDA library, a container user without a passwd
entry, an account file that cannot be locked (and a compose file's read-only root that explains
it), GPUDirect Storage refusing a file's filesystem, Paddle 1.x's allocator, a user's stop of a
process hung in CUDA initialisation, and three warnings their projects call harmless (XLA's
serial compilation under an older driver, the barrier's device notice, the NCCL watchdog
reporting its own group's shutdown)."""

from __future__ import annotations

from pathlib import Path

from crashlens.model import Ending
from mechanism_helpers import assert_leads, ending_of, log_report, report_of, rules_hitting

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    ("RuntimeError: CUDA driver error: unknown error", "driver-cuda-error-unknown"),
    (
        "torch.OutOfMemoryError: CUDA driver error: out of memory",
        "gpu-oom-cuda-error-out-of-memory",
    ),
    (
        'Unable to dynamically load the "cublas" shared library - searched for library names',
        "driver-library-missing",
    ),
    (
        'Unable to find cuda lib under the names ["cuda", "nvcuda", "libcuda.so"].',
        "driver-library-missing",
    ),
    ("CUDA ERROR: (null) in decode_kernel at line 451", "driver-cuda-error-string-null"),
    (
        "Traceback: KeyError: 'getpwuid(): uid not found: 1001'",
        "permissions-uid-without-passwd-entry",
    ),
    (
        "kvikio: cuFile error at: reader.cpp:55: GPUDirect Storage not supported on current file",
        "filesystem-gds-file-not-supported",
    ),
    (
        "paddle.fluid.core.EnforceNotMet: Cannot malloc 512 MB GPU memory. Please shrink"
        " FLAGS_fraction_of_gpu_memory_to_use environment variable to a lower value.",
        "gpu-oom-framework-allocator-exhausted",
    ),
    ("usermod: cannot lock /etc/shadow; try again later.", "permissions-account-files-cannot-lock"),
]

_OOPS = """\
[ 8812.440117] BUG: kernel NULL pointer dereference, address: 0000000000000010
[ 8812.440131] #PF: supervisor read access in kernel mode
[ 8812.440139] Oops: 0000 [#1] SMP NOPTI
[ 8812.440147] CPU: 12 PID: 40711 Comm: python3 Tainted: P           OE     6.8.0-31-generic #31
[ 8812.440160] RIP: 0010:uvm_va_space_destroy+0x1b2/0x4c0 [nvidia_uvm]
[ 8812.440201] Call Trace:
"""
_KERNEL_OOPS = """\
[ 511.001201] BUG: unable to handle page fault for address: ffffa0b3c0001000
[ 511.001230] Oops: 0002 [#1] PREEMPT SMP
[ 511.001241] CPU: 3 PID: 881 Comm: kworker/3:2 Not tainted 6.1.0-18-amd64 #1
[ 511.001260] RIP: 0010:memset_orig+0x33/0xb0
"""


def test_an_oops_in_the_nvidia_module_is_the_driver_crashing(tmp_path: Path) -> None:
    report = report_of(tmp_path / "oops", {"dmesg.txt": _OOPS})
    assert_leads(report, "driver")
    assert "driver-kernel-oops-in-nvidia-module" in {e.rule for e in report.causes[0].evidence}


def test_an_oops_in_the_kernels_own_code_is_not_blamed_on_the_driver(tmp_path: Path) -> None:
    report = report_of(tmp_path / "kernel-oops", {"dmesg.txt": _KERNEL_OOPS})
    rules = {e.rule for cause in report.causes for e in cause.evidence}
    assert "driver-kernel-oops-in-nvidia-module" not in rules


def test_an_old_kernels_rip_line_names_the_module(tmp_path: Path) -> None:
    old_rip = (
        "[  94.001] BUG: unable to handle kernel NULL pointer dereference at 0000000000000008\n"
        "[  94.002] IP: [<ffffffffa0c1d2e3>] _nv011227rm+0x3/0x40 [nvidia]\n"
        "[  94.003] Oops: 0000 [#1] SMP\n"
        "[  94.004] RIP: 0010:[<ffffffffa0c1d2e3>]  [<ffffffffa0c1d2e3>] _nv011227rm+0x3/0x40"
        " [nvidia]\n"
    )
    report = report_of(tmp_path / "old", {"dmesg.txt": old_rip})
    assert_leads(report, "driver")


def test_the_null_error_text_needs_the_null() -> None:
    assert "driver-cuda-error-string-null" not in rules_hitting("CUDA Error: invalid argument")


def test_a_passwd_lookup_of_a_known_user_is_no_failure() -> None:
    assert "permissions-uid-without-passwd-entry" not in rules_hitting(
        "pwd.getpwuid(1000) -> pw_name='user'"
    )


def test_the_watchdog_reporting_its_own_shutdown_is_teardown(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "shutdown",
        "epoch 3 done, saving checkpoint\n"
        "[rank0]:[I1201 08:00:12.000111 512 ProcessGroupNCCL.cpp:1303] [PG 0 Rank 0] found async"
        " exception when checking for NCCL errors: NCCL communicator encountered error set by"
        " ProcessGroupNCCL: Process Group shutdown on rank 0\n",
    )
    assert str(report.verdict) == "none"


def test_a_real_nccl_error_before_the_shutdown_still_shows(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "real",
        "[rank1]: torch.distributed.DistBackendError: NCCL error in:"
        " ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, remote process exited or there was a"
        " network error, NCCL version 2.21.5\n"
        "[rank1]:[I1201 08:00:12.000111 512 ProcessGroupNCCL.cpp:1303] [PG 0 Rank 1] found async"
        " exception when checking for NCCL errors: NCCL communicator encountered error set by"
        " ProcessGroupNCCL: Process Group shutdown on rank 1\n",
    )
    assert str(report.verdict) != "none"


_HUNG_IN_CUDA_INIT = """\
loading model from /data/ckpt/model.pt
^CTraceback (most recent call last):
  File "/home/user/run.py", line 40, in <module>
    model = model.to("cuda")
  File "/opt/env/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1340, in to
    return self._apply(convert)
  File "/opt/env/lib/python3.11/site-packages/torch/cuda/__init__.py", line 319, in _lazy_init
    torch._C._cuda_init()
KeyboardInterrupt
"""


def test_a_stop_of_a_start_up_hung_in_cuda_initialisation_is_no_clean_stop(
    tmp_path: Path,
) -> None:
    report = log_report(tmp_path / "hung", _HUNG_IN_CUDA_INIT)
    assert ending_of(report) is Ending.DIED
    assert_leads(report, "driver")
    assert "driver-hung-in-gpu-initialisation" in {e.rule for e in report.causes[0].evidence}


def test_a_read_only_root_in_compose_explains_the_account_lock_failure(tmp_path: Path) -> None:
    files = {
        "docker-compose.yml": "services:\n  trainer:\n    image: t:1\n    read_only: true\n",
        "trainer.log": "creating user trainer (uid 1000)\n"
        "useradd: cannot lock /etc/passwd; try again later.\n",
    }
    report = report_of(tmp_path / "ro", files)
    assert_leads(report, "permissions")
    evidence = {e.rule for e in report.causes[0].evidence}
    assert "permissions-read-only-root-explains-account-lock" in evidence


def test_a_writable_root_leaves_the_lock_failure_unexplained(tmp_path: Path) -> None:
    files = {
        "docker-compose.yml": "services:\n  trainer:\n    image: t:1\n    read_only: false\n",
        "trainer.log": "useradd: cannot lock /etc/passwd; try again later.\n",
    }
    report = report_of(tmp_path / "rw", files)
    rules = {e.rule for cause in report.causes for e in cause.evidence}
    assert "permissions-read-only-root-explains-account-lock" not in rules


# read by tests/test_mechanism_endings.py
LOGS_AND_ENDINGS = [
    (
        "jax-backend-start-up-stopped",
        "KeyboardInterrupt                         Traceback (most recent call last)\n"
        "Cell In[2], line 1\n"
        "----> 1 jax.devices()\n"
        "File /opt/env/lib/python3.10/site-packages/jax/_src/xla_bridge.py:872, in backends()\n",
        Ending.DIED,
    ),
    (
        "stopped-in-the-training-loop",
        "epoch 2 step 400 loss 0.52\n"
        "Traceback (most recent call last):\n"
        '  File "/home/user/train.py", line 88, in <module>\n'
        "    loss.backward()\n"
        '  File "/opt/env/lib/python3.11/site-packages/torch/_tensor.py", line 521, in backward\n'
        "    torch.autograd.backward(\n"
        "KeyboardInterrupt\n",
        Ending.STOPPED,
    ),
    (
        "xla-older-driver-notice-then-output",
        "2025-01-09 10:02:11.402113: W external/xla/xla/service/gpu/nvptx_compiler.cc:765] The"
        " NVIDIA driver's CUDA version is 12.1 which is older than the ptxas CUDA version"
        " (12.6.85). Because the driver is older than the ptxas version, XLA is disabling"
        " parallel compilation, which may slow down compilation.\n"
        "step 0 loss 2.301\nstep 100 loss 1.207\n",
        Ending.ONGOING,
    ),
]
