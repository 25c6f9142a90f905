"""`crashlens scan` behind the command-line flags: validate, run the scan, show the summary.

Exit status: 0 the scan ran (whatever the verdicts); 1 no job was found under ROOT; 2 usage
error (no such ROOT, bad format); 3 the pattern library is invalid; 130 interrupted by Ctrl-C
(the rows finished so far are written). Every non-zero exit prints a one-line reason.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

EXIT_NO_JOBS = 1
EXIT_USAGE = 2
EXIT_BAD_PATTERNS = 3
EXIT_INTERRUPTED = 130
SUMMARY_FORMATS = ("terminal", "json", "markdown")


def _error(message: str) -> None:
    sys.stderr.write(f"crashlens: {message}\n")


def run_scan_command(
    root: Path,
    out: Path,
    workers: int,
    job_glob: str | None,
    formats: Sequence[str],
    summary_format: str,
    use_cache: bool,
    min_jobs: int,
    backend: str,
    job_timeout: float | None = 600.0,
) -> int:
    """Run `crashlens scan` and print the summary; returns the exit status."""
    from crashlens.batch.output import TABLE_FORMATS
    from crashlens.batch.session import ScanOptions, scan_archive
    from crashlens.errors import PatternError

    if not root.exists():
        _error(f"no such file or directory: {root}")
        return EXIT_USAGE
    bad = [f for f in formats if f not in TABLE_FORMATS]
    if bad:
        _error(f"--format {bad[0]!r}: must be one of {', '.join(TABLE_FORMATS)}")
        return EXIT_USAGE
    if summary_format not in SUMMARY_FORMATS:
        _error(f"--summary {summary_format!r}: must be one of {', '.join(SUMMARY_FORMATS)}")
        return EXIT_USAGE
    if backend not in ("auto", "hyperscan", "python"):
        _error(f"--backend must be auto, hyperscan or python, not {backend!r}")
        return EXIT_USAGE
    if out.exists() and not out.is_dir():
        _error(f"--out {out} exists and is not a folder")
        return EXIT_USAGE
    from rich.console import Console

    errors = Console(stderr=True)
    progress = None
    if errors.is_terminal:
        from crashlens.batch.render import RichProgress

        progress = RichProgress(errors)
    options = ScanOptions(
        root=root,
        out=out,
        workers=workers,
        job_glob=job_glob,
        formats=tuple(dict.fromkeys(formats)),
        use_cache=use_cache,
        backend=backend,
        min_jobs=min_jobs,
        job_timeout=job_timeout,
    )
    try:
        outcome = scan_archive(options, progress)
    except PatternError as error:
        _error(f"invalid pattern library: {error}")
        return EXIT_BAD_PATTERNS
    except OSError as error:
        _error(f"cannot write to {out}: {error.strerror or error}")
        return EXIT_USAGE
    summary = outcome.summary
    if summary_format == "json":
        sys.stdout.write(json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    elif summary_format == "markdown":
        from crashlens.batch.render import render_markdown

        sys.stdout.write(render_markdown(summary))
    else:
        from crashlens.batch.render import render_terminal

        render_terminal(summary, Console())
    if outcome.interrupted:
        _error(f"interrupted: {summary['jobs_not_scanned']} jobs not scanned (rerun to resume)")
        return EXIT_INTERRUPTED
    if summary["jobs"]["scanned"] == 0:
        _error(f"no job found under {root}")
        return EXIT_NO_JOBS
    return 0
