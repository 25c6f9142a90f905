"""Running a step: its commands with a time limit in their own process group, or a file's tail.

A missing tool, a refusal or a timeout becomes the attempt's outcome; nothing here raises for
what a command does.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from crashlens.collect.files import read_tail
from crashlens.collect.staging import Staging
from crashlens.collect.steps import KERNEL_FILE_TAIL, AttemptResult, Step, StepResult

MAX_DETAIL = 400
"""Characters of a failed command's stderr kept in the manifest."""
_ENV_OVERRIDES = {"LC_ALL": "C", "LANG": "C", "LANGUAGE": "C", "SYSTEMD_PAGER": "", "PAGER": "cat"}
"""Child environment: English messages and C dates (what the parsers read), no pager."""
_NO_CONTENT = re.compile(rb"^(?:-- No entries --|Hint: [^\n]*|\[\]|\s*)$")


def run_command(argv: Sequence[str], timeout: float, stdout: IO[bytes]) -> AttemptResult:
    """Run `argv` with its stdout going to `stdout`; never raises for the command's failures.

    The child gets its own process group, and on timeout the whole group is killed, so a
    wrapper script's children cannot keep it alive (subprocess.run's timeout kills only the
    direct child, then waits for pipes its children still hold).
    """
    source = " ".join(argv)
    started = time.monotonic()
    with tempfile.TemporaryFile() as stderr:
        try:
            process = subprocess.Popen(  # noqa: S603 (argv from the step table, no shell)
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                env=_child_env(),
                start_new_session=True,
            )
        except FileNotFoundError:
            return AttemptResult(source, "not-found", detail="not installed or not on PATH")
        except PermissionError as error:
            return AttemptResult(source, "permission-denied", detail=str(error.strerror))
        except OSError as error:
            return AttemptResult(source, "error", detail=str(error.strerror or error))
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            seconds = time.monotonic() - started
            return AttemptResult(source, "timeout", seconds, detail=f"killed after {timeout:g} s")
        seconds = time.monotonic() - started
        stderr.seek(0)
        detail = _detail(stderr.read(64 * 1024))
    outcome = "ok" if code == 0 else f"exit {code}"
    return AttemptResult(source, outcome, seconds, exit_code=code, detail=detail)


def run_step(step: Step, default_timeout: float, staging: Staging) -> StepResult:
    """Try the step's attempts in order; the first with output wins (even on a non-zero exit:
    `nvidia-smi` prints its own failure, which is evidence, and exits 9)."""
    result = StepResult(step.name, step.what)
    timeout = step.timeout if step.timeout is not None else default_timeout
    for attempt in step.attempts:
        target = staging.path(attempt.output)
        if attempt.argv:
            with target.open("wb") as stream:
                outcome = run_command(attempt.argv, timeout, stream)
        else:
            outcome = read_tail(Path(str(attempt.path)), target, KERNEL_FILE_TAIL)
        result.attempts.append(outcome)
        if target.exists() and _has_content(target):
            staging.add(attempt.output)
            result.outputs.append(attempt.output)
            result.bytes = target.stat().st_size
            if outcome.outcome == "ok" and not (attempt.argv and outcome.detail):
                result.status = "ok"
            else:
                result.status = "partial"
                if outcome.outcome != "ok":
                    outcome.outcome += ", output kept"
            return result
        target.unlink(missing_ok=True)
        if outcome.outcome == "ok":
            outcome.outcome = "no-output"
        elif outcome.outcome.startswith("exit") and _refused(outcome.detail):
            outcome.outcome = f"permission-denied ({outcome.outcome})"
    return result


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(_ENV_OVERRIDES)
    return env


def _detail(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace").strip()
    text = " | ".join(line.strip() for line in text.splitlines() if line.strip())
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 3] + "..."


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):  # a process stuck in D state
        process.wait(timeout=5)


def _refused(detail: str) -> bool:
    lower = detail.lower()
    return "not permitted" in lower or "permission denied" in lower or "access denied" in lower


def _has_content(path: Path) -> bool:
    """False for empty output and journalctl's 'No entries' / 'Hint:' lines alone."""
    with path.open("rb") as stream:
        head = stream.read(4096)
    lines = head.splitlines()
    return any(not _NO_CONTENT.match(line) for line in lines) or len(head) == 4096
