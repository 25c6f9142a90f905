"""multiprocessing's queue feeder thread prints what sending an item raised, and goes on.

`Queue._feed` (CPython's `multiprocessing/queues.py`) runs in the queue's feeder thread,
catches the exception of each send and prints it (`_on_queue_feeder_error`:
`traceback.print_exc()`), so the printed traceback starts at the frame `in _feed`. A broken
pipe there is the reader gone (the consumer exited or closed the queue): the process that
printed it goes on, and it is `handled`. Any other exception lost the item it was sending (a
tensor that could not be written to a full /dev/shm as it was pickled) and stays an ordinary
failure. The frames are written here from CPython 3.10's file, not from a corpus case.
"""

from __future__ import annotations

from pathlib import Path

from crashlens.model import Fact
from crashlens.parsers.base import collect_text
from crashlens.parsers.launcher import LauncherParser
from crashlens.pipeline import analyze

LAUNCHER = LauncherParser()

FEED_TO_SEND = (
    "Traceback (most recent call last):\n"
    '  File "/opt/conda/lib/python3.10/multiprocessing/queues.py", line 250, in _feed\n'
    "    send_bytes(obj)\n"
    '  File "/opt/conda/lib/python3.10/multiprocessing/connection.py", line 205, in send_bytes\n'
    "    self._send_bytes(m[offset:offset + size])\n"
    '  File "/opt/conda/lib/python3.10/multiprocessing/connection.py", line 416, in _send_bytes\n'
    "    self._send(header + buf)\n"
    '  File "/opt/conda/lib/python3.10/multiprocessing/connection.py", line 373, in _send\n'
    "    n = write(self._handle, buf)\n"
)
BROKEN_PIPE = FEED_TO_SEND + "BrokenPipeError: [Errno 32] Broken pipe\n"
LOST_ITEM = (
    "Traceback (most recent call last):\n"
    '  File "/opt/conda/lib/python3.10/multiprocessing/queues.py", line 244, in _feed\n'
    "    obj = _ForkingPickler.dumps(obj)\n"
    '  File "/opt/conda/lib/python3.10/multiprocessing/reduction.py", line 51, in dumps\n'
    "    cls(buf, protocol).dump(obj)\n"
    "RuntimeError: unable to write to file </torch_8812_3303197412_0>: "
    "No space left on device (28)\n"
)


def facts(text: str) -> list[Fact]:
    return collect_text(LAUNCHER, text, "train.log")[1]


def teardown_of(found: list[Fact], key: str) -> object:
    return next(f.attr("teardown") for f in found if f.key == key)


def _verdict(tmp_path: Path, text: str) -> str:
    (tmp_path / "train.log").write_text(text, encoding="utf-8")
    return str(analyze([str(tmp_path)]).verdict)


def test_a_feeders_broken_pipe_is_a_report_it_went_on_from() -> None:
    found = facts("round 12/50 accuracy 0.8123\n" + BROKEN_PIPE)
    assert teardown_of(found, "python.exception") == "handled"
    assert teardown_of(found, "log.ends_with") == "handled"


def test_a_feeders_other_error_lost_the_item_and_stays_a_failure() -> None:
    found = facts(LOST_ITEM)
    assert teardown_of(found, "python.exception") is None
    assert teardown_of(found, "log.ends_with") is None


def test_a_log_ending_in_a_feeders_broken_pipe_is_no_failure(tmp_path: Path) -> None:
    assert _verdict(tmp_path, "round 12/50 accuracy 0.8123\n" + BROKEN_PIPE) == "none"


def test_a_frame_named_feed_outside_multiprocessing_is_ordinary() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/queues.py", line 12, in _feed\n'
        "    sock.sendall(buf)\n"
        "BrokenPipeError: [Errno 32] Broken pipe\n"
    )
    assert teardown_of(facts(text), "log.ends_with") is None


def test_a_real_failure_before_the_feeders_broken_pipe_still_counts(tmp_path: Path) -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/srv/train.py", line 88, in <module>\n'
        "    loss.backward()\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 23.64 GiB of which 1.12 GiB is free.\n" + BROKEN_PIPE
    )
    assert _verdict(tmp_path, text) == "gpu_oom"
