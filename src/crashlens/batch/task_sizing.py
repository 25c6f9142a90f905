"""How many jobs go into one task of a distributed engine: sized by count and bytes, and
adaptive to the cluster, so a big scan pays the per-task cost rarely and a small one still
spreads over every worker.

A Dask task costs about 4 ms of driver (client and scheduler) CPU and as much on the worker,
whatever it holds (bench/scan_scale.py, docs/scale.md): at 8 small jobs a task that is about
1 ms a job, more than the analysis of a small job. So while the listing runs ahead, tasks are
as big as `TaskSize` allows: up to `max_jobs` jobs and about `max_bytes` of input (a task of
big jobs stays short, so the tail of a scan stays short too). When the listing is exhausted,
what is left is split over the cluster's task slots (guided self-scheduling: each task takes
a slot's share of the rest, so tasks shrink towards the end): a scan of 30 jobs on 2 workers
becomes several tasks, not one.

The batcher looks ahead a bounded number of jobs (one full task per slot, at most
`MAX_LOOKAHEAD` jobs) to know whether the listing is nearly done: the driver holds those
and the tasks in flight, never the listing.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from crashlens.batch.jobs import JobSpec

MAX_LOOKAHEAD = 16_384
"""Jobs the batcher holds at most ahead of the tasks it formed (a few MB of JobSpecs)."""


@dataclass(frozen=True, slots=True)
class TaskSize:
    """The largest task: `max_jobs` jobs, about `max_bytes` of input (a bigger job goes alone)."""

    max_jobs: int
    max_bytes: int


DASK_TASK = TaskSize(max_jobs=128, max_bytes=8 * 1024 * 1024)
"""Dask's tasks: the ~4 ms a task costs the driver and the worker comes to 0.03 ms a job at 128
small jobs, and to under 2 % of the ~0.2 s of CPU that 8 MB of logs take to analyze."""


class AdaptiveBatches:
    """Consecutive jobs of `jobs` grouped into tasks for `slots` task slots (worker threads
    times the tasks kept in flight for each): full tasks while the listing runs ahead, a
    slot's share of the rest once it is exhausted. `next()` forms one task when the engine
    has room for it, so the listing is pulled as the workers progress."""

    def __init__(self, jobs: Iterator[JobSpec], slots: int, size: TaskSize) -> None:
        self.jobs = jobs
        self.slots = max(1, slots)
        self.size = TaskSize(max(1, size.max_jobs), max(1, size.max_bytes))
        self.lookahead_jobs = min(self.slots * self.size.max_jobs, MAX_LOOKAHEAD)
        self.lookahead_bytes = self.slots * self.size.max_bytes
        self.ahead: deque[JobSpec] = deque()
        self.ahead_bytes = 0
        self.exhausted = False

    def __iter__(self) -> Iterator[list[JobSpec]]:
        while (batch := self.next()) is not None:
            yield batch

    def next(self) -> list[JobSpec] | None:
        """The next task's jobs, or None when every job was handed out."""
        self._fill()
        if not self.ahead:
            return None
        max_jobs, max_bytes = self.size.max_jobs, self.size.max_bytes
        if self.exhausted:  # the rest is known: a slot's share of it, so every slot gets work
            max_jobs = min(max_jobs, math.ceil(len(self.ahead) / self.slots))
            max_bytes = min(max_bytes, math.ceil(self.ahead_bytes / self.slots))
        batch: list[JobSpec] = []
        size = 0
        while self.ahead and len(batch) < max_jobs:
            job = self.ahead[0]
            if batch and size + job.size > max_bytes:
                break
            batch.append(self.ahead.popleft())
            size += job.size
        self.ahead_bytes -= size
        return batch

    def _fill(self) -> None:
        while not self.exhausted and (
            len(self.ahead) < self.lookahead_jobs and self.ahead_bytes < self.lookahead_bytes
        ):
            job = next(self.jobs, None)
            if job is None:
                self.exhausted = True
                break
            self.ahead.append(job)
            self.ahead_bytes += job.size
