"""One `crashlens scan`: discover the jobs, reuse the cache, analyze the rest, write it all.

Outputs in the `--out` folder: jobs.parquet (and/or .jsonl/.csv), summary.json, summary.md
and scan-cache.jsonl. Rows go to disk as they come (`spool.py`); the outputs are made from them
at the end, also after Ctrl-C (with the rows finished so far, the summary marked
`interrupted`), so the next scan resumes where this one stopped: only the jobs without a cached
row are analyzed again. Nothing here holds the listing or the rows: the driver's memory is the
same for a thousand jobs or a million.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator, Sequence
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
from crashlens.batch.spool import RowFile, RowSpool, SpooledRow
from crashlens.batch.summary import SummaryBuilder
from crashlens.match.site import library as rule_library

SUMMARY_JSON = "summary.json"
SUMMARY_MD = "summary.md"
COUNT_AFTER_STOP_S = 2.0
"""After Ctrl-C the listing goes on this long at most, to count the jobs not scanned: the
user asked to stop, and the rest of a big archive can take minutes to list (the summary then
says the count is a lower bound; the cache keeps its rows for the next run all the same)."""
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
    rows: Sequence[JobRow]
    """In job order; read from disk on demand (a `spool.RowFile`) after a scan."""
    written: list[Path] = field(default_factory=list)
    interrupted: bool = False


def default_workers() -> int:
    """One worker per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def scan_archive(options: ScanOptions, progress: Progress | None = None) -> ScanOutcome:
    """Scan every job under `options.root`; raises PatternError for a broken rule library.

    Streams end to end: the listing feeds the shard filter, the cache check and the engine's
    batches as it goes (the engine pulls a batch when it has room for one), rows go to disk as
    they come, and the summary, the table and the next cache are made from them in job order
    at the end. The driver holds the jobs in flight and one run of rows, whatever the size.
    """
    progress = progress or NoProgress()
    started = time.monotonic()
    root = root_url(options.root) if is_url(str(options.root)) else os.path.abspath(options.root)
    out = Path(os.path.abspath(options.out))
    workers = options.workers or default_workers()
    rules = rule_library()  # the scan database is compiled only if a job needs analyzing
    head = cache.header(root, options.job_glob, rules)
    previous = cache.load(out, head) if options.use_cache else cache.ScanCache(head)
    spool = RowSpool()
    try:
        listing = _Listing(root, options, out, previous, spool)
        runner = make_engine(
            options.engine,
            root,
            workers,
            options.backend,
            job_timeout=options.job_timeout,
            meanwhile=_preload_table_writer,
        )
        progress.start(0, 0, 0)  # nothing is known before the listing: it streams
        analyzing = time.monotonic()
        interrupted = False
        analyzed_bytes = 0
        rows = runner.run(listing.todo())
        try:
            for row in rows:
                spool.add(listing.analyzed(row))
                analyzed_bytes += row.bytes
                progress.advance(row)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            rows.close()
            progress.finish()
        elapsed = time.monotonic() - analyzing
        if interrupted:
            listing.count_the_rest(time.monotonic() + COUNT_AFTER_STOP_S)
        # The rows of jobs the listing did not reach again go on to the next cache as they
        # were (the next run checks their signatures); else the old cache is done with.
        carried = previous if listing.cut_short else None
        if carried is None:
            previous.close()  # before the cache file is replaced
        table, builder, written = _finish(options, out, head, spool, carried)
    finally:
        previous.close()
        spool.close()
    summary = builder.summary(
        root=root,
        out=str(out),
        job_glob=options.job_glob,
        scanned_at=datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        interrupted=interrupted,
        jobs_found=listing.found,
        jobs_not_scanned=listing.found - len(table),
        **({"listing_cut_short": True} if listing.cut_short else {}),
        **(
            {"shard": str(options.shard), "jobs_listed": listing.listed}
            if options.shard is not None
            else {}
        ),
        engine=runner.name,
        workers=runner.workers or workers,
        analyzed={
            "jobs": len(table) - builder.cached,
            "bytes": analyzed_bytes,
            "seconds": round(elapsed, 3),
            "mb_per_s": round(analyzed_bytes / 1e6 / elapsed, 1) if elapsed > 0 else None,
            # Included in `seconds`: the pool's rule library and database, a Dask cluster's
            # start (for --dask local), code check and warm-up.
            "startup_s": None if runner.startup_s is None else round(runner.startup_s, 3),
        },
        duration_s=round(time.monotonic() - started, 3),
        outputs=[str(p) for p in written] + [str(out / SUMMARY_JSON), str(out / SUMMARY_MD)],
    )
    write_summary(out, summary)
    return ScanOutcome(summary=summary, rows=table, written=written, interrupted=interrupted)


