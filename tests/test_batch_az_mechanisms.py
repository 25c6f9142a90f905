"""Mechanisms learned from blind batch az, end to end on lines that are not the cases' own
(other public reports of the same messages, the programs' documented output formats):

* TensorFlow skips a GPU below its build's minimum compute capability ("Ignoring visible gpu
  device ... The minimum required Cuda capability is Y"), and an op pinned to /device:GPU:0
  then finds no GPU registered ("no devices matching that specification", "explicitly
  assigned to /device:GPU:0 but available devices are [ ...CPU:0 ]"): driver, not the code.
  A skipped second GPU does not hide another cause.
* cuDNN's CUDNN_STATUS_ARCH_MISMATCH in a wrapper's own words (the Python wrappers'
  cudnnStatusArchMismatch, Mocha.jl's "Arch mismatch"): driver.
* CUPTI's insufficient-privileges result printed as its number (35), as LIKWID and Triton's
  Proton print it: permissions; another CUPTI number is not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mechanism_helpers import Scenario, assert_leads, assert_scenario_verdict, log_report

_TF_IGNORED_THEN_PLACED = (
    "2020-07-07 15:35:48.470722: I tensorflow/stream_executor/platform/default/dso_loader.cc:44]"
    " Successfully opened dynamic library cudnn64_7.dll\n"
    "2020-07-07 15:35:48.520179: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1721]"
    " Ignoring visible gpu device (device: 0, name: GeForce GTX 670MX, pci bus id: 0000:01:00.0,"
    " compute capability: 3.0) with Cuda compute capability 3.0. The minimum required Cuda"
    " capability is 3.5.\n"
    "Traceback (most recent call last):\n"
    '  File "test_gpu.py", line 9, in <module>\n'
    "    print(sess.run(c))\n"
    "tensorflow.python.framework.errors_impl.InvalidArgumentError: Cannot assign a device for"
    " operation MatMul: node MatMul (defined at test_gpu.py:7)  was explicitly assigned to"
    " /device:GPU:0 but available devices are [ /job:localhost/replica:0/task:0/device:CPU:0,"
    " /job:localhost/replica:0/task:0/device:XLA_CPU:0 ]. Make sure the device specification"
    " refers to a valid device.\n"
)

_TF_NO_GPU_REGISTERED = (
    "Traceback (most recent call last):\n"
    '  File "tf_test.py", line 6, in <module>\n'
    "    print(sess.run(c))\n"
    "tensorflow.python.framework.errors_impl.InvalidArgumentError: Cannot assign a device to"
    " node 'MatMul': Could not satisfy explicit device specification '/device:GPU:0' because no"
    " devices matching that specification are registered in this process; available devices:"
    " /job:localhost/replica:0/task:0/cpu:0\n"
    '\t [[Node: MatMul = MatMul[T=DT_FLOAT, transpose_a=false, transpose_b=false, _device="'
    '/device:GPU:0"](a, b)]]\n'
)

_CUDNN_WRAPPER = (
    "Traceback (most recent call last):\n"
    '  File "<stdin>", line 1, in <module>\n'
    '  File "C:\\Anaconda\\lib\\site-packages\\libcudnn.py", line 277, in cudnnCreate\n'
    "    cudnnCheckStatus(status)\n"
    '  File "C:\\Anaconda\\lib\\site-packages\\libcudnn.py", line 246, in cudnnCheckStatus\n'
    "    raise cudnnExceptions[status]\n"
    "libcudnn.cudnnStatusArchMismatch\n"
)

_PROTON = (
    "Traceback (most recent call last):\n"
    '  File "matmul.py", line 88, in <module>\n'
    "    proton.finalize()\n"
    '  File "/usr/lib/python3/dist-packages/triton/profiler/profile.py", line 121, in finalize\n'
    "    libproton.finalize(session, output_format)\n"
    "RuntimeError: Failed to execute cuptiGetContextId with error {code}\n"
)

SCENARIOS = (
    Scenario(
        "tensorflow-gpu-below-minimum-capability-then-placement-fails",
        {"train.log": _TF_IGNORED_THEN_PLACED},
        "driver",
        "driver-tensorflow-gpu-below-minimum-capability",
    ),
    Scenario(
        "tensorflow-no-gpu-registered-for-an-op-pinned-to-gpu0",
        {"train.log": _TF_NO_GPU_REGISTERED},
        "driver",
        "driver-tensorflow-no-gpu-device-to-place-on",
    ),
    Scenario(
        "cudnn-python-wrapper-arch-mismatch",
        {"train.log": _CUDNN_WRAPPER},
        "driver",
        "driver-cudnn-arch-mismatch-wrapper-wording",
    ),
    Scenario(
        "cupti-insufficient-privileges-as-a-number",
        {"train.log": _PROTON.format(code=35)},
        "permissions",
        "permissions-gpu-profiling-counters-restricted",
    ),
)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_the_mechanism_names_the_cause(tmp_path: Path, scenario: Scenario) -> None:
    assert_scenario_verdict(tmp_path, scenario)


def test_a_skipped_second_gpu_does_not_hide_an_out_of_memory(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "oom",
        "I tensorflow/core/common_runtime/gpu/gpu_device.cc:611] Ignoring gpu device (device: 1,"
        " name: GeForce GTX 470, pci bus id: 0000:02:00.0) with Cuda compute capability 2.0. The"
        " minimum required Cuda capability is 3.5.\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 40, in <module>\n'
        "    sess.run(train_op)\n"
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating"
        " tensor with shape[256,512,64,64] and type float on /job:localhost/replica:0/task:0/"
        "device:GPU:0 by allocator GPU_0_bfc\n",
    )
    assert_leads(report, "gpu_oom")


def test_another_cupti_result_number_is_not_a_permission_refusal(tmp_path: Path) -> None:
    report = log_report(tmp_path / "cupti15", _PROTON.format(code=15))
    assert all(c.category.value != "permissions" for c in report.causes)
