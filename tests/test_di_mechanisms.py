"""Mechanisms learned from batch 2026-12-06-di's misses, each tested on lines and logs written for
the test, not taken from the cases: CTranslate2's loader naming a Linux CUDA library it cannot
load, PyTorch's `cudaGetDeviceCount` warning whose CUDA error code stands on one line and its
message on the next (a wrapping console), PyTorch's ROCm warning that the HIP runtime could not
count the GPUs, bash's report of a killed command with `line` translated (`riga`), and a
server's summary of one request (ComfyUI's `Prompt executed in ...`, text-generation-webui's
`Output generated in ...`), which is no finish after a failed request."""

from __future__ import annotations

from pathlib import Path

from crashlens.model import Ending
from mechanism_helpers import ending_of, log_report

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "RuntimeError: Library libcudnn_cnn_infer.so.8 is not found or cannot be loaded",
        "driver-library-missing",
    ),
    (
        "           before calling NumCudaDevices() that might have already set an error? Error"
        " 803: system has           train.py:41",
        "driver-system-driver-mismatch",
    ),
    (
        "/usr/lib/python3/dist-packages/torch/cuda/__init__.py:118: UserWarning: HIP"
        " initialization: Unexpected error from hipGetDeviceCount(). Did you run some cuda"
        " functions before calling NumHipDevices() that might have already set an error? Error"
        " 219: hipErrorNoBinaryForGpu",
        "driver-rocm-gpu-unavailable",
    ),
    (
        "./finetune.sh: riga 9:  3121 Killed                  python finetune.py --bf16",
        "host-oom-shell-killed",
    ),
]

_COMFY_PROMPTS = (
    "Starting server\n"
    "To see the GUI go to: http://127.0.0.1:8188\n"
    "got prompt\n"
    "model_type EPS\n"
    "100%|##########| 20/20 [00:04<00:00,  4.61it/s]\n"
    "Prompt executed in 6.02 seconds\n"
    "got prompt\n"
    "100%|##########| 30/30 [00:06<00:00,  4.58it/s]\n"
    "Prompt executed in 00:11:02\n"
)
_COMFY_FAILED = (
    "got prompt\n"
    "!!! Exception during processing !!!\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/comfy/execution.py", line 152, in recursive_execute\n'
    "    output_data, output_ui = get_output_data(obj, input_data_all)\n"
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a"
    " total capacity of 11.99 GiB of which 212.00 MiB is free.\n"
    "\n"
    "Prompt executed in 3.91 seconds\n"
)
_COMFY_NODE_IMPORT_FAILED = (
    "Traceback (most recent call last):\n"
    '  File "/opt/comfy/nodes.py", line 1906, in load_custom_node\n'
    "    module_spec.loader.exec_module(module)\n"
    "ModuleNotFoundError: No module named 'onnxruntime'\n"
    "\n"
    "Cannot import /opt/comfy/custom_nodes/ComfyUI-Seg module for custom nodes: No module named"
    " 'onnxruntime'\n"
    "Starting server\n"
    "got prompt\n"
    "100%|##########| 25/25 [00:05<00:00,  4.80it/s]\n"
    "Prompt executed in 7.33 seconds\n"
)
_COMFY_FAILED_THEN_OK = _COMFY_FAILED + (
    "got prompt\n100%|##########| 20/20 [00:04<00:00,  4.61it/s]\nPrompt executed in 5.12 seconds\n"
)
_WEBUI_FAILED_THEN_REPLY = (
    "Traceback (most recent call last):\n"
    '  File "/opt/webui/modules/text_generation.py", line 391, in generate_reply_HF\n'
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 86.00 MiB. GPU 0 has a"
    " total capacity of 7.79 GiB of which 12.31 MiB is free.\n"
    "Output generated in 9.02 seconds (6.10 tokens/s, 55 tokens, context 3410, seed 77)\n"
)

# read by tests/test_mechanism_endings.py
LOGS_AND_ENDINGS = [
    ("comfyui-prompts-executed", _COMFY_PROMPTS, Ending.COMPLETED),
    # no finish: the summary follows the failed prompt's traceback, and shows that the
    # request failed (the server goes on)
    ("comfyui-failed-prompt-executed", _COMFY_FAILED, Ending.DIED),
    # the same where the reply had tokens: its summary comes after a failure line
    ("webui-failed-then-reply", _WEBUI_FAILED_THEN_REPLY, Ending.DIED),
    # a custom node that failed to import at start-up is no failure of the prompt after it
    ("comfyui-node-import-failed-then-prompt", _COMFY_NODE_IMPORT_FAILED, Ending.COMPLETED),
    # nor is a failed prompt one of the next prompt, which the server summed up after it
    ("comfyui-failed-then-next-prompt-executed", _COMFY_FAILED_THEN_OK, Ending.COMPLETED),
]


def test_a_failed_prompt_is_its_failure_not_a_healthy_run(tmp_path: Path) -> None:
    report = log_report(tmp_path / "comfyui", _COMFY_FAILED)
    assert ending_of(report) is Ending.DIED
    assert report.assessment is not None and report.assessment.sign is not None
    assert "Prompt executed" in report.assessment.sign.text
    assert str(report.verdict) == "gpu_oom"
