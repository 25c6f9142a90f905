"""A scan streams end to end: the driver holds the jobs in flight and a run of rows, never the
listing or all the rows, so its memory does not grow with the number of jobs.

Measured on generated trees of 2,000 and 20,000 tiny jobs, analyzed by a stand-in that only
names the job (the analysis runs in the workers and is not what is measured): the most jobs
alive in the driver at once (every listed job counts itself while alive), and the driver's
peak of traced Python memory."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import polars as pl
import pytest
from scan_helpers import JobTally, count_jobs, tiny_tree

from crashlens.batch import job as batch_job
from crashlens.batch import session, spool, table_parts
from crashlens.batch.jobs import JobSpec
from crashlens.batch.pool import BATCH_JOBS, IN_FLIGHT_PER_WORKER
from crashlens.batch.row import JobRow
from crashlens.batch.session import ScanOptions, scan_archive

WORKERS = 2
HELD = (WORKERS * IN_FLIGHT_PER_WORKER + 2) * BATCH_JOBS + 1
"""The most jobs a streaming driver holds: the batches the local pool has in flight, the one
whose rows are being taken, the one being formed and the job looked ahead."""


def _names_the_job(job: JobSpec, root: str, backend: str = "auto") -> JobRow:
    return JobRow.for_job(job)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every job the scan lists counts itself; rows are made by the stand-in; runs of rows
    and parts of the table are small, so a driver that held rows would show it."""
    listing = session.iter_jobs
    monkeypatch.setattr(session, "iter_jobs", lambda *a, **k: count_jobs(listing(*a, **k)))
    monkeypatch.setattr(batch_job, "analyze_job", _names_the_job)
    monkeypatch.setattr(spool, "RUN_ROWS", 256)
    monkeypatch.setattr(table_parts, "PART_ROWS", 256)
    JobTally.reset()


def _scan(root: Path, out: Path) -> tuple[int, int, session.ScanOutcome]:
    """(most jobs alive at once, peak traced bytes, outcome) of a scan in this process."""
    JobTally.reset()
    tracemalloc.start()
    try:
        outcome = scan_archive(ScanOptions(root=root, out=out, workers=WORKERS))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return JobTally.peak, peak, outcome


@pytest.mark.usefixtures("counted")
def test_the_driver_holds_the_jobs_in_flight_not_the_listing(tmp_path: Path) -> None:
    small = tiny_tree(tmp_path / "small", 2_000)
    large = tiny_tree(tmp_path / "large", 8_000)
    warm_up = tiny_tree(tmp_path / "warm-up", 40)
    _scan(warm_up, tmp_path / "out-warm-up")  # imports, the rule library: not in the figures
    jobs_small, bytes_small, outcome_small = _scan(small, tmp_path / "out-small")
    jobs_large, bytes_large, outcome_large = _scan(large, tmp_path / "out-large")
    assert outcome_small.summary["jobs"]["scanned"] == len(outcome_small.rows) == 2_000
    assert outcome_large.summary["jobs"]["scanned"] == len(outcome_large.rows) == 8_000
    # Jobs: what is in flight, whatever the size of the listing.
    print(f"jobs held {jobs_small} / {jobs_large}, peak {bytes_small} / {bytes_large} B")
    assert 0 < jobs_small <= HELD
    assert 0 < jobs_large <= HELD
    # Memory: four times the jobs, not four times the peak (holding 8,000 rows and jobs costs
    # over 10 MB, far above the allowance).
    assert bytes_large < 1.5 * bytes_small + 2_000_000, (bytes_small, bytes_large)
    table = pl.read_parquet(tmp_path / "out-large" / "jobs.parquet")
    assert table.height == 8_000 and table["job"].is_sorted()
    assert table["job"].to_list() == [row.job for row in outcome_large.rows]


@pytest.mark.usefixtures("counted")
def test_a_rescan_streams_through_the_cache_too(tmp_path: Path) -> None:
    root = tiny_tree(tmp_path / "archive", 3_000)
    out = tmp_path / "out"
    scan_archive(ScanOptions(root=root, out=out, workers=WORKERS))
    jobs, _, outcome = _scan(root, out)
    assert outcome.summary["jobs"]["from_cache"] == 3_000
    assert outcome.summary["analyzed"]["jobs"] == 0
    assert jobs <= 2  # a cached job is looked up and let go (the next one is being made)
    lines = (out / "scan-cache.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3_001
    cached = [json.loads(line)["job"] for line in lines[1:]]
    assert cached == sorted(cached)  # written in job order, like the table


def test_rows_written_in_parts_equal_rows_written_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scan_helpers import generated_archive

    root = generated_archive(tmp_path / "archive", 30)
    formats = ("parquet", "jsonl", "csv")
    whole = scan_archive(ScanOptions(root=root, out=tmp_path / "whole", formats=formats))
    monkeypatch.setattr(spool, "RUN_ROWS", 4)
    monkeypatch.setattr(spool, "FAN_IN", 2)  # runs merged in rounds
    monkeypatch.setattr(table_parts, "PART_ROWS", 7)
    parts = scan_archive(
        ScanOptions(root=root, out=tmp_path / "parts", formats=formats, use_cache=False)
    )
    volatile = ("seconds",)

    def data(rows: object) -> list[dict[str, object]]:
        return [
            {k: v for k, v in row.to_dict().items() if k not in volatile}
            for row in rows  # type: ignore[attr-defined]
        ]

    assert data(parts.rows) == data(whole.rows)
    for name in ("summary", "by_verdict", "fingerprints", "hotspots", "timeline"):
        if name in whole.summary:
            assert parts.summary[name] == whole.summary[name], name
    read = {
        "parquet": pl.read_parquet,
        "jsonl": pl.read_ndjson,
        "csv": pl.read_csv,
    }
    for name, reader in read.items():
        one = reader(tmp_path / "whole" / f"jobs.{name}").drop("seconds")
        many = reader(tmp_path / "parts" / f"jobs.{name}").drop("seconds")
        assert many.equals(one), name
    assert not [p.name for p in (tmp_path / "parts").iterdir() if p.name.startswith(".")]


def test_a_merge_reads_and_writes_a_part_at_a_time_and_equals_the_whole_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scan_helpers import generated_archive

    from crashlens.batch import merge
    from crashlens.batch.shards import Shard

    root = generated_archive(tmp_path / "archive", 30)
    whole = scan_archive(ScanOptions(root=root, out=tmp_path / "whole", workers=1))
    shards = [tmp_path / f"shard-{k}" for k in (1, 2, 3)]
    for k, out in enumerate(shards, start=1):
        scan_archive(ScanOptions(root=root, out=out, workers=1, shard=Shard(k, 3)))
    monkeypatch.setattr(merge, "READ_ROWS", 4)
    monkeypatch.setattr(spool, "RUN_ROWS", 5)
    monkeypatch.setattr(spool, "FAN_IN", 2)
    monkeypatch.setattr(table_parts, "PART_ROWS", 6)
    merged = merge.merge_outputs(shards, tmp_path / "merged")
    assert [row.job for row in merged.rows] == [row.job for row in whole.rows]
    for name in ("jobs", "by_verdict", "fingerprints", "hotspots", "timeline"):
        assert merged.summary[name] == whole.summary[name], name
    one = pl.read_parquet(tmp_path / "whole" / "jobs.parquet").drop("seconds")
    assert pl.read_parquet(tmp_path / "merged" / "jobs.parquet").drop("seconds").equals(one)
