"""A training loop that stops ends its feeder threads: what they print is no failure.

Three mechanisms, each written here for itself (a TF1 input pipeline with its own loader
thread, a paste that lost a thread's announcing line), never a corpus case's text:

* a thread's traceback is known by its outermost frame, `threading.py`'s `_bootstrap_inner`,
  when the `Exception in thread <name>:` line above it is not in view;
* TensorFlow's `CancelledError` for an enqueue (`Enqueue operation was cancelled`) is what
  the thread blocked on a full queue gets when the queue or the session closes;
* a chained traceback cut off at its separator belongs to the report it continues.
"""

from __future__ import annotations

from pathlib import Path

from crashlens.model import Fact
from crashlens.parsers.base import collect_text
from crashlens.parsers.launcher import LauncherParser
from crashlens.parsers.launcher.teardown import TeardownTracker
from crashlens.pipeline import analyze

LAUNCHER = LauncherParser()

LOADER_FRAMES = (
    '  File "/opt/conda/lib/python3.7/threading.py", line 926, in _bootstrap_inner\n'
    "    self.run()\n"
    '  File "/opt/conda/lib/python3.7/threading.py", line 870, in run\n'
    "    self._target(*self._args, **self._kwargs)\n"
    '  File "/srv/pose/input_pipeline.py", line 58, in feed\n'
    "    session.run(self.enqueue_op, feed_dict=batch)\n"
)
CANCELLED = (
    "tensorflow.python.framework.errors_impl.CancelledError: Enqueue operation was cancelled\n"
    "\t [[{{node input_queue_enqueue}}]]\n"
)
FINISHED_STEPS = (
    "step 4980/5000 loss 0.0213 lr 1e-05\n"
    "step 5000/5000 loss 0.0209 lr 1e-05\n"
    "2024-05-02 11:20:31.442871: W tensorflow/core/kernels/queue_base.cc:277] "
    "_1_input_queue: Skipping cancelled enqueue attempt with queue not closed\n"
)


def facts(text: str) -> list[Fact]:
    return collect_text(LAUNCHER, text, "train.log")[1]


def teardowns(found: list[Fact]) -> dict[str, object]:
    return {str(f.value): f.attr("teardown") for f in found if f.key == "python.exception"}


def ending(found: list[Fact]) -> tuple[object, object] | None:
    ends = [f for f in found if f.key == "log.ends_with"]
    return (ends[0].value, ends[0].attr("teardown")) if ends else None


def test_a_threads_outermost_frame_marks_its_traceback() -> None:
    tracker = TeardownTracker()
    tracker.read("Traceback (most recent call last):", 1)
    tracker.read(LOADER_FRAMES.splitlines()[0], 2)
    assert tracker.close() == "thread"


def test_a_frame_of_threading_elsewhere_is_no_thread_report() -> None:
    tracker = TeardownTracker()
    tracker.read("Traceback (most recent call last):", 1)
    tracker.read('  File "/usr/lib/python3.10/threading.py", line 320, in wait', 2)
    assert tracker.close() is None


def test_a_cancelled_enqueue_is_a_feeder_ending() -> None:
    tracker = TeardownTracker()
    tracker.read("Traceback (most recent call last):", 1)
    tracker.read(
        "tensorflow.python.framework.errors_impl.CancelledError: "
        "EnqueueMany operation was cancelled",
        5,
    )
    assert tracker.close() == "cancelled"


def test_a_cancelled_dequeue_is_not_taken_for_a_feeder() -> None:
    # the consumer waiting on the queue is usually the training loop itself
    tracker = TeardownTracker()
    tracker.read("Traceback (most recent call last):", 1)
    tracker.read(
        "tensorflow.python.framework.errors_impl.CancelledError: Dequeue operation was cancelled",
        5,
    )
    assert tracker.close() is None


def test_a_paste_starting_mid_traceback_keeps_the_cancelled_exception_harmless() -> None:
    # the header and the announcing line were lost above the paste
    text = (
        "    return fn(*args)\n"
        '  File "/opt/conda/lib/python3.7/site-packages/tensorflow/python/client/session.py", '
        "line 1350, in _run_fn\n" + CANCELLED + "\n"
        "During handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\n" + LOADER_FRAMES
    )
    found = facts(text)
    assert set(teardowns(found).values()) == {"cancelled"}


def test_a_chained_traceback_cut_at_its_separator_keeps_its_threads_teardown() -> None:
    text = (
        FINISHED_STEPS + "Exception in thread Thread-2:\n"
        "Traceback (most recent call last):\n" + LOADER_FRAMES + CANCELLED + "\n"
        "During handling of the above exception, another exception occurred:\n\n"
    )
    # the thread's exception is a cancelled enqueue: the thread ended because the loop closed
    # its queue, which is the `cancelled` kind (the report then says why it is harmless)
    assert ending(facts(text)) == ("traceback", "cancelled")


def test_a_chained_traceback_of_the_main_program_still_ends_the_run() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/srv/train.py", line 88, in <module>\n'
        "    load_state(path)\n"
        "FileNotFoundError: [Errno 2] No such file or directory: '/ckpt/last.pt'\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
    )
    assert ending(facts(text)) == ("traceback", None)


def _analyze(tmp_path: Path, text: str) -> tuple[str, list[str]]:
    (tmp_path / "train.log").write_text(text, encoding="utf-8")
    report = analyze([str(tmp_path)])
    return str(report.verdict), [c.category for c in report.causes]


def test_a_loop_that_stopped_with_its_feeder_cancelled_is_no_failure(tmp_path: Path) -> None:
    text = (
        FINISHED_STEPS + "Exception in thread Thread-2:\n"
        "Traceback (most recent call last):\n" + LOADER_FRAMES + CANCELLED + "\n"
        "During handling of the above exception, another exception occurred:\n\n"
    )
    assert _analyze(tmp_path, text) == ("none", [])


def test_a_real_failure_beside_the_cancelled_feeder_still_counts(tmp_path: Path) -> None:
    # the main loop died of a GPU OOM; the coordinator's stop cancelled the feeder's enqueue
    text = (
        "step 120/5000 loss 0.0913 lr 1e-04\n"
        "Exception in thread Thread-2:\n"
        "Traceback (most recent call last):\n" + LOADER_FRAMES + CANCELLED + "\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/pose/train.py", line 140, in <module>\n'
        "    session.run(train_op)\n"
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating "
        "tensor with shape[64,256,160,160] and type float on "
        "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc\n"
    )
    verdict, categories = _analyze(tmp_path, text)
    assert verdict == "gpu_oom"
    assert categories[0] == "gpu_oom"
