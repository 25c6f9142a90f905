"""A failure line the run went on from is not how a log with no ending ended (issue 13).

A log that simply stops (`decide.unended`) is weighed without the failure lines its training
progress began or went on after (`unended.gone_past`, the test `decide.stop_order` uses for a
stop): such a line is neither the first failure nor a likely cause, and the report judges it
harmless. A failure line with no progress of its rank after it still leads.
"""

from __future__ import annotations

from pathlib import Path

from crashlens.decide.classifier import shipped_model
from crashlens.match.rules import shipped_rules
from crashlens.model import Category, Ending, Report, Verdict
from crashlens.parsers.base import TAIL_LINES
from crashlens.pipeline import analyze_inputs, build_report

GONE_PAST = "the run went on from it"

# TensorFlow's stream executor retries a failed device allocation with 90 % of the size, then
# the model trains (Keras' progress lines).
TF_RETRY = (
    "2019-03-02 10:01:12.118219: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1115] "
    "Created TensorFlow device (/job:localhost/replica:0/task:0/device:GPU:0 with 10764 MB "
    "memory) -> physical GPU (device: 0, name: GeForce GTX 1080 Ti, pci bus id: 0000:01:00.0, "
    "compute capability: 6.1)\n"
    "2019-03-02 10:01:12.120391: E tensorflow/stream_executor/cuda/cuda_driver.cc:806] failed "
    "to allocate 10.51G (11287101440 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of "
    "memory\n"
    "2019-03-02 10:01:12.122010: E tensorflow/stream_executor/cuda/cuda_driver.cc:806] failed "
    "to allocate 9.46G (10158391296 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of "
    "memory\n"
)
KERAS_TRAINING = (
    "Epoch 1/2\n"
    "1875/1875 [==============================] - 12s 6ms/step - loss: 0.2950 - accuracy: "
    "0.9140\n"
    "Epoch 2/2\n"
    "1875/1875 [==============================] - 10s 5ms/step - loss: 0.1427 - accuracy: "
    "0.9577\n"
    "313/313 - 1s - loss: 0.1034 - accuracy: 0.9688\n"
    "Test accuracy: 0.9688\n"
)
# A batch-size finder (accelerate's `find_executable_batch_size`) caught the OOM of the first
# batch size, halved it, and the loop trains at the smaller one.
BATCH_FINDER = (
    "Currently training with a batch size of: 128\n"
    "WARNING:__main__:batch size 128 ran out of memory, retrying with a smaller one: CUDA out "
    "of memory. Tried to allocate 3.06 GiB (GPU 0; 39.39 GiB total capacity; 35.12 GiB already "
    "allocated; 2.71 GiB free; 35.87 GiB reserved in total by PyTorch)\n"
    "Currently training with a batch size of: 64\n"
)
C10D_RETRIES = (
    "[W socket.cpp:663] [c10d] The client socket has failed to connect to [node-0]:29500 "
    "(errno: 101 - Network is unreachable).\n"
    "[W socket.cpp:601] [c10d] The client socket has failed to connect to [node-0]:29500 "
    "(errno: 111 - Connection refused).\n"
)
TORCH_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.95 GiB. GPU 1 has a total "
    "capacity of 79.15 GiB of which 1.02 GiB is free.\n"
)
OOM_TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/workspace/train.py", line 212, in <module>\n'
    "    main()\n"
    '  File "/workspace/train.py", line 188, in main\n'
    "    loss.backward()\n" + TORCH_OOM
)


def steps(first: int, last: int, rank: str = "") -> str:
    return "".join(
        f"{rank}epoch 0 step {n}/5000 loss {3.2 - n / 10000:.4f} lr 2.0e-05\n"
        for n in range(first, last)
    )


def _report(tmp_path: Path, text: str, *, model: bool = False) -> Report:
    (tmp_path / "train.log").write_text(text, encoding="utf-8")
    rules = shipped_rules()
    analyses = analyze_inputs([str(tmp_path)], rules=rules)
    return build_report(analyses, rules, shipped_model() if model else None)


def _not_the_cause(report: Report, category: Category) -> None:
    """The line neither leads the report nor makes its category a likely cause."""
    assert report.first_failure is None and report.lead is None
    assert all(c.category is not category or c.confidence < 0.5 for c in report.causes)


def _judged_gone_past(report: Report, lines: list[int]) -> None:
    assert report.assessment is not None
    judged = [h for h in report.assessment.harmless if GONE_PAST in h]
    assert [int(h.split(":")[1]) for h in judged] == lines


def test_tensorflows_retried_allocation_is_not_the_cause(tmp_path: Path) -> None:
    for model in (False, True):
        report = _report(tmp_path, TF_RETRY + KERAS_TRAINING, model=model)
        assert report.assessment is not None
        assert report.assessment.ending is Ending.ONGOING
        assert report.verdict is Verdict.NONE
        _not_the_cause(report, Category.GPU_OOM)
        _judged_gone_past(report, [2, 3])


def test_the_retry_gone_past_in_a_log_that_stops_is_named_so(tmp_path: Path) -> None:
    # the log ends cut in a traceback: not a run going on well, so `unknown`; the allocator's
    # retry is still not the cause, and the reason says the run went on from it
    cut = 'Traceback (most recent call last):\n  File "/workspace/train.py", line 40, in <module>\n'
    report = _report(tmp_path, TF_RETRY + KERAS_TRAINING + cut)
    assert report.assessment is not None
    assert report.assessment.ending is Ending.UNKNOWN
    assert report.verdict is Verdict.UNKNOWN
    assert "The failure lines before that are not how it ended" in report.assessment.reason
    _not_the_cause(report, Category.GPU_OOM)
    _judged_gone_past(report, [2, 3])


