"""The process pool that maps `job.analyze_job` over every job of an archive, on all cores.

A fork pool started *after* the rule library and the hyperscan database are built, so workers
inherit them instead of compiling their own; small jobs travel in batches (one task each cost
the parent more than a tenth of their analysis); at most a few batches per worker are in
flight, and the next batch is formed from the listing only when there is room for it, so the
parent holds the jobs in flight, not the archive's listing.
A worker that dies (a crash, the OOM killer) breaks the pool: the pool is rebuilt, the jobs
that were in flight are retried one at a time, and a job that kills a worker again becomes a
row with a reason. A job that holds its worker past the job timeout is treated the same way.
Ctrl-C stops the workers and keeps every row finished so far.
"""

from __future__ import annotations

import gc
import itertools
import multiprocessing
import signal
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from crashlens.batch import job as job_module
from crashlens.batch.jobs import JobSpec, iter_job_batches
from crashlens.batch.row import JobRow
from crashlens.decide.classifier import shipped_model
from crashlens.match.engine import build_matcher
from crashlens.match.rules import Rule
from crashlens.match.site import library as rule_library

IN_FLIGHT_PER_WORKER = 3
"""Tasks queued per worker: enough that a worker never waits for the parent."""
BATCH_JOBS = 8
BATCH_BYTES = 4 * 1024 * 1024

Clock = Callable[[], float]
"""Seconds from an arbitrary start; the pool measures the job timeout with it."""


def prepare(backend: str = "auto") -> tuple[Rule, ...]:
    """Load the rules and the model and build the scan databases (once per process)."""
    rules = rule_library()
    build_matcher(rules, backend).prepare_all()
    shipped_model()
    return rules


_ROOT = ""
_BACKEND = "auto"


def _init_worker(root: str, backend: str) -> None:
    global _ROOT, _BACKEND
    _ROOT, _BACKEND = root, backend
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    prepare(backend)  # a no-op after fork: inherited from the parent
    # Everything inherited lives as long as the worker: out of the garbage collector's sight,
    # its full collections walk only what the analysis allocates (a fifth less CPU per job,
    # bench/scan_scale.py), and they no longer write to the pages shared with the parent.
    gc.freeze()


def _analyze(job: JobSpec) -> JobRow:
    # Looked up on the module at each call, so a test can stand in a job that hangs or dies.
    return job_module.analyze_job(job, _ROOT, _BACKEND)


def _run_batch(jobs: list[JobSpec]) -> list[JobRow]:
    return [_analyze(job) for job in jobs]


def batches(jobs: Iterable[JobSpec]) -> Iterator[list[JobSpec]]:
    """Group consecutive jobs into tasks of up to BATCH_JOBS jobs and about BATCH_BYTES, as
    they arrive (`jobs.iter_job_batches`: the listing is pulled a batch at a time).

    A task per job cost the parent ~0.3 ms of pickling and queue hand-offs each, a tenth of
    the analysis of a typical small job; a big job still goes alone, so the tail stays short.
    """
    return iter_job_batches(jobs, BATCH_JOBS, BATCH_BYTES)


def timed_out_row(job: JobSpec, seconds: float) -> JobRow:
    """The row of a job still running after `--job-timeout` (both engines write it)."""
    reason = f"analysis timed out: still running after {seconds:g} s (--job-timeout)"
    return JobRow.for_job(job, reason)


def crashed_row(job: JobSpec, detail: str) -> JobRow:
    """The row of a job whose worker process died under it (both engines write it)."""
    return JobRow.for_job(job, f"analysis crashed: the worker process died ({detail})")


