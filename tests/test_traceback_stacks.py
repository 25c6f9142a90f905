"""A traceback's frames as a fact (`python.stack`, parsers/launcher/stacks.py), and the rule that
reads them: a `No space left on device` raised inside code that only writes into /dev/shm is
shared memory, not the disk (`shm-enospc-raised-by-shared-memory-writer`). Logs of their own,
analyzed as `crashlens analyze` does."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.parsers.base import collect_text
from crashlens.parsers.launcher import LauncherParser
from crashlens.parsers.launcher.stacks import CLOSE_GAP, errno_name, prefixed_exception
from crashlens.pipeline import AnalyzeOptions, analyze

SEMLOCK = (
    "Traceback (most recent call last):\n"
    '  File "examples/finetune.py", line 61, in <module>\n'
    "    main()\n"
    '  File "/opt/conda/lib/python3.9/multiprocessing/context.py", line 119, in Pool\n'
    "    return Pool(processes, initializer, initargs, maxtasksperchild,\n"
    '  File "/opt/conda/lib/python3.9/multiprocessing/synchronize.py", line 57, in __init__\n'
    "    sl = self._semlock = _multiprocessing.SemLock(\n"
    "OSError: [Errno 28] No space left on device\n"
)
HEAP = (
    "[rank2]: Traceback (most recent call last):\n"
    '[rank2]:   File "/work/prep/build_index.py", line 88, in <module>\n'
    "[rank2]:     table = Array(ctypes.c_double, n_rows * n_cols)\n"
    '[rank2]:   File "/usr/lib/python3.11/multiprocessing/heap.py", line 73, in _fallocate\n'
    "[rank2]:     os.posix_fallocate(fd, 0, size)\n"
    "[rank2]:     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    "[rank2]: OSError: [Errno 28] No space left on device\n"
)
TEMPFILE = (
    "Traceback (most recent call last):\n"
    '  File "/workspace/data/webvid_dataset.py", line 94, in __getitem__\n'
    "    tmp.write(blob)\n"
    '  File "/usr/lib/python3.10/tempfile.py", line 483, in func_wrapper\n'
    "    return func(*args, **kwargs)\n"
    "OSError: [Errno 28] No space left on device\n"
)
# pandarallel ran the job's own function, which wrote its own file: the innermost frame is
# the job's, so the disk it wrote to is the one that is full
USER_CALLBACK = (
    "Traceback (most recent call last):\n"
    '  File "/opt/conda/lib/python3.11/site-packages/pandarallel/core.py", line 158, in __call__\n'
    "    results = self.work_function(data, user_defined_function, *args)\n"
    '  File "/work/prep/features.py", line 40, in dump_row\n'
    "    np.save(out_path, row)\n"
    "OSError: [Errno 28] No space left on device\n"
)
COMPOSE = (
    "tabbyapi-1  | 2025-10-11 09:52:31.902 ERROR:    Traceback (most recent call last):\n"
    'tabbyapi-1  | 2025-10-11 09:52:31.902 ERROR:      File "/app/backends/model.py", line 412,'
    " in load_gen\n"
    "tabbyapi-1  | 2025-10-11 09:52:31.902 ERROR:        async for value in gen():\n"
    "tabbyapi-1  | 2025-10-11 09:52:31.903 ERROR:      File "
    '"/usr/local/lib/python3.12/multiprocessing/shared_memory.py", line 121, in __init__\n'
    "tabbyapi-1  | 2025-10-11 09:52:31.903 ERROR:        os.ftruncate(self._fd, size)\n"
    "tabbyapi-1  | 2025-10-11 09:52:31.903 ERROR:    OSError: [Errno 28] No space left on device\n"
)


def _stacks(text: str) -> list[dict[str, object]]:
    _, facts = collect_text(LauncherParser(), text, "train.log")
    return [
        {"file": f.value, "line": f.lineno, **dict(f.attrs)}
        for f in facts
        if f.key == "python.stack"
    ]


def test_the_innermost_frame_and_the_errno_are_kept() -> None:
    (stack,) = _stacks(SEMLOCK)
    assert stack["file"] == "/opt/conda/lib/python3.9/multiprocessing/synchronize.py"
    assert stack["line"] == 8
    assert stack["errno"] == "ENOSPC"
    assert stack["exception"] == "OSError"
    assert str(stack["frames"]).split("|")[0] == "examples/finetune.py"


def test_ranks_prefixes_and_caret_lines_keep_the_frames_together() -> None:
    (stack,) = _stacks(HEAP)
    assert stack["file"] == "/usr/lib/python3.11/multiprocessing/heap.py"
    assert stack["rank"] == 2


def test_an_exception_line_behind_a_prefix_the_launcher_keeps_still_closes_its_traceback() -> None:
    (stack,) = _stacks(COMPOSE)
    assert stack["file"] == "/usr/local/lib/python3.12/multiprocessing/shared_memory.py"
    assert stack["errno"] == "ENOSPC"


def test_frames_far_above_an_exception_line_are_not_its_traceback() -> None:
    gap = "\n".join(f"step {i} loss 0.1" for i in range(CLOSE_GAP + 1))
    text = SEMLOCK.replace("OSError:", gap + "\nOSError:")
    assert _stacks(text) == []


def test_errno_names_come_from_the_number_or_the_message() -> None:
    assert errno_name("OSError: [Errno 28] No space left on device") == "ENOSPC"
    assert errno_name("RuntimeError: unable to write: No space left on device (28)") == "ENOSPC"
    assert errno_name("PermissionError: [Errno 13] Permission denied: '/x'") == "EACCES"
    assert errno_name("ValueError: bad shape") is None


def test_an_errno_number_too_long_for_int_names_none() -> None:
    digits = "9" * 5000  # past int()'s limit on the digits of a string
    assert errno_name(f"OSError: [Errno {digits}] No space left on device") is None


def test_a_prefixed_exception_is_read_from_the_end_of_the_line() -> None:
    assert prefixed_exception("svc-1  | 12:00 ERROR:    OSError: [Errno 28] No space") == (
        "OSError",
        "OSError: [Errno 28] No space",
    )
    assert prefixed_exception("svc-1  | 12:00 INFO:     Loading model") is None


@pytest.mark.parametrize(
    ("text", "verdict"),
    [(SEMLOCK, "shm"), (HEAP, "shm"), (COMPOSE, "shm"), (TEMPFILE, "filesystem")],
    ids=["semlock", "heap", "compose-shared-memory", "tempfile-disk"],
)
def test_enospc_counts_where_the_innermost_frame_writes(
    tmp_path: Path, text: str, verdict: str
) -> None:
    (tmp_path / "train.log").write_text(text, encoding="utf-8")
    report = analyze([str(tmp_path)], AnalyzeOptions(use_model=False))
    assert str(report.verdict) == verdict, [(c.category, c.confidence) for c in report.causes]
    if verdict == "shm":
        rules = {item.rule for item in report.causes[0].evidence}
        assert "shm-enospc-raised-by-shared-memory-writer" in rules


def test_a_user_function_under_pandarallel_that_fills_a_disk_stays_filesystem(
    tmp_path: Path,
) -> None:
    (tmp_path / "train.log").write_text(USER_CALLBACK, encoding="utf-8")
    report = analyze([str(tmp_path)], AnalyzeOptions(use_model=False))
    assert report.causes[0].category == "filesystem"
