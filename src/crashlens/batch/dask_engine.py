"""The Dask engine: the scan's batches on a `dask.distributed` cluster's workers.

Workers run `job.analyze_job` on batches (the same batches as the local pool) and return rows;
the driver (this process) owns the cache, the summary and the output, and the job listing: it
keeps a bounded number of batches in flight (`IN_FLIGHT_PER_THREAD` per worker thread) and
submits the next one as each finishes (`as_completed`), so the scheduler never holds the
whole archive. Every worker must see the archive at the same path (a shared filesystem) and
have crashlens installed.

Faults. When a worker dies (SIGKILL, the OOM killer, a lost node) the scheduler fails the
tasks it held with `KilledWorker` once they were on more dying workers than its
`allowed-failures` (clusters started here use 0; dask's default is 3, so a cluster of one's
own retries a batch itself first); a batch whose result was lost with a worker fails too.
Such a batch is never retried whole: once every other batch is done, its jobs run again one
at a time, each the only task on the cluster, so a job whose worker dies then is the one that
kills workers: it becomes a row with a reason (two deaths, as in the local pool) and the scan
goes on. A batch yields either its rows or its jobs to retry, so no row comes twice.

`--job-timeout` as in the local pool: when no batch has come back for that long, the batches in
flight are cancelled and the workers holding them restarted (a worker thread cannot be stopped,
a process can: its nanny starts a new one), and their jobs run again alone, each under the
limit; a job that exceeds it alone becomes a row with a reason and the scan goes on.

Site rules. The driver reads and validates its `--rules` / CRASHLENS_RULES folders once and
sends the files' text with every batch (`match.site.SiteRuleFile`): a worker on another
machine never sees the driver's folders, so it builds the same library from the text
(`match.site.carrying`, in the task's thread only) and never reads folders of its own.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import time
import uuid
from collections.abc import Callable, Generator, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crashlens.batch import job as job_module
from crashlens.batch.cache import code_digest
from crashlens.batch.engine import EngineChoice, EngineError
from crashlens.batch.jobs import JobSpec
from crashlens.batch.pool import batches, crashed_row, prepare, timed_out_row
from crashlens.batch.row import JobRow
from crashlens.match.site import SiteRuleFile

if TYPE_CHECKING:
    from distributed import Client

Clock = Callable[[], float]
"""Seconds from an arbitrary start; the driver measures the job timeout with it."""
IN_FLIGHT_PER_THREAD = 3
"""Batches submitted per worker thread: enough that no worker waits for the driver."""
LOCAL_ALLOWED_FAILURES = 0
"""A task on a worker that dies is failed at once on clusters started here: the driver
retries its jobs one by one, so a job that kills workers is found after two deaths."""
INSTALL_HINT = "Dask is not installed: pip install 'crashlens[dask]'"
MAX_ATTEMPTS_ALONE = 3
"""Tries of a job alone whose result the cluster lost (not a worker it killed)."""
SLURM_HINT = "--dask-slurm needs dask-jobqueue: pip install 'crashlens[dask-slurm]'"

_PREPARED: set[tuple[str, tuple[SiteRuleFile, ...]]] = set()
LOADED_CODE = code_digest()
"""The crashlens source this process loaded (read at import): a worker started before an
upgrade keeps running the old code even though the files on disk changed."""

SiteFiles = tuple[SiteRuleFile, ...]
"""The driver's site rule files, as they travel with each task."""


def loaded_code(site: SiteFiles) -> str:
    """What decides a row besides the job, as this process loaded it: the crashlens source,
    the rule library (with the driver's site rule files) and the classifier. A worker reports
    it to the driver's check."""
    from crashlens.batch.cache import rules_digest
    from crashlens.decide.classifier import shipped_model
    from crashlens.match.site import carried_library

    loaded = shipped_model()
    text = loaded.to_json() if loaded is not None else "no model"
    model = hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
    return f"{LOADED_CODE}/{rules_digest(carried_library(site))}/{model}"


def analyze_batch(jobs: list[JobSpec], root: str, backend: str, site: SiteFiles) -> list[JobRow]:
    """The task a Dask worker runs: rows for a batch of jobs, with the rule library the
    driver's site rule files make (built once per worker process and set of files)."""
    from crashlens.match.site import carrying

    with carrying(site):
        if (backend, site) not in _PREPARED:
            prepare(backend)
            _PREPARED.add((backend, site))
        # Looked up on the module at each call, so a test can stand in a job that kills its worker.
        return [job_module.analyze_job(job, root, backend) for job in jobs]


