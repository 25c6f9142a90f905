"""Windows exit statuses (tables/windows_ntstatus.toml) and the shell's prompt back after a
command: what the failure detector reads from each, and the verdicts they lead to."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.model import Ending
from crashlens.parsers.windows_status import is_windows_error_status, windows_status
from mechanism_helpers import ending_of, log_report, rules_hitting


@pytest.mark.parametrize(
    ("status", "name"),
    [
        (-1073741515, "STATUS_DLL_NOT_FOUND"),
        (3221225781, "STATUS_DLL_NOT_FOUND"),
        (0xC0000005, "STATUS_ACCESS_VIOLATION"),
        (-1073741819, "STATUS_ACCESS_VIOLATION"),
        (-1073741510, "STATUS_CONTROL_C_EXIT"),
    ],
)
def test_a_status_is_found_signed_or_unsigned(status: int, name: str) -> None:
    entry = windows_status(status)
    assert entry is not None and entry.id == name


@pytest.mark.parametrize("status", [0, 1, 137, -9, -7, 255, 2**40, -(2**40)])
def test_ordinary_statuses_are_not_windows_ones(status: int) -> None:
    assert windows_status(status) is None
    assert not is_windows_error_status(status)


def test_an_unlisted_error_status_is_still_no_signal(tmp_path: Path) -> None:
    report = log_report(tmp_path / "unlisted", "Process finished with exit code -1073741676\n")
    assert ending_of(report) is Ending.DIED
    assert report.assessment is not None
    assert "signal" not in report.assessment.reason and "0xC0000094" in report.assessment.reason


def test_a_supervisor_s_dll_not_found_status_is_a_driver_death(tmp_path: Path) -> None:
    text = (
        "2025-01-02T03:04:05.000000Z  INFO serve: starting llama-server on port 30888\n"
        "2025-01-02T03:04:06.000000Z  WARN supervisor: llama-server <chat> exited with status "
        'code -1073741515, args: `Command { std: "C:\\\\tools\\\\llama-server.exe" }`\n'
    )
    report = log_report(tmp_path / "dll", text)
    assert ending_of(report) is Ending.DIED
    assert report.assessment is not None and "STATUS_DLL_NOT_FOUND" in report.assessment.reason
    assert report.causes and report.causes[0].category.value == "driver"


def test_go_s_hexadecimal_status_is_read(tmp_path: Path) -> None:
    text = (
        'time=2024-07-01T10:00:00.000+02:00 level=INFO source=server.go:400 msg="starting'
        ' llama server"\n'
        "Error: llama runner process has terminated: exit status 0xc0000135\n"
    )
    report = log_report(tmp_path / "go", text)
    assert ending_of(report) is Ending.DIED
    assert report.assessment is not None and "0xC0000135" in report.assessment.reason


def test_ctrl_c_s_status_is_a_stop(tmp_path: Path) -> None:
    text = (
        "Epoch 3: 40%|####      | 40/100 [00:20<00:30, 2.00it/s, loss=0.41]\n"
        "\n"
        "Process finished with exit code -1073741510 (0xC000013A: interrupted by Ctrl+C)\n"
    )
    report = log_report(tmp_path / "ctrl-c", text)
    assert ending_of(report) is Ending.STOPPED
    assert str(report.verdict) == "none"


def test_a_native_crash_status_stays_a_symptom() -> None:
    assert rules_hitting("Process finished with exit code -1073741819 (0xC0000005)") == [
        "driver-windows-native-crash-exit"
    ]


_SESSION = (
    "(venv) [user@node-01 run]$ python train.py --epochs 12\n"
    "Epoch 10: 100%|##########| 74/74 [16:04<00:00, loss=1.34, val_loss=1.41]\n"
    "Epoch 11: 100%|##########| 74/74 [16:04<00:00, loss=1.33, val_loss=1.34]\n"
)


def test_the_prompt_back_after_quiet_output_is_an_exit(tmp_path: Path) -> None:
    report = log_report(tmp_path / "quiet", _SESSION + "(venv) [user@node-01 run]$\n")
    assert ending_of(report) is Ending.COMPLETED
    assert str(report.verdict) == "none"


def test_the_prompt_back_after_a_traceback_is_no_finish(tmp_path: Path) -> None:
    text = (
        _SESSION
        + "Traceback (most recent call last):\n"
        + '  File "train.py", line 40, in <module>\n'
        + "OSError: [Errno 28] No space left on device: '/ckpt/epoch-11.pt'\n"
        + "(venv) [user@node-01 run]$\n"
    )
    report = log_report(tmp_path / "traceback", text)
    assert ending_of(report) is Ending.DIED
    assert str(report.verdict) == "filesystem"


def test_the_prompt_back_after_the_shell_s_killed_is_a_death(tmp_path: Path) -> None:
    text = _SESSION + "Killed\nuser@node-01:~/run$ \n"
    report = log_report(tmp_path / "killed", text)
    assert ending_of(report) is Ending.DIED


def test_a_prompt_with_nothing_before_it_says_nothing(tmp_path: Path) -> None:
    text = "Epoch 1: loss=0.5\nuser@node-01:~$ nvidia-smi\nuser@node-01:~$\n"
    report = log_report(tmp_path / "no-output", text)
    assert ending_of(report) is not Ending.COMPLETED
