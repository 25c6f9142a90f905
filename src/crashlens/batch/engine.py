"""One map-over-batches interface, two engines: the local process pool or a Dask cluster.

An engine maps `job.analyze_job` over jobs and yields one row per job, in completion order
(`Engine.run`); the scan session (`session.py`) owns everything else: the cache, the summary,
the output. The local pool (`pool.Runner`) is the default and the cheapest; Dask
(`dask_engine.DaskEngine`, `pip install 'crashlens[dask]'`) runs the same function on a
cluster's workers. Dask is imported only when it is asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from typing import Protocol

from crashlens.batch.jobs import JobSpec
from crashlens.batch.row import JobRow


class Engine(Protocol):
    """Maps the per-job analysis over jobs."""

    name: str
    """`local` or `dask`: recorded in the summary."""
    workers: int
    """Processes (local) or worker threads (Dask) the jobs ran on; known once `run` started."""
    startup_s: float | None
    """Seconds from `run` until the workers were ready to analyze (the pool: its rule library
    and scan database built; Dask: connected or started, checked and warmed); None before."""

    def run(self, jobs: Iterable[JobSpec]) -> Generator[JobRow, None, None]:
        """Yield one row per job, in completion order. Close the generator to stop early."""
        ...


@dataclass(frozen=True, slots=True)
class EngineChoice:
    """Which engine a scan runs on (from the command line)."""

    dask: str | None = None
    """`local` (a LocalCluster of processes), a scheduler address or a scheduler file."""
    dask_slurm: bool = False
    """Start Dask workers as Slurm jobs (dask-jobqueue)."""

    @property
    def distributed(self) -> bool:
        return self.dask is not None or self.dask_slurm


class EngineError(RuntimeError):
    """An engine that cannot start: a missing extra, an unreachable scheduler."""


def make_engine(
    choice: EngineChoice,
    root: str,
    workers: int,
    backend: str,
    job_timeout: float | None,
    meanwhile: Callable[[], object] | None = None,
) -> Engine:
    """The engine `choice` names; raises EngineError when Dask is asked for and missing."""
    if not choice.distributed:
        from crashlens.batch.pool import Runner

        runner = Runner(root, workers, backend, meanwhile=meanwhile, job_timeout=job_timeout)
        return runner
    from crashlens.batch.dask_engine import DaskEngine

    return DaskEngine(choice, root, workers, backend, job_timeout=job_timeout)
