"""A log of unknown origin (kind `other`) is read by the launcher's collector: the kind is
decided from a file's first 64 KiB, and a plain `python train.py` log whose head is progress
lines and whose traceback comes later must keep what the traceback tells. Before, such a log
kept only death signs and build lines: the innermost frame that tells /dev/shm from the disk
behind one `No space left on device` was lost, and the disk stood beside shared memory."""

from __future__ import annotations

from pathlib import Path

from crashlens.model import InputKind
from crashlens.parsers.plaintext import PlainTextParser
from mechanism_helpers import assert_leads, report_of
from parsers.test_deaths import collect_text

SEMAPHORE_TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/home/user/train.py", line 40, in <module>\n'
    "    lock = multiprocessing.Lock()\n"
    '  File "/usr/lib/python3.10/multiprocessing/synchronize.py", line 57, in __init__\n'
    "    sl = self._semlock = _multiprocessing.SemLock(\n"
    "OSError: [Errno 28] No space left on device\n"
)
PROGRESS = "".join(f"epoch 3 step {step}/20000 loss 0.{step:04d}\n" for step in range(3000))
"""More than the 64 KiB a kind is sniffed from, with no launcher marker in it."""


def test_plain_text_keeps_the_tracebacks_innermost_frame() -> None:
    facts = collect_text(PlainTextParser(), SEMAPHORE_TRACEBACK, "output.txt")[1]
    stacks = [fact for fact in facts if fact.key == "python.stack"]
    assert [str(fact.value) for fact in stacks] == [
        "/usr/lib/python3.10/multiprocessing/synchronize.py"
    ]


def test_a_long_plain_log_ending_in_a_semaphore_enospc_names_shm(tmp_path: Path) -> None:
    assert len(PROGRESS.encode()) > 64 * 1024
    report = report_of(tmp_path, {"output.txt": PROGRESS + SEMAPHORE_TRACEBACK})
    assert [status.kind for status in report.inputs] == [InputKind.OTHER]
    assert_leads(report, "shm")
    assert [cause.category.value for cause in report.causes] == ["shm"]
