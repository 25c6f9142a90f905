"""The pieces of `crashlens collect` on their own: running, tails, staging, cgroup versions.

Real processes and real files in tmp_path; tests/test_collect.py runs the whole collection.
"""

from __future__ import annotations

import io
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from crashlens.collect.cgroup import cgroup_memory_text
from crashlens.collect.files import copy_tail, text_chunks
from crashlens.collect.run import run_command, run_step
from crashlens.collect.staging import Staging
from crashlens.collect.steps import Attempt, Step, summary_line

SH = shutil.which("sh") or "/bin/sh"


@pytest.fixture
def staging() -> Iterator[Staging]:
    staged = Staging()
    yield staged
    staged.cleanup()


def _alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie waiting for its parent does not run)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_a_timeout_kills_the_commands_children_too(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script = f"sleep 30 & echo $! > {pid_file}; wait"
    started = time.monotonic()
    with (tmp_path / "out").open("wb") as out:
        result = run_command((SH, "-c", script), 0.5, out)
    assert time.monotonic() - started < 10
    assert result.outcome == "timeout" and result.detail == "killed after 0.5 s"
    child = int(pid_file.read_text())
    # SIGKILL is delivered when the child next runs: on a loaded machine that takes a moment
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(child)


def test_missing_tool_and_stderr_are_outcomes_not_errors(tmp_path: Path) -> None:
    with (tmp_path / "out").open("wb") as out:
        missing = run_command(("no-such-tool-here",), 5, out)
        failed = run_command((SH, "-c", "echo one >&2; echo two >&2; exit 3"), 5, out)
    assert missing.outcome == "not-found"
    assert (failed.outcome, failed.exit_code, failed.detail) == ("exit 3", 3, "one | two")


def test_output_of_a_failing_command_is_kept_and_empty_output_tries_the_next(
    staging: Staging,
) -> None:
    step = Step(
        "smi",
        "a tool that prints its own failure",
        (
            Attempt("a.txt", argv=(SH, "-c", "echo '-- No entries --'")),
            Attempt("b.txt", argv=(SH, "-c", "echo 'Permission denied' >&2; exit 1")),
            Attempt("c.txt", argv=(SH, "-c", "echo 'NVIDIA-SMI has failed'; exit 9")),
            Attempt("d.txt", argv=(SH, "-c", "echo never run")),
        ),
    )
    result = run_step(step, 5, staging)
    assert [a.outcome for a in result.attempts] == [
        "no-output",
        "permission-denied (exit 1)",
        "exit 9, output kept",
    ]
    assert (result.status, result.outputs, staging.files) == ("partial", ["c.txt"], ["c.txt"])
    assert not staging.path("a.txt").exists()
    assert "exit 9, output kept" in summary_line(result)


def test_a_missing_file_attempt_records_why(staging: Staging, tmp_path: Path) -> None:
    step = Step("kern", "kernel log", (Attempt("kern.log", path=str(tmp_path / "absent")),))
    result = run_step(step, 5, staging)
    assert result.status == "failed" and result.attempts[0].outcome == "not-found"
    assert summary_line(result).startswith("failed   kern: -  [")


class _Pipe:
    """A stream that cannot seek, read in small pieces (a pipe, a decompressor)."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def seekable(self) -> bool:
        return False

    def read(self, size: int = -1) -> bytes:
        return self._data.read(min(size, 64) if size > 0 else size)


def test_the_tail_is_cut_at_a_line_start_whether_the_stream_seeks_or_not() -> None:
    data = b"".join(f"line {n:04d}\n".encode() for n in range(1000))
    seekable, streamed = io.BytesIO(), io.BytesIO()
    note = copy_tail(io.BytesIO(data), seekable, 105)
    streamed_note = copy_tail(_Pipe(data), streamed, 105)  # type: ignore[arg-type]
    assert seekable.getvalue() == streamed.getvalue() == data[-100:]
    assert note.startswith("kept the last 100 B of") and streamed_note == note
    whole = io.BytesIO()
    assert copy_tail(io.BytesIO(data), whole, len(data)) == "" and whole.getvalue() == data


def test_text_chunks_keep_lines_whole_and_bytes_that_are_not_utf8() -> None:
    data = b"caf\xe9\n" + b"x" * (3 * 1024 * 1024) + b"\nend"
    pieces = list(text_chunks(io.BytesIO(data)))
    assert "".join(pieces).encode("utf-8", errors="surrogateescape") == data
    assert all(piece.endswith("\n") for piece in pieces[:-1])


def test_staging_names_never_collide() -> None:
    staged = Staging()
    try:
        for name in ("logs/a.log", "logs/a.log", "logs/v1.0/readme"):
            staged.add(staged.unique(name))
        staged.add(staged.unique("logs/v1.0/readme"))
        assert staged.files == [
            "logs/a.log",
            "logs/a-2.log",
            "logs/v1.0/readme",
            "logs/v1.0/readme-2",
        ]
    finally:
        staged.cleanup()
    assert not staged.root.exists()


def _v2(folder: Path, events: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "memory.max").write_text("max\n")
    (folder / "memory.current").write_text(f"{2**62}\n")
    (folder / "memory.events").write_text(events)


def test_cgroup_v2_is_read_before_v1_and_the_own_cgroup_before_the_root(tmp_path: Path) -> None:
    _v2(tmp_path, "oom_kill 5\n")
    _v2(tmp_path / "job.slice", "oom 0\noom_kill 0\n")
    v1 = tmp_path / "memory"
    v1.mkdir()
    (v1 / "memory.limit_in_bytes").write_text("8589934592\n")
    (v1 / "memory.oom_control").write_text("oom_kill 9\n")
    proc = tmp_path / "proc-self-cgroup"
    proc.write_text("4:memory:/\n0::/job.slice\n")
    text, note = cgroup_memory_text(tmp_path, proc)
    own = tmp_path / "job.slice"
    assert text.splitlines() == [
        f"# cgroup v2 memory of this process: {own}",
        f"{own}/memory.max: max",
        f"{own}/memory.current: {2**62} (no limit)",
        f"{own}/memory.events: oom 0",
        f"{own}/memory.events: oom_kill 0",
    ]
    assert note == ""
    proc.write_text("4:memory:/\n")  # no unified line: the root of the v2 tree
    text, note = cgroup_memory_text(tmp_path, proc)
    assert f"{tmp_path}/memory.events: oom_kill 5" in text and note
