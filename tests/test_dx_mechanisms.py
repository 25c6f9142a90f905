"""Mechanisms learned from batch 2026-12-07-dx's misses, tested on lines and logs written for
the tests (each mechanism's source is in its rule's or module's comment): a check macro's bare
CUDA code and its `Aborting...`, the CUDA samples' `Result = FAIL`, modprobe failing on an
NVIDIA module, the Go runtime out of memory, object-storage endpoints out of reach, cuBLAS's
NOT_SUPPORTED, and asyncio.run()'s cancellation by Ctrl-C."""

from __future__ import annotations

from pathlib import Path

from crashlens.model import Ending
from mechanism_helpers import ending_of, report_of

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    ("CUDA failure: 2", "gpu-oom-cuda-check-at-source-out-of-memory"),
    (
        "modprobe: ERROR: could not insert 'nvidia_uvm': Exec format error",
        "driver-module-not-built-for-kernel",
    ),
    (
        "modprobe: ERROR: ../libkmod/libkmod-module.c:838 kmod_module_insert_module() could not"
        " find module by name='nvidia_470'",
        "driver-module-not-built-for-kernel",
    ),
    ("ollama  | fatal error: runtime: out of memory", "host-oom-go-runtime-out-of-memory"),
    (
        "runtime: out of memory: cannot allocate 8388608-byte block (2147483648 in use)",
        "host-oom-go-runtime-out-of-memory",
    ),
    (
        'EndpointConnectionError: Could not connect to the endpoint URL: "https://obs.example.com/'
        'bucket/ckpt/model.ckpt-200.index"',
        "network-http-connect-failed",
    ),
    (
        "2026-12-07 09:10:11.123: E tensorflow/core/platform/s3/aws_logging.cc:60] Unable to"
        " connect to endpoint",
        "network-http-connect-failed",
    ),
    (
        "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasLtMatmul("
        " ltHandle, computeDesc.descriptor(), &alpha_val, mat1_ptr, Adesc.descriptor())`",
        "driver-cublas-operation-not-supported",
    ),
]


def test_a_check_macros_abort_before_the_prompt_is_a_death_not_a_finish(tmp_path: Path) -> None:
    log = (
        "user@gpu-box:~/proj$ ./bench --size 40000\n"
        "loading 40000 x 40000 matrices\n"
        "CUDA failure: 2\n"
        "/home/user/proj/src/gemm.cu:118\n"
        "Aborting...\n"
        "user@gpu-box:~/proj$ \n"
    )
    report = report_of(tmp_path / "case", {"terminal.log": log})
    assert ending_of(report) is Ending.DIED
    assert str(report.verdict) == "gpu_oom"


def test_a_cuda_samples_fail_verdict_is_a_death(tmp_path: Path) -> None:
    log = (
        "./deviceQuery Starting...\n"
        "\n"
        " CUDA Device Query (Runtime API) version (CUDART static linking)\n"
        "\n"
        "modprobe: ERROR: could not insert 'nvidia_uvm': Unknown symbol in module, or unknown"
        " parameter (see dmesg)\n"
        "cudaGetDeviceCount returned 999\n"
        "-> unknown error\n"
        "Result = FAIL\n"
    )
    report = report_of(tmp_path / "case", {"devicequery.log": log})
    assert ending_of(report) is Ending.DIED
    assert str(report.verdict) == "driver"


_SERVER_STOPPED = (
    "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n"
    "{interrupt}INFO:     Shutting down\n"
    "INFO:     Waiting for application shutdown.\n"
    "INFO:     Application shutdown complete.\n"
    "INFO:     Finished server process [4242]\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.12/asyncio/runners.py", line 118, in run\n'
    "    return self._loop.run_until_complete(task)\n"
    '  File "/usr/lib/python3.12/asyncio/base_events.py", line 687, in run_until_complete\n'
    "    return future.result()\n"
    "asyncio.exceptions.CancelledError\n"
)


