"""Mechanisms learned from the driver, gpu_oom, host_oom and filesystem misses of batches q and
r, decided end to end on logs of their own (the tools' own message formats in other shapes
than the batch's text), analyzed as `crashlens analyze` does.

* TensorFlow's "Failed to get convolution algorithm. This is probably because cuDNN failed to
  initialize": cudnnCreate found no GPU memory left once TF had mapped nearly all of it, so
  gpu_oom; with TF's own cuDNN version line above it the loaded cuDNN does not fit the build,
  and the version rule (a driver root) takes over.
* ROCm's "Memory access fault by GPU node-N" alone does not say whose fault it was (unknown,
  driver leading); the kernel's amdgpu fault decode naming a command-processor client (CPF,
  CPC, CPG) puts it on the driver/firmware side, a shader client (TCP) does not.
* Managed platforms' own verdicts: Colab's "session crashed after using all available RAM"
  and Cloud ML / Vertex AI's "The replica ... ran out-of-memory" are host_oom; SageMaker's
  "Insufficient disk space" failure reason is filesystem.
* Accelerator allocators: Gaudi's PT_DEVMEM allocation failure and TensorFlow-ROCm's HIP
  out-of-memory allocation lines are gpu_oom.
* A crash-reporter frame inside Omniverse's RTX renderer plugins (Isaac Sim) is driver.
* bitsandbytes' "libcuda.so not found" (the driver library off the loader path, WSL2) is driver.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.pipeline import analyze
from mechanism_helpers import Scenario, assert_scenario_verdict, report_of, write_folder

TF_CONV = (
    "tensorflow.python.framework.errors_impl.UnknownError: Failed to get convolution algorithm."
    " This is probably because cuDNN failed to initialize, so try looking to see if a warning"
    " log message was printed above. [[{{node conv2d_1/convolution}}]]\n"
)
ROCM_FAULT = (
    "Memory access fault by GPU node-1 (Agent handle: 0x5629e3a1f6b0) on address"
    " 0x7f5a0e400000. Reason: Page not present or supervisor privilege.\n"
)
AMDGPU_FAULT = (
    "[ 412.775290] amdgpu 0000:0b:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:8"
    " pasid:32771)\n"
    "[ 412.775298] amdgpu 0000:0b:00.0: amdgpu:  Process python pid 2121 thread python pid 2121\n"
    "[ 412.775301] amdgpu 0000:0b:00.0: amdgpu:      Faulty UTCL2 client ID: {client}\n"
)

SCENARIOS = (
    Scenario(
        "tf-keras-cudnn-failed-to-initialize",
        {
            "train.log": "Epoch 1/50\n"
            "2019-11-04 10:12:31.201884: E tensorflow/stream_executor/cuda/cuda_dnn.cc:329]"
            " Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n" + TF_CONV
        },
        "gpu_oom",
        "gpu-oom-tf-cudnn-failed-to-initialize",
    ),
    Scenario(
        "rocm-fault-raised-by-the-command-processor",
        {"run.log": ROCM_FAULT, "dmesg.txt": AMDGPU_FAULT.format(client="CPC (0x5)")},
        "driver",
        "driver-amdgpu-page-fault-by-command-processor",
    ),
    Scenario(
        "colab-runtime-ran-out-of-ram",
        {
            "notebook.log": "Loading checkpoint shards:  50%|#####     | 1/2\n"
            "Your session crashed after using all available RAM. If you are interested in"
            " access to high-RAM runtimes, you may want to check out Colab Pro.\n"
        },
        "host_oom",
        "host-oom-colab-session-crashed-all-ram",
    ),
    Scenario(
        "vertex-worker-pool-replica-oom",
        {
            "job.log": "The replica workerpool0-0 ran out-of-memory and exited with a non-zero"
            " status of 9(SIGKILL). To find out more about why your job exited please check"
            " the logs:\n"
        },
        "host_oom",
        "host-oom-managed-replica-ran-out-of-memory",
    ),
    Scenario(
        "sagemaker-failure-reason-insufficient-disk",
        {
            "notebook.log": "2022-03-02 11:40:02 Uploading - Uploading generated training model\n"
            "2022-03-02 11:41:10 Failed - Training job failed\n"
            "UnexpectedStatusException: Error for Training job pytorch-training-2022-03-02-10-11"
            "-12-123: Failed. Reason: ClientError: Artifact upload failed:Insufficient disk"
            " space\n"
        },
        "filesystem",
        "filesystem-sagemaker-insufficient-disk",
    ),
    Scenario(
        "gaudi-devmem-allocation-failed",
        {
            "run.log": "Traceback (most recent call last):\n"
            '  File "run_clm.py", line 612, in <module>\n'
            "    main()\n"
            "RuntimeError: FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::1073741824"
            " (1024)MB\n"
        },
        "gpu_oom",
        "gpu-oom-habana-devmem-allocation-failed",
    ),
    Scenario(
        "tf-rocm-hip-out-of-memory",
        {
            "train.log": "2021-06-02 08:14:55.118205: E tensorflow/stream_executor/rocm/"
            "rocm_driver.cc:617] failed to allocate 4.00G (4294967296 bytes) from device:"
            " hipErrorOutOfMemory\n"
        },
        "gpu_oom",
        "gpu-oom-tf-rocm-device-allocation-failed",
    ),
    Scenario(
        "isaac-sim-crash-in-rtx-renderer",
        {
            "kit.log": "2024-05-02 09:14:07 [31,200ms] [Error] [carb.crashreporter-breakpad.plugin]"
            " [crash] A crash has occurred.\n"
            "2024-05-02 09:14:07 [31,204ms] [Fatal] [carb.crashreporter-breakpad.plugin] 003:"
            " librtx.resourcemanager.plugin.so!carbOnPluginStartup+0x1a2f3\n"
        },
        "driver",
        "driver-omniverse-rtx-renderer-crash",
    ),
    Scenario(
        "bitsandbytes-driver-library-off-the-path",
        {
            "train.log": "CUDA SETUP: WARNING! libcuda.so not found! Do you have a CUDA driver"
            " installed? If you are on a cluster, make sure you are on a CUDA machine!\n"
            "CUDA SETUP: Loading binary .../bitsandbytes/libbitsandbytes_cpu.so...\n"
        },
        "driver",
        "driver-cuda-driver-library-unloadable",
    ),
)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_mechanism_verdict(tmp_path: Path, scenario: Scenario) -> None:
    assert_scenario_verdict(tmp_path, scenario)


def test_a_cudnn_version_line_above_the_tf_error_makes_it_the_installation(tmp_path: Path) -> None:
    log = (
        "2019-02-11 17:02:48.113124: E tensorflow/stream_executor/cuda/cuda_dnn.cc:334] Loaded"
        " runtime CuDNN library: 7.1.4 but source was compiled with: 7.4.1.  CuDNN library major"
        " and minor version needs to match or have higher minor version in case of CuDNN 7.0 or"
        " later version.\n" + TF_CONV
    )
    report = analyze([str(write_folder(tmp_path, "tf-cudnn-version", {"train.log": log}))])
    assert str(report.verdict) == "driver", [(c.category, c.confidence) for c in report.causes]


def test_a_rocm_fault_alone_or_raised_by_a_shader_is_left_open_by_the_rules(
    tmp_path: Path,
) -> None:
    # The rules' own verdict: the classifier may still weigh the words of the line.
    alone = report_of(tmp_path / "alone", {"run.log": ROCM_FAULT})
    shader = report_of(
        tmp_path / "shader",
        {"run.log": ROCM_FAULT, "dmesg.txt": AMDGPU_FAULT.format(client="TCP (0x8)")},
    )
    for report in (alone, shader):
        assert str(report.verdict) == "unknown"
        assert report.causes[0].category == "driver"
