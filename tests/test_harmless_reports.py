"""A log whose only errors are reports the process went on from (a feeder thread's cancelled
enqueue as a TensorFlow loop stops, a finalizer's exception) is `none`, and the report names
those lines and why each was judged harmless instead of saying only that the log stops."""

from __future__ import annotations

from pathlib import Path

from crashlens.match.rules import shipped_rules
from crashlens.model import Ending, Fact, Report, Verdict
from crashlens.pipeline import analyze_inputs, build_report

PROGRESS = "".join(f"iteration: {n}000 loss: 0.0{30 - n} lr: 0.001\n" for n in range(1, 6))

FEEDER_CANCELLED = (
    "Starting training....\n" + PROGRESS + "Exception in thread Thread-7:\n"
    "Traceback (most recent call last):\n"
    '  File "/srv/env/lib/python3.7/threading.py", line 926, in _bootstrap_inner\n'
    "    self.run()\n"
    '  File "/srv/pose/train.py", line 77, in load_and_enqueue\n'
    "    sess.run(enqueue_op, feed_dict=food)\n"
    '  File "/srv/env/lib/python3.7/site-packages/tensorflow/python/client/session.py", '
    "line 1348, in _do_call\n"
    "    raise type(e)(node_def, op, message)\n"
    "tensorflow.python.framework.errors_impl.CancelledError: Enqueue operation was cancelled\n"
    "\t [[{{node fifo_queue_enqueue}}]]\n"
)

FINALIZER = (
    PROGRESS + "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f>\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3/site-packages/torch/utils/data/dataloader.py", line 1466, '
    "in __del__\n"
    "    self._shutdown_workers()\n"
    "AttributeError: '_MultiProcessingDataLoaderIter' object has no attribute '_workers'\n"
)

THREAD_DIED = (
    PROGRESS + "Exception in thread Thread-3:\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.10/threading.py", line 1016, in _bootstrap_inner\n'
    "    self.run()\n"
    "RuntimeError: pin memory thread exited unexpectedly\n"
)

OP_ERROR = (
    PROGRESS + "Traceback (most recent call last):\n"
    '  File "/srv/train.py", line 12, in <module>\n'
    "    sess.run(train_op)\n"
    "tensorflow.python.framework.errors_impl.InternalError: Dst tensor is not initialized.\n"
    "\t [[{{node _SOURCE}}]]\n"
)


def _report(folder: Path, text: str) -> tuple[Report, list[Fact]]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train.log").write_text(text, encoding="utf-8")
    rules = shipped_rules()
    analyses = analyze_inputs([str(folder)], rules=rules)
    return build_report(analyses, rules), [f for a in analyses for f in a.facts]


def test_a_feeder_threads_cancelled_enqueue_is_named_harmless(tmp_path: Path) -> None:
    report, facts = _report(tmp_path, FEEDER_CANCELLED)
    (exception,) = [f for f in facts if f.key == "python.exception"]
    assert exception.attr("teardown") == "cancelled"  # though a thread printed it
    (ending,) = [f for f in facts if f.key == "log.ends_with"]
    assert ending.attr("teardown") == "cancelled"  # TF's op note below it is its message
    assessed = report.assessment
    assert report.verdict is Verdict.NONE and assessed is not None
    assert assessed.ending is Ending.ONGOING and "simply stops" not in assessed.reason
    assert "went on from" in assessed.reason
    (line,) = assessed.harmless
    assert line.startswith(f"{tmp_path / 'train.log'}:{exception.lineno}: `CancelledError: ")
    assert "training loop stopped" in line


def test_a_finalizers_exception_is_named_harmless(tmp_path: Path) -> None:
    report, _ = _report(tmp_path, FINALIZER)
    assert report.verdict is Verdict.NONE and report.assessment is not None
    (line,) = report.assessment.harmless
    assert "AttributeError" in line and "finalizer" in line


def test_a_thread_that_died_of_an_error_is_not_excused(tmp_path: Path) -> None:
    report, facts = _report(tmp_path, THREAD_DIED)
    (exception,) = [f for f in facts if f.key == "python.exception"]
    assert exception.attr("teardown") == "thread"
    assert report.assessment is not None and report.assessment.harmless == ()


def test_an_op_error_with_tensorflows_op_note_below_it_ends_the_log(tmp_path: Path) -> None:
    report, facts = _report(tmp_path, OP_ERROR)
    (ending,) = [f for f in facts if f.key == "log.ends_with"]
    assert ending.value == "traceback" and ending.attr("teardown") is None
    assert report.assessment is not None and report.assessment.ending is Ending.DIED
