"""Mechanisms learned from blind batches an to aq, end to end on lines that are not the cases'
own (other public reports of the same messages, the programs' documented output formats):

* batchgenerators' "One or more background workers are no longer alive" (nnU-Net's
  augmentation workers) is a worker death like PyTorch's DataLoader one: ambiguous alone, shm
  when the container's /dev/shm is Docker's 64 MiB default, host_oom when the kernel killed it.
* "ran out of memory, skipping batch" (fairseq's idiom, Boltz's predict step) is a caught CUDA
  OOM: a training run that goes on past it is going on well; Boltz's nonzero "Number of failed
  examples", which counts only those OOMs, ends a prediction run that produced nothing.
* onnxruntime dropping an execution provider its package lacks runs the session on the CPU: a
  run going on, and a crash after it still shows.
* TensorFlow's cuda_driver.cc "failed to allocate" and MXNet's "cudaMalloc failed: out of
  mem…" are GPU memory failures even when the paste is cut before the error's name.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.model import Ending, Verdict
from mechanism_helpers import (
    Scenario,
    assert_scenario_verdict,
    ending_of,
    log_report,
    report_of,
)

_AUGMENTER_DEAD = (
    "2024-03-02 10:14:07.118326: unpacking dataset...\n"
    "2024-03-02 10:14:12.904771: unpacking done...\n"
    "Exception in thread Thread-4 (results_loop):\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/conda/lib/python3.10/site-packages/batchgenerators/dataloading/'
    'nondet_multi_threaded_augmenter.py", line 125, in results_loop\n'
    "    raise e\n"
    "RuntimeError: One or more background workers are no longer alive. Exiting. Please check "
    "the print statements above for the actual error message\n"
)


def _inspect(shm: int, ipc: str) -> str:
    return (
        '[{"Id": "c41d", "State": {"Status": "exited", "Running": false, "ExitCode": 1},'
        f' "HostConfig": {{"ShmSize": {shm}, "IpcMode": "{ipc}"}}}}]'
    )


SCENARIOS = (
    # nnU-Net in a container started without --shm-size or --ipc=host
    Scenario(
        "augmenter-workers-dead-with-dockers-default-shm",
        {"train.log": _AUGMENTER_DEAD, "docker_inspect.json": _inspect(67108864, "private")},
        "shm",
        "shm-small-dev-shm-explains-worker-exit",
    ),
    # boltz#167: the command exits 0 with no structure; the progress bar is redrawn after
    Scenario(
        "boltz-prediction-skipped-for-gpu-memory",
        {
            "predict.log": "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0]\n"
            "Predicting DataLoader 0:   0%|          | 0/1 [00:00<?, ?it/s]"
            "| WARNING: ran out of memory, skipping batch\n"
            "Predicting DataLoader 0: 100%|██████████| 1/1 [07:08<00:00,  0.00it/s]"
            "Number of failed examples: 1\n"
            "Predicting DataLoader 0: 100%|██████████| 1/1 [07:08<00:00,  0.00it/s]\n"
        },
        "gpu_oom",
        "gpu-oom-caught-oom-skipping-batch",
    ),
    # TensorFlow's complete line (a 2019 public report): the CUDA error catalog reads it
    Scenario(
        "tensorflow-device-allocation-complete-line",
        {
            "train.log": "2019-08-26 18:41:15.943905: E tensorflow/stream_executor/cuda/"
            "cuda_driver.cc:828] failed to allocate 2.96G (3173555200 bytes) from device: "
            "CUDA_ERROR_OUT_OF_MEMORY: out of memory\n"
        },
        "gpu_oom",
        "gpu-oom-cuda-error-out-of-memory",
    ),
    # the same line cut after its size, as a paste often is
    Scenario(
        "tensorflow-device-allocation-cut-line",
        {
            "train.log": "2018-03-02 14:11:04.870120: I tensorflow/core/common_runtime/gpu/"
            "gpu_device.cc:1195] Creating TensorFlow device (/device:GPU:0) -> (device: 0, "
            "name: Tesla K80, pci bus id: 0000:00:1e.0, compute capability: 3.7)\n"
            "2018-03-02 14:11:05.210034: E tensorflow/stream_executor/cuda/cuda_driver.cc:936] "
            "failed to allocate 10.73G"
        },
        "gpu_oom",
        "gpu-oom-tf-cuda-device-allocation-failed",
    ),
    # MXNet's pooled storage manager, whole and cut mid-word
    Scenario(
        "mxnet-pooled-storage-cudamalloc",
        {
            "train.log": "mxnet.base.MXNetError: [07:13:21] src/storage/./pooled_storage_manager"
            ".h:157: cudaMalloc retry failed: out of memory\n"
        },
        "gpu_oom",
        "gpu-oom-cuda-error-out-of-memory",
    ),
    Scenario(
        "mxnet-pooled-storage-cudamalloc-cut",
        {
            "train.log": "2017-06-23 09:15:00,581 Start training with [gpu(0)]\n"
            "[09:15:02] /mxnet/dmlc-core/include/dmlc/./logging.h:304: [09:15:02] "
            "src/storage/./pooled_storage_manager.h:84: cudaMalloc failed: out of mem"
        },
        "gpu_oom",
        "gpu-oom-cuda-error-out-of-memory",
    ),
)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_the_mechanism_names_the_cause(tmp_path: Path, scenario: Scenario) -> None:
    assert_scenario_verdict(tmp_path, scenario)


def test_augmenter_workers_dead_alone_is_not_named_shm(tmp_path: Path) -> None:
    """Alone the worker death is ambiguous: no cause is named with confidence."""
    report = log_report(tmp_path / "alone", _AUGMENTER_DEAD)
    assert report.verdict == Verdict.UNKNOWN
    assert report.causes and report.causes[0].category.value == "shm"


def test_augmenter_workers_dead_on_the_hosts_shm_is_not_explained(tmp_path: Path) -> None:
    report = report_of(
        tmp_path / "ipc-host",
        {"train.log": _AUGMENTER_DEAD, "docker_inspect.json": _inspect(67108864, "host")},
    )
    assert report.verdict != Verdict.SHM


_FAIRSEQ_GOING_ON = "".join(
    f"| epoch 001 | loss 7.{i:02d} | nll_loss 6.90 | ppl 119.4 | wps 1204 | ups 1 | wpb 3810 "
    f"| bsz 121 | num_updates {i} | lr 0.0005 | gnorm 1.21 | clip 0 | oom 0 | wall {i * 3}\n"
    + ("| WARNING: ran out of memory, skipping batch\n" if i == 5 else "")
    for i in range(1, 40)
)


def test_a_training_run_that_goes_on_past_a_skipped_batch_is_going_on(tmp_path: Path) -> None:
    report = log_report(tmp_path / "fairseq", _FAIRSEQ_GOING_ON)
    assert report.verdict == Verdict.NONE
    assert ending_of(report) is Ending.ONGOING


def test_a_boltz_run_with_no_failed_example_is_not_gpu_oom(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "boltz-ok",
        "Predicting DataLoader 0: 100%|##########| 1/1 [03:39<00:00,  0.00it/s]"
        "Number of failed examples: 0\n",
    )
    assert report.verdict != Verdict.GPU_OOM


def test_onnxruntime_cpu_fallback_is_a_run_going_on(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "ort",
        "/root/anaconda3/envs/mase/lib/python3.11/site-packages/onnxruntime/capi/"
        "onnxruntime_inference_collection.py:69: UserWarning: Specified provider "
        "'CUDAExecutionProvider' is not in available provider names.Available providers: "
        "'AzureExecutionProvider, CPUExecutionProvider'\n"
        "  warnings.warn(\n"
        "    INFO     Starting transformation analysis on jsc-toy-onnx\n",
    )
    assert report.verdict == Verdict.NONE
    assert ending_of(report) is Ending.ONGOING


def test_a_crash_after_the_onnxruntime_fallback_still_shows(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "ort-crash",
        "/opt/conda/lib/python3.9/site-packages/onnxruntime/capi/"
        "onnxruntime_inference_collection.py:53: UserWarning: Specified provider "
        "'CUDAExecutionProvider' is not in available provider names.Available providers: "
        "'CPUExecutionProvider'\n"
        "Traceback (most recent call last):\n"
        '  File "/work/demo.py", line 24, in <module>\n'
        "    result = model.test_step(model_inputs)\n"
        "RuntimeError: Expected all tensors to be on the same device, but found at least two "
        "devices, cuda:0 and cpu!\n",
    )
    assert report.verdict != Verdict.NONE
    assert ending_of(report) is Ending.DIED
