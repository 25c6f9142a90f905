"""`crashlens scan` behind the command-line flags: validate, run the scan, show the summary.

Exit status (`exits.ExitCode`): OK the scan ran (whatever the verdicts); NOTHING_TO_ANALYZE no
job was found under ROOT; USAGE no such ROOT, a bad format, an unwritable --out; BAD_PATTERNS
the pattern library is invalid; INTERRUPTED by Ctrl-C (the rows finished so far are written).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crashlens.cli.exits import ExitCode, fatal

SUMMARY_FORMATS = ("terminal", "json", "markdown")


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
    site_rules: Sequence[str] = (),
    prom: Path | None = None,
    prom_top: int = 10,
    notify: str | None = None,
    shard: str | None = None,
    dask: str | None = None,
    dask_slurm: bool = False,
) -> None:
    """Run `crashlens scan` and print the summary; exits through `fatal` on an error."""
    from crashlens.batch.engine import EngineChoice, EngineError
    from crashlens.batch.output import TABLE_FORMATS
    from crashlens.batch.remote import RemoteError, StagedOutput, exists, is_url, url_text
    from crashlens.batch.session import ScanOptions, scan_archive
    from crashlens.batch.shards import ShardError, parse_shard
    from crashlens.errors import PatternError

    try:  # a URL root (s3://...) is read through fsspec, credentials from the environment
        found = exists(str(root)) if is_url(str(root)) else root.exists()
    except RemoteError as error:
        fatal(str(error), ExitCode.USAGE)
    if not found:
        fatal(f"no such file or directory: {url_text(root)}", ExitCode.USAGE)
    bad = [f for f in formats if f not in TABLE_FORMATS]
    if bad:
        fatal(f"--format {bad[0]!r}: must be one of {', '.join(TABLE_FORMATS)}", ExitCode.USAGE)
    if summary_format not in SUMMARY_FORMATS:
        choices = ", ".join(SUMMARY_FORMATS)
        fatal(f"--summary {summary_format!r}: must be one of {choices}", ExitCode.USAGE)
    if not is_url(str(out)) and out.exists() and not out.is_dir():
        fatal(f"--out {out} exists and is not a folder", ExitCode.USAGE)
    if prom is not None and not (prom.parent if str(prom.parent) else Path(".")).is_dir():
        fatal(f"--prom {prom}: its folder does not exist", ExitCode.USAGE)
    try:
        part = parse_shard(shard) if shard is not None else None
    except ShardError as error:
        fatal(str(error), ExitCode.USAGE)
    if dask is not None and dask_slurm:
        fatal("--dask and --dask-slurm: give one of them", ExitCode.USAGE)
    _use_site_rules(site_rules)
    from rich.console import Console

    errors = Console(stderr=True)
    progress = None
    if errors.is_terminal:
        from crashlens.batch.render import RichProgress

        progress = RichProgress(errors)
    staged: StagedOutput | None = None
    if is_url(str(out)):  # written in a local folder, then uploaded
        try:
            staged = StagedOutput.start(out, fetch_cache=use_cache)
        except RemoteError as error:
            fatal(str(error), ExitCode.USAGE)
    options = ScanOptions(
        root=root,
        out=staged.local if staged is not None else out,
        workers=workers,
        job_glob=job_glob,
        formats=tuple(dict.fromkeys(formats)),
        use_cache=use_cache,
        backend=backend,
        min_jobs=min_jobs,
        job_timeout=job_timeout,
        shard=part,
        engine=EngineChoice(dask=dask, dask_slurm=dask_slurm),
    )
    try:
        outcome = scan_archive(options, progress)
        summary = outcome.summary if staged is None else staged.publish(outcome.summary)
    except PatternError as error:
        fatal(f"invalid pattern library: {error}", ExitCode.BAD_PATTERNS)
    except EngineError as error:
        fatal(str(error), ExitCode.USAGE)
    except OSError as error:
        fatal(f"cannot write to {url_text(out)}: {error.strerror or error}", ExitCode.USAGE)
    finally:
        if staged is not None:
            staged.discard()
    if prom is not None:
        from crashlens.batch.prometheus import write_metrics

        try:
            write_metrics(summary, prom, prom_top)
        except OSError as error:
            fatal(f"cannot write --prom {prom}: {error.strerror or error}", ExitCode.USAGE)
    if notify is not None:
        from crashlens.cli.notify import post_json

        post_json(notify, json.dumps(summary, ensure_ascii=False))
    _show(summary, summary_format)
    if outcome.interrupted:
        not_scanned = summary["jobs_not_scanned"]
        at_least = "at least " if summary.get("listing_cut_short") else ""
        fatal(
            f"interrupted: {at_least}{not_scanned} jobs not scanned (rerun to resume)",
            ExitCode.INTERRUPTED,
        )
    # An empty shard of a non-empty archive is fine: the merge job after it must still run.
    if summary["jobs"]["scanned"] == 0 and summary.get("jobs_listed", 0) == 0:
        fatal(f"no job found under {url_text(root)}", ExitCode.NOTHING_TO_ANALYZE)


def run_merge_command(
    folders: Sequence[Path], out: Path, formats: Sequence[str], summary_format: str
) -> None:
    """Run `crashlens scan-merge` and print the merged summary; USAGE when the shards do not
    fit together (missing, overlapping, from different scans)."""
    from crashlens.batch.merge import MergeError, merge_outputs
    from crashlens.batch.output import TABLE_FORMATS

    bad = [f for f in formats if f not in TABLE_FORMATS]
    if bad:
        fatal(f"--format {bad[0]!r}: must be one of {', '.join(TABLE_FORMATS)}", ExitCode.USAGE)
    if summary_format not in SUMMARY_FORMATS:
        choices = ", ".join(SUMMARY_FORMATS)
        fatal(f"--summary {summary_format!r}: must be one of {choices}", ExitCode.USAGE)
    if out.exists() and not out.is_dir():
        fatal(f"--out {out} exists and is not a folder", ExitCode.USAGE)
    try:
        outcome = merge_outputs(folders, out, tuple(dict.fromkeys(formats)))
    except MergeError as error:
        fatal(f"cannot merge: {error}", ExitCode.USAGE)
    except OSError as error:
        fatal(f"cannot write to {out}: {error.strerror or error}", ExitCode.USAGE)
    _show(outcome.summary, summary_format)


def _show(summary: dict[str, Any], summary_format: str) -> None:
    from rich.console import Console

    if summary_format == "json":
        from crashlens.render.inert import inert_data

        sys.stdout.write(json.dumps(inert_data(summary), indent=2, ensure_ascii=False) + "\n")
    elif summary_format == "markdown":
        from crashlens.batch.render import render_markdown

        sys.stdout.write(render_markdown(summary))
    else:
        from crashlens.batch.render import render_terminal

        render_terminal(summary, Console())


def _use_site_rules(folders: Sequence[str]) -> None:
    """Add --rules folders to CRASHLENS_RULES (the scan's workers read it) and check them.

    The environment carries them because the workers load the library themselves
    (`batch/pool.py`); an invalid site rule stops the scan before any job is read.
    """
    import os

    from crashlens.errors import PatternError
    from crashlens.match.site import RULES_ENV, library, site_dirs

    if folders:
        os.environ[RULES_ENV] = os.pathsep.join(str(path) for path in site_dirs(folders))
    try:
        library()
    except PatternError as error:
        fatal(f"invalid pattern library: {error}", ExitCode.BAD_PATTERNS)