def test_a_batch_size_finders_caught_oom_is_not_the_cause(tmp_path: Path) -> None:
    report = _report(tmp_path, BATCH_FINDER + steps(10, 400))
    assert report.verdict is Verdict.NONE
    _not_the_cause(report, Category.GPU_OOM)
    _judged_gone_past(report, [2])


def test_a_connect_retry_then_an_hour_of_steps_is_not_why_the_log_stops(tmp_path: Path) -> None:
    report = _report(tmp_path, C10D_RETRIES + steps(1, 3600))
    assert report.assessment is not None and report.assessment.ending is Ending.ONGOING
    assert report.verdict is Verdict.NONE
    _not_the_cause(report, Category.NETWORK)
    _judged_gone_past(report, [1, 2])


def test_an_oom_traceback_as_the_last_output_leads(tmp_path: Path) -> None:
    report = _report(tmp_path, steps(1, 200) + OOM_TRACEBACK)
    assert report.verdict is Verdict.GPU_OOM
    assert report.first_failure is not None and report.first_failure.line == 205


def test_an_oom_line_with_nothing_after_it_leads(tmp_path: Path) -> None:
    report = _report(tmp_path, steps(1, 200) + TORCH_OOM)
    assert report.verdict is Verdict.GPU_OOM
    assert report.first_failure is not None and report.first_failure.line == 200


def test_one_step_of_another_rank_after_a_ranks_oom_does_not_excuse_it(tmp_path: Path) -> None:
    both = "".join(steps(n, n + 1, "[rank0]: ") + steps(n, n + 1, "[rank1]: ") for n in range(99))
    # in mid-training, and at start-up (the other rank's first step is all the progress)
    for before in (both, ""):
        text = before + "[rank1]: " + TORCH_OOM + steps(100, 101, "[rank0]: ")
        report = _report(tmp_path, text)
        assert report.assessment is not None
        assert report.assessment.ending is Ending.UNKNOWN
        assert report.verdict is Verdict.GPU_OOM
        assert report.first_failure is not None
        assert report.first_failure.line == text.count("\n") - 1


def test_a_line_naming_the_training_step_is_no_progress_past_a_start_up_oom(
    tmp_path: Path,
) -> None:
    # AI Toolkit's give-up message names its training step; all the log's "progress" is in
    # view, so it is counted, and one such line is not the run going on
    report = _report(tmp_path, TORCH_OOM + "OOM during training step 3 times in a row\n")
    assert report.verdict is Verdict.GPU_OOM
    assert report.first_failure is not None and report.first_failure.line == 1


def test_progress_that_began_after_the_line_beyond_the_last_lines_is_going_on(
    tmp_path: Path,
) -> None:
    # the failure line at start-up, then more steps than the log's last lines hold: its first
    # progress is out of view, so the run got past the line however the ranks are named
    text = (
        "[rank1]: " + C10D_RETRIES.splitlines()[1] + "\n" + steps(1, TAIL_LINES + 20, "[rank0]: ")
    )
    report = _report(tmp_path, text)
    assert report.verdict is Verdict.NONE
    _not_the_cause(report, Category.NETWORK)


def test_a_stop_after_a_start_up_oom_and_one_step_of_another_rank_is_its_teardown(
    tmp_path: Path,
) -> None:
    # the same test as a stop's (`stop_order.went_on`): the first step of rank 0 alone does
    # not show the run got past rank 1's failure
    text = (
        "[rank1]: "
        + TORCH_OOM
        + steps(1, 2, "[rank0]: ")
        + "srun: error: node-3: task 0: Terminated\n"
    )
    report = _report(tmp_path, text)
    assert report.assessment is not None and report.assessment.ending is Ending.DIED
    assert report.verdict is Verdict.GPU_OOM


def test_a_later_failure_leads_past_the_retries_the_run_went_on_from(tmp_path: Path) -> None:
    # (with rank 1 finishing its step after rank 0's OOM, the log shows no ending)
    text = (
        C10D_RETRIES
        + steps(1, 200, "[rank0]: ")
        + "[rank0]: "
        + TORCH_OOM
        + steps(200, 201, "[rank1]: ")
    )
    report = _report(tmp_path, text)
    assert report.assessment is not None and report.assessment.ending is Ending.UNKNOWN
    assert report.verdict is Verdict.GPU_OOM
    assert report.first_failure is not None and report.first_failure.line == 202
    assert Category.NETWORK not in {c.category for c in report.causes}
    _judged_gone_past(report, [1, 2])


def test_a_later_line_of_the_same_rule_is_cited_not_the_retry(tmp_path: Path) -> None:
    # the allocator's retries at start-up, then training, then a real allocation failure: the
    # report (and `crashlens scan`'s grouping, `Report.lead`) cites the later line
    epochs = "".join(
        f"Epoch {n}/50\n1875/1875 [==============================] - 10s 5ms/step - loss: "
        f"0.14{n:02d}\n"
        for n in range(1, 30)
    )
    late = TF_RETRY.splitlines()[1].replace("10:01:12", "11:41:07") + "\n"
    report = _report(tmp_path, TF_RETRY + epochs + late + "Epoch 30/50\n")
    assert report.verdict is Verdict.GPU_OOM
    assert report.first_failure is not None and report.first_failure.line == 62
    assert report.lead is not None and report.lead.line == 62
    assert [e.line for e in report.causes[0].evidence] == [62]
    _judged_gone_past(report, [2, 3])