class Runner:
    """Maps `analyze_job` over jobs on `workers` processes (1: in this process)."""

    name = "local"

    def __init__(
        self,
        root: str,
        workers: int,
        backend: str = "auto",
        meanwhile: Callable[[], object] | None = None,
        job_timeout: float | None = None,
        clock: Clock = time.monotonic,
        poll: float | None = None,
    ) -> None:
        """`meanwhile` runs in a thread of this process once the workers are up (the parent
        only waits for rows then): work for after the scan that can be done early.

        `job_timeout` (seconds of `clock`; None: no limit) bounds how long one job may hold a
        worker: when no task has finished for that long, the pool is stopped, the jobs in
        flight are retried one at a time, each under the limit, and one that exceeds it again
        becomes a row with a reason. With one worker the jobs run in this process, without a
        limit. `poll` is how often (real seconds) the pool looks at `clock` while it waits
        (default: the timeout itself); a test passes a clock it moves and a short poll.
        """
        self.root = root
        self.workers = max(1, workers)
        self.backend = backend
        self.meanwhile = meanwhile
        self.job_timeout = job_timeout
        self.clock = clock
        self.poll = poll if poll is not None else job_timeout
        self._helper: threading.Thread | None = None
        self.startup_s: float | None = None

    def run(self, jobs: Iterable[JobSpec]) -> Generator[JobRow, None, None]:
        """Yield one row per job, in completion order. Close the generator to stop early."""
        jobs = iter(jobs)
        first = next(jobs, None)
        if first is None:
            return
        jobs = itertools.chain([first], jobs)
        started = time.monotonic()
        prepare(self.backend)  # before the fork: every worker inherits the compiled database
        self.startup_s = time.monotonic() - started  # forked workers start ready
        if self.workers == 1:
            for job in jobs:
                yield job_module.analyze_job(job, self.root, self.backend)
            return
        yield from self._pooled(iter(jobs))

    def _start_helper(self) -> None:
        if self.meanwhile is not None and self._helper is None:
            self._helper = threading.Thread(target=self.meanwhile, daemon=True)
            self._helper.start()

    def _join_helper(self) -> None:
        # Never fork while the helper runs: a child could inherit a lock it holds (an import).
        if self._helper is not None:
            self._helper.join()

    def _executor(self, workers: int) -> ProcessPoolExecutor:
        self._join_helper()
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        return ProcessPoolExecutor(
            max_workers=workers,
            mp_context=context,
            initializer=_init_worker,
            initargs=(self.root, self.backend),
        )

    def _overdue(self, since: float) -> bool:
        return self.job_timeout is not None and self.clock() - since >= self.job_timeout

    def _pooled(self, jobs: Iterator[JobSpec]) -> Generator[JobRow, None, None]:
        suspects: list[JobSpec] = []
        executor = self._executor(self.workers)
        inflight: dict[Future[list[JobRow]], list[JobSpec]] = {}
        tasks = batches(jobs)
        last_progress = self.clock()
        try:
            exhausted = False
            while True:
                while not exhausted and len(inflight) < self.workers * IN_FLIGHT_PER_WORKER:
                    batch = next(tasks, None)
                    if batch is None:
                        exhausted = True
                        break
                    try:
                        inflight[executor.submit(_run_batch, batch)] = batch
                    except BrokenProcessPool:
                        suspects.extend(batch)
                        executor = self._restart(executor, inflight, suspects)
                self._start_helper()  # the workers exist once a task was submitted
                if not inflight:
                    break
                done, _ = wait(inflight, timeout=self.poll, return_when=FIRST_COMPLETED)
                if not done:
                    if self._overdue(last_progress):
                        # Stalled: some job holds its worker too long. Retry what was in
                        # flight one by one, each under the limit, after the other jobs.
                        executor = self._restart(executor, inflight, suspects)
                        last_progress = self.clock()
                    continue
                last_progress = self.clock()
                broken = False
                for future in done:
                    batch = inflight.pop(future)
                    try:
                        yield from future.result()
                    except BrokenProcessPool:
                        suspects.extend(batch)
                        broken = True
                if broken:
                    executor = self._restart(executor, inflight, suspects)
            for job in suspects:
                yield self._alone(job)
        finally:
            _stop(executor)
            self._join_helper()

    def _restart(
        self,
        executor: ProcessPoolExecutor,
        inflight: dict[Future[list[JobRow]], list[JobSpec]],
        suspects: list[JobSpec],
    ) -> ProcessPoolExecutor:
        for batch in inflight.values():
            suspects.extend(batch)
        inflight.clear()
        _stop(executor)
        return self._executor(self.workers)

    def _alone(self, job: JobSpec) -> JobRow:
        """Retry a job that was in flight when a worker died or stalled, in a pool of its own."""
        executor = self._executor(1)
        try:
            future = executor.submit(_analyze, job)
            started = self.clock()
            while True:
                done, _ = wait([future], timeout=self.poll)
                if done:
                    return future.result()
                if self._overdue(started):
                    return timed_out_row(job, self.job_timeout or 0.0)
        except BrokenProcessPool as error:
            return crashed_row(job, str(error) or "killed")
        finally:
            _stop(executor)


def _stop(executor: ProcessPoolExecutor) -> None:
    """Stop a pool now: cancel what has not started and kill the workers."""
    processes: dict[Any, Any] = getattr(executor, "_processes", None) or {}
    workers = list(processes.values())
    executor.shutdown(wait=False, cancel_futures=True)
    for process in workers:
        if process.is_alive():
            process.kill()
    for process in workers:
        process.join(timeout=5)
