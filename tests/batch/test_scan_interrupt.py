"""Ctrl-C on a real `crashlens scan` process: a SIGINT to the command while its pool analyzes
a generated archive (bench/gen_jobs.py). The workers are gone when the command has exited,
the rows finished so far are written and cached, and the next run resumes from them.
A stop whose listing count is cut short still hands every cached row on to the next run."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import polars as pl
import pytest
from scan_helpers import StopAfter, generated_archive

from crashlens.batch import session
from crashlens.batch.session import ScanOptions, scan_archive
from crashlens.cli.exits import ExitCode

BENCH = Path(__file__).resolve().parents[2] / "bench"
JOBS = 4000
WORKER_CPU_BEFORE_STOP = 0.5
"""Seconds of CPU the pool's workers have spent when Ctrl-C comes: rows are done by then
(a small job takes a millisecond or two), and most of the archive is not. With 1,500 jobs a
starved test process once looked too late: the scan had finished before the signal came."""


def _gen_jobs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_jobs", BENCH / "gen_jobs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_jobs"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def _children(pid: int) -> list[int]:
    listed = subprocess.run(
        ["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True
    )
    return [int(word) for word in listed.stdout.split()]


def _cpu_s(pids: list[int]) -> float:
    """User plus system CPU seconds of the live processes among `pids`."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
    return total / os.sysconf("SC_CLK_TCK")


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _scan(root: Path, out: Path) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "crashlens", "scan", str(root), "-o", str(out),
               "--workers", "2", "--summary", "json"]  # fmt: skip
    return subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_as_from_a_terminal,
    )


def _as_from_a_terminal() -> None:
    """The scan starts with Ctrl-C at its default, as a terminal starts a command. A suite run
    as a shell's background job (`.ci/run &`) inherits SIGINT ignored, exec keeps that, and a
    Python started so never installs KeyboardInterrupt: the scan then rightly ignores Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_sigint_stops_the_workers_keeps_the_rows_and_the_next_run_resumes(
    tmp_path: Path,
) -> None:
    root = tmp_path / "tree"
    _gen_jobs().generate(root, jobs=JOBS, seed=7, procs=1)
    out = tmp_path / "out"
    scan = _scan(root, out)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and scan.poll() is None:
            workers = _children(scan.pid) or workers
            if workers and _cpu_s(workers) >= WORKER_CPU_BEFORE_STOP:
                break
            time.sleep(0.05)
        assert scan.poll() is None and len(workers) == 2, "the scan ended before Ctrl-C"
        scan.send_signal(signal.SIGINT)
        stdout, stderr = scan.communicate(timeout=600)
    finally:
        if scan.poll() is None:
            scan.kill()
    assert scan.returncode == ExitCode.INTERRUPTED, stderr[-2000:]
    assert not [pid for pid in workers if _running(pid)]  # no worker outlives the command
    assert "jobs not scanned (rerun to resume)" in stderr
    stopped = json.loads(stdout)
    scanned = stopped["jobs"]["scanned"]
    assert stopped["interrupted"] is True and 0 < scanned < JOBS
    # The count of the rest stops after COUNT_AFTER_STOP_S (a loaded machine lists slowly).
    counted = stopped["jobs_found"]
    assert counted == JOBS or (stopped["listing_cut_short"] and scanned < counted < JOBS)
    assert stopped["jobs_not_scanned"] == counted - scanned
    assert pl.read_parquet(out / "jobs.parquet").height == scanned
    resumed = _scan(root, out)
    stdout, stderr = resumed.communicate(timeout=900)
    assert resumed.returncode == 0, stderr[-2000:]
    again = json.loads(stdout)
    assert again["jobs"]["scanned"] == JOBS and again["jobs"]["from_cache"] == scanned
    assert again["analyzed"]["jobs"] == JOBS - scanned


def test_a_count_cut_short_after_ctrl_c_still_hands_the_cache_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After Ctrl-C the listing only counts for a while (a big archive would keep the user
    waiting for minutes): the jobs it did not reach lose neither their cached rows nor their
    place in the next run."""
    root = generated_archive(tmp_path / "archive", 24)
    options = ScanOptions(root=root, out=tmp_path / "out", workers=1)
    first = scan_archive(options)
    assert first.summary["jobs"]["scanned"] == 24
    for job in ("2024-03/job-000", "2024-04/job-001"):  # changed: both analyzed again
        log = root / job / "launcher.log"
        log.write_text(log.read_text() + "one more line\n")
    monkeypatch.setattr(session, "COUNT_AFTER_STOP_S", 0.0)
    stopped = scan_archive(options, StopAfter(1))
    assert stopped.interrupted and stopped.summary["listing_cut_short"] is True
    assert stopped.summary["jobs_found"] < 24  # a lower bound: the count stopped at once
    assert stopped.summary["jobs_not_scanned"] == stopped.summary["jobs_found"] - len(stopped.rows)
    resumed = scan_archive(options)
    assert not resumed.interrupted and "listing_cut_short" not in resumed.summary
    assert resumed.summary["jobs"]["scanned"] == 24
    # Only the changed job the stopped run did not finish is analyzed again.
    assert resumed.summary["analyzed"]["jobs"] == 1
    rows = {row.job: row.to_dict() for row in resumed.rows}
    fresh = scan_archive(ScanOptions(root=root, out=tmp_path / "fresh", workers=1))
    assert {row.job: {**row.to_dict(), "seconds": None} for row in fresh.rows} == {
        job: {**row, "seconds": None} for job, row in rows.items()
    }
