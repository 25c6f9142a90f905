"""Worker-side helpers for the Dask tests: imported by `dask worker` processes (PYTHONPATH)."""

from __future__ import annotations

import os
import signal
from typing import Any

from distributed import WorkerPlugin


class PoisonJob(WorkerPlugin):
    """On every worker (also on one that replaces a dead worker): the job `rel` kills its
    worker process with SIGKILL, as a job that drives the analysis out of memory would."""

    name = "crashlens-poison-job"

    def __init__(self, rel: str) -> None:
        self.rel = rel
        self.original: Any = None

    def setup(self, worker: Any) -> None:
        from crashlens.batch import job as job_module

        original = self.original = job_module.analyze_job
        rel = self.rel

        def analyze(job: Any, root: str, backend: str = "auto") -> Any:
            if job.rel == rel:
                os.kill(os.getpid(), signal.SIGKILL)
            return original(job, root, backend)

        job_module.analyze_job = analyze

    def teardown(self, worker: Any) -> None:
        from crashlens.batch import job as job_module

        if self.original is not None:
            job_module.analyze_job = self.original


class HoldOnOneWorker(WorkerPlugin):
    """On the worker process `pid` only: no job starts its analysis until `seconds` after
    the plugin arrived, so that worker surely holds a batch when a test kills it (its
    replacement, a new process, runs at full speed). Not killed, it finishes them late."""

    name = "crashlens-hold-on-one-worker"

    def __init__(self, pid: int, seconds: float) -> None:
        self.pid = pid
        self.seconds = seconds
        self.original: Any = None

    def setup(self, worker: Any) -> None:
        if os.getpid() != self.pid:
            return
        import time

        from crashlens.batch import job as job_module

        original = self.original = job_module.analyze_job
        until = time.monotonic() + self.seconds

        def analyze(job: Any, root: str, backend: str = "auto") -> Any:
            time.sleep(max(0.0, until - time.monotonic()))
            return original(job, root, backend)

        job_module.analyze_job = analyze

    def teardown(self, worker: Any) -> None:
        from crashlens.batch import job as job_module

        if self.original is not None:
            job_module.analyze_job = self.original


def pretend_code(digest: str) -> None:
    """Run on a worker: report `digest` as the crashlens code it loaded (a worker started
    before an upgrade)."""
    from crashlens.batch import dask_worker

    dask_worker.LOADED_CODE = digest


class HangJob(WorkerPlugin):
    """On every worker: the job `rel` never finishes. While it runs it adds a byte to `ticks`
    every tenth of a second, so a test's clock (the file's size) moves only while a job
    hangs: no healthy job can look overdue, however slow the machine."""

    name = "crashlens-hang-job"

    def __init__(self, rel: str, ticks: str) -> None:
        self.rel = rel
        self.ticks = ticks
        self.original: Any = None

    def setup(self, worker: Any) -> None:
        import time

        from crashlens.batch import job as job_module

        original = self.original = job_module.analyze_job
        rel, ticks = self.rel, self.ticks

        def analyze(job: Any, root: str, backend: str = "auto") -> Any:
            while job.rel == rel:
                with open(ticks, "ab") as clock:
                    clock.write(b".")
                time.sleep(0.1)
            return original(job, root, backend)

        job_module.analyze_job = analyze

    def teardown(self, worker: Any) -> None:
        from crashlens.batch import job as job_module

        if self.original is not None:
            job_module.analyze_job = self.original


def warmed() -> list[tuple[str, str]]:
    """Run on a worker: the (backend, site rules digest) it has built its scan database for."""
    from crashlens.batch import dask_worker

    return sorted(dask_worker._PREPARED)
