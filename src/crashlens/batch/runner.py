"""Analyzing every job of an archive: the per-job function and the process pool around it.

`analyze_job(job, root)` is a pure function of the job's files (and the shipped rule
library): it runs exactly what `crashlens analyze` runs on those files and boils the report
down to one `JobRow`. It never raises: a job that cannot be read or analyzed is a row with a
`reason`. A distributed engine can map it over a cluster unchanged.

`Runner` maps it over many jobs on all cores: a fork pool started *after* the rule library and
the hyperscan database are built, so workers inherit them instead of compiling their own; the
largest jobs go first (short tail); small jobs travel in batches (one task each cost the
parent more than a tenth of their analysis); at most a few batches per worker are in flight, so
memory stays flat whatever the archive's size. A worker that dies (a crash, the OOM killer)
breaks the pool: the pool is rebuilt, the jobs that were in flight are retried one at a time,
and a job that kills a worker again becomes a row with a reason. Ctrl-C stops the workers and
keeps every row finished so far.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from datetime import UTC, datetime
from typing import Any

from crashlens.batch.fingerprint import fingerprint, normalize
from crashlens.batch.hotspots import failure_host, implicated
from crashlens.batch.jobs import JobSpec
from crashlens.batch.row import JobRow
from crashlens.decide.classifier import shipped_model
from crashlens.inputs.discover import iter_inputs
from crashlens.match.engine import analyze_source, build_matcher
from crashlens.match.rules import Rule, shipped_rules
from crashlens.model import (
    Category,
    Fact,
    Hit,
    InputAnalysis,
    InputState,
    InputStatus,
    Report,
    Role,
    Verdict,
)
from crashlens.parsers.launcher import GLOG_YEAR
from crashlens.pipeline import build_report

EPOCH_MIN = 946_684_800.0
"""Timestamps below 2000-01-01 are seconds since boot (raw dmesg), not wall-clock time."""
IN_FLIGHT_PER_WORKER = 3
"""Tasks queued per worker: enough that a worker never waits for the parent."""
BATCH_JOBS = 8
BATCH_BYTES = 4 * 1024 * 1024
MAX_SKIPPED_LISTED = 5


def analyze_job(job: JobSpec, root: str, backend: str = "auto") -> JobRow:
    """Analyze one job's files, as `crashlens analyze` would, into one row. Never raises."""
    started = time.perf_counter()
    row = JobRow(
        job=job.rel,
        job_mtime=job.mtime_ns / 1e9 if job.files else None,
        files=len(job.files),
        bytes=job.size,
    )
    if job.reason is not None or not job.inputs:
        row.reason = job.reason or "no files"
    else:
        try:
            _fill(row, job, root, backend)
        except MemoryError:
            row.reason = "analysis failed: out of memory"
        except Exception as error:  # a bug must cost one row, not the scan
            row.reason = f"analysis failed: {type(error).__name__}: {error}"
    row.seconds = round(time.perf_counter() - started, 4)
    return row


def _fill(row: JobRow, job: JobSpec, root: str, backend: str) -> None:
    rules = shipped_rules()
    analyses: list[InputAnalysis] = []
    for item in iter_inputs(list(job.inputs)):
        if isinstance(item, InputStatus):
            analyses.append(InputAnalysis(status=item))
        else:
            analyses.append(analyze_source(item, rules, None, backend))
    prefix = root.rstrip(os.sep) + os.sep

    def shown(path: str) -> str:
        return path[len(prefix) :] if path.startswith(prefix) else path

    skipped = [a.status for a in analyses if a.status.status is InputState.SKIPPED]
    row.skipped = [f"{shown(s.path)}: {s.reason}" for s in skipped[:MAX_SKIPPED_LISTED]]
    if len(skipped) == len(analyses):
        reasons = "; ".join(row.skipped[:3]) or "no input"
        row.reason = f"nothing could be analyzed ({reasons})"
        return
    report = build_report(analyses, rules, shipped_model())  # as `crashlens analyze` does
    hits = [hit for analysis in analyses for hit in analysis.hits]
    facts = [item for analysis in analyses for item in analysis.facts]
    row.verdict = report.verdict.value
    top = report.causes[0] if report.causes and report.verdict is not Verdict.NONE else None
    if top is not None:
        row.confidence = top.confidence
        row.summary = top.summary
        row.rules = sorted({e.rule for e in top.evidence if e.rule})
    faults = implicated(analyses)
    row.hardware_hosts = list(faults.hosts)
    row.gpu_details = list(faults.gpus)
    row.gpus = [str(gpu["label"]) for gpu in faults.gpus]
    if report.verdict is Verdict.NONE:
        return
    lead, rule, signature = _lead(report, hits, facts, rules)
    row.signature = signature
    row.fingerprint = fingerprint(report.verdict, rule, signature)
    if lead is not None:
        line = f":{lead.lineno}" if lead.lineno is not None else ""
        row.evidence = f"{shown(lead.path)}{line}: {lead.text}"
    hosts: dict[str, None] = {}
    if top is not None:
        hosts.update((e.host, None) for e in top.evidence if e.host)
    first_host = failure_host(analyses)
    if first_host:
        hosts.setdefault(first_host, None)
    hosts.update((h, None) for h in faults.hosts)
    row.hosts = list(hosts)
    row.first_failure_at = _first_failure_at(
        report, hits, facts, top.category if top else None, row.job_mtime
    )


