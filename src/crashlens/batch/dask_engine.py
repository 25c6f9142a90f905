"""The Dask engine: the scan's batches on a `dask.distributed` cluster's workers.

Workers run `job.analyze_job` on batches and return rows; the driver (this process) owns the
cache, the summary and the output, and the job listing: it keeps a bounded number of batches
in flight (`IN_FLIGHT_PER_THREAD` per worker thread) and submits the next one as each
finishes, so the scheduler never holds the whole archive. A Dask task costs far more than a
pool's, so its batches are bigger, sized by count and bytes and split finer at the end of the
listing (`task_sizing.py`). Every worker must see the archive at the same path (a shared
filesystem) and have crashlens installed.

Warm workers. Before the first batch, every worker loads the rule library and the scan
database (`dask_worker.WarmWorker`, a worker plugin: also on a worker that joins or restarts
later), so no task pays for it; `startup_s` is how long the cluster took to be ready. The
workers of `--dask local` start from a fork server (`_start_method`), a fresh process that has
imported Dask and crashlens once: never forked from the driver itself, whose event-loop and
watcher threads may hold a lock at the moment of the fork (a worker forked while another
thread wrote to stderr waited forever on the stream's lock, and the cluster never came up).
The settings of `LOCAL_CLUSTER_CONFIG` spare them Dask's costs a
scan does not need.

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
sends the files' text to each worker once, with the warm-up plugin (`match.site.SiteRuleFile`):
a worker on another machine never sees the driver's folders, so it builds the same library
from the text (`match.site.carrying`, in the task's thread only) and never reads folders of
its own. A batch names the files by their digest.
"""

from __future__ import annotations

import contextlib
import itertools
import signal
import threading
import time
import uuid
from collections.abc import Callable, Generator, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crashlens.batch import task_sizing
from crashlens.batch.dask_worker import SiteFiles, WarmWorker, analyze_batch, loaded_code
from crashlens.batch.engine import EngineChoice, EngineError
from crashlens.batch.jobs import JobSpec
from crashlens.batch.pool import crashed_row, timed_out_row
from crashlens.batch.row import JobRow
from crashlens.batch.task_sizing import AdaptiveBatches, TaskSize

if TYPE_CHECKING:
    from distributed import Client

