"""One `crashlens scan`: discover the jobs, reuse the cache, analyze the rest, write it all.

Outputs in the `--out` folder: jobs.parquet (and/or .jsonl/.csv), summary.json, summary.md
and scan-cache.jsonl. Everything is written at the end, also after Ctrl-C (with the rows
finished so far, the summary marked `interrupted`), so the next scan resumes where this one
stopped: only the jobs without a cached row are analyzed again.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from crashlens.batch import cache
from crashlens.batch.engine import EngineChoice, make_engine
from crashlens.batch.jobs import JobSpec, iter_jobs
from crashlens.batch.remote import is_url, root_url
from crashlens.batch.row import JobRow
from crashlens.batch.shards import Shard
from crashlens.batch.summary import SummaryBuilder
from crashlens.match.site import library as rule_library

SUMMARY_JSON = "summary.json"
SUMMARY_MD = "summary.md"
_NOT_CACHED = ("analysis crashed", "analysis failed")
"""Rows with these reasons are retried by the next scan instead of being cached. A timed-out
job is cached: it would cost the whole limit again on every scheduled scan (`--no-cache` or a
change to its files analyzes it again)."""


@dataclass(frozen=True, slots=True)
class ScanOptions:
    """What `crashlens scan` was asked to do."""

    root: Path
    out: Path
    workers: int = 0
    """Processes; 0 means one per core."""
    job_glob: str | None = None
    formats: tuple[str, ...] = ("parquet",)
    use_cache: bool = True
    backend: str = "auto"
    min_jobs: int = 2
    """A host or GPU is a hotspot when implicated in at least this many jobs."""
    job_timeout: float | None = 600.0
    """Seconds one job may take before it is stopped and reported (None: no limit)."""
    shard: Shard | None = None
    """Scan only the jobs of this shard (`--shard K/N`)."""
    engine: EngineChoice = field(default_factory=EngineChoice)
    """The local process pool (the default) or Dask."""


class Progress(Protocol):
    """Told about the scan as it goes (a progress bar, or nothing)."""

    def start(self, jobs: int, total_bytes: int, cached: int) -> None: ...

    def advance(self, row: JobRow) -> None: ...

    def finish(self) -> None: ...


class NoProgress:
    """Progress that shows nothing (piped output, tests)."""

    def start(self, jobs: int, total_bytes: int, cached: int) -> None:
        return None

    def advance(self, row: JobRow) -> None:
        return None

    def finish(self) -> None:
        return None


@dataclass(slots=True)
class ScanOutcome:
    """The result of a scan: the summary (as in summary.json) and the files written."""

    summary: dict[str, Any]
    rows: list[JobRow]
    written: list[Path] = field(default_factory=list)
    interrupted: bool = False


def default_workers() -> int:
    """One worker per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def scan_archive(options: ScanOptions, progress: Progress | None = None) -> ScanOutcome:
    """Scan every job under `options.root`; raises PatternError for a broken rule library."""
    progress = progress or NoProgress()
    started = time.monotonic()
    root = root_url(options.root) if is_url(str(options.root)) else os.path.abspath(options.root)
    out = Path(os.path.abspath(options.out))
    workers = options.workers or default_workers()
    rules = rule_library()  # the scan database is compiled only if a job needs analyzing
    head = cache.header(root, options.job_glob, rules)
    previous = cache.load(out, head) if options.use_cache else cache.ScanCache(head)
    jobs = list(iter_jobs(root, options.job_glob, exclude=out))
    listed = len(jobs)
    if options.shard is not None:
        jobs = [job for job in jobs if options.shard.holds(job.rel)]
    results: list[tuple[str, JobRow]] = []
    cached: set[str] = set()
    todo: list[JobSpec] = []
    for job in jobs:
        row = previous.get(job.rel, job.signature)
        if row is None:
            todo.append(job)
        else:
            results.append((job.signature, row))
            cached.add(row.job)
    todo.sort(key=lambda j: (-j.size, j.rel))  # the biggest first: no long tail at the end
    signatures = {job.rel: job.signature for job in todo}
    progress.start(len(jobs), sum(j.size for j in todo), len(results))
    analyzing = time.monotonic()
    interrupted = False
    analyzed_bytes = 0
    runner = make_engine(
        options.engine,
        root,
        workers,
        options.backend,
        job_timeout=options.job_timeout,
        meanwhile=_preload_table_writer,
    )
    rows = runner.run(todo)
    try:
        for row in rows:
            results.append((signatures[row.job], row))
            analyzed_bytes += row.bytes
            progress.advance(row)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        rows.close()
        progress.finish()
    elapsed = time.monotonic() - analyzing
    table = sorted((row for _, row in results), key=lambda row: row.job)
    builder = summarize(table, options.min_jobs, cached)
    written = _write(options, out, table)
    cache.save(
        out,
        head,
        [(sig, row) for sig, row in results if not (row.reason or "").startswith(_NOT_CACHED)],
    )
    summary = builder.summary(
        root=root,
        out=str(out),
        job_glob=options.job_glob,
        scanned_at=datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        interrupted=interrupted,
        jobs_found=len(jobs),
        jobs_not_scanned=len(jobs) - len(results),
        **(
            {"shard": str(options.shard), "jobs_listed": listed}
            if options.shard is not None
            else {}
        ),
        engine=runner.name,
        workers=runner.workers or workers,
        analyzed={
            "jobs": len(results) - builder.cached,
            "bytes": analyzed_bytes,
            "seconds": round(elapsed, 3),
            "mb_per_s": round(analyzed_bytes / 1e6 / elapsed, 1) if elapsed > 0 else None,
        },
        duration_s=round(time.monotonic() - started, 3),
        outputs=[str(p) for p in written] + [str(out / SUMMARY_JSON), str(out / SUMMARY_MD)],
    )
    write_summary(out, summary)
    return ScanOutcome(summary=summary, rows=table, written=written, interrupted=interrupted)


def summarize(rows: list[JobRow], min_jobs: int, cached: set[str]) -> SummaryBuilder:
    """The summary of `rows`, fed in job order: the same rows give the same summary whatever
    order the engine finished them in (and however many shards they were scanned in)."""
    builder = SummaryBuilder(min_jobs)
    for row in sorted(rows, key=lambda row: row.job):
        builder.add(row, cached=row.job in cached)
    return builder


def _preload_table_writer() -> None:
    """Import polars (~0.15 s) while the workers analyze, not after the last job."""
    import polars  # noqa: F401


def _write(options: ScanOptions, out: Path, rows: list[JobRow]) -> list[Path]:
    from crashlens.batch.output import write_table  # polars: the scan path only

    return write_table(rows, out, options.formats)


def write_summary(out: Path, summary: dict[str, Any]) -> None:
    """summary.json and summary.md into `out`."""
    from crashlens.batch.render import render_markdown
    from crashlens.render.inert import inert_data

    out.mkdir(parents=True, exist_ok=True)
    (out / SUMMARY_JSON).write_text(
        json.dumps(inert_data(summary), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (out / SUMMARY_MD).write_text(render_markdown(summary), encoding="utf-8")