def test_asyncio_runs_cancellation_after_a_ctrl_c_is_the_users_stop(tmp_path: Path) -> None:
    report = report_of(tmp_path / "case", {"serve.log": _SERVER_STOPPED.format(interrupt="^C")})
    assert ending_of(report) is Ending.STOPPED
    assert str(report.verdict) == "none"


def test_asyncio_runs_cancellation_without_a_ctrl_c_is_no_stop(tmp_path: Path) -> None:
    # the program cancelled its own main task: nothing in the log shows a stop
    report = report_of(tmp_path / "case", {"serve.log": _SERVER_STOPPED.format(interrupt="")})
    assert report.assessment is not None
    assert ending_of(report) is not Ending.STOPPED


def test_a_vms_power_key_in_its_journal_is_a_stop_from_outside(tmp_path: Path) -> None:
    log = (
        "Mar  3 02:11:40 trainer-7 kernel: [81234.000000] docker0: port 1(veth3) entered"
        " disabled state\n"
        "Mar  3 02:11:41 trainer-7 systemd-logind[901]: Power key pressed.\n"
        "Mar  3 02:11:41 trainer-7 systemd-logind[901]: Powering Off...\n"
    )
    report = report_of(tmp_path / "case", {"syslog.txt": log})
    assert ending_of(report) is Ending.STOPPED
    assert str(report.verdict) == "none"


def test_a_power_key_after_a_gpu_fault_does_not_hide_the_fault(tmp_path: Path) -> None:
    log = (
        "Mar  3 01:58:02 trainer-7 kernel: NVRM: Xid (PCI:0000:17:00): 79, pid=2211,"
        " name=python3, GPU has fallen off the bus.\n"
        "Mar  3 02:11:41 trainer-7 systemd-logind[901]: Power key pressed.\n"
    )
    assert str(report_of(tmp_path / "case", {"syslog.txt": log}).verdict) == "hardware"


_INTERRUPTED = (
    "Traceback (most recent call last):\n"
    '  File "serve.py", line 40, in <module>\n'
    "    loop.run_forever()\n"
    '  File "/usr/lib/python3.10/selectors.py", line 469, in select\n'
    "    fd_event_list = self._selector.poll(timeout, max_ev)\n"
    "KeyboardInterrupt\n"
)


def test_a_native_assertion_after_an_uncaught_ctrl_c_is_the_exits_teardown(
    tmp_path: Path,
) -> None:
    log = _INTERRUPTED + (
        "ASSERTION_FAILED ([5.5]:~CudaPipeline():pipeline.cc:51) Assertion failed:"
        " (channels_.empty())\n"
        "\n"
        "[ Stack-Trace: ]\n"
        "/opt/venv/lib/python3.10/site-packages/engine/libengine.so(Logger::Log() const+0x766)"
        " [0x7f0526dfb896]\n"
    )
    report = report_of(tmp_path / "case", {"serve.log": log})
    assert ending_of(report) is Ending.STOPPED
    assert str(report.verdict) == "none"


def test_an_error_python_raised_after_a_ctrl_c_is_still_the_failure(tmp_path: Path) -> None:
    # a notebook: one cell interrupted, the next one ran out of GPU memory
    log = _INTERRUPTED + (
        "Traceback (most recent call last):\n"
        '  File "<ipython-input-7>", line 3, in <module>\n'
        "    out = model(batch.cuda())\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a"
        " total capacity of 15.77 GiB of which 1.02 GiB is free.\n"
    )
    assert str(report_of(tmp_path / "case", {"notebook.log": log}).verdict) == "gpu_oom"


def test_an_abort_after_an_uncaught_ctrl_c_is_the_exits_teardown(tmp_path: Path) -> None:
    log = _INTERRUPTED + ("terminate called without an active exception\nAborted (core dumped)\n")
    report = report_of(tmp_path / "case", {"serve.log": log})
    assert ending_of(report) is Ending.STOPPED
    assert str(report.verdict) == "none"