def _failed(job: JobSpec, error: BaseException) -> JobRow:
    return JobRow.for_job(job, f"analysis failed: {type(error).__name__}: {error}")


class DaskEngine:
    """Maps `analyze_job` over jobs on a Dask cluster (see the module docstring)."""

    name = "dask"

    def __init__(
        self,
        choice: EngineChoice,
        root: str,
        workers: int,
        backend: str,
        connect_timeout: float = 30.0,
        job_timeout: float | None = None,
        clock: Clock = time.monotonic,
        poll: float | None = None,
    ) -> None:
        """`workers`: processes of a LocalCluster (`--dask local`) or Slurm jobs
        (`--dask-slurm`); 0 means one per core here. Ignored for an existing cluster.
        `connect_timeout`: seconds to reach a scheduler, and for its first worker.

        `job_timeout` (seconds of `clock`; None: no limit), as in the local pool: when no
        batch has come back for that long, the batches in flight are cancelled, the workers
        that held them restarted (a worker thread cannot be stopped; its nanny restarts the
        process) and their jobs run again one at a time, each under the limit; one that
        exceeds it again becomes a row with a reason. `poll`: how often (real seconds) the
        driver looks at `clock` while it waits (default: the timeout itself)."""
        self.choice = choice
        self.root = root
        self.requested = workers
        self.backend = backend
        self.connect_timeout = connect_timeout
        self.job_timeout = job_timeout
        self.clock = clock
        self.poll = poll if poll is not None else job_timeout
        self.workers = 0
        self.retried = 0
        """Jobs submitted again alone after their batch's worker died."""

    def run(self, jobs: Iterable[JobSpec]) -> Generator[JobRow, None, None]:
        """Yield one row per job, in completion order. Close the generator to stop early."""
        jobs = iter(jobs)
        first = next(jobs, None)
        if first is None:
            return
        client, closers = self._connect()
        try:
            yield from self._mapped(client, itertools.chain([first], jobs))
        finally:
            for close in closers:
                with contextlib.suppress(Exception):  # a cluster that is already gone
                    close()

    def _connect(self) -> tuple[Client, list[Any]]:
        try:
            import dask
            from distributed import Client, LocalCluster
        except ImportError as error:
            raise EngineError(INSTALL_HINT) from error
        from crashlens.batch.session import default_workers

        count = self.requested or default_workers()
        spec = self.choice.dask
        if self.choice.dask_slurm:
            try:
                from dask_jobqueue import SLURMCluster
            except ImportError as error:
                raise EngineError(SLURM_HINT) from error
            with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
                slurm = SLURMCluster(processes=1, cores=1)  # sized by the site's jobqueue.yaml
            slurm.scale(jobs=count)
            client = Client(slurm)
            return client, [client.close, slurm.close]
        if spec == "local":
            with dask.config.set(
                {"distributed.scheduler.allowed-failures": LOCAL_ALLOWED_FAILURES}
            ):
                cluster = LocalCluster(
                    n_workers=count,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=":0",  # a free port: never clash with a running one
                )
            client = Client(cluster)
            return client, [client.close, cluster.close]
        try:
            if spec is not None and Path(spec).is_file():
                client = Client(scheduler_file=spec, timeout=self.connect_timeout)
            else:
                client = Client(spec, timeout=self.connect_timeout)
        except OSError as error:
            raise EngineError(f"--dask {spec}: cannot reach the scheduler ({error})") from error
        return client, [client.close]

    def _mapped(self, client: Client, jobs: Iterator[JobSpec]) -> Generator[JobRow, None, None]:
        try:
            client.wait_for_workers(1, timeout=max(self.connect_timeout, 120))
        except TimeoutError as error:
            raise EngineError(f"the Dask cluster has no worker ({error})") from error
        self.workers = sum(client.nthreads().values())
        site = _site_files()
        _check_code(client, site)
        limit = max(1, self.workers) * IN_FLIGHT_PER_THREAD
        # Batches are formed from the listing only when one can be submitted: the driver
        # holds the batches in flight, never the listing (or a set of the jobs done).
        tasks = batches(jobs)
        inflight: dict[Any, list[JobSpec]] = {}
        suspects: list[JobSpec] = []
        exhausted = False
        last_progress = self.clock()
        try:
            while True:
                while not exhausted and len(inflight) < limit:
                    batch = next(tasks, None)
                    if batch is None:
                        exhausted = True
                        break
                    inflight[self._submit(client, batch, site)] = batch
                if not inflight:
                    break
                finished = self._first_done(inflight)
                if not finished:
                    if self._overdue(last_progress):
                        # Stalled: some job holds its worker too long. What was in flight
                        # runs again one job at a time, each under the limit, at the end.
                        suspects.extend(self._stop(client, inflight))
                        last_progress = self.clock()
                    continue
                last_progress = self.clock()
                for future in finished:
                    batch = inflight.pop(future)
                    try:
                        rows: list[JobRow] = future.result()
                    except Exception:
                        # analyze_job never raises: its worker died (KilledWorker) or the
                        # result was lost with one. Its jobs run again alone, at the end.
                        suspects.extend(batch)
                        continue
                    yield from rows
            # A batch goes either to its rows or to the suspects, never both: no job's row
            # comes twice (the session also keeps one row per job).
            for job in suspects:
                yield self._alone(client, job, site)
        finally:
            for future in inflight:
                future.cancel()

    def _overdue(self, since: float) -> bool:
        return self.job_timeout is not None and self.clock() - since >= self.job_timeout

    def _first_done(self, inflight: dict[Any, list[JobSpec]]) -> list[Any]:
        """The futures done once one is (or after `poll` seconds: maybe none)."""
        from distributed import wait

        try:
            done, _ = wait(list(inflight), timeout=self.poll, return_when="FIRST_COMPLETED")
        except TimeoutError:
            return []
        return list(done)

    def _stop(self, client: Client, inflight: dict[Any, list[JobSpec]]) -> list[JobSpec]:
        """Cancel the batches in flight, restart the workers that held them; their jobs."""
        stopped = [job for batch in inflight.values() for job in batch]
        _restart_holders(client, [future.key for future in inflight])
        for future in inflight:
            future.cancel()
        inflight.clear()
        return stopped

    def _submit(self, client: Client, jobs: list[JobSpec], site: SiteFiles) -> Any:
        key = f"crashlens-batch-{uuid.uuid4().hex}"
        return client.submit(
            analyze_batch, jobs, self.root, self.backend, site, key=key, pure=False
        )

    def _alone(self, client: Client, job: JobSpec, site: SiteFiles) -> JobRow:
        """A job whose batch failed or stalled, as the only task on the cluster: if its
        worker dies now, the job killed it (a second time); if it exceeds the job timeout
        now, it is the job that hangs."""
        from distributed import KilledWorker

        self.retried += 1
        for attempt in range(1, MAX_ATTEMPTS_ALONE + 1):
            future = self._submit(client, [job], site)
            started = self.clock()
            try:
                while True:
                    try:
                        rows: list[JobRow] = future.result(timeout=self.poll)
                        return rows[0]
                    except TimeoutError:
                        if not self._overdue(started):
                            continue
                    _restart_holders(client, [future.key])
                    future.cancel()
                    return timed_out_row(job, self.job_timeout or 0.0)
            except KilledWorker:
                return crashed_row(job, "killed its Dask worker twice")
            except Exception as error:  # a lost result, not the job's fault
                if attempt == MAX_ATTEMPTS_ALONE:
                    return _failed(job, error)
        raise AssertionError("unreachable")  # pragma: no cover


