"""Task sizing for a distributed engine: full tasks while the listing runs ahead, a slot's
share of the rest at its end, bounded by count and bytes, every job once and in order."""

from __future__ import annotations

from collections.abc import Iterator

from crashlens.batch.jobs import FileStat, JobSpec
from crashlens.batch.task_sizing import MAX_LOOKAHEAD, AdaptiveBatches, TaskSize


def _jobs(count: int, size: int = 1000) -> list[JobSpec]:
    return [
        JobSpec(f"job-{n:06d}", "folder", (f"/a/job-{n:06d}/x.log",), (FileStat("x.log", size, 0),))
        for n in range(count)
    ]


def _sizes(jobs: list[JobSpec], slots: int, size: TaskSize) -> list[int]:
    batches = list(AdaptiveBatches(iter(jobs), slots, size))
    assert [job for batch in batches for job in batch] == jobs  # each once, in listing order
    return [len(batch) for batch in batches]


def test_a_big_scan_runs_in_full_tasks_until_the_end_of_the_listing() -> None:
    sizes = _sizes(_jobs(10_000), slots=6, size=TaskSize(128, 1 << 30))
    full = [n for n in sizes if n == 128]
    assert len(full) >= (10_000 - 6 * 128) // 128
    assert sizes[: len(full)] == full  # the smaller ones only come at the end
    assert sizes[-1] < 128 and sizes == sorted(sizes, reverse=True)


def test_a_small_scan_spreads_over_every_slot() -> None:
    sizes = _sizes(_jobs(30), slots=6, size=TaskSize(128, 1 << 30))
    assert len(sizes) >= 6 and max(sizes) == 5  # 30 jobs over 6 slots, not one task


def test_tasks_are_bounded_by_bytes_and_a_big_job_goes_alone() -> None:
    jobs = [*_jobs(40, size=1 << 20), *_jobs(1, size=50 << 20), *_jobs(40, size=1 << 20)]
    batches = list(AdaptiveBatches(iter(jobs), 2, TaskSize(128, 8 << 20)))
    assert [job for batch in batches for job in batch] == jobs
    for batch in batches:
        assert len(batch) == 1 or sum(job.size for job in batch) <= 8 << 20
    assert [len(b) for b in batches if any(job.size == 50 << 20 for job in b)] == [1]


def test_the_batcher_holds_a_bounded_look_ahead_not_the_listing() -> None:
    pulled = 0

    def listing() -> Iterator[JobSpec]:
        nonlocal pulled
        for job in _jobs(200_000, size=10):
            pulled += 1
            yield job

    batcher = AdaptiveBatches(listing(), slots=1000, size=TaskSize(128, 1 << 30))
    first = batcher.next()
    assert first is not None and len(first) == 128
    assert pulled == MAX_LOOKAHEAD  # 1000 slots of 128 would be 128,000 jobs ahead


def test_an_empty_listing_gives_no_task() -> None:
    assert list(AdaptiveBatches(iter([]), 4, TaskSize(8, 1 << 20))) == []
