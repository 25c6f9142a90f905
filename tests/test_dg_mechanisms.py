"""Mechanisms learned from batch 2026-12-06-dg's misses, each tested on logs written for the test,
not taken from the cases: Hugging Face ZeroGPU's `GPU task aborted`, the platform ending a Space's
GPU call once it outruns its lease (`@spaces.GPU(duration=...)`): a stop at a time limit, like a
scheduler's, unless a failure came first (then the failure is what ended the call)."""

from __future__ import annotations

from pathlib import Path

from crashlens.model import Ending, Verdict
from mechanism_helpers import ending_of, log_report

_LEASE_ENDED = (
    "Running on local URL:  http://0.0.0.0:7860\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/site-packages/spaces/zero/wrappers.py", line 177, in'
    " gradio_handler\n"
    '    raise gr.Error("GPU task aborted")\n'
    "gradio.exceptions.Error: 'GPU task aborted'\n"
)
_OOM_THEN_ABORT = (
    '  File "/usr/local/lib/python3.10/site-packages/spaces/zero/wrappers.py", line 214, in'
    " gradio_handler\n"
    "    raise res.value\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.00 GiB. GPU 0 has a total"
    " capacity of 44.39 GiB of which 2.11 GiB is free.\n"
    "gradio.exceptions.Error: 'GPU task aborted'\n"
)

_ABORT_THEN_LATER_OOM = (
    "Running on local URL:  http://0.0.0.0:7860\n"
    "gradio.exceptions.Error: 'GPU task aborted'\n"
    'INFO:     10.0.0.7:0 - "POST /gradio_api/queue/join HTTP/1.1" 200 OK\n'
    "Traceback (most recent call last):\n"
    '  File "/home/user/app/app.py", line 141, in generate\n'
    "    video = pipe(prompt, num_frames=49).frames[0]\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.00 GiB. GPU 0 has a total"
    " capacity of 44.39 GiB of which 3.27 GiB is free.\n"
    'INFO:     10.0.0.7:0 - "POST /gradio_api/queue/join HTTP/1.1" 200 OK\n'
)

# read by tests/test_mechanism_endings.py
LOGS_AND_ENDINGS = [
    ("zerogpu-status-alone", "GPU task aborted\n", Ending.STOPPED),
    ("zerogpu-lease-ended-in-a-call", _LEASE_ENDED, Ending.STOPPED),
    ("zerogpu-abort-after-an-oom", _OOM_THEN_ABORT, Ending.DIED),
]


def test_a_failure_before_the_lease_ended_is_the_cause(tmp_path: Path) -> None:
    report = log_report(tmp_path / "space", _OOM_THEN_ABORT)
    assert ending_of(report) is Ending.DIED
    assert report.verdict is Verdict.GPU_OOM


def test_the_stop_names_the_platforms_time_limit(tmp_path: Path) -> None:
    report = log_report(tmp_path / "space", _LEASE_ENDED)
    assert report.verdict is Verdict.NONE
    assert report.assessment is not None and "ZeroGPU" in report.assessment.reason


def test_a_later_calls_failure_outlives_an_earlier_lease_end(tmp_path: Path) -> None:
    # the server went on after the aborted call, and a later call ran out of GPU memory
    report = log_report(tmp_path / "space", _ABORT_THEN_LATER_OOM)
    assert ending_of(report) is not Ending.STOPPED
    assert report.verdict is Verdict.GPU_OOM
