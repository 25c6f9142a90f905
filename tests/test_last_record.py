"""A log's last record when its last line is not one of its own (`parsers/launcher/ending.py`
`lead`, `decide.last_output.read_last_record`): a message wrapped onto a second line, a
thread's report cut off at its header; and the level field of logging formats."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.mechanism_helpers import log_report

from crashlens.model import Ending, Report, Verdict

TRAINING = "step 10 loss 2.31\nstep 20 loss 2.12\nstep 30 loss 2.05\n"


def _report(folder: Path, text: str) -> Report:
    return log_report(folder, text)


def _ending(folder: Path, text: str) -> Ending | None:
    assessed = _report(folder, text).assessment
    return assessed.ending if assessed is not None else None


def test_a_wrapped_exit_warning_is_read_whole(tmp_path: Path) -> None:
    text = TRAINING + (
        "[rank1]:[W0202 10:11:12.000000000 ProcessGroupNCCL.cpp:1250] Warning: WARNING: "
        "destroy_process_group() was not called before\n"
        "program exit, which can leak resources.\n"
    )
    report = _report(tmp_path, text)
    assert report.assessment is not None and report.assessment.ending is Ending.COMPLETED
    assert report.verdict is Verdict.NONE
    assert "continues" in report.assessment.reason


def test_a_wrapped_warning_is_a_notice(tmp_path: Path) -> None:
    text = TRAINING + (
        "[W socket.cpp:480] [c10d] The server socket has failed to bind to [::]:29400 on host\n"
        "(errno: 97 - Address family not supported by protocol).\n"
    )
    assert _ending(tmp_path, text) is Ending.ONGOING


@pytest.mark.parametrize(
    "text",
    [
        # a short line above: no wrap, the last line is a record of its own
        "[W socket.cpp:480] bind failed, falling back\nsaving shard 3 of 8\n",
        # a sentence that ended above: the last line is new output
        "[W socket.cpp:480] [c10d] The server socket has failed to bind, trying IPv4 instead.\n"
        "saving shard 3 of 8\n",
    ],
    ids=["short-above", "sentence-ended"],
)
def test_a_line_of_its_own_is_not_read_with_the_one_above(tmp_path: Path, text: str) -> None:
    assert _ending(tmp_path, TRAINING + text) is Ending.UNKNOWN


def test_a_thread_report_cut_at_its_header_is_read_from_the_line_before(tmp_path: Path) -> None:
    text = TRAINING + (
        "2021-10-01 12:00:00.000000: W tensorflow/core/kernels/queue_base.cc:285] _1_batch_queue: "
        "Skipping cancelled dequeue attempt with queue not closed\n"
        "Exception in thread Thread-3:\n"
        "Traceback (most recent call last):\n"
    )
    report = _report(tmp_path, text)
    assert report.assessment is not None and report.assessment.ending is Ending.COMPLETED
    assert "thread's report" in report.assessment.reason


def test_a_thread_report_after_plain_output_is_still_no_ending(tmp_path: Path) -> None:
    text = TRAINING + "Exception in thread Thread-3:\nTraceback (most recent call last):\n"
    assert _ending(tmp_path, text) is Ending.UNKNOWN


@pytest.mark.parametrize(
    "last",
    [
        "loader.py:88 WARNING -> falling back to the slow tokenizer",
        "2026-01-02 10:00:00,000 - data - WARNING - 3 samples had no label",
        "2026-01-02 10:00:00.000 | WARNING  | cache:42 - cache is cold",
        "[2026-01-02 10:00:00][WARN] checkpoint directory exists, overwriting",
    ],
)
def test_a_logging_records_warning_level_is_a_notice(tmp_path: Path, last: str) -> None:
    assert _ending(tmp_path, TRAINING + last + "\n") is Ending.ONGOING


def test_a_warning_word_in_a_message_is_no_level(tmp_path: Path) -> None:
    assert _ending(tmp_path, TRAINING + "evaluating WARNINGS dataset split 2\n") is Ending.UNKNOWN


def test_nccls_return_code_trace_is_no_going_on(tmp_path: Path) -> None:
    text = (
        "gpu-7:881:902 [3] misc/shmutils.cc:87 NCCL WARN Error: failed to extend /dev/shm/nccl-x\n"
        "gpu-7:881:902 [3] NCCL INFO transport/shm.cc:114 -> 2\n"
        "gpu-7:881:902 [3] NCCL INFO transport.cc:33 -> 2\n"
        "gpu-7:881:902 [3] NCCL INFO init.cc:1021 -> 2 [Async thread]\n"
    )
    report = _report(tmp_path, text)
    assert report.assessment is not None and report.assessment.ending is Ending.UNKNOWN
    assert report.verdict is not Verdict.NONE


def test_a_success_code_in_nccls_trace_is_no_error(tmp_path: Path) -> None:
    text = (
        "gpu-7:881:881 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
        "gpu-7:881:881 [0] NCCL INFO init.cc:1021 -> 0\n"
    )
    assert _ending(tmp_path, text) is Ending.ONGOING


def test_warnings_the_run_worked_past_are_ongoing(tmp_path: Path) -> None:
    text = (
        "Evaluating:  10%|#         | 5/50 [00:02<00:20,  2.1it/s]\n"
        "2026-01-02 10:00:00,000 - eval - WARNING - box decoding took 0.9 s, over its budget\n"
        "Evaluating: 100%|##########| 50/50 [00:21<00:00,  2.3it/s]\n"
        "mAP 0.412  recall 0.633\n"
    )
    report = _report(tmp_path, text)
    assert report.assessment is not None and report.assessment.ending is Ending.ONGOING
    assert report.verdict is Verdict.NONE
    assert any("a warning" in line for line in report.assessment.harmless)


def test_a_warning_with_only_setup_chatter_after_it_is_no_going_on(tmp_path: Path) -> None:
    text = (
        "WARNING: the NCCL_IB_HCA setting names no device, using defaults\n"
        "node-a:2521:2528 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via P2P/IPC\n"
        "node-a:2521:2528 [0] NCCL INFO Channel 01 : 0[0] -> 1[1] via P2P/IPC\n"
    )
    report = _report(tmp_path, text)
    assert report.assessment is not None and report.assessment.ending is Ending.UNKNOWN
    assert report.verdict is not Verdict.NONE
