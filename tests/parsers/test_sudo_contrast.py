"""A shell check at the end of a report: the same command as root and as the user. Failing
only without sudo is a permissions failure, whatever the error says; the transcripts here are
written for the test in the shapes shells print (bash, zsh, a virtualenv prompt)."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.model import Line, Verdict
from crashlens.parsers.launcher.sudo_contrast import sudo_contrast
from mechanism_helpers import report_of


def _lines(text: str) -> list[Line]:
    return [
        Line(path="t.log", lineno=i, raw=raw, text=raw)
        for i, raw in enumerate(text.splitlines(), 1)
    ]


SMI = """\
user@gpu-01:~$ sudo nvidia-smi -L
GPU 0: NVIDIA RTX A6000 (UUID: GPU-5d1c6a52-7f3e-4c1b-9a0e-2b1f3c4d5e6f)
user@gpu-01:~$ nvidia-smi -L
Failed to initialize NVML: Insufficient Permissions
"""
TORCH = """\
(venv) ana@ws:~/proj> /opt/venv/bin/python -c "import torch; print(torch.cuda.is_available())"
False
(venv) ana@ws:~/proj> sudo /opt/venv/bin/python -c "import torch; print(torch.cuda.is_available())"
True
"""


@pytest.mark.parametrize(
    ("transcript", "command"),
    [
        (SMI, "nvidia-smi -L"),
        (TORCH, '/opt/venv/bin/python -c "import torch; print(torch.cuda.is_available())"'),
    ],
)
def test_a_command_failing_only_without_sudo_is_found(transcript: str, command: str) -> None:
    facts = sudo_contrast("t.log", _lines(transcript))
    assert [f.value for f in facts] == [command]
    assert facts[0].attr("with_sudo") and facts[0].attr("without_sudo")


@pytest.mark.parametrize(
    "transcript",
    [
        # both fail: not a question of privileges
        "$ sudo nvidia-smi\nNVIDIA-SMI has failed because it couldn't communicate with the "
        "NVIDIA driver.\n$ nvidia-smi\nNVIDIA-SMI has failed because it couldn't communicate "
        "with the NVIDIA driver.\n",
        # both work
        "$ sudo python3 -c 'import torch; print(torch.cuda.is_available())'\nTrue\n"
        "$ python3 -c 'import torch; print(torch.cuda.is_available())'\nTrue\n",
        # another user, not root
        "$ sudo -u svc nvidia-smi -L\nGPU 0: Tesla T4\n$ nvidia-smi -L\nNo devices were found\n",
        # different commands
        "$ sudo nvidia-smi -L\nGPU 0: Tesla T4\n$ nvidia-smi -q\nNo devices were found\n",
    ],
)
def test_no_contrast_without_a_difference_that_root_makes(transcript: str) -> None:
    assert sudo_contrast("t.log", _lines(transcript)) == []


def test_the_contrast_decides_an_error_that_reads_like_a_driver_s(tmp_path: Path) -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/opt/app/launch.py", line 40, in check_gpu\n'
        "    raise RuntimeError('Torch is not able to use GPU')\n"
        "RuntimeError: Torch is not able to use GPU\n" + TORCH
    )
    report = report_of(tmp_path / "job", {"launch.log": log})
    assert report.verdict is Verdict.PERMISSIONS, [
        (c.category, c.confidence) for c in report.causes
    ]
    assert "permissions-fails-only-without-sudo" in {e.rule for e in report.causes[0].evidence}
