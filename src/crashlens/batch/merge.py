"""`crashlens scan-merge`: the outputs of `scan --shard K/N` joined into one table and summary.

Each shard's rows are read back from its table (jobs.parquet, else jobs.jsonl) a slice at a
time and put in job order through the scan's row spool (`spool.RowSpool`, on disk), the rows
of all shards written as one table (a part at a time), and the summary computed again over all
of them with the scan's own `SummaryBuilder` (fingerprint groups, hotspots and the timeline are
recounted, not added up), so a merge holds no more rows in memory than a scan does: the
result equals the summary of one unsharded scan, apart from timings and where
it ran. The shards must come from one root, job rule and crashlens fingerprint version, and
hold no job twice; when they say they are K/N shards, all N must be there.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crashlens.batch.row import JobRow
from crashlens.batch.session import SUMMARY_JSON, SUMMARY_MD, write_summary
from crashlens.batch.spool import RowFile, RowSpool, SpooledRow
from crashlens.batch.summary import SummaryBuilder

_TIME_COLUMNS = ("first_failure_at", "job_mtime")
_AGREE = ("root", "job_glob", "fingerprint_version")
"""Summary fields every shard must share: rows from different scans do not merge."""


class MergeError(ValueError):
    """Shard outputs that cannot be merged (missing, overlapping, from different scans)."""


@dataclass(slots=True)
class MergeOutcome:
    """The merged summary (as written to summary.json), its rows and the files written."""

    summary: dict[str, Any]
    rows: Sequence[JobRow]
    """In job order; read from disk on demand (a `spool.RowFile`)."""
    written: list[Path] = field(default_factory=list)


READ_ROWS = 5_000
"""Rows read from a shard's table at once."""


def read_rows(folder: Path) -> list[JobRow]:
    """The rows of a scan output folder, from jobs.parquet or jobs.jsonl."""
    return list(iter_rows(folder))


def iter_rows(folder: Path) -> Iterator[JobRow]:
    """The rows of a scan output folder, from jobs.parquet or jobs.jsonl, in the table's
    order, READ_ROWS at a time."""
    import polars as pl

    parquet, jsonl = folder / "jobs.parquet", folder / "jobs.jsonl"
    if parquet.is_file():
        data = pl.scan_parquet(parquet)
    elif jsonl.is_file():
        from crashlens.batch.output import table_schema

        data = pl.scan_ndjson(jsonl, schema=table_schema())
    else:
        raise MergeError(f"{folder}: no jobs.parquet or jobs.jsonl (was it scanned?)")
    epochs = data.with_columns(
        [(pl.col(name).dt.epoch("us") / 1_000_000).alias(name) for name in _TIME_COLUMNS]
    )
    for part in epochs.collect_batches(chunk_size=READ_ROWS):
        for item in part.to_dicts():
            yield JobRow.from_dict(item)


def _summary_of(folder: Path) -> dict[str, Any]:
    try:
        data = json.loads((folder / SUMMARY_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise MergeError(f"{folder}: no readable {SUMMARY_JSON} ({error})") from error
    if not isinstance(data, dict):
        raise MergeError(f"{folder}: {SUMMARY_JSON} is not a scan summary")
    return data


def _check(folders: Sequence[Path], summaries: Sequence[dict[str, Any]]) -> None:
    first = summaries[0]
    for folder, summary in zip(folders[1:], summaries[1:], strict=True):
        for name in _AGREE:
            if summary.get(name) != first.get(name):
                raise MergeError(
                    f"{folder} and {folders[0]} are different scans: {name} "
                    f"{summary.get(name)!r} != {first.get(name)!r}"
                )
    shards = [s.get("shard") for s in summaries]
    if any(shards):
        counts = {str(s).split("/")[1] for s in shards if s}
        if None in shards or len(counts) != 1:
            raise MergeError("mix of sharded and unsharded outputs, or of shard counts")
        count = int(counts.pop())
        seen: dict[str, Path] = {}
        for folder, shard in zip(folders, shards, strict=True):
            if shard in seen:
                raise MergeError(f"shard {shard} given twice: {seen[shard]} and {folder}")
            seen[str(shard)] = folder
        missing = [f"{k}/{count}" for k in range(1, count + 1) if f"{k}/{count}" not in seen]
        if missing:
            raise MergeError(f"shards missing: {', '.join(missing)}")


def _write_merged(
    spool: RowSpool, out: Path, formats: Sequence[str], min_jobs: int
) -> tuple[RowFile, SummaryBuilder, list[Path]]:
    """The merged rows in job order: counted, written as one table; a job twice refuses."""
    from crashlens.batch.table_parts import write_table_in_parts

    rows = RowFile()
    builder = SummaryBuilder(min_jobs)
    last: SpooledRow | None = None

    def in_job_order() -> Iterator[JobRow]:
        nonlocal last
        for item in spool.sorted_rows():
            if last is not None and item.job == last.job:
                raise MergeError(f"job {item.job} is in both {last.source} and {item.source}")
            last = item
            rows.add(item.row)
            row = JobRow.from_dict(item.row)
            builder.add(row)
            yield row

    try:
        written = write_table_in_parts(in_job_order(), out, formats)
    finally:
        rows.done()
    return rows, builder, written


def merge_outputs(
    folders: Sequence[Path],
    out: Path,
    formats: Sequence[str] = ("parquet",),
    min_jobs: int | None = None,
) -> MergeOutcome:
    """Merge scan output folders into `out`; raises MergeError when they do not fit."""
    if not folders:
        raise MergeError("no scan output to merge")
    summaries = [_summary_of(folder) for folder in folders]
    _check(folders, summaries)
    hotspot_floor = min_jobs or int(summaries[0].get("hotspots", {}).get("min_jobs", 2))
    spool = RowSpool()
    try:
        for folder in folders:
            for row in iter_rows(folder):
                spool.add(SpooledRow(row.to_dict(), "", False, False, source=str(folder)))
        rows, builder, written = _write_merged(spool, out, formats, hotspot_floor)
    finally:
        spool.close()
    from_cache = sum(int(s.get("jobs", {}).get("from_cache", 0)) for s in summaries)
    analyzed = [s.get("analyzed", {}) for s in summaries]
    summary = builder.summary(
        root=summaries[0].get("root"),
        out=str(out),
        job_glob=summaries[0].get("job_glob"),
        scanned_at=max(str(s.get("scanned_at", "")) for s in summaries),
        interrupted=any(bool(s.get("interrupted")) for s in summaries),
        jobs_found=sum(int(s.get("jobs_found", 0)) for s in summaries),
        jobs_not_scanned=sum(int(s.get("jobs_not_scanned", 0)) for s in summaries),
        merged_from=[str(folder) for folder in folders],
        engine="+".join(sorted({str(s.get("engine", "local")) for s in summaries})),
        workers=sum(int(s.get("workers", 0)) for s in summaries),
        analyzed={
            "jobs": sum(int(a.get("jobs", 0)) for a in analyzed),
            "bytes": sum(int(a.get("bytes", 0)) for a in analyzed),
            "seconds": max((float(a.get("seconds") or 0) for a in analyzed), default=0.0),
            "mb_per_s": None,
        },
        duration_s=max(float(s.get("duration_s") or 0) for s in summaries),
        outputs=[str(p) for p in written] + [str(out / SUMMARY_JSON), str(out / SUMMARY_MD)],
    )
    summary["jobs"]["from_cache"] = from_cache
    write_summary(out, summary)
    return MergeOutcome(summary=summary, rows=rows, written=written)