def _lead(
    report: Report, hits: Sequence[Hit], facts: Sequence[Fact], rules: tuple[Rule, ...]
) -> tuple[Hit | None, str | None, str]:
    """The line that stands for the failure: (hit, rule id, normalized text).

    The strongest non-context hit of the top cause's category: a root before a symptom, then
    by weight, ties by rule id; its earliest occurrence. Never chosen by file order alone, so
    two jobs with the same failure pick the same rule.
    """
    category = report.causes[0].category if report.causes else None
    own = [h for h in hits if h.category is category and h.role is not Role.CONTEXT]
    if not own and report.first_failure is not None and report.first_failure.rule:
        wanted = report.first_failure.rule
        own = [h for h in hits if h.rule_id == wanted]
    if own:
        best = min(own, key=lambda h: (h.role is not Role.ROOT, -h.weight, h.rule_id))
        same = [h for h in own if h.rule_id == best.rule_id]
        lead = min(same, key=lambda h: (h.timestamp is None, h.timestamp or 0.0, h.lineno or 0))
        return lead, lead.rule_id, normalize(lead.text, lead.host)
    # No rule matched: the job's fatal Python exception, else how it exited.
    first_rank = next(
        (f.value for f in facts if f.key == "launcher.first_failure" and isinstance(f.value, int)),
        None,
    )
    exceptions = [f for f in facts if f.key == "python.exception"]
    on_rank = [f for f in exceptions if first_rank is not None and f.attr("rank") == first_rank]
    chosen = on_rank or exceptions
    if chosen:
        last = max(chosen, key=lambda f: f.lineno or 0)
        return None, "python.exception", normalize(str(last.value))
    for key in ("launcher.signal", "launcher.exit_code", "docker.exit_code"):
        for item in facts:
            if item.key == key:
                return None, key, f"{key}={item.value}"
    return None, None, "no failure line matched"


def _epoch(value: float | None) -> float | None:
    return value if value is not None and value >= EPOCH_MIN else None


def _yearless(value: float) -> bool:
    """A glog time (month and day only), which the launcher parser puts in GLOG_YEAR."""
    return datetime.fromtimestamp(value, UTC).year == GLOG_YEAR


def _rebase(value: float, reference: float) -> float:
    """Put a yearless time in the year of `reference` (the year before, if it would be later)."""
    when = datetime.fromtimestamp(value, UTC)
    year = datetime.fromtimestamp(reference, UTC).year
    for candidate in (year, year - 1):
        try:
            moved = when.replace(year=candidate)
        except ValueError:  # 29 February
            moved = when.replace(year=candidate, day=28)
        if moved.timestamp() <= reference + 86400 or candidate != year:
            return moved.timestamp()
    return value  # pragma: no cover


def _first_failure_at(
    report: Report,
    hits: Sequence[Hit],
    facts: Sequence[Fact],
    category: Category | None,
    mtime: float | None,
) -> float | None:
    """Epoch seconds of the first failure line, when the logs carry wall-clock time.

    In order: the report's first failure; torchelastic's root-cause time; the earliest timed
    line of the top cause; the earliest timed failure line. A glog time has no year: it gets
    the year of a dated line of the job, else of the job's newest file.
    """
    elastic = None
    for item in facts:
        when = item.attr("time") if item.key == "launcher.first_failure" else None
        if isinstance(when, str):
            elastic = _parse_time(when)
            break
    failures = [h for h in hits if h.role is not Role.CONTEXT and _epoch(h.timestamp)]
    dated = [h.timestamp for h in failures if h.timestamp and not _yearless(h.timestamp)]
    reference = min(dated) if dated else elastic if elastic is not None else mtime
    first = _epoch(report.first_failure.timestamp) if report.first_failure else None
    own = [h.timestamp for h in failures if h.category is category and h.timestamp]
    every = [h.timestamp for h in failures if h.timestamp]
    for value in (first, elastic, min(own, default=None), min(every, default=None)):
        if value is None:
            continue
        if not _yearless(value):
            return value
        return _rebase(value, reference) if reference is not None else None
    return None


def _parse_time(text: str) -> float | None:
    """torchelastic's `2024-03-20_12:55:16` (local time of the node; read as UTC)."""
    for layout in ("%Y-%m-%d_%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S"):
        try:
            return datetime.strptime(text.strip(), layout).replace(tzinfo=UTC).timestamp()
        except ValueError:
            continue
    return None


# --- the pool -----------------------------------------------------------------------------

