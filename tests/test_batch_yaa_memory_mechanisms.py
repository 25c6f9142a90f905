"""Mechanisms learned from blind batches y and aa (memory and storage categories), end to end on
lines that are not the cases' own (other values of the same messages, as their programs print
them):

* A service's journal (`journalctl -u ollama`, read as a kernel log) shows the death of the
  process it ran: Go's os/exec `signal: killed` / `exit status N`, systemd's `Main process
  exited, code=killed`. Such a run died: never `none`.
* Go's `signal: killed` is a bare SIGKILL (weak host_oom); under a container memory limit
  (compose `deploy.resources.limits.memory`, docker's HostConfig.Memory) it is host_oom.
* PyTorch's `Allocation on device N would exceed allowed memory. (out of memory)` and
  tiny-cuda-nn's `cudaMalloc(...) failed with error out of memory` are gpu_oom.
* EINVAL on a file whose name holds a colon (Python's `[Errno 22] Invalid argument: '...'`,
  Go's `open <path>: invalid argument`) is a Windows filesystem's naming rule: filesystem.
* llama.cpp's mlock warning and huggingface_hub's chmod warning are output a run goes on from:
  `none`, while a crash after them still shows.
"""

from __future__ import annotations

from pathlib import Path

from crashlens.model import Ending
from crashlens.parsers.dmesg.services import service_identifier
from mechanism_helpers import Scenario, assert_scenario_verdict, ending_of, report_of

_HOST = "gpu-box"


def _journal(*messages: str, ident: str = "ollama[2211]") -> str:
    return "".join(
        f"Feb 03 09:12:{10 + i:02d} {_HOST} {ident}: {message}\n"
        for i, message in enumerate(messages)
    )


_LOADING = (
    'time=2025-02-03T09:12:40.100Z level=INFO source=server.go:135 msg="system memory"'
    ' total="31.2 GiB" free="28.4 GiB" free_swap="0 B"'
)


def test_service_identifier_reads_syslog_and_journal_iso_prefixes() -> None:
    assert service_identifier("Feb 03 09:12:44 gpu-box ollama[2211]: msg") == ("ollama", "2211")
    assert service_identifier("2025-02-03T09:12:44+0000 gpu-box systemd[1]: x") == (
        "systemd",
        "1",
    )
    assert service_identifier("Feb 03 09:12:44 gpu-box kernel: Out of memory") == ("kernel", "")
    assert service_identifier("[ 12.5] Out of memory") is None


def test_go_runner_killed_in_a_service_journal_is_a_death_not_none(tmp_path: Path) -> None:
    text = _journal(
        _LOADING,
        'time=2025-02-03T09:12:44.102Z level=ERROR source=sched.go:455 msg="error loading llama'
        ' server" error="llama runner process has terminated: signal: killed"',
    )
    report = report_of(tmp_path / "run", {"ollama-journal.log": text})
    assert ending_of(report) is Ending.DIED
    assert str(report.verdict) != "none"
    assert report.assessment is not None and report.assessment.sign is not None
    assert "SIGKILL" in report.assessment.reason


def test_go_runner_segfault_and_exit_status_in_a_journal_are_deaths(tmp_path: Path) -> None:
    # ollama/ollama#7618 (a snap's `ollama.listener` unit) and #9330 (`exit status 2`)
    segv = _journal(
        'time=2024-11-11T08:26:09.771Z level=ERROR source=sched.go:455 msg="error loading llama'
        ' server" error="llama runner process has terminated: signal: segmentation fault (core'
        ' dumped)"',
        ident="ollama.listener[1455]",
    )
    assert ending_of(report_of(tmp_path / "segv", {"journal-ollama.txt": segv})) is Ending.DIED
    status = _journal('msg="llama runner terminated" error="exit status 2"')
    assert ending_of(report_of(tmp_path / "exit", {"server-journal.log": status})) is Ending.DIED


def test_systemd_unit_killed_is_a_death_and_a_stop_is_not(tmp_path: Path) -> None:
    killed = _journal(
        "trainer.service: Main process exited, code=killed, status=9/KILL",
        "trainer.service: Failed with result 'signal'.",
        ident="systemd[1]",
    )
    assert ending_of(report_of(tmp_path / "kill", {"journal.txt": killed})) is Ending.DIED
    stopped = _journal(
        "trainer.service: Main process exited, code=killed, status=15/TERM",
        ident="systemd[1]",
    )
    report = report_of(tmp_path / "stop", {"journal.txt": stopped})
    assert ending_of(report) is not Ending.DIED


