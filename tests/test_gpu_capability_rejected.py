"""A library that ships its own CUDA kernels refusing the GPU's architecture (flash-attn, Text
Generation Inference's flash models) is a GPU/build mismatch, decided end to end on logs
written in those projects' line formats (public threads, never a corpus case's text); the
fallback warning TGI logs when it carries on without flash attention is no failure.
A glog CUDA check that names `cudaSuccess` as what it expected is a failed call, not the
informational status."""

from __future__ import annotations

from pathlib import Path

from mechanism_helpers import log_report

TGI_SHARD_FAILED = (
    "2023-06-07T09:27:35.102Z  INFO text_generation_launcher: Starting shard 0\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/conda/bin/text-generation-server", line 8, in <module>\n'
    "    sys.exit(app())\n"
    '  File "/opt/conda/lib/python3.9/site-packages/text_generation_server/models/__init__.py",'
    " line 29, in <module>\n"
    "    raise ImportError(\n"
    "ImportError: GPU with CUDA capability 7 0 is not supported\n"
    "2023-06-07T09:27:38.901Z ERROR text_generation_launcher: Shard 0 failed to start\n"
)

FLASH_ATTN_FORWARD = (
    "Loading checkpoint shards: 100%|##########| 2/2 [00:09<00:00,  4.61s/it]\n"
    "Traceback (most recent call last):\n"
    '  File "generate.py", line 41, in <module>\n'
    "    out = model.generate(**inputs, max_new_tokens=64)\n"
    '  File "/usr/local/lib/python3.10/dist-packages/flash_attn/flash_attn_interface.py",'
    " line 47, in _flash_attn_forward\n"
    "    out, q, k, v, out_padded, softmax_lse, S_dmask, rng_state = flash_attn_cuda.fwd(\n"
    "RuntimeError: FlashAttention only supports Ampere GPUs or newer.\n"
)

TGI_FALLBACK_THEN_OOM = (
    "2023-07-24T02:39:19.746433Z  WARN text_generation_launcher: Could not import Flash "
    "Attention enabled models: GPU with CUDA capability 7 0 is not supported\n"
    "2023-07-24T02:39:41.208114Z ERROR text_generation_launcher: Error when initializing model\n"
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.02 GiB (GPU 0; "
    "15.77 GiB total capacity; 14.91 GiB already allocated; 312.19 MiB free; 14.93 GiB "
    "reserved in total by PyTorch)\n"
)

CAFFE_CHECK_LAUNCH_FAILURE = (
    "I0312 10:04:51.220113  8812 solver.cpp:228] Iteration 1200, loss = 0.4137\n"
    "F0312 10:04:53.558201  8812 math_functions.cu:79] Check failed: error == cudaSuccess "
    "(4 vs. 0)  unspecified launch failure\n"
    "*** Check failure stack trace: ***\n"
    "Aborted (core dumped)\n"
)

RULE = "driver-library-rejects-gpu-capability"


def test_tgi_refusing_the_gpu_is_a_driver_failure(tmp_path: Path) -> None:
    report = log_report(tmp_path / "tgi", TGI_SHARD_FAILED)
    assert str(report.verdict) == "driver", [(c.category, c.confidence) for c in report.causes]
    assert RULE in {item.rule for item in report.causes[0].evidence}


def test_flash_attn_refusing_a_pre_ampere_gpu_is_a_driver_failure(tmp_path: Path) -> None:
    report = log_report(tmp_path / "fa", FLASH_ATTN_FORWARD)
    assert str(report.verdict) == "driver", [(c.category, c.confidence) for c in report.causes]
    assert RULE in {item.rule for item in report.causes[0].evidence}


def test_the_fallback_warning_leaves_the_real_failure_in_charge(tmp_path: Path) -> None:
    report = log_report(tmp_path / "fallback", TGI_FALLBACK_THEN_OOM)
    assert str(report.verdict) == "gpu_oom"
    cited = {item.rule for cause in report.causes for item in cause.evidence}
    assert RULE not in cited


def test_a_failed_glog_cuda_check_is_not_an_informational_status(tmp_path: Path) -> None:
    report = log_report(tmp_path / "caffe", CAFFE_CHECK_LAUNCH_FAILURE)
    cited = {item.rule for cause in report.causes for item in cause.evidence}
    assert "hardware-cuda-launch-failure" in cited
    assert "driver-cuda-status-harmless" not in cited