_ROOT = ""
_BACKEND = "auto"


def prepare(backend: str = "auto") -> tuple[Rule, ...]:
    """Load the rules and the model and build the scan databases (once per process)."""
    rules = shipped_rules()
    build_matcher(rules, backend).prepare_all()
    shipped_model()
    return rules


def _init_worker(root: str, backend: str) -> None:
    global _ROOT, _BACKEND
    _ROOT, _BACKEND = root, backend
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    prepare(backend)  # a no-op after fork: inherited from the parent


def _run_one(job: JobSpec) -> JobRow:
    return analyze_job(job, _ROOT, _BACKEND)


def _run_batch(jobs: list[JobSpec]) -> list[JobRow]:
    return [analyze_job(job, _ROOT, _BACKEND) for job in jobs]


def batches(jobs: Iterable[JobSpec]) -> Iterator[list[JobSpec]]:
    """Group consecutive jobs into tasks of up to BATCH_JOBS jobs and about BATCH_BYTES.

    A task per job cost the parent ~0.3 ms of pickling and queue hand-offs each, a tenth of
    the analysis of a typical small job; a big job still goes alone, so the tail stays short.
    """
    batch: list[JobSpec] = []
    size = 0
    for job in jobs:
        if batch and (len(batch) >= BATCH_JOBS or size + job.size > BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(job)
        size += job.size
    if batch:
        yield batch


def _timed_out(job: JobSpec, seconds: float) -> JobRow:
    return JobRow(
        job=job.rel,
        job_mtime=job.mtime_ns / 1e9 if job.files else None,
        files=len(job.files),
        bytes=job.size,
        reason=f"analysis timed out: still running after {seconds:g} s (--job-timeout)",
    )


def _crashed(job: JobSpec, detail: str) -> JobRow:
    return JobRow(
        job=job.rel,
        job_mtime=job.mtime_ns / 1e9 if job.files else None,
        files=len(job.files),
        bytes=job.size,
        reason=f"analysis crashed: the worker process died ({detail})",
    )


class Runner:
    """Maps `analyze_job` over jobs on `workers` processes (1: in this process)."""

    def __init__(
        self,
        root: str,
        workers: int,
        backend: str = "auto",
        meanwhile: Callable[[], object] | None = None,
        job_timeout: float | None = None,
    ) -> None:
        """`meanwhile` runs in a thread of this process once the workers are up (the parent
        only waits for rows then): work for after the scan that can be done early.

        `job_timeout` (seconds; None: no limit) bounds how long one job may hold a worker:
        when no task has finished for that long, the pool is stopped, the jobs in flight are
        retried one at a time, each under the limit, and one that exceeds it again becomes a
        row with a reason. With one worker the jobs run in this process, without a limit.
        """
        self.root = root
        self.workers = max(1, workers)
        self.backend = backend
        self.meanwhile = meanwhile
        self.job_timeout = job_timeout
        self._helper: threading.Thread | None = None

    def run(self, jobs: Iterable[JobSpec]) -> Generator[JobRow, None, None]:
        """Yield one row per job, in completion order. Close the generator to stop early."""
        jobs = iter(jobs)
        first = next(jobs, None)
        if first is None:
            return
        jobs = itertools.chain([first], jobs)
        prepare(self.backend)  # before the fork: every worker inherits the compiled database
        if self.workers == 1:
            for job in jobs:
                yield analyze_job(job, self.root, self.backend)
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

    def _pooled(self, jobs: Iterator[JobSpec]) -> Generator[JobRow, None, None]:
        suspects: list[JobSpec] = []
        executor = self._executor(self.workers)
        inflight: dict[Future[list[JobRow]], list[JobSpec]] = {}
        tasks = batches(jobs)
        last_progress = time.monotonic()
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
                done, _ = wait(inflight, timeout=self.job_timeout, return_when=FIRST_COMPLETED)
                if not done:
                    if time.monotonic() - last_progress >= (self.job_timeout or 0):
                        # Stalled: some job holds its worker too long. Retry what was in
                        # flight one by one, each under the limit, after the other jobs.
                        executor = self._restart(executor, inflight, suspects)
                        last_progress = time.monotonic()
                    continue
                last_progress = time.monotonic()
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
            return executor.submit(_run_one, job).result(timeout=self.job_timeout)
        except BrokenProcessPool as error:
            return _crashed(job, str(error) or "killed")
        except FutureTimeout:
            return _timed_out(job, self.job_timeout or 0.0)
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


def run_jobs(
    jobs: Sequence[JobSpec],
    root: str,
    workers: int,
    backend: str = "auto",
    on_row: Callable[[JobRow], None] | None = None,
) -> list[JobRow]:
    """Analyze `jobs` and return their rows sorted by job path (a convenience for tests)."""
    rows = []
    for row in Runner(root, workers, backend).run(jobs):
        if on_row is not None:
            on_row(row)
        rows.append(row)
    return sorted(rows, key=lambda r: r.job)
