"""The Dask engine on a real scheduler and worker processes (their environment names an S3
store, moto's server over HTTP): an archive read from the store by the workers, rows as a
local scan gives them; a job over --job-timeout becomes a row with a reason; the driver holds
the batches in flight, not the listing."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scan_helpers import JobTally, count_jobs, enospc_job, generated_archive, tiny_tree
from service_helpers import S3_ENVIRONMENT

from crashlens.batch import session, task_sizing
from crashlens.batch.dask_engine import IN_FLIGHT_PER_THREAD, DaskEngine
from crashlens.batch.engine import EngineChoice
from crashlens.batch.jobs import discover_jobs
from crashlens.batch.session import ScanOptions, scan_archive
from crashlens.batch.task_sizing import TaskSize

pytest_plugins = ("service_helpers",)  # the shared Dask and S3 fixtures

distributed = pytest.importorskip("distributed")
s3fs = pytest.importorskip("s3fs")

BUCKET = "dask-archive"
VOLATILE = ("seconds", "job_mtime")
"""What differs between a local and an S3 scan of the same bytes: the time a job took, and
when its files were written (a file's mtime, an object's upload)."""


@pytest.fixture
def store(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """An empty bucket, and the driver's environment pointing at it."""
    for name, value in {**S3_ENVIRONMENT, "AWS_ENDPOINT_URL": s3_endpoint}.items():
        monkeypatch.setenv(name, value)
    s3fs.S3FileSystem.clear_instance_cache()
    fs = s3fs.S3FileSystem()
    fs.mkdir(BUCKET)
    yield fs
    fs.rm(BUCKET, recursive=True)
    s3fs.S3FileSystem.clear_instance_cache()


def _stable(rows: Any) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in row.to_dict().items() if k not in VOLATILE}
        for row in sorted(rows, key=lambda row: row.job)
    ]


def test_dask_workers_read_an_s3_archive_and_give_the_local_rows(
    store: Any, cluster: str, tmp_path: Path
) -> None:
    root = generated_archive(tmp_path / "archive", 18)
    enospc_job(root / "2024-06" / "job-gz")
    log = root / "2024-06" / "job-gz" / "launcher.log"
    log.with_name("launcher.log.gz").write_bytes(gzip.compress(log.read_bytes()))
    log.unlink()
    for path in sorted(root.rglob("*")):
        if path.is_file():
            store.put_file(str(path), f"{BUCKET}/logs/{path.relative_to(root).as_posix()}")
    local = scan_archive(ScanOptions(root=root, out=tmp_path / "local", workers=2))
    options = ScanOptions(
        root=Path(f"s3://{BUCKET}/logs"),
        out=tmp_path / "dask",
        engine=EngineChoice(dask=cluster),
    )
    remote = scan_archive(options)
    assert (remote.summary["engine"], remote.summary["root"]) == ("dask", f"s3://{BUCKET}/logs")
    assert remote.summary["jobs"]["scanned"] == 19
    assert _stable(remote.rows) == _stable(local.rows)
    by_job = {row.job: row for row in remote.rows}
    assert by_job["2024-06/job-gz"].verdict == "filesystem"  # read member by member
    assert any(job.endswith(".tar.gz") and row.verdict for job, row in by_job.items())
    again = scan_archive(options)  # ETags unchanged: the driver's cache answers
    assert again.summary["analyzed"]["jobs"] == 0


def test_a_job_over_the_timeout_on_a_dask_worker_is_a_row_with_a_reason(
    tmp_path: Path, cluster: str
) -> None:
    from dask_helpers import HangJob

    root = generated_archive(tmp_path / "archive", 30)
    jobs = list(discover_jobs(root))
    hangs = "2024-04/job-007"
    ticks = tmp_path / "ticks"
    ticks.touch()

    def clock() -> float:
        return 100.0 * ticks.stat().st_size  # moves only while the job hangs

    engine = DaskEngine(
        EngineChoice(dask=cluster), str(root), 0, "auto", job_timeout=600.0, clock=clock, poll=0.05
    )
    with distributed.Client(scheduler_file=cluster, timeout=60) as client:
        client.register_plugin(HangJob(hangs, str(ticks)))
        try:
            rows = {row.job: row for row in engine.run(jobs)}
        finally:
            client.unregister_worker_plugin(HangJob.name)
        client.wait_for_workers(2, timeout=120)
    assert len(rows) == len(jobs) == 30
    assert rows[hangs].reason == "analysis timed out: still running after 600 s (--job-timeout)"
    assert sum(row.reason is not None for row in rows.values()) == 1
    local = scan_archive(ScanOptions(root=root, out=tmp_path / "local", workers=2)).rows
    healthy = [row for row in _stable(rows.values()) if row["job"] != hangs]
    assert healthy == [row for row in _stable(local) if row["job"] != hangs]


def test_the_scan_passes_its_job_timeout_to_dask() -> None:
    from crashlens.batch.engine import make_engine

    engine = make_engine(EngineChoice(dask="local"), "/x", 2, "auto", job_timeout=42.0)
    assert isinstance(engine, DaskEngine) and engine.job_timeout == 42.0


def test_the_driver_holds_the_batches_in_flight_not_the_listing(
    tmp_path: Path, cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tiny_tree(tmp_path / "archive", 600, per_folder=100)
    listing = session.iter_jobs
    monkeypatch.setattr(session, "iter_jobs", lambda *a, **k: count_jobs(listing(*a, **k)))
    # Tasks of 8 jobs, so that the bound is far below the tree's 600 jobs.
    monkeypatch.setattr(task_sizing, "DASK_TASK", TaskSize(max_jobs=8, max_bytes=1 << 20))
    JobTally.reset()
    options = ScanOptions(root=root, out=tmp_path / "out", engine=EngineChoice(dask=cluster))
    outcome = scan_archive(options)
    assert outcome.summary["jobs"]["scanned"] == 600
    slots = outcome.summary["workers"] * IN_FLIGHT_PER_THREAD
    # The batches in flight, as many again looked ahead, and the job in hand.
    held = 2 * slots * 8 + 1
    assert 0 < JobTally.peak <= held < 600
