"""A dying message that shows CUDA already unloaded is the process exiting, not a death
(`decide/cuda_unloading.py`); a failure before it still decides."""

from __future__ import annotations

from pathlib import Path

from crashlens.decide.cuda_unloading import unloading_texts
from crashlens.match.rules import shipped_rules
from crashlens.model import Ending, Report, Verdict
from crashlens.pipeline import analyze_inputs, build_report

TRAINED = "epoch 9 loss 0.12 acc 0.97\nepoch 10 loss 0.11 acc 0.97\nSaved model to out/final.pt\n"
TERMINATE_AT_EXIT = (
    "terminate called after throwing an instance of 'c10::Error'\n"
    "  what():  CUDA error: driver shutting down\n"
    "Exception raised from ~CUDAStream at /pytorch/c10/cuda/CUDAStream.cpp:61\n"
)


def _report(folder: Path, text: str) -> Report:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train.log").write_text(text, encoding="utf-8")
    rules = shipped_rules()
    return build_report(analyze_inputs([str(folder)], rules=rules), rules, None)


def test_the_texts_come_from_the_catalog_with_the_bare_message() -> None:
    texts = unloading_texts()
    assert "CUDA error: driver shutting down" in texts and "driver shutting down" in texts


def test_a_terminate_at_exit_after_training_is_teardown(tmp_path: Path) -> None:
    report = _report(tmp_path, TRAINED + TERMINATE_AT_EXIT)
    assert report.assessment is not None and report.assessment.ending is Ending.COMPLETED
    assert "unloaded" in report.assessment.reason
    assert report.verdict is Verdict.NONE


def test_a_glog_check_on_the_bare_status_is_teardown(tmp_path: Path) -> None:
    text = TRAINED + "F0102 10:00:00.000 123 syncedmem.cpp:18] Check failed: error == cudaSuccess"
    text += " (4 vs. 0)  driver shutting down\n"
    report = _report(tmp_path, text)
    assert report.assessment is not None and report.assessment.ending is Ending.COMPLETED


def test_a_failure_before_the_teardown_still_decides(tmp_path: Path) -> None:
    text = (
        "epoch 3 loss 0.4\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "Segmentation fault (core dumped)\n"
    ) + TERMINATE_AT_EXIT
    report = _report(tmp_path, text)
    assert report.assessment is not None and report.assessment.ending is Ending.DIED
    assert report.verdict is not Verdict.NONE


def test_another_terminate_is_still_a_death(tmp_path: Path) -> None:
    text = TRAINED + (
        "terminate called after throwing an instance of 'c10::Error'\n"
        "  what():  CUDA error: an illegal memory access was encountered\n"
    )
    report = _report(tmp_path, text)
    assert report.assessment is not None and report.assessment.ending is Ending.DIED
