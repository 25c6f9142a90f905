"""A whole `crashlens scan`: outputs, incremental rescan, corrupt jobs, Ctrl-C, dead workers."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from scan_helpers import (
    StopAfter,
    enospc_job,
    healthy_job,
    oom_job,
    tar_job,
    write,
    xid_job,
)

from crashlens.batch import job as batch_job
from crashlens.batch.cache import CACHE_NAME
from crashlens.batch.jobs import JobSpec, discover_jobs
from crashlens.batch.pool import Runner
from crashlens.batch.row import JobRow
from crashlens.batch.session import ScanOptions, scan_archive
from crashlens.match.scan import hyperscan_available
from crashlens.model import Verdict

REQUIRED_COLUMNS = {
    "job",
    "verdict",
    "confidence",
    "fingerprint",
    "hosts",
    "gpus",
    "first_failure_at",
    "reason",
}


def _archive(root: Path) -> Path:
    oom_job(root / "2024-03" / "job-001")
    enospc_job(root / "2024-03" / "job-002")
    healthy_job(root / "2024-03" / "job-003")
    xid_job(root / "2024-04" / "job-004", host="gpu-a12")
    xid_job(root / "2024-04" / "job-005", host="gpu-a12")
    healthy_job(root / "2024-04" / "job-006")
    return root


def _scan(root: Path, out: Path, workers: int = 1, **extra: object) -> dict[str, object]:
    options = ScanOptions(root=root, out=out, workers=workers, **extra)  # type: ignore[arg-type]
    return scan_archive(options).summary


def test_scan_writes_table_and_summary(tmp_path: Path) -> None:
    root = _archive(tmp_path / "archive")
    out = tmp_path / "out"
    summary = _scan(root, out, formats=("parquet", "jsonl", "csv"))
    table = pl.read_parquet(out / "jobs.parquet")
    assert set(table.columns) >= REQUIRED_COLUMNS
    assert table["job"].to_list() == [
        "2024-03/job-001",
        "2024-03/job-002",
        "2024-03/job-003",
        "2024-04/job-004",
        "2024-04/job-005",
        "2024-04/job-006",
    ]
    verdicts = dict(zip(table["job"], table["verdict"], strict=True))
    assert verdicts["2024-03/job-001"] == "gpu_oom"
    assert verdicts["2024-03/job-002"] == "filesystem"
    assert verdicts["2024-03/job-003"] == "none"
    assert verdicts["2024-04/job-004"] == "hardware"
    assert table.schema["first_failure_at"] == pl.Datetime("us", "UTC")
    assert table.filter(pl.col("job") == "2024-04/job-004")["gpus"].to_list() == [
        ["gpu-a12/0000:18:00.0"]
    ]
    assert len((out / "jobs.jsonl").read_text().splitlines()) == 6
    assert pl.read_csv(out / "jobs.csv").height == 6
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk["jobs"] == summary["jobs"]
    assert on_disk["jobs"]["scanned"] == 6 and on_disk["jobs"]["failed"] == 4
    assert on_disk["by_verdict"]["none"] == 2
    top = on_disk["fingerprints"]["top"][0]
    assert (top["verdict"], top["count"]) == ("hardware", 2)
    assert on_disk["hotspots"]["hosts"][0]["id"] == "gpu-a12"
    assert on_disk["timeline"]["buckets"]
    assert "## Hotspots" in (out / "summary.md").read_text()


def test_rescan_skips_unchanged_jobs(tmp_path: Path) -> None:
    root = _archive(tmp_path / "archive")
    out = tmp_path / "out"
    first = _scan(root, out)
    assert first["jobs"]["from_cache"] == 0  # type: ignore[index]
    second = _scan(root, out)
    assert second["jobs"]["from_cache"] == 6  # type: ignore[index]
    assert second["analyzed"]["jobs"] == 0  # type: ignore[index]
    assert second["by_verdict"] == first["by_verdict"]
    # one job changes, one appears, one disappears
    enospc_job(root / "2024-03" / "job-003")  # was healthy
    oom_job(root / "2024-05" / "job-007")
    for name in os.listdir(root / "2024-04" / "job-006"):
        os.remove(root / "2024-04" / "job-006" / name)
    third = _scan(root, out)
    assert third["analyzed"]["jobs"] == 2  # type: ignore[index]
    assert third["jobs"]["from_cache"] == 4  # type: ignore[index]
    table = pl.read_parquet(out / "jobs.parquet")
    assert "2024-04/job-006" not in table["job"].to_list()
    verdicts = dict(zip(table["job"], table["verdict"], strict=True))
    assert verdicts["2024-03/job-003"] == "filesystem"
    # --no-cache analyzes everything again
    fourth = _scan(root, out, use_cache=False)
    assert fourth["jobs"]["from_cache"] == 0  # type: ignore[index]


def test_cache_from_another_root_or_version_is_ignored(tmp_path: Path) -> None:
    root = _archive(tmp_path / "archive")
    out = tmp_path / "out"
    _scan(root, out)
    lines = (out / CACHE_NAME).read_text().splitlines()
    head = json.loads(lines[0])
    head["fingerprint_version"] = -1
    (out / CACHE_NAME).write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    assert _scan(root, out)["jobs"]["from_cache"] == 0  # type: ignore[index]


def test_a_corrupt_job_in_the_middle_is_a_row_with_a_reason(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    oom_job(root / "job-001")
    good = tar_job(tmp_path / "good.tar.gz", {"launcher.log": "x\n" * 1000})
    (root / "job-002.tar.gz").write_bytes(good.read_bytes()[:40])  # truncated
    write(root / "job-003" / "core", "")
    (root / "job-003" / "core").write_bytes(b"\x7fELF" + os.urandom(4096))
    (root / "job-004.zip").write_bytes(b"PK\x03\x04 this is not a zip")
    same = (root / "job-001" / "launcher.log").read_text()
    tar_job(root / "job-005.tar.gz", {"launcher.log": same})
    enospc_job(root / "job-006")
    summary = _scan(root, tmp_path / "out", workers=2)
    table = pl.read_parquet(tmp_path / "out" / "jobs.parquet")
    rows = {r["job"]: r for r in table.to_dicts()}
    assert set(rows) == {"job-001", "job-002.tar.gz", "job-003", "job-004.zip",
                         "job-005.tar.gz", "job-006"}  # fmt: skip
    for bad in ("job-002.tar.gz", "job-003", "job-004.zip"):
        assert rows[bad]["verdict"] is None, bad
        assert rows[bad]["reason"], bad
    assert "corrupt" in rows["job-002.tar.gz"]["reason"]
    assert "ELF" in rows["job-003"]["reason"]
    assert rows["job-001"]["verdict"] == rows["job-005.tar.gz"]["verdict"] == "gpu_oom"
    assert rows["job-001"]["fingerprint"] == rows["job-005.tar.gz"]["fingerprint"]
    assert rows["job-005.tar.gz"]["evidence"].startswith("job-005.tar.gz!launcher.log:")
    assert rows["job-006"]["verdict"] == "filesystem"
    assert summary["jobs"]["unreadable"] == 3  # type: ignore[index]


@pytest.mark.parametrize("workers", [1, 2])
def test_ctrl_c_keeps_what_was_scanned_and_the_rescan_resumes(tmp_path: Path, workers: int) -> None:
    root = _archive(tmp_path / "archive")
    out = tmp_path / "out"
    options = ScanOptions(root=root, out=out, workers=workers)
    outcome = scan_archive(options, StopAfter(2))
    assert outcome.interrupted
    assert outcome.summary["interrupted"] is True
    assert outcome.summary["jobs"]["scanned"] == 2
    assert outcome.summary["jobs_not_scanned"] == 4
    assert pl.read_parquet(out / "jobs.parquet").height == 2
    resumed = scan_archive(options).summary
    assert resumed["jobs"]["from_cache"] == 2 and resumed["analyzed"]["jobs"] == 4


def _dies_on_job_3(job: JobSpec, root: str, backend: str = "auto") -> JobRow:
    if job.rel.endswith("job-003"):
        os._exit(3)  # what a segfault or the OOM killer looks like to the pool
    return _real_analyze_job(job, root, backend)


_real_analyze_job = batch_job.analyze_job


def test_a_job_that_kills_its_worker_is_a_row_and_the_scan_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _archive(tmp_path / "archive")
    monkeypatch.setattr(batch_job, "analyze_job", _dies_on_job_3)
    summary = _scan(root, tmp_path / "out", workers=2)
    table = pl.read_parquet(tmp_path / "out" / "jobs.parquet")
    rows = {r["job"]: r for r in table.to_dicts()}
    assert len(rows) == 6
    assert "worker process died" in rows["2024-03/job-003"]["reason"]
    assert rows["2024-03/job-001"]["verdict"] == "gpu_oom"
    assert summary["jobs"]["unreadable"] == 1  # type: ignore[index]
    # a crash is not cached: the next scan tries that job again
    monkeypatch.setattr(batch_job, "analyze_job", _real_analyze_job)
    again = _scan(root, tmp_path / "out", workers=2)
    assert again["analyzed"]["jobs"] == 1  # type: ignore[index]


@pytest.mark.skipif(
    not hyperscan_available(), reason="without hyperscan the scan itself runs on polars"
)
def test_analyze_never_imports_polars() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "llamafactory-shm-bus-error"
    code = (
        "import sys\n"
        "from crashlens.cli import app\n"
        "from crashlens.pipeline import analyze\n"
        f"analyze([{str(example)!r}])\n"
        "assert 'polars' not in sys.modules, 'polars imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_each_row_says_what_crashlens_analyze_says_of_that_job(tmp_path: Path) -> None:
    from crashlens.pipeline import analyze

    root = _archive(tmp_path / "archive")
    example = Path(__file__).resolve().parents[2] / "examples" / "llamafactory-shm-bus-error"
    for item in example.iterdir():
        write(root / "2024-05" / "job-007" / item.name, item.read_text(encoding="utf-8"))
    _scan(root, tmp_path / "out", workers=2)
    rows = pl.read_parquet(tmp_path / "out" / "jobs.parquet").to_dicts()
    assert len(rows) == 7
    for row in rows:
        report = analyze([str(root / row["job"])])
        assert row["verdict"] == report.verdict, row["job"]
        if report.verdict is not Verdict.NONE:
            assert row["confidence"] == pytest.approx(report.causes[0].confidence), row["job"]


def test_a_job_that_never_finishes_is_stopped_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _archive(tmp_path / "archive")
    jobs = list(discover_jobs(root, None))
    # The pool's clock, shared with its forked workers: only the hanging job moves it, so no
    # healthy job can ever look overdue, however slow the machine. It moves for as long as
    # the job hangs (a minute every 50 ms), not once: the pool may read the clock, to start
    # counting, just after a single jump, and would then wait for ever (seen under load).
    clock = multiprocessing.get_context("fork").Value("d", 0.0)

    def hangs_on_job_2(job: JobSpec, root: str, backend: str = "auto") -> JobRow:
        if job.rel.endswith("job-002"):
            while True:  # the job never returns
                with clock.get_lock():
                    clock.value += 60.0
                threading.Event().wait(0.05)
        return _real_analyze_job(job, root, backend)

    monkeypatch.setattr(batch_job, "analyze_job", hangs_on_job_2)
    runner = Runner(str(root), 2, job_timeout=600.0, clock=lambda: clock.value, poll=0.05)
    rows = {row.job: row for row in runner.run(jobs)}
    assert len(rows) == 6
    assert rows["2024-03/job-002"].reason == (
        "analysis timed out: still running after 600 s (--job-timeout)"
    )
    assert rows["2024-03/job-001"].verdict == "gpu_oom"
    assert rows["2024-04/job-004"].verdict == "hardware"
    assert sum(row.reason is not None for row in rows.values()) == 1


def test_a_ctrl_c_inside_the_listing_leaves_the_count_a_lower_bound(tmp_path: Path) -> None:
    """Ctrl-C can land while the listing itself runs (the engine pulls jobs from it): the
    KeyboardInterrupt ends the listing's generator there, so counting the rest finds nothing
    more. The count is then short of the tree and must say so (`cut_short`), not pass for the
    whole archive (seen under load in test_scan_interrupt: jobs_found < jobs, no flag)."""
    from crashlens.batch import cache
    from crashlens.batch.session import _Listing
    from crashlens.batch.spool import RowSpool

    root = _archive(tmp_path / "tree")
    out = tmp_path / "out"
    listing = _Listing(
        str(root), ScanOptions(root=root, out=out), out, cache.ScanCache({}), RowSpool()
    )
    real = listing.jobs

    def interrupted_after_two() -> Iterator[JobSpec]:
        yield next(real)
        yield next(real)
        raise KeyboardInterrupt

    listing.jobs = interrupted_after_two()
    todo = listing.todo()
    with pytest.raises(KeyboardInterrupt):
        for _job in todo:
            pass
    listing.count_the_rest(deadline=float("inf"))
    assert listing.found == 2 and listing.cut_short

    whole = _Listing(
        str(root), ScanOptions(root=root, out=out), out, cache.ScanCache({}), RowSpool()
    )
    next(whole.todo())
    whole.count_the_rest(deadline=float("inf"))
    assert whole.found == 6 and not whole.cut_short