def _restart_holders(client: Client, keys: list[str]) -> None:
    """Restart the workers processing any of `keys` (through their nannies): a task past
    the job timeout keeps its thread, and only a new process gives the thread back. On a
    worker without a nanny the thread stays taken, and the scan goes on with the others."""
    wanted = set(keys)
    with contextlib.suppress(Exception):
        holders = [
            address for address, held in client.processing().items() if wanted.intersection(held)
        ]
        if holders:
            client.restart_workers(holders, raise_for_error=False)


def _check_code(client: Client, site: SiteFiles) -> None:
    """Refuse workers whose crashlens differs from the driver's: their rows would differ
    while the cache (owned by the driver) records the driver's code."""
    # A worker of another version may not even have this function: that is an answer too.
    here = loaded_code(site)
    answers = client.run(loaded_code, site, on_error="return")
    stale = sorted(address for address, digest in answers.items() if digest != here)
    if stale:
        raise EngineError(
            "Dask workers run other crashlens code, rules or model than this one "
            f"({', '.join(stale[:3])}{' ...' if len(stale) > 3 else ''}): "
            "install the same version and restart them"
        )


def _site_files() -> SiteFiles:
    """The driver's site rule files (its CRASHLENS_RULES, which `scan --rules` extends)."""
    from crashlens.match.site import site_files

    return site_files()
