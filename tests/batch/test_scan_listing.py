"""Job discovery streams: jobs come out as folders are listed, batches as jobs arrive, and the
memory a listing holds does not grow with the number of jobs (bench/scan_listing.py measures
it at 200,000 jobs)."""

from __future__ import annotations

import hashlib
import itertools
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

from scan_helpers import write

from crashlens.batch.jobs import FileStat, JobSpec, discover_jobs, iter_job_batches, iter_jobs


def _tree(root: Path, jobs: int, per_folder: int = 100) -> Path:
    for n in range(jobs):
        write(root / f"g{n // per_folder:04d}" / f"job-{n:06d}" / "launcher.log", "x\n")
    return root


def test_iter_jobs_lists_what_discover_jobs_lists_in_the_same_order(tmp_path: Path) -> None:
    root = _tree(tmp_path / "archive", 30, per_folder=7)
    write(root / "g0001" / "packed.tar.gz", "not really a tarball\n")
    write(root / "loose.log", "a log at the top\n")
    expected = list(discover_jobs(root))
    assert list(iter_jobs(root)) == expected == list(iter_jobs(str(root)))
    rels = [job.rel for job in expected]
    # A folder's own files first (its logs, then its archives), then its sub-folders by name.
    assert rels[0] == "."
    assert rels[8:10] == ["g0001/packed.tar.gz", "g0001/job-000007"]
    folders = [rel for rel in rels[1:] if not rel.endswith(".tar.gz")]
    assert folders == sorted(folders) and len(folders) == 30
    assert list(iter_jobs(root, job_glob="g0002/*")) == list(discover_jobs(root, "g0002/*"))


def test_jobs_come_out_while_the_walk_goes_on(tmp_path: Path) -> None:
    root = _tree(tmp_path / "archive", 10, per_folder=5)
    listing = iter_jobs(root)
    first = next(listing)
    assert first.rel == "g0000/job-000000"
    # A folder made after the first job came out, later in the walk: the walk has not got
    # there yet, so it is listed (a listing collected up front would miss it).
    write(root / "g0001" / "job-999999" / "launcher.log", "late\n")
    rest = [job.rel for job in listing]
    assert rest[-1] == "g0001/job-999999"
    assert len(rest) == 10


def test_batches_are_formed_as_jobs_arrive(tmp_path: Path) -> None:
    pulled = 0

    def source() -> Iterator[JobSpec]:
        nonlocal pulled
        for n in range(1000):
            pulled += 1
            size = 10_000 if n != 3 else 50_000
            stat = FileStat("launcher.log", size, 0)
            yield JobSpec(f"job-{n:04d}", "folder", (f"/x/job-{n:04d}/launcher.log",), (stat,))

    batches = iter_job_batches(source(), max_jobs=4, max_bytes=45_000)
    first = next(batches)
    assert [job.rel for job in first] == ["job-0000", "job-0001", "job-0002"]
    assert pulled == 4  # one job looked ahead, not the listing
    big = next(batches)
    assert [job.rel for job in big] == ["job-0003"]  # over the byte budget: alone
    assert [len(b) for b in itertools.islice(batches, 3)] == [4, 4, 4]
    assert pulled < 20


def _peak_while_listing(root: Path, held: bool) -> int:
    tracemalloc.start()
    try:
        if held:
            kept = list(iter_jobs(root))
            assert kept
        else:
            for batch in iter_job_batches(iter_jobs(root)):
                assert batch
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_streamed_listing_holds_the_same_memory_for_4x_the_jobs(tmp_path: Path) -> None:
    small = _tree(tmp_path / "small", 1000)
    large = _tree(tmp_path / "large", 4000)
    streamed_small = _peak_while_listing(small, held=False)
    streamed_large = _peak_while_listing(large, held=False)
    held_large = _peak_while_listing(large, held=True)
    assert streamed_large < 1.3 * streamed_small + 16_384
    assert held_large > 4 * streamed_large  # what holding the listing would cost instead


def test_an_objects_etag_replaces_its_mtime_in_the_signature() -> None:
    def job(*files: FileStat) -> JobSpec:
        return JobSpec("j", "folder", tuple(f"s3://b/j/{f.name}" for f in files), files)

    uploaded = job(FileStat("a.log", 10, 1_000, etag="abc"))
    uploaded_again = job(FileStat("a.log", 10, 2_000, etag="abc"))
    changed = job(FileStat("a.log", 10, 2_000, etag="abd"))
    assert uploaded.signature == uploaded_again.signature != changed.signature
    # A local file's signature is the one caches written before ETags exist hold.
    local = job(FileStat("a.log", 10, 1_000))
    digest = hashlib.blake2b(digest_size=16)
    digest.update(b"folder")
    digest.update(b"\0a.log\x0010\x001000")
    assert local.signature == digest.hexdigest()