class _Listing:
    """The listing as the engine pulls it: shard filter (on the job's path, before the listing
    stats its files), then the cache check. A job with a cached row goes straight to the
    spool; the others go on to the engine, their signatures held until their rows come back
    (only the jobs in flight)."""

    def __init__(
        self,
        root: str,
        options: ScanOptions,
        out: Path,
        previous: cache.ScanCache,
        spool: RowSpool,
    ) -> None:
        self.shard = options.shard
        self.jobs = iter_jobs(root, options.job_glob, exclude=out, select=self._selected)
        self.previous = previous
        self.spool = spool
        self.listed = 0
        """Jobs under the root (all shards)."""
        self.found = 0
        """Jobs of this scan (this shard)."""
        self.pending: dict[str, str] = {}
        """Signature by job, of the jobs handed to the engine and not back yet."""
        self._todo: Iterator[JobSpec] | None = None
        self.counting = False
        """After Ctrl-C: jobs are only counted, nothing waits for their rows."""
        self.cut_short = False
        """After Ctrl-C, the count stopped before the listing's end: `found` is a lower bound."""
        self.complete = False
        """The listing reached its end (a Ctrl-C raised inside it ends it early for good)."""

    def todo(self) -> Iterator[JobSpec]:
        """The jobs to analyze, as the listing finds them."""
        if self._todo is None:
            self._todo = self._walk()
        return self._todo

    def _selected(self, rel: str) -> bool:
        """Asked by the listing for every job it finds, before its files are stat-ed."""
        self.listed += 1
        return self.shard is None or self.shard.holds(rel)

    def _walk(self) -> Iterator[JobSpec]:
        for job in self.jobs:
            self.found += 1
            key, signature = _row_name(job), job.signature
            entry = self.previous.entry(key, signature)
            if entry is None:
                if not self.counting:
                    self.pending[key] = signature
                yield job
            else:
                row = JobRow.from_dict(entry).to_dict()
                self.spool.add(SpooledRow(row, signature, cached=True, keep=True))
        self.complete = True

    def analyzed(self, row: JobRow) -> SpooledRow:
        """A row from the engine, with its job's signature; a crashed job is not cached."""
        signature = self.pending.pop(row.job, "")
        keep = bool(signature) and not (row.reason or "").startswith(_NOT_CACHED)
        return SpooledRow(row.to_dict(), signature, cached=False, keep=keep)

    def count_the_rest(self, deadline: float) -> None:
        """After Ctrl-C: go on listing, without analyzing, so the summary says how many jobs
        were not scanned (and rows the cache still holds are kept), until `deadline`
        (`time.monotonic`). A second Ctrl-C stops it too; either way the count is then a
        lower bound (`cut_short`)."""
        self.counting = True
        self.cut_short = True
        with contextlib.suppress(KeyboardInterrupt):
            for _job in self.todo():
                if time.monotonic() > deadline:
                    return
        # A Ctrl-C that landed while the listing itself ran ended its generator there: the
        # loop above then sees no more jobs, and the count is still short of the tree.
        self.cut_short = not self.complete


def _row_name(job: JobSpec) -> str:
    """The `job` cell the row of `job` has (its path, written as rows write text): what the
    cache and the rows that come back are matched by."""
    return JobRow.for_job(job).job


def _finish(
    options: ScanOptions,
    out: Path,
    head: dict[str, Any],
    spool: RowSpool,
    carried: cache.ScanCache | None = None,
) -> tuple[RowFile, SummaryBuilder, list[Path]]:
    """From the spool, in job order: the summary, the table and the next cache (in place
    once the table is written, so an interrupted scan resumes from it). `carried`: the
    previous cache, whose rows of jobs without a row here go on to the next cache as well."""
    from crashlens.batch.table_parts import write_table_in_parts  # polars: the scan path only

    table = RowFile()
    builder = SummaryBuilder(options.min_jobs)
    writer = cache.CacheWriter(out, head)
    seen: str | None = None

    def in_job_order() -> Iterator[JobRow]:
        nonlocal seen
        for item in spool.sorted_rows():
            if item.job == seen:
                continue  # never two rows for one job
            seen = item.job
            table.add(item.row)
            row = JobRow.from_dict(item.row)
            builder.add(row, cached=item.cached)
            if item.keep:
                writer.add(item.signature, item.row)
            if carried is not None:
                carried.remember(item.job)
            yield row

    try:
        written = write_table_in_parts(in_job_order(), out, options.formats)
        if carried is not None:
            for line in carried.forgotten_lines():
                writer.add_line(line)
            carried.close()  # before the cache file is replaced
    except BaseException:
        writer.abort()
        raise
    finally:
        table.done()
    writer.commit()
    return table, builder, written


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


def write_summary(out: Path, summary: dict[str, Any]) -> None:
    """summary.json and summary.md into `out`."""
    from crashlens.batch.render import render_markdown
    from crashlens.render.inert import inert_data

    out.mkdir(parents=True, exist_ok=True)
    (out / SUMMARY_JSON).write_text(
        json.dumps(inert_data(summary), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (out / SUMMARY_MD).write_text(render_markdown(summary), encoding="utf-8")
