"""GPU-library failures read through the cuFFT and NVRTC catalogs (patterns/tables/
cufft_errors.toml, nvrtc_errors.toml) and two library surrogates, end to end on launcher logs
from public reports other than the corpus cases that prompted them (paths and hosts neutral):

* NVRTC refusing the GPU's architecture (a framework build older than the GPU) and failing to
  open libnvrtc-builtins are driver problems;
* cuFFT's internal error names `driver` alone, and gives way to `gpu_oom` when the log shows
  the GPU out of memory: the table marks it ambiguous and the other evidence decides;
* an NCCL topology XML without an attribute NCCL needs (an injected or net-plugin topology)
  is driver, and NCCL probing an optional attribute at INFO level is no failure;
* PyTorch's cuDNN "unable to find an engine" follows a cuDNN library that did not load
  (driver), or a GPU out of memory (gpu_oom).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mechanism_helpers import Scenario, assert_leads, assert_scenario_verdict, log_report

_TORCH_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total "
    "capacity of 23.65 GiB of which 312.44 MiB is free. Process 4188 has 23.33 GiB memory in "
    "use. Of the allocated memory 22.61 GiB is allocated by PyTorch, and 301.12 MiB is reserved "
    "by PyTorch but unallocated.\n"
)

SCENARIOS = (
    # NVlabs/nvdiffmodeling#25: an RTX 4090 under a cu113 torch, the jiterator's kernel log
    Scenario(
        "nvrtc-jiterator-arch",
        {
            "train.log": "Traceback (most recent call last):\n"
            '  File "train.py", line 514, in <module>\n'
            "    loss = image_loss_fn(color, color_ref).prod()\n"
            "RuntimeError: nvrtc: error: invalid value for --gpu-architecture (-arch)\n"
            "\n"
            "nvrtc compilation failed: \n"
            "\n"
            "#define NAN __int_as_float(0x7fffffff)\n"
            "__global__ void reduction_prod_kernel(ReduceJitOp r){\n"
            "  r.run();\n"
            "}\n"
        },
        "driver",
        "driver-nvrtc-gpu-architecture-unknown",
    ),
    # a torch 2.11 + cu130 venv whose loader finds a CUDA 12 libnvrtc-builtins first
    Scenario(
        "nvrtc-builtins",
        {
            "serve.log": "INFO 03-02 10:14:02 model_runner.py:1062] Loading model weights took "
            "14.9 GB\n"
            "nvrtc: error: failed to open libnvrtc-builtins.so.13.0.\n"
            "  Make sure that libnvrtc-builtins.so.13.0 is installed correctly.\n"
            "Traceback (most recent call last):\n"
            '  File "serve.py", line 40, in <module>\n'
            "RuntimeError: nvrtc compilation failed\n"
        },
        "driver",
        "driver-nvrtc-builtins-unavailable",
    ),
    # pytorch/pytorch#89556: torch.fft.fft2 on an RTX 4090 with torch 1.13 + cu116
    Scenario(
        "cufft-internal-error",
        {
            "fft.log": "Traceback (most recent call last):\n"
            '  File "fft_test.py", line 4, in <module>\n'
            "    torch.fft.fft2(aa)\n"
            "RuntimeError: cuFFT error: CUFFT_INTERNAL_ERROR\n"
        },
        "driver",
        "driver-cufft-library-error",
    ),
    # NVIDIA/nccl#1726: vLLM on a p5.48xlarge whose plugin topology XML lacks the CPUs' arch
    Scenario(
        "nccl-topology-attribute",
        {
            "worker.log": "node-04:8121:8121 [0] NCCL INFO NET/Plugin: Loaded net plugin AWS "
            "Libfabric (v7)\n"
            "node-04:8121:8190 [0] graph/xml.h:101 NCCL WARN Attribute arch of node cpu not "
            "found\n"
            "node-04:8121:8190 [0] NCCL INFO graph/topo.cc:493 -> 3\n"
            "node-04:8121:8190 [0] NCCL INFO init.cc:1031 -> 3\n"
            "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
            "internal error - please report this issue to the NCCL developers, NCCL version "
            "2.21.5\n"
        },
        "driver",
        "driver-nccl-topology-xml-attribute-missing",
    ),
    # a cuDNN 8 wheel whose sub-library is not on the loader path, then the v8 API's surrogate
    Scenario(
        "cudnn-engine-library",
        {
            "train.log": "Could not load library libcudnn_cnn_train.so.8. Error: "
            "libcudnn_cnn_train.so.8: cannot open shared object file: No such file or directory\n"
            "Traceback (most recent call last):\n"
            '  File "train.py", line 375, in train_and_evaluate\n'
            "    scaler.scale(loss).backward()\n"
            "RuntimeError: GET was unable to find an engine to execute this computation\n"
        },
        "driver",
        "driver-library-missing",
    ),
)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_the_mechanism_names_the_cause(tmp_path: Path, scenario: Scenario) -> None:
    assert_scenario_verdict(tmp_path, scenario)


def test_a_cufft_internal_error_after_a_cuda_oom_is_gpu_memory(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "stft",
        "step 120 loss 0.412\n" + _TORCH_OOM + "Traceback (most recent call last):\n"
        '  File "train.py", line 88, in <module>\n'
        "    spec = torch.stft(wav, n_fft=1024, return_complex=True)\n"
        "RuntimeError: cuFFT error: CUFFT_INTERNAL_ERROR\n",
    )
    assert_leads(report, "gpu_oom")


def test_no_cudnn_engine_after_a_cuda_oom_is_gpu_memory(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "conv",
        "step 40 loss 1.93\n"
        + _TORCH_OOM
        + "RuntimeError: GET was unable to find an engine to execute this computation\n",
    )
    assert_leads(report, "gpu_oom")


def test_the_info_level_attribute_probe_is_no_cause(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "probe",
        "node-02:1957:2011 [1] NCCL INFO Attribute coll of node net not found\n"
        "node-02:1957:2011 [1] NCCL INFO === System : maxWidth 24.0 totalBw 24.0 ===\n"
        "step 100 loss 2.18\n"
        "step 200 loss 1.97\n",
    )
    assert all(
        item.rule != "driver-nccl-topology-xml-attribute-missing"
        for cause in report.causes
        for item in cause.evidence
    )


def test_every_cufft_and_nvrtc_entry_is_recognised(shipped_coverage: dict[str, Any]) -> None:
    rows = shipped_coverage
    for table in ("cufft_errors", "nvrtc_errors"):
        assert rows[table].missing == (), rows[table]
        assert rows[table].covered == rows[table].entries
