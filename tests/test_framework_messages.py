"""Messages that widely used DL frameworks print for the taxonomy's causes, taken from their
sources (vLLM, SGLang, Ray, JAX/XLA, TensorFlow, TensorRT, onnxruntime, bitsandbytes, Hugging
Face datasets). Each log under `tests/data/framework_messages/` holds a few lines of the shape
the framework prints around the message, identifiers replaced. A failing run names the cause's
category, with the framework's own rule among its evidence; a run that printed only a
framework's harmless warning names no cause."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.mechanism_helpers import log_report

from crashlens.model import Verdict

LOGS = Path(__file__).parent / "data" / "framework_messages"

# (log name, category of the leading cause, rule among its evidence)
FAILURES: list[tuple[str, str, str]] = [
    # vLLM v1's start-up free-memory check (gpu_worker.py)
    ("vllm-startup-free-memory", "gpu_oom", "gpu-oom-vllm-startup-free-memory"),
    # vLLM v1's KV-cache check, stated in memory (kv_cache_utils.py)
    ("vllm-kv-cache-below-max-len", "gpu_oom", "gpu-oom-vllm-no-kv-cache"),
    # vLLM's memory-profiling assertion (free memory grew under it)
    ("vllm-memory-profiling", "gpu_oom", "gpu-oom-vllm-memory-profiling-disturbed"),
    # SGLang's launcher SIGKILLs its own tree after a child's error: the Killed is no OOM kill
    ("sglang-child-failed-then-killed", "gpu_oom", "gpu-oom-serving-memory-pool"),
    # XLA coordination service: a barrier some tasks never reached
    ("jax-barrier-timed-out", "network", "network-jax-barrier-timed-out"),
    # XLA coordination service: a task stopped sending heartbeats
    ("jax-peer-heartbeats-lost", "network", "network-jax-peer-tasks-unhealthy"),
    # Ray OutOfDiskError (exceptions.py), the raylet's file_system_monitor.cc
    ("ray-out-of-disk", "filesystem", "filesystem-ray-out-of-disk"),
    # Ray WorkerCrashedError (exceptions.py)
    ("ray-worker-crashed", "host_oom", "host-oom-ray-worker-died"),
    # Hugging Face datasets' free-space check (builder.py)
    ("hf-datasets-not-enough-disk", "filesystem", "filesystem-hf-cache-not-enough-disk"),
    # an engine serialized by another TensorRT release
    ("tensorrt-engine-version", "driver", "driver-tensorrt-engine-incompatible"),
    # an engine built on another compute capability
    ("tensorrt-engine-other-gpu", "driver", "driver-tensorrt-engine-incompatible"),
    # a TensorRT release without kernels for this GPU
    ("tensorrt-gpu-unsupported", "driver", "driver-tensorrt-gpu-unsupported"),
    # bitsandbytes' CUDA setup (cuda_setup/main.py)
    ("bitsandbytes-cuda-setup", "driver", "driver-bitsandbytes-cuda-setup-failed"),
    # StreamExecutor's cuInit call (cuda_driver.cc), a code it cannot name
    ("tf-cuinit-unnamed-code", "driver", "driver-tf-cuinit-unnamed-error"),
    # TensorFlow's host-to-GPU copy finding no GPU memory
    ("tf-dst-tensor", "gpu_oom", "gpu-oom-tensorflow-dst-tensor-not-initialized"),
    # onnxruntime's BFC arena (bfc_arena.cc)
    ("onnxruntime-arena", "gpu_oom", "gpu-oom-onnxruntime-arena-exhausted"),
    # onnxruntime's CUDA provider library failing to load on Windows
    ("onnxruntime-cuda-provider", "driver", "driver-onnxruntime-gpu-provider-unavailable"),
]

# logs of runs going on past a framework's harmless warning
HARMLESS: list[str] = [
    # TensorFlow's allocator: not a failure, by its own words
    "tensorflow-bfc-soft-allocation",
    # SGLang's scheduler requeues requests and goes on serving
    "sglang-kv-retract",
]


def _log(name: str) -> str:
    return (LOGS / f"{name}.log").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "category", "rule"), [pytest.param(*row, id=row[0]) for row in FAILURES]
)
def test_a_frameworks_message_names_its_cause(
    tmp_path: Path, name: str, category: str, rule: str
) -> None:
    report = log_report(tmp_path, _log(name))
    assert report.causes, "no cause named"
    leading = report.causes[0]
    assert str(leading.category) == category, [(c.category, c.confidence) for c in report.causes]
    assert rule in {item.rule for item in leading.evidence}
    assert report.verdict is not Verdict.NONE


@pytest.mark.parametrize("name", HARMLESS)
def test_a_frameworks_harmless_warning_names_no_cause(tmp_path: Path, name: str) -> None:
    report = log_report(tmp_path, _log(name))
    assert report.verdict is Verdict.NONE
    assert not report.causes


def test_every_log_is_used() -> None:
    named = {row[0] for row in FAILURES} | set(HARMLESS)
    assert {path.stem for path in LOGS.glob("*.log")} == named
