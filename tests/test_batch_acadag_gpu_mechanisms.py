"""GPU-stack mechanisms learned from blind batches ac, ad and ag (TensorRT, CUDA builds of
PyTorch extensions, jaxlib's cuSOLVER, DeepSpeed's op builder, Lightning, DGL), end to end on
lines that are not the cases' own (other public reports of the same messages):

* TensorRT's "CUDA initialization failure with error <n>" (a cudaError_t, 35 = driver too old)
  is driver; its legacy "Cuda Error in allocate: 2 (out of memory)" is gpu_oom.
* A CUDA check macro printing cudaGetErrorString's "out of memory" on its own line (llm.c's
  cudaCheck) is gpu_oom.
* No CUDA kernel for an operator, a missing `<x>_cuda` extension module, DGL's CPU-only build,
  Lightning's unavailable CUDA accelerator, DeepSpeed's CUDA toolkit mismatch and jaxlib's
  cuSOLVER handle failing to start are driver (installation/build) problems.
* TensorRT's linked-vs-loaded cuDNN/cuBLAS warning and its lazy-loading hint are harmless: a
  log ending at them is going on, and a TensorRT error after them still shows.
* Batches ae and af: CTranslate2's "CUDA failed with error out of memory" is gpu_oom;
  tiny-cuda-nn without an extension for the GPU's compute capability is driver; pyannote's
  old-checkpoint version warning, onnxruntime's node-placement notice and ComfyUI's missing
  SDXL CLIP-L projection keys are harmless, and an OOM after the pyannote warning still shows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.model import Verdict
from mechanism_helpers import Scenario, assert_scenario_verdict, log_report

SCENARIOS = (
    # lewes6369/TensorRT-Yolov3#61: CUDA 9.2 with a 384 driver
    Scenario(
        "tensorrt-cuda-init-35",
        {
            "run.log": "init plugin proto: v3face/yolov3_608_trt.prototxt\n"
            "ERROR: Cuda initialization failure with error 35. Please check cuda installation:  "
            "http://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html.\n"
            "Segmentation fault (core dumped)\n"
        },
        "driver",
        "driver-tensorrt-cuda-init-failure",
    ),
    # linghu8812/tensorrt_inference#117: an HRNet engine build on a small GPU
    Scenario(
        "tensorrt-legacy-allocate-oom",
        {
            "build.log": "start building engine\n"
            "[08/03/2022-23:18:05] [E] [TRT] ../rtSafe/safeRuntime.cpp (25) - Cuda Error in "
            "allocate: 2 (out of memory)\n"
            "build engine done\n"
            "mmpose_trt: /home/user/tensorrt_inference/code/src/model.cpp:46: void "
            "Model::OnnxToTRTModel(): Assertion `engine' failed.\n"
            "Aborted (core dumped)\n"
        },
        "gpu_oom",
        "gpu-oom-tensorrt-legacy-cuda-allocate",
    ),
    # llm.c's cudaCheck format (llmc/cuda_common.h), as a trainer on a small card prints it
    Scenario(
        "cuda-check-own-line-oom",
        {
            "train.log": "allocated 474 MiB for model parameters\n"
            "[CUDA ERROR] at file train_gpt2.cu:1032:\n"
            "out of memory\n"
        },
        "gpu_oom",
        "gpu-oom-cuda-error-string-own-line",
    ),
    # facebookresearch/sam2#220: torchvision without CUDA beside a CUDA torch
    Scenario(
        "torchvision-nms-no-cuda-kernel",
        {
            "train.log": "Traceback (most recent call last):\n"
            '  File "amg.py", line 40, in <module>\n'
            "    keep = torchvision.ops.nms(boxes, scores, 0.7)\n"
            "NotImplementedError: Could not run 'torchvision::nms' with arguments from the "
            "'CUDA' backend. This could be because the operator doesn't exist for this backend,"
            " or was omitted during the selective/custom build process (if using custom build)."
            "\n"
        },
        "driver",
        "driver-op-has-no-cuda-kernel",
    ),
    # NVIDIA/apex#499: apex installed without --cuda_ext
    Scenario(
        "apex-fused-layer-norm-cuda-missing",
        {
            "train.log": "Traceback (most recent call last):\n"
            '  File "apex/normalization/fused_layer_norm.py", line 133, in __init__\n'
            '    fused_layer_norm_cuda = importlib.import_module("fused_layer_norm_cuda")\n'
            "ModuleNotFoundError: No module named 'fused_layer_norm_cuda'\n"
        },
        "driver",
        "driver-cuda-extension-module-not-built",
    ),
    # dmlc/dgl#5427: dgl==1.0.1 (CPU build) with a CUDA torch
    Scenario(
        "dgl-cpu-build-on-gpu",
        {
            "train.log": "dgl._ffi.base.DGLError: [14:00:04] /opt/dgl/src/runtime/"
            "c_runtime_api.cc:82: Check failed: allow_missing: Device API cuda is not enabled. "
            "Please install the cuda version of dgl.\n"
        },
        "driver",
        "driver-dgl-cpu-only-build",
    ),
    # Lightning's message for a CPU-only torch (its own test's wording, Trainer form)
    Scenario(
        "lightning-cuda-accelerator-unavailable",
        {
            "train.log": "GPU available: False, used: False\n"
            "lightning_fabric.utilities.exceptions.MisconfigurationException: `CUDAAccelerator`"
            " can not run on your system since the accelerator is not available. The following"
            " accelerator(s) is available and can be passed into `accelerator` argument of "
            "`Trainer`: ['cpu'].\n"
        },
        "driver",
        "driver-lightning-cuda-accelerator-unavailable",
    ),
    # deepspeedai/DeepSpeed#2902: pip install building the ops against CUDA 12.0 with a cu117 torch
    Scenario(
        "deepspeed-op-builder-cuda-mismatch",
        {
            "pip.log": '  File "op_builder/builder.py", line 105, in assert_no_cuda_mismatch\n'
            "    raise Exception(\n"
            "Exception: >- DeepSpeed Op Builder: Installed CUDA version 12.0 does not match the "
            "version torch was compiled with 11.7, unable to compile cuda/cpp extensions without"
            " a matching cuda version.\n"
        },
        "driver",
        "driver-deepspeed-op-builder-cuda-mismatch",
    ),
    # nrbennet/dl_binder_design#38: a conda CUDA that does not fit the driver
    Scenario(
        "jaxlib-cusolver-handle-internal-error",
        {
            "predict.log": "Traceback (most recent call last):\n"
            '  File "predict.py", line 120, in <module>\n'
            "RuntimeError: jaxlib/cusolver.cc:51: operation cusolverDnCreate(&handle) failed: "
            "cuSolver internal error\n"
        },
        "driver",
        "driver-jax-cusolver-handle-internal-error",
    ),
    # SYSTRAN/faster-whisper#442: whisper-ctranslate2 decoding on a 12 GB GPU
    Scenario(
        "ctranslate2-cuda-failed-oom",
        {
            "transcribe.log": '  File "faster_whisper/transcribe.py", line 584, in '
            "generate_with_fallback\n"
            "    result = self.model.generate(\n"
            "RuntimeError: CUDA failed with error out of memory\n"
        },
        "gpu_oom",
        "gpu-oom-ctranslate2-cuda-failed-out-of-memory",
    ),
    # NVlabs/tiny-cuda-nn#230's wording, on the Jetson Orin of #434 (each tests the other)
    Scenario(
        "tinycudann-no-extension-for-capability",
        {
            "python.txt": "Traceback (most recent call last):\n"
            '  File "tinycudann/modules.py", line 59, in <module>\n'
            "OSError: Could not find compatible tinycudann extension for compute capability 87.\n"
        },
        "driver",
        "driver-extension-not-built-for-gpu-capability",
    ),
)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_the_mechanism_names_the_cause(tmp_path: Path, scenario: Scenario) -> None:
    assert_scenario_verdict(tmp_path, scenario)


def test_tensorrt_library_version_warnings_alone_are_a_run_going_on(tmp_path: Path) -> None:
    # open-mmlab/mmdeploy#914's sample_mnist start-up, cut after the warnings
    report = log_report(
        tmp_path / "trt",
        "&&&& RUNNING TensorRT.sample_mnist [TensorRT v8200] # ./sample_mnist\n"
        "[08/18/2022-02:11:58] [W] [TRT] TensorRT was linked against cuBLAS/cuBLAS LT 11.6.1 "
        "but loaded cuBLAS/cuBLAS LT 11.4.2\n"
        "[08/18/2022-02:11:58] [W] [TRT] TensorRT was linked against cuDNN 8.2.1 but loaded "
        "cuDNN 8.2.0\n"
        "[08/18/2022-02:11:58] [W] [TRT] CUDA lazy loading is not enabled. Enabling it can "
        "significantly reduce device memory usage and speed up TensorRT initialization.\n",
    )
    assert report.verdict == Verdict.NONE


def test_a_tensorrt_failure_after_the_version_warning_still_shows(tmp_path: Path) -> None:
    # NVIDIA/TensorRT#840: the warning, then the builder running out of memory
    report = log_report(
        tmp_path / "trt",
        "[W] [TRT] TensorRT was linked against cuDNN 7.6.3 but loaded cuDNN 7.6.0\n"
        "ERROR: ../rtSafe/safeRuntime.cpp (25) - Cuda Error in allocate: 2 (out of memory)\n"
        "&&&& FAILED TensorRT.sample_onnx_mnist # ./sample_onnx_mnist\n",
    )
    assert str(report.verdict) == "gpu_oom"


@pytest.mark.parametrize(
    "text",
    [
        # QuentinFuxa/WhisperLiveKit's server with diarization
        "Model was trained with pyannote.audio 0.0.1, yours is 3.3.2. Bad things might happen "
        "unless you revert pyannote.audio to 0.x.\n"
        "Model was trained with torch 1.10.0+cu102, yours is 2.2.2+cu121. Bad things might "
        "happen unless you revert torch to 1.x.\n",
        # Comfy-Org/ComfyUI#2172 at a model switch
        "got prompt\nmodel_type EPS\n"
        "missing {'cond_stage_model.clip_l.logit_scale', 'cond_stage_model.clip_l."
        "text_projection'}\n",
        # k2-fsa/sherpa-onnx streaming on the GPU, then a success line
        "[W:onnxruntime:, session_state.cc:1136 VerifyEachNodeIsAssignedToAnEp] Some nodes were "
        "not assigned to the preferred execution providers which may or may not have an negative"
        " impact on performance.\n"
        "INFO - CUDA execution provider initialized successfully\n",
    ],
    ids=["pyannote-versions", "comfyui-clip-l-keys", "onnxruntime-placement"],
)
def test_model_loading_notices_alone_are_a_run_going_on(tmp_path: Path, text: str) -> None:
    assert log_report(tmp_path / "run", text).verdict == Verdict.NONE


def test_an_oom_after_the_pyannote_warning_still_shows(tmp_path: Path) -> None:
    # m-bain/whisperX#315's other report: the warning, then CTranslate2 out of memory
    report = log_report(
        tmp_path / "wx",
        "Model was trained with pyannote.audio 0.0.1, yours is 2.1.1. Bad things might happen "
        "unless you revert pyannote.audio to 0.x.\n"
        "RuntimeError: CUDA failed with error out of memory\n",
    )
    assert str(report.verdict) == "gpu_oom"