def test_kernel_lines_are_not_read_as_a_service_death(tmp_path: Path) -> None:
    # the kernel's own lines speak through kernel.* facts, not the service convention
    text = _journal("audit: signal: killed exit status 3", ident="kernel")
    report = report_of(tmp_path / "k", {"kern.log": text})
    assert ending_of(report) is not Ending.DIED


SCENARIOS = (
    Scenario(
        "compose-memory-limit-runner-killed",
        {
            "console.txt": "Error: llama runner process has terminated: signal: killed\n",
            "docker-compose.yml": (
                "services:\n  llm:\n    image: ollama/ollama\n    mem_limit: 6g\n"
            ),
        },
        "host_oom",
        "host-oom-memory-limit-explains-sigkill",
    ),
    Scenario(
        "torch-allowed-memory-table",
        {
            "app.log": "Error occurred when executing KSampler:\n\n"
            "Allocation on device 0 would exceed allowed memory. (out of memory)\n"
            "Currently allocated     : 6.89 GiB\nRequested               : 320.00 MiB\n"
            "Device limit            : 23.69 GiB\nFree (according to CUDA): 2.94 MiB\n"
        },
        "gpu_oom",
        "gpu-oom-torch-allowed-memory-exceeded",
    ),
    Scenario(
        "tiny-cuda-nn-cudamalloc",
        {
            "testbed.log": "10:01:02 SUCCESS  Loaded 120 images of size 3840x2160 after 1s\n"
            "10:01:03 ERROR    Uncaught exception: Could not allocate memory: /src/instant-ngp/"
            "dependencies/tiny-cuda-nn/include/tiny-cuda-nn/gpu_memory.h:112 "
            "cudaMalloc(&rawptr, n_bytes+DEBUG_GUARD_SIZE*2) failed with error out of memory\n"
        },
        "gpu_oom",
        "gpu-oom-cuda-call-failed-with-error-out-of-memory",
    ),
    Scenario(
        "timestamped-log-file-on-windows",
        {
            "train.log": "Traceback (most recent call last):\n"
            '  File "train.py", line 40, in <module>\n'
            "    handler = logging.FileHandler(log_path)\n"
            "OSError: [Errno 22] Invalid argument: "
            "'D:\\\\runs\\\\exp-2024-05-01_09:30:12.log'\n"
        },
        "filesystem",
        "filesystem-colon-in-file-name-refused",
    ),
)


def test_scenarios(tmp_path: Path) -> None:
    for scenario in SCENARIOS:
        assert_scenario_verdict(tmp_path, scenario)


_MLOCK = (
    "llm_load_tensors: offloaded 33/33 layers to GPU\n"
    "warning: failed to mlock 73728000-byte buffer (after previously locking 0 bytes): Cannot"
    " allocate memory\nTry increasing RLIMIT_MLOCK ('ulimit -l' as root).\n"
)
_CHMOD = (
    "Could not set the permissions on the file '/models/.cache/huggingface/download/"
    "model-00001-of-00002.safetensors.incomplete'. Error: [Errno 30] Read-only file system:"
    " '/tmp_3f2a'.\nContinuing without setting permissions.\n"
)


def test_mlock_and_chmod_warnings_are_output_a_run_goes_on_from(tmp_path: Path) -> None:
    mlock = report_of(tmp_path / "mlock", {"run.log": _MLOCK + "llama server listening\n"})
    assert str(mlock.verdict) == "none"
    chmod = report_of(tmp_path / "chmod", {"run.log": _CHMOD + "Download complete.\n"})
    assert str(chmod.verdict) == "none"


def test_a_real_failure_after_those_warnings_still_shows(tmp_path: Path) -> None:
    crash = 'Traceback (most recent call last):\n  File "serve.py", line 3\nMemoryError\n'
    after = report_of(tmp_path / "after", {"run.log": _MLOCK + crash})
    assert str(after.verdict) == "host_oom"
    enospc = "OSError: [Errno 28] No space left on device: '/models/model.safetensors'\n"
    full = report_of(tmp_path / "full", {"run.log": _CHMOD + enospc})
    assert str(full.verdict) == "filesystem"
