"""A notebook kernel that died (Jupyter's KernelRestarter) is a death sign, and tcmalloc's
large-allocation reports lean such a death to host memory without being a failure themselves."""

from __future__ import annotations

from pathlib import Path

from crashlens.model import Ending
from mechanism_helpers import ending_of, log_report

# jupyter_client's restarter, as a notebook server's console prints it
_RESTART = (
    "[I 00:28:38.402 NotebookApp] KernelRestarter: restarting kernel (1/5), keep random ports"
)
_ASYNC_FAILED = "[W 2024-03-02 11:12:13.001 ServerApp] AsyncIOLoopKernelRestarter: restart failed"
_TCMALLOC = (
    "tcmalloc: large alloc 8589934592 bytes == 0x7f1a00000000 @  0x7f1b2c1e1b6b 0x7f1b2c201379"
)


def test_a_kernel_restart_is_a_death(tmp_path: Path) -> None:
    report = log_report(tmp_path / "k", f"Epoch 1/10\n{_RESTART}\n")
    ending = ending_of(report)
    assert ending is Ending.DIED
    assert str(report.verdict) != "none"


def test_a_failed_restart_is_a_death_too(tmp_path: Path) -> None:
    report = log_report(tmp_path / "k", f"Epoch 1/10\n{_ASYNC_FAILED}\n")
    assert ending_of(report) is Ending.DIED


def test_the_death_with_large_allocations_leans_to_host_memory(tmp_path: Path) -> None:
    report = log_report(tmp_path / "k", f"Epoch 1/10\n{_TCMALLOC}\n{_TCMALLOC}\n{_RESTART}\n")
    assert report.causes and report.causes[0].category.value == "host_oom"


def test_large_allocations_in_a_run_that_finished_are_no_failure(tmp_path: Path) -> None:
    text = (
        f"{_TCMALLOC}\n"
        "{'train_runtime': 812.4, 'train_samples_per_second': 9.8, 'epoch': 3.0}\n"
        "Training completed. Do not forget to share your model on huggingface.co/models =)\n"
    )
    report = log_report(tmp_path / "k", text)
    assert str(report.verdict) == "none"
