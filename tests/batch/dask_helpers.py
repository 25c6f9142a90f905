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


def pretend_code(digest: str) -> None:
    """Run on a worker: report `digest` as the crashlens code it loaded (a worker started
    before an upgrade)."""
    from crashlens.batch import dask_engine

    dask_engine.LOADED_CODE = digest
