"""Mechanisms learned from batch 2026-12-06-df's misses, each tested on lines and logs written for
the test, not taken from the cases: PyTorch's out-of-memory sentence about a GPU's capacity
quoted without its head, NVIDIA PhysX's check of the driver's CUDA version, a Hugging Face Space's
eviction status quoted without its limit, and text-generation-webui's summary of a finished
reply (a finish only with new tokens: it is printed after a failed generation's traceback too)."""

from __future__ import annotations

from crashlens.model import Ending

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "GPU 2 has a total capacity of 79.33 GiB of which 6.19 MiB is free. Process 2291 has 79.31"
        " GiB memory in use.",
        "gpu-oom-cuda-out-of-memory",
    ),
    (
        "[serve] load failed: GPU 0 has a total capacity of 15.77 GiB of which 20.12 MiB is free.",
        "gpu-oom-cuda-out-of-memory",
    ),
    (
        "/opt/physx/source/cudamanager/src/CudaContextManager.cpp (629) : warning : CUDA driver"
        " version is 11040, expected at least 12000.",
        "driver-cuda-driver-insufficient",
    ),
    ("Space evicted, storage limit exceeded", "filesystem-hf-space-evicted-storage-limit"),
]

_WEBUI_REPLY = (
    "INFO:Loading TheModel-13B-GPTQ...\n"
    "INFO:Loaded the model in 9.87 seconds.\n"
    "Running on local URL:  http://127.0.0.1:7860\n"
    "Output generated in 21.04 seconds (9.46 tokens/s, 199 tokens, context 58, seed 99120311)\n"
)
_WEBUI_FAILED = (
    "Running on local URL:  http://127.0.0.1:7860\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/webui/modules/text_generation.py", line 391, in generate_reply_HF\n'
    "    output = shared.model.generate(**generate_params)[0]\n"
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 214.00 MiB. GPU 0 has a"
    " total capacity of 11.76 GiB of which 40.31 MiB is free.\n"
    "Output generated in 0.41 seconds (0.00 tokens/s, 0 tokens, context 1877, seed 20113)\n"
)

# read by tests/test_mechanism_endings.py
LOGS_AND_ENDINGS = [
    ("webui-reply-with-tokens", _WEBUI_REPLY, Ending.COMPLETED),
    # no finish: the summary of a reply with no token follows the failed generation's traceback
    # (the server goes on, so nothing shows how the process ended)
    ("webui-failed-generation-zero-tokens", _WEBUI_FAILED, Ending.UNKNOWN),
]