Clock = Callable[[], float]
"""Seconds from an arbitrary start; the driver measures the job timeout with it."""
IN_FLIGHT_PER_THREAD = 3
"""Batches submitted per worker thread: enough that no worker waits for the driver."""
LOCAL_ALLOWED_FAILURES = 0
"""A task on a worker that dies is failed at once on clusters started here: the driver
retries its jobs one by one, so a job that kills workers is found after two deaths."""
SCAN_SETTINGS: dict[str, object] = {
    # The statistical profiler samples every worker thread's stack every 10 ms for a
    # dashboard nobody opens here: a few % of each worker's CPU (bench/scan_scale.py).
    "distributed.worker.profile.enabled": False,
    # Dask starts its workers with MALLOC_TRIM_THRESHOLD_=65536, which also pins glibc's mmap
    # threshold at 128 KB: every buffer of a job's log (hundreds of KB) is then mapped,
    # faulted in page by page and unmapped, and the heap is trimmed after each free. A
    # process took 9-15x the page faults and 4-6 % more CPU per job for the same jobs (jobs
    # of bench/scan_scale.py's 1 GB archive); without it glibc sizes its thresholds itself.
    "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
    # Every scheduler, nanny and worker wakes its event loop every 20 ms to time it: an idle
    # 2-worker cluster used 9 % of a core, two thirds of it for these wake-ups, and each takes
    # the GIL from a worker's analysis. A blocked loop is still reported (`tick.limit`, 3 s).
    "distributed.admin.tick.interval": "500ms",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.worker.memory.monitor-interval": "500ms",
}
"""Dask settings that cost a scan CPU for nothing. The clusters `--dask local` starts use them;
a site's cluster keeps its own, and can take these in its Dask configuration (its scheduler's
and workers' YAML, as bench/scan_scale.py starts its `dask-cluster`)."""
LOCAL_CLUSTER_CONFIG = {
    "distributed.scheduler.allowed-failures": LOCAL_ALLOWED_FAILURES,
    **SCAN_SETTINGS,
}
"""Dask settings of the clusters `--dask local` starts."""
INSTALL_HINT = "Dask is not installed: pip install 'crashlens[dask]'"
MAX_ATTEMPTS_ALONE = 3
"""Tries of a job alone whose result the cluster lost (not a worker it killed)."""
SLURM_HINT = "--dask-slurm needs dask-jobqueue: pip install 'crashlens[dask-slurm]'"


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
        task_size: TaskSize | None = None,
    ) -> None:
        """`workers`: processes of a LocalCluster (`--dask local`) or Slurm jobs
        (`--dask-slurm`); 0 means one per core here. Ignored for an existing cluster.
        `connect_timeout`: seconds to reach a scheduler, and for its first worker.

        `job_timeout` (seconds of `clock`; None: no limit), as in the local pool: when no
        batch has come back for that long, the batches in flight are cancelled, the workers
        that held them restarted (a worker thread cannot be stopped; its nanny restarts the
        process) and their jobs run again one at a time, each under the limit; one that
        exceeds it again becomes a row with a reason. `poll`: how often (real seconds) the
        driver looks at `clock` while it waits (default: the timeout itself). `task_size`: the
        largest batch (default `task_sizing.DASK_TASK`)."""
        self.choice = choice
        self.root = root
        self.requested = workers
        self.backend = backend
        self.connect_timeout = connect_timeout
        self.job_timeout = job_timeout
        self.clock = clock
        self.poll = poll if poll is not None else job_timeout
        self.task_size = task_size or task_sizing.DASK_TASK
        self.workers = 0
        self.startup_s: float | None = None
        """Seconds from `run` until the workers were ready to analyze: connected (a cluster
        started), the code checked, every worker warmed."""
        self.retried = 0
        """Jobs submitted again alone after their batch's worker died."""

    def run(self, jobs: Iterable[JobSpec]) -> Generator[JobRow, None, None]:
        """Yield one row per job, in completion order. Close the generator to stop early."""
        jobs = iter(jobs)
        first = next(jobs, None)
        if first is None:
            return
        started = time.monotonic()
        # Filled as each part starts, so Ctrl-C while a cluster starts still closes what
        # had started (its worker processes are this process's children).
        closers: list[Callable[[], object]] = []
        try:
            client = self._connect(closers)
            yield from self._mapped(client, itertools.chain([first], jobs), started)
        finally:
            for close in reversed(closers):  # the client first, then its cluster
                with contextlib.suppress(Exception):  # a cluster that is already gone
                    close()

    def _connect(self, closers: list[Callable[[], object]]) -> Client:
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
            with dask.config.set({"distributed.scheduler.allowed-failures": 0}), _deferred():
                slurm = SLURMCluster(processes=1, cores=1)  # sized by the site's jobqueue.yaml
                closers.append(slurm.close)
            slurm.scale(jobs=count)
            client = Client(slurm)
            closers.append(client.close)
            return client
        if spec == "local":
            method = _start_method()
            # Kept for the cluster's life: a worker its nanny restarts starts the same way.
            settings = dask.config.set(
                {**LOCAL_CLUSTER_CONFIG, "distributed.worker.multiprocessing-method": method}
            )
            closers.append(lambda: settings.__exit__(None, None, None))
            with _deferred():
                cluster = LocalCluster(
                    n_workers=count,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=":0",  # a free port: never clash with a running one
                )
                closers.append(cluster.close)
            client = Client(cluster)
            closers.append(client.close)
            return client
        try:
            if spec is not None and Path(spec).is_file():
                client = Client(scheduler_file=spec, timeout=self.connect_timeout)
            else:
                client = Client(spec, timeout=self.connect_timeout)
        except OSError as error:
            raise EngineError(f"--dask {spec}: cannot reach the scheduler ({error})") from error
        closers.append(client.close)
        return client

    def _mapped(
        self, client: Client, jobs: Iterator[JobSpec], started: float
    ) -> Generator[JobRow, None, None]:
        try:
            client.wait_for_workers(1, timeout=max(self.connect_timeout, 120))
        except TimeoutError as error:
            raise EngineError(f"the Dask cluster has no worker ({error})") from error
        self.workers = sum(client.nthreads().values())
        files = _site_files()
        _check_code(client, files)
        site = _warm_workers(client, self.backend, files)
        self.startup_s = time.monotonic() - started
        limit = max(1, self.workers) * IN_FLIGHT_PER_THREAD
        # Batches are formed from the listing only when one can be submitted: the driver
        # holds the batches in flight and a bounded look-ahead, never the listing.
        tasks = iter(AdaptiveBatches(jobs, limit, self.task_size))
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
                yield self._alone(client, job, files)
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

    def _submit(self, client: Client, jobs: list[JobSpec], site: str | SiteFiles) -> Any:
        key = f"crashlens-batch-{uuid.uuid4().hex}"
        return client.submit(
            analyze_batch, jobs, self.root, self.backend, site, key=key, pure=False
        )

    def _alone(self, client: Client, job: JobSpec, site: SiteFiles) -> JobRow:
        """A job whose batch failed or stalled, as the only task on the cluster: if its
        worker dies now, the job killed it (a second time); if it exceeds the job timeout
        now, it is the job that hangs. It carries the site rule files themselves, so it
        runs even on a worker the warm-up missed."""
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


