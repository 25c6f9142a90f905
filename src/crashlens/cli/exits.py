"""The exit status of every command, and the one way a command stops on an error.

One table for `analyze`, `scan`, `eval`, `train`, `rules` and `collect` (README, "Exit
status"). Every non-zero exit prints a one-line reason on stderr first.
"""

from __future__ import annotations

from enum import IntEnum
from typing import NoReturn

import typer


class ExitCode(IntEnum):
    """What a command's exit status means. The numbers are a contract: never renumber."""

    OK = 0
    """analyze: a report was produced, whatever the verdict; scan: the scan ran."""
    NOTHING_TO_ANALYZE = 1
    """analyze: every input was skipped (the report still lists why); scan: no job found;
    rules test: a rule's example or check failed."""
    USAGE = 2
    """A bad flag or value, an unknown kind, no such path, an unwritable output."""
    BAD_PATTERNS = 3
    """The pattern library is invalid (the message names the file and field)."""
    BELOW_FLOOR = 4
    """eval --check-floor: top-1 accuracy fell below the floor (what CI fails on)."""
    INTERRUPTED = 130
    """scan: stopped by Ctrl-C; the rows finished so far are written (rerun to resume)."""


def fatal(message: str, code: ExitCode) -> NoReturn:
    """Print `crashlens: message` on stderr and exit with `code`."""
    typer.echo(f"crashlens: {message}", err=True)
    raise typer.Exit(code)
