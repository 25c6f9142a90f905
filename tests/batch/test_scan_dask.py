"""The Dask engine against a real scheduler and real worker processes: rows identical to the
local pool's, a worker SIGKILLed mid-scan, a job that kills its worker, missing extras."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from scan_helpers import generated_archive
from typer.testing import CliRunner

from crashlens.batch.dask_engine import SLURM_HINT, DaskEngine
from crashlens.batch.engine import EngineChoice, EngineError
from crashlens.batch.jobs import discover_jobs
from crashlens.batch.row import JobRow
from crashlens.batch.session import ScanOptions, scan_archive
from crashlens.batch.task_sizing import DASK_TASK, TaskSize
from crashlens.cli import app

pytest_plugins = ("service_helpers",)  # the shared Dask and S3 fixtures

distributed = pytest.importorskip("distributed")

RUNNER = CliRunner()


def _rows(rows: list[JobRow]) -> list[dict[str, object]]:
    """Rows as data, in job order, without the analysis time."""
    return [{**row.to_dict(), "seconds": None} for row in sorted(rows, key=lambda r: r.job)]


def _table(folder: Path) -> pl.DataFrame:
    return pl.read_parquet(folder / "jobs.parquet").drop("seconds")


def test_rows_identical_on_every_engine(tmp_path: Path, cluster: str) -> None:
    root = generated_archive(tmp_path / "archive", 36)
    local = scan_archive(ScanOptions(root=root, out=tmp_path / "local", workers=2))
    assert local.summary["engine"] == "local"
    address = json.loads(Path(cluster).read_text())["address"]
    for name, spec in [("file", cluster), ("address", address), ("local", "local")]:
        out = tmp_path / name
        options = ScanOptions(
            root=root, out=out, workers=2, use_cache=False, engine=EngineChoice(dask=spec)
        )
        outcome = scan_archive(options)
        assert outcome.summary["engine"] == "dask"
        assert outcome.summary["workers"] == 2
        assert _rows(outcome.rows) == _rows(local.rows), name
        assert _table(out).equals(_table(tmp_path / "local")), name


def _worker_facts() -> dict[str, object]:
    from crashlens.match.site import library

    return {
        "parent": os.getppid(),
        "trim": os.environ.get("MALLOC_TRIM_THRESHOLD_"),
        "rules": len(library()),
    }


@pytest.mark.skipif(not hasattr(os, "fork"), reason="a fork server exists where fork does")
def test_local_cluster_workers_start_from_a_fork_server_not_the_driver(tmp_path: Path) -> None:
    """`--dask local` never forks the driver: its event loop and watcher threads may hold a
    lock at that moment (a worker forked while another thread wrote to stderr waited on the
    stream's lock for good). The workers come from a fork server that imported Dask and
    crashlens once, load the rule library themselves, and have the driver's environment:
    Dask does not set MALLOC_TRIM_THRESHOLD_ for them (it cost every job page faults)."""
    from crashlens.match.site import library

    trim = os.environ.get("MALLOC_TRIM_THRESHOLD_")
    engine = DaskEngine(EngineChoice(dask="local"), str(tmp_path), 2, "auto")
    closers: list[Callable[[], object]] = []
    try:
        client = engine._connect(closers)
        client.wait_for_workers(2, timeout=120)
        facts = list(client.run(_worker_facts).values())
    finally:
        for close in reversed(closers):
            close()
    assert len(facts) == 2
    assert all(f["parent"] != os.getpid() for f in facts)  # not children of the driver
    assert all(f["trim"] == trim for f in facts)
    assert all(f["rules"] == len(library()) for f in facts)
    assert os.environ.get("MALLOC_TRIM_THRESHOLD_") == trim  # nor set in the driver's


def test_dask_on_the_command_line(tmp_path: Path, cluster: str) -> None:
    root = generated_archive(tmp_path / "archive", 12)
    out = tmp_path / "out"
    args = ["scan", str(root), "-o", str(out), "--dask", cluster, "--summary", "json"]
    result = RUNNER.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["engine"], summary["jobs"]["scanned"]) == ("dask", 12)
    again = json.loads(RUNNER.invoke(app, args).stdout)  # the driver's cache: nothing to do
    assert again["jobs"]["from_cache"] == 12 and again["analyzed"]["jobs"] == 0


def test_a_worker_killed_mid_scan_loses_and_doubles_nothing(tmp_path: Path, cluster: str) -> None:
    from dask_helpers import HoldOnOneWorker

    root = generated_archive(tmp_path / "archive", 240)
    jobs = list(discover_jobs(root))
    local = scan_archive(ScanOptions(root=root, out=tmp_path / "local", workers=2)).rows
    # Small tasks: with Dask's default (up to 128 jobs a task) 240 jobs make a handful of tasks,
    # and the victim may have none left when it is killed (nothing to retry).
    small = TaskSize(max_jobs=4, max_bytes=DASK_TASK.max_bytes)
    engine = DaskEngine(EngineChoice(dask=cluster), str(root), 0, "auto", task_size=small)
    rows: list[JobRow] = []
    killed = None
    with distributed.Client(scheduler_file=cluster, timeout=60) as watcher:
        address, victim = sorted(watcher.run(os.getpid).items())[0]
        # The victim's jobs wait before they run, so it still holds a batch when it dies
        # (4-job tasks are fast: on a loaded machine it once had none left, nothing to retry).
        watcher.register_plugin(HoldOnOneWorker(victim, 20.0))
        try:
            for row in engine.run(jobs):
                rows.append(row)
                # killed once the scheduler shows the victim running a batch
                if killed is None and watcher.processing(workers=[address])[address]:
                    os.kill(victim, signal.SIGKILL)
                    killed = victim
        finally:
            watcher.unregister_worker_plugin(HoldOnOneWorker.name)
        watcher.wait_for_workers(2, timeout=120)  # the nanny brought it back
    assert killed is not None
    assert engine.retried > 0  # the dead worker's batches ran again, one job per task
    assert len(rows) == len({row.job for row in rows}) == len(jobs)
    assert _rows(rows) == _rows(local)


def test_a_job_that_kills_its_worker_twice_is_a_row_with_a_reason(
    tmp_path: Path, cluster: str
) -> None:
    from dask_helpers import PoisonJob

    root = generated_archive(tmp_path / "archive", 24)
    poison = "2024-03/job-000"
    with distributed.Client(scheduler_file=cluster, timeout=60) as client:
        client.register_plugin(PoisonJob(poison))
        try:
            options = ScanOptions(
                root=root, out=tmp_path / "out", engine=EngineChoice(dask=cluster)
            )
            outcome = scan_archive(options)
        finally:
            client.unregister_worker_plugin(PoisonJob.name)
        client.wait_for_workers(2, timeout=120)
    by_job = {row.job: row for row in outcome.rows}
    assert len(by_job) == len(outcome.rows) == 24
    assert by_job[poison].reason is not None
    assert by_job[poison].reason.startswith("analysis crashed: the worker process died")
    assert all(row.reason is None for job, row in by_job.items() if job != poison)
    # Not cached: the next scan tries that job again.
    cached = (tmp_path / "out" / "scan-cache.jsonl").read_text()
    assert poison not in cached and "2024-03/job-006" in cached


def test_missing_extras_and_bad_addresses_are_clear_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = generated_archive(tmp_path / "archive", 2)
    out = str(tmp_path / "out")
    both = RUNNER.invoke(app, ["scan", str(root), "-o", out, "--dask", "local", "--dask-slurm"])
    assert both.exit_code == 2 and "give one of them" in both.output
    try:
        import dask_jobqueue  # noqa: F401
    except ImportError:
        slurm = RUNNER.invoke(app, ["scan", str(root), "-o", out, "--dask-slurm"])
        assert slurm.exit_code == 2
        assert SLURM_HINT in slurm.output
    engine = DaskEngine(
        EngineChoice(dask="tcp://127.0.0.1:9"), str(root), 0, "auto", connect_timeout=2
    )
    with pytest.raises(EngineError, match="cannot reach the scheduler"):
        list(engine.run(discover_jobs(root)))
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if crashlens[dask] was not installed
    missing = RUNNER.invoke(app, ["scan", str(root), "-o", out, "--dask", "local"])
    assert missing.exit_code == 2
    assert "pip install 'crashlens[dask]'" in missing.output


def test_the_local_engine_never_imports_dask(tmp_path: Path) -> None:
    """The command line, as a user runs it: a local scan loads no part of Dask."""
    root = generated_archive(tmp_path / "archive", 3)
    code = (
        "import sys\n"
        "from crashlens.cli import main\n"
        "sys.argv = ['crashlens', 'scan', sys.argv[1], '-o', sys.argv[2], '--workers', '2']\n"
        "try:\n    main()\nexcept SystemExit as end:\n    assert not end.code, end.code\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(root), str(tmp_path / "o")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "o" / "jobs.parquet").is_file()  # the scan did run


class _StopAfter:
    """Progress that presses Ctrl-C after `rows` rows."""

    def __init__(self, rows: int) -> None:
        self.rows = rows

    def start(self, jobs: int, total_bytes: int, cached: int) -> None:
        return None

    def advance(self, row: JobRow) -> None:
        self.rows -= 1
        if self.rows == 0:
            raise KeyboardInterrupt

    def finish(self) -> None:
        return None


def test_ctrl_c_keeps_what_dask_scanned_and_the_next_run_resumes(
    tmp_path: Path, cluster: str
) -> None:
    root = generated_archive(tmp_path / "archive", 120)
    options = ScanOptions(root=root, out=tmp_path / "out", engine=EngineChoice(dask=cluster))
    stopped = scan_archive(options, _StopAfter(10))
    assert stopped.interrupted and len(stopped.rows) >= 10
    assert stopped.summary["jobs_not_scanned"] == 120 - len(stopped.rows)
    resumed = scan_archive(options)
    assert not resumed.interrupted
    assert resumed.summary["jobs"]["from_cache"] == len(stopped.rows)
    local = scan_archive(ScanOptions(root=root, out=tmp_path / "local", workers=2))
    assert _rows(resumed.rows) == _rows(local.rows)


def test_workers_running_other_crashlens_code_are_refused(tmp_path: Path, cluster: str) -> None:
    from dask_helpers import pretend_code

    from crashlens.batch.dask_worker import LOADED_CODE

    root = generated_archive(tmp_path / "archive", 2)
    engine = DaskEngine(EngineChoice(dask=cluster), str(root), 0, "auto")
    with distributed.Client(scheduler_file=cluster, timeout=60) as client:
        client.run(pretend_code, "an older release")
        try:
            with pytest.raises(
                EngineError, match="other crashlens code, rules or model than this one"
            ):
                list(engine.run(discover_jobs(root)))
        finally:
            client.run(pretend_code, LOADED_CODE)


def test_workers_are_warmed_when_they_join_before_any_task(tmp_path: Path, cluster: str) -> None:
    """The driver registers the warm-up with the cluster: every worker builds its scan
    database then, and so does a worker that starts later (here: restarted), before it takes
    a task; batches name the site rules by digest."""
    from dask_helpers import warmed

    from crashlens.batch.dask_worker import site_digest
    from crashlens.match.site import site_files

    root = generated_archive(tmp_path / "archive", 6)
    engine = DaskEngine(EngineChoice(dask=cluster), str(root), 0, "auto")
    assert len(list(engine.run(discover_jobs(root)))) == 6
    assert engine.startup_s is not None and engine.startup_s >= 0
    key = ("auto", site_digest(site_files()))
    with distributed.Client(scheduler_file=cluster, timeout=60) as client:
        assert all(key in done for done in client.run(warmed).values())
        before = client.run(os.getpid)
        client.restart_workers(list(before), raise_for_error=False)
        client.wait_for_workers(2, timeout=120)
        assert set(client.run(os.getpid).values()).isdisjoint(before.values())
        deadline = time.monotonic() + 120  # the warm-up runs as a worker registers
        while not all(key in done for done in client.run(warmed).values()):
            assert time.monotonic() < deadline, client.run(warmed)
            time.sleep(0.2)


def test_a_batch_names_site_rules_the_worker_was_sent_or_carries_them(tmp_path: Path) -> None:
    """In this process, as a worker runs it: a digest never sent fails the batch (the driver
    then runs its jobs alone, with the files); the files themselves always work."""
    from crashlens.batch import job as job_module
    from crashlens.batch.dask_worker import UnknownSiteRules, analyze_batch, site_digest, warm

    root = generated_archive(tmp_path / "archive", 3)
    jobs = list(discover_jobs(root))
    expected = _rows([job_module.analyze_job(job, str(root)) for job in jobs])
    with pytest.raises(UnknownSiteRules):
        analyze_batch(jobs, str(root), "auto", "never-sent")
    assert _rows(analyze_batch(jobs, str(root), "auto", ())) == expected
    assert warm("auto", ()) == site_digest(())
    assert _rows(analyze_batch(jobs, str(root), "auto", site_digest(()))) == expected


def test_site_rules_travel_to_workers_that_cannot_see_the_driver_s_folder(
    tmp_path: Path, cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rule folder is named relative to the driver's working directory, which the worker
    processes do not share (as a worker on another machine does not see the driver's disk):
    the rows must still be those of the local pool, the site rule deciding its job."""
    from crashlens.match.site import RULES_ENV
    from test_site_rules import SITE_LOG, SITE_RULE

    monkeypatch.chdir(tmp_path)
    folder = Path(f"site-rules-{tmp_path.name}")  # unique: the library is cached per folder
    folder.mkdir()
    (folder / "filesystem-site-ckpt-fenced.toml").write_text(SITE_RULE, encoding="utf-8")
    monkeypatch.setenv(RULES_ENV, str(folder))
    root = generated_archive(tmp_path / "archive", 6)
    (root / "fenced").mkdir()
    (root / "fenced" / "train.log").write_text(SITE_LOG, encoding="utf-8")
    local = scan_archive(ScanOptions(root=root, out=tmp_path / "local", workers=2))
    options = ScanOptions(
        root=root, out=tmp_path / "dask", use_cache=False, engine=EngineChoice(dask=cluster)
    )
    outcome = scan_archive(options)
    assert outcome.summary["engine"] == "dask"
    assert _rows(outcome.rows) == _rows(local.rows)
    (fenced,) = [row for row in outcome.rows if row.job.endswith("fenced")]
    assert fenced.verdict == "filesystem"
    assert "filesystem-site-ckpt-fenced" in fenced.rules