@contextlib.contextmanager
def _deferred() -> Iterator[None]:
    """Ctrl-C while a cluster starts takes effect once it has started: interrupted halfway,
    its worker processes would be left to an exit hook that cannot stop them cleanly."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        if callable(previous):
            previous(signal.SIGINT, None)  # Python's own handler raises KeyboardInterrupt
        elif previous == signal.SIG_DFL:
            raise KeyboardInterrupt


FORKSERVER_PRELOAD = ["distributed", "crashlens.batch.dask_worker", "crashlens.batch.job"]
"""What the fork server imports once, so the workers forked from it start with it."""


def _start_method() -> str:
    """How `--dask local` starts its workers: from a fork server where the platform has one,
    spawned elsewhere. Not forked from the driver (as the local pool's workers are, once the
    pool's own helper thread has finished): a `LocalCluster` forks its workers while its own
    event loop and the nannies' watcher threads run, and a child inherits whatever lock one of
    them held, such as a buffered stream's (seen: a worker stuck for good in its first write to
    stderr). The fork server is a fresh single-threaded process that has imported Dask and
    crashlens; each worker then loads the rule library itself through the warm-up plugin."""
    import multiprocessing

    if "forkserver" in multiprocessing.get_all_start_methods():
        multiprocessing.set_forkserver_preload(FORKSERVER_PRELOAD)
        return "forkserver"
    return "spawn"


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


def _warm_workers(client: Client, backend: str, site: SiteFiles) -> str:
    """Register the warm-up on every worker (and on those that join later), wait for it; the
    digest batches name the site rule files by."""
    from crashlens.batch.dask_worker import site_digest

    plugin = WarmWorker(backend, site)
    try:
        client.register_plugin(plugin, name=plugin.name)
    except Exception as error:  # a worker that cannot load the library analyzes nothing
        raise EngineError(f"Dask workers could not load the rule library: {error}") from error
    return site_digest(site)


def _site_files() -> SiteFiles:
    """The driver's site rule files (its CRASHLENS_RULES, which `scan --rules` extends)."""
    from crashlens.match.site import site_files

    return site_files()
