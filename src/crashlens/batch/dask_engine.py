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
goes on. Rows are deduplicated by job in the driver, so a result that arrives twice never
doubles a row. `--job-timeout` is not enforced on Dask (a worker thread cannot be stopped).

Site rules. The driver reads and validates its `--rules` / CRASHLENS_RULES folders once and
sends the files' text with every batch (`match.site.SiteRuleFile`): a worker on another
machine never sees the driver's folders, so it builds the same library from the text
(`match.site.carrying`, in the task's thread only) and never reads folders of its own.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import uuid
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crashlens.batch import job as job_module
from crashlens.batch.cache import code_digest
from crashlens.batch.engine import EngineChoice, EngineError
from crashlens.batch.jobs import JobSpec
from crashlens.batch.pool import batches, prepare
from crashlens.batch.row import JobRow
from crashlens.match.site import SiteRuleFile

if TYPE_CHECKING:
    from distributed import Client

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


def _crashed(job: JobSpec, detail: str) -> JobRow:
    return JobRow.for_job(job, f"analysis crashed: the worker process died ({detail})")


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
    ) -> None:
        """`workers`: processes of a LocalCluster (`--dask local`) or Slurm jobs
        (`--dask-slurm`); 0 means one per core here. Ignored for an existing cluster.
        `connect_timeout`: seconds to reach a scheduler, and for its first worker."""
        self.choice = choice
        self.root = root
        self.requested = workers
        self.backend = backend
        self.connect_timeout = connect_timeout
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
        from distributed import as_completed

        try:
            client.wait_for_workers(1, timeout=max(self.connect_timeout, 120))
        except TimeoutError as error:
            raise EngineError(f"the Dask cluster has no worker ({error})") from error
        self.workers = sum(client.nthreads().values())
        site = _site_files()
        _check_code(client, site)
        limit = max(1, self.workers) * IN_FLIGHT_PER_THREAD
        tasks = batches(jobs)
        inflight: dict[Any, list[JobSpec]] = {}
        suspects: list[JobSpec] = []
        done: set[str] = set()
        pending = as_completed()

        def fill() -> None:
            while len(inflight) < limit:
                batch = next(tasks, None)
                if batch is None:
                    return
                future = self._submit(client, batch, site)
                inflight[future] = batch
                pending.add(future)

        def fresh(rows: list[JobRow]) -> Iterator[JobRow]:
            for row in rows:
                if row.job not in done:
                    done.add(row.job)
                    yield row

        try:
            fill()
            for future in pending:
                batch = inflight.pop(future)
                try:
                    rows: list[JobRow] = future.result()
                except Exception:
                    # analyze_job never raises: its worker died (KilledWorker) or the result
                    # was lost with one. Its jobs run again alone, once nothing else runs.
                    suspects.extend(batch)
                    rows = []
                yield from fresh(rows)
                fill()
            for job in suspects:
                if job.rel not in done:
                    yield from fresh([self._alone(client, job, site)])
        finally:
            for future in inflight:
                future.cancel()

    def _submit(self, client: Client, jobs: list[JobSpec], site: SiteFiles) -> Any:
        key = f"crashlens-batch-{uuid.uuid4().hex}"
        return client.submit(
            analyze_batch, jobs, self.root, self.backend, site, key=key, pure=False
        )

    def _alone(self, client: Client, job: JobSpec, site: SiteFiles) -> JobRow:
        """A job whose batch failed, as the only task on the cluster: if its worker dies
        now, the job killed it (a second time)."""
        from distributed import KilledWorker

        self.retried += 1
        for attempt in range(1, MAX_ATTEMPTS_ALONE + 1):
            future = self._submit(client, [job], site)
            try:
                rows: list[JobRow] = future.result()
                return rows[0]
            except KilledWorker:
                return _crashed(job, "killed its Dask worker twice")
            except Exception as error:  # a lost result, not the job's fault
                if attempt == MAX_ATTEMPTS_ALONE:
                    return _failed(job, error)
        raise AssertionError("unreachable")  # pragma: no cover


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
