"""Mechanisms learned from batch 2026-12-07-dn's misses, each tested on lines written for the
test, not taken from the cases: OpenMM's CUDA platform finding no usable GPU, an HTTP gateway
error from a download server, transformers failing to load files from the Hub or a folder, and
a MemoryError inside torch.save explaining the checkpoint write failure chained after it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mechanism_helpers import report_of

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "simtk.openmm.OpenMMException: No compatible CUDA device is available",
        "driver-no-gpu-visible",
    ),
    (
        "requests.exceptions.HTTPError: 503 Server Error: Service Unavailable for url:"
        " https://cdn-lfs.huggingface.co/repos/ab/cd/model.safetensors",
        "network-http-gateway-error",
    ),
    (
        "OSError: Can't load tokenizer for 'google/mt5-small'. If you were trying to load it from"
        " 'https://huggingface.co/models', make sure you don't have a local directory with the"
        " same name.",
        "network-hf-cant-load-from-hub",
    ),
]

_SAVE_FAILED = (
    '  File "/opt/conda/lib/python3.10/site-packages/torch/serialization.py", line 652, in save\n'
    "    _save(obj, opened_zipfile, pickle_module, pickle_protocol, _disable_byteorder_record)\n"
    "{first}\n"
    "\n"
    "During handling of the above exception, another exception occurred:\n"
    "\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/conda/lib/python3.10/site-packages/torch/serialization.py", line 653, in save\n'
    "    return\n"
    "RuntimeError: [enforce fail at inline_container.cc:595] . unexpected pos 1310720 vs 1310616\n"
)


@pytest.mark.parametrize(
    ("first", "verdict"),
    [
        # the save's own MemoryError came first: host memory, whatever the write then said
        ("MemoryError", "host_oom"),
        # a full disk under the same write failure stays the disk's
        ("OSError: [Errno 28] No space left on device", "filesystem"),
    ],
)
def test_what_the_save_raised_first_decides_its_write_failure(
    tmp_path: Path, first: str, verdict: str
) -> None:
    text = "Traceback (most recent call last):\n" + _SAVE_FAILED.format(first=first)
    report = report_of(tmp_path / "save", {"train.log": text})
    assert str(report.verdict) == verdict
    rules = {item.rule for item in report.causes[0].evidence}
    explained = "host-oom-memoryerror-explains-checkpoint-write" in rules
    assert explained is (verdict == "host_oom")
