"""Mechanisms learned from batch 2026-12-08-es's misses (ten project domains), tested on lines
written for the tests, none a case's own: onnxruntime's Windows binding failing to load its CUDA
provider although CUDA_PATH is set, nvcc too old for an intrinsic or type the kernels use, THC's
unknown CUDA error quoted without its location, multiprocessing's Unix socket refused by a
temporary directory on a filesystem that cannot hold one, and the kernel refusing to execute a
file (no execute bit, a noexec mount) as bash, dash and runc word it."""

from __future__ import annotations

from pathlib import Path

from mechanism_helpers import assert_leads, log_report, rules_hitting

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "RuntimeError: C:\\a\\_work\\1\\s\\onnxruntime\\python\\onnxruntime_pybind_state.cc:965"
        " onnxruntime::python::CreateExecutionProviderInstance CUDA_PATH is set but CUDA wasn't"
        " able to be loaded.",
        "driver-onnxruntime-gpu-provider-unavailable",
    ),
    (
        'kernels/reduce.cu(88): error: identifier "__shfl_xor_sync" is undefined',
        "driver-nvcc-older-than-build-needs",
    ),
    (
        'src/attention.cu(301): error: identifier "__nv_fp8_e4m3" is undefined',
        "driver-nvcc-older-than-build-needs",
    ),
    (
        "THCudaCheck FAIL: cuda runtime error (999) : unknown error",
        "driver-cuda-unknown-init-error",
    ),
    (
        "bash: /models/bin/server_stub: cannot execute: Permission denied",
        "permissions-exec-refused",
    ),
    (
        "bash: ./dist_train.sh: /bin/bash: bad interpreter: Permission denied",
        "permissions-exec-refused",
    ),
    ("exec /opt/app/entrypoint.sh: permission denied", "permissions-exec-refused"),
]


def test_a_kernels_own_undefined_identifier_is_not_the_toolkits_age() -> None:
    hits = rules_hitting('nms_kernel.cu(12): error: identifier "THCCeilDiv" is undefined')
    assert "driver-nvcc-older-than-build-needs" not in hits


def test_run_time_kernels_compiled_by_an_old_nvcc_name_the_driver_stack(tmp_path: Path) -> None:
    report = log_report(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "simulate.py", line 40, in <module>\n'
        "    sim.minimizeEnergy()\n"
        "Exception: Error launching CUDA compiler: 512\n"
        '/tmp/kernel_1.cu(120): error: identifier "__any_sync" is undefined\n'
        '1 error detected in the compilation of "/tmp/kernel_1.cpp1.ii".\n',
    )
    assert_leads(report, "driver")


def test_a_socket_refused_by_the_temp_dirs_filesystem_is_the_filesystem(tmp_path: Path) -> None:
    report = log_report(
        tmp_path,
        "torchrun --nproc_per_node=1 train.py\n"
        "Traceback (most recent call last):\n"
        '  File "/home/user/train.py", line 12, in <module>\n'
        "    manager = multiprocessing.Manager()\n"
        '  File "/usr/lib/python3.10/multiprocessing/context.py", line 57, in Manager\n'
        "    m.start()\n"
        '  File "/usr/lib/python3.10/multiprocessing/managers.py", line 554, in start\n'
        "    self._address = reader.recv()\n"
        '  File "/usr/lib/python3.10/multiprocessing/connection.py", line 593, in __init__\n'
        "    self._socket.bind(address)\n"
        "OSError: [Errno 95] Operation not supported\n",
    )
    assert_leads(report, "filesystem")
    # the errno line alone reads as the job's own error (filesystem-errno-application, context):
    # the frame's reading speaks for the line, and that rule's advice is left out
    texts = [step.text for step in report.causes[0].remediation]
    assert any("TMPDIR" in (step.command or "") for step in report.causes[0].remediation)
    assert not [text for text in texts if text.startswith("Fix the path, file or argument")]


def test_a_refused_exec_is_not_also_the_generic_permission_rule() -> None:
    assert rules_hitting("bash: ./run.sh: cannot execute: Permission denied") == [
        "permissions-exec-refused"
    ]
    # a redirection refused stays the generic rule's, in bash's and dash's wordings
    assert rules_hitting("bash: /var/log/train.log: Permission denied") == [
        "permissions-permission-denied"
    ]
    assert rules_hitting("/bin/sh: 1: cannot create /var/log/x.log: Permission denied") == [
        "permissions-permission-denied"
    ]


def test_an_entrypoint_the_runtime_cannot_execute_names_permissions(tmp_path: Path) -> None:
    report = log_report(
        tmp_path,
        "$ docker run --gpus all trainer:1.4\n"
        "docker: Error response from daemon: failed to create task for container: failed to"
        " create shim task: OCI runtime create failed: runc create failed: unable to start"
        ' container process: exec: "/workspace/start.sh": permission denied: unknown.\n',
    )
    assert_leads(report, "permissions")
    cause = report.causes[0]
    commands = [step.command or "" for step in cause.remediation]
    assert any("chmod +x" in command for command in commands)
