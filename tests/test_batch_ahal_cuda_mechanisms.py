"""CUDA-stack mechanisms learned from blind batches ah to al, end to end on lines that are not
the cases' own (other public reports of the same messages, the vendors' documented formats):

* torchaudio (and older torchvision, PyTorch Geometric) refusing a torch of another CUDA build,
  a TensorRT library the loader cannot find, PaddlePaddle's dynload failing to open cuDNN, and
  Caffe/Caffe2's check of an NCCL call on one machine are driver (installation) problems.
* TensorFlow's "Resource exhausted: OOM" status is gpu_oom.
* TensorRT's builder running short of scratch memory for a tactic is harmless when the build
  goes on (it skips the tactic); a build that then finds no implementation that fits fails
  of GPU memory.
* Warp's fallback when CUDA/OpenGL interop is unavailable, diffusers loading .bin weights
  when no .safetensors exist, and Megatron's planned exit after --exit-duration-in-mins are
  a run going on (or done), and a crash after the first two still shows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.model import Ending, Verdict
from mechanism_helpers import Scenario, assert_scenario_verdict, log_report

SCENARIOS = (
    # a public setup report: vLLM upgraded torch to a CUDA 13.0 build, torchaudio stayed on 12.6
    Scenario(
        "torchaudio-cuda-build-mismatch",
        {
            "train.log": "Traceback (most recent call last):\n"
            '  File "train.py", line 3, in <module>\n'
            "    from peft import LoraConfig\n"
            "RuntimeError: Detected that PyTorch and TorchAudio were compiled with different CUDA "
            "versions. PyTorch has CUDA version 13.0 whereas TorchAudio has CUDA version 12.6. "
            "Please install the TorchAudio version that matches your PyTorch version.\n"
        },
        "driver",
        "driver-torch-extension-cuda-build-mismatch",
    ),
    # a KataGo TensorRT build run as a service without the TensorRT libraries on its path
    Scenario(
        "tensorrt-libnvinfer-missing",
        {
            "service.log": "[KataGo Log] /usr/bin/katago: error while loading shared libraries: "
            "libnvinfer.so.10: cannot open shared object file: No such file or directory\n"
        },
        "driver",
        "driver-tensorrt-library-missing",
    ),
    # PaddleOCR on a GPU host without cuDNN (Paddle 2.x's phi dynload)
    Scenario(
        "paddle-cudnn-not-loadable",
        {
            "ocr.log": "RuntimeError: (PreconditionNotMet) Cannot load cudnn shared library. "
            "Cannot invoke method cudnnGetVersion.\n"
            "  [Hint: cudnn_dso_handle should not be null.] "
            "(at /paddle/paddle/phi/backends/dynload/cudnn.cc:64)\n"
        },
        "driver",
        "driver-paddle-dynload-library-missing",
    ),
    # NVIDIA/caffe#450: NVCaffe's multi-GPU test with an NCCL 2.1 of another CUDA build
    Scenario(
        "caffe-nccl-check-failed",
        {
            "runtest.log": "[ RUN      ] RMSPropSolverTest/2."
            "TestRMSPropLeastSquaresUpdateWithRmsDecay\n"
            "F1206 07:37:19.964359 10589 parallel.cpp:156] Check failed: result == ncclSuccess "
            "(1 vs. 0)  unhandled cuda error\n"
            "*** Check failure stack trace: ***\n"
            "@     0x7f55d9a0f5cd  google::LogMessage::Fail()\n"
            "@     0x7f55d9a11433  google::LogMessage::SendToLog()\n"
        },
        "driver",
        "driver-caffe-nccl-check-failed",
    ),
    # a TensorFlow 1.x OP_REQUIRES warning as the corpus holds it, then the raised error
    Scenario(
        "tf-resource-exhausted-oom",
        {
            "train.log": "W tensorflow/core/framework/op_kernel.cc:993] Resource exhausted: OOM "
            "when allocating tensor with shape[3,3,512,512]\n"
            "Traceback (most recent call last):\n"
            '  File "train.py", line 88, in <module>\n'
            "    sess.run(train_op)\n"
            "tensorflow.python.framework.errors_impl.ResourceExhaustedError: Resource exhausted: "
            "OOM\n"
        },
        "gpu_oom",
        "gpu-oom-tf-resource-exhausted-oom-status",
    ),
)

# NVIDIA/TensorRT#2643: a diffusion UNet build on an A100 asking for a 64 GiB tactic
_TACTIC_OOM = (
    "[I] Building engine with configuration:\n"
    "    Memory Pools           | [WORKSPACE: 40396.19 MiB]\n"
    "[E] 2: [virtualMemoryBuffer.cpp::resizePhysical::145] Error Code 2: OutOfMemory "
    "(no further information)\n"
    "[E] 2: [virtualMemoryBuffer.cpp::resizePhysical::145] Error Code 2: OutOfMemory "
    "(no further information)\n"
    "[W] Requested amount of GPU memory (68719476736 bytes) could not be allocated. There may "
    "not be enough free memory for allocation to succeed.\n"
    "[W] Skipping tactic 3 due to insufficient memory on requested size of 68719476736 "
    "detected for tactic 0x0000000000000074.\n"
)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_the_mechanism_names_the_cause(tmp_path: Path, scenario: Scenario) -> None:
    assert_scenario_verdict(tmp_path, scenario)


def test_a_tensorrt_tactic_short_of_memory_is_a_build_going_on(tmp_path: Path) -> None:
    report = log_report(tmp_path / "trt", _TACTIC_OOM)
    assert report.verdict == Verdict.NONE


def test_a_tensorrt_build_done_after_tactic_ooms_is_finished(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "trt",
        _TACTIC_OOM + "[I] Engine built in 812.4 sec.\n"
        "&&&& PASSED TensorRT.trtexec [TensorRT v8601] # trtexec --onnx=unet.onnx --fp16\n",
    )
    assert report.verdict == Verdict.NONE


def test_a_tensorrt_build_that_finds_no_implementation_after_tactic_ooms_is_gpu_oom(
    tmp_path: Path,
) -> None:
    report = log_report(
        tmp_path / "trt",
        _TACTIC_OOM + "[E] 10: [optimizer.cpp::computeCosts::3728] Error Code 10: Internal "
        "Error (Could not find any implementation for node {ForeignNode[/down_blocks.0/...]}.)\n"
        "[E] 2: [builder.cpp::buildSerializedNetwork::751] Error Code 2: Internal Error "
        "(Assertion engine != nullptr failed. )\n"
        "[E] Engine could not be created from network\n"
        "&&&& FAILED TensorRT.trtexec [TensorRT v8601] # trtexec --onnx=unet.onnx --fp16\n",
    )
    assert str(report.verdict) == "gpu_oom"


# Isaac Lab's known-issues page (Newton visualizer): the lines a working visualizer prints
_WARP_INTEROP = (
    "Warp CUDA error 999: unknown error (in function wp_cuda_graphics_register_gl_buffer)\n"
    "Warp UserWarning: Could not register GL buffer since CUDA/OpenGL interoperability is not "
    "available. Falling back to copy operations between the Warp array and the OpenGL buffer.\n"
    "Warp CUDA error 304: OS call failed or operation not supported on this OS (in function "
    "wp_cuda_graphics_register_gl_buffer, /builds/warp/warp/native/warp.cu:3651)\n"
)


def test_warp_without_gl_interop_is_a_run_going_on(tmp_path: Path) -> None:
    report = log_report(tmp_path / "warp", _WARP_INTEROP)
    assert report.verdict == Verdict.NONE
    assert report.assessment is not None and report.assessment.ending is Ending.ONGOING


def test_a_real_cuda_error_304_still_ends_a_run(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "warp",
        _WARP_INTEROP + "RuntimeError: CUDA error: OS call failed or operation not supported "
        "on this OS\n",
    )
    assert report.verdict != Verdict.NONE
    assert report.assessment is not None and report.assessment.ending is Ending.DIED


# TMElyralab/MuseTalk inference: its VAE folder ships a .bin only
_DIFFUSERS_BIN = (
    "An error occurred while trying to fetch models/sd-vae: Error no file named "
    "diffusion_pytorch_model.safetensors found in directory models/sd-vae.\n"
    "Defaulting to unsafe serialization. Pass `allow_pickle=False` to raise an error instead.\n"
)


def test_diffusers_loading_bin_weights_is_a_run_going_on(tmp_path: Path) -> None:
    assert log_report(tmp_path / "mt", _DIFFUSERS_BIN).verdict == Verdict.NONE


def test_a_folder_with_no_weights_at_all_still_fails(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "mt",
        _DIFFUSERS_BIN + "Traceback (most recent call last):\n"
        '  File "inference.py", line 40, in <module>\n'
        '    vae = AutoencoderKL.from_pretrained("models/sd-vae")\n'
        "OSError: Error no file named diffusion_pytorch_model.bin found in directory "
        "models/sd-vae.\n",
    )
    assert report.assessment is not None and report.assessment.ending is Ending.DIED


def test_megatron_exit_after_its_time_budget_is_a_finished_run(tmp_path: Path) -> None:
    # Megatron-LM's training loop with --exit-duration-in-mins (megatron/training/training.py)
    report = log_report(
        tmp_path / "mg",
        " iteration     4990/   20000 | consumed samples:      5109760 | lm loss: 2.412E+00 |\n"
        " iteration     5000/   20000 | consumed samples:      5120000 | lm loss: 2.409E+00 |\n"
        "saving checkpoint at iteration    5000 to /ckpt/gpt\n"
        "  successfully saved checkpoint at iteration    5000 to /ckpt/gpt\n"
        "[exiting program after 239.98 minutes] datetime: 2023-11-02 14:05:11 \n",
    )
    assert report.verdict == Verdict.NONE
    assert report.assessment is not None and report.assessment.ending is Ending.COMPLETED
