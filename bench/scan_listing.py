"""Listing a huge archive: jobs/s and the driver's peak memory against the number of jobs.

Generates a tree of tiny jobs (one small log per folder, folders nested two deep: the way
archives are laid out by month or by user), then lists it in a fresh process per count with
`jobs.iter_jobs` and `jobs.iter_job_batches`, as a scan's driver consumes it, and prints for
each count the listing rate and the process's peak RSS. The streamed listing keeps its RSS flat
as the count grows; for contrast, the same listing held in one list (what a driver that
collects the jobs first would hold) grows with it.

    python bench/scan_listing.py                 # 200,000 jobs in a temporary folder
    python bench/scan_listing.py --jobs 1000000 --tree /scratch/listing-tree --keep

Not run in CI (it writes hundreds of thousands of files).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PER_FOLDER = 1000
"""Jobs per first-level folder (a month, a user)."""
LOG = b"[rank0]: step=1 loss=1.0\n"


def generate(root: Path, jobs: int) -> float:
    """`jobs` job folders of one tiny log each under `root`; returns the seconds it took."""
    started = time.perf_counter()
    root.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    for first in range((jobs + PER_FOLDER - 1) // PER_FOLDER):
        group = root / f"g{first:05d}"
        group.mkdir(exist_ok=True)
        for n in range(first * PER_FOLDER, min(jobs, (first + 1) * PER_FOLDER)):
            folder = f"{group}/job-{n:07d}"
            os.mkdir(folder)
            handle = os.open(f"{folder}/launcher.log", flags, 0o644)
            os.write(handle, LOG)
            os.close(handle)
    return time.perf_counter() - started


CHILD = """
import itertools, json, resource, sys, time
from crashlens.batch.jobs import iter_job_batches, iter_jobs
root, count, held = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "held"
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
jobs = itertools.islice(iter_jobs(root), count)
listed, batches, kept = 0, 0, []
if held:
    kept = list(jobs)
    listed = len(kept)
else:
    for batch in iter_job_batches(jobs):
        listed += len(batch)
        batches += 1
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"jobs": listed, "batches": batches, "seconds": seconds,
                  "base_kib": base, "peak_kib": peak}))
"""


def measure(root: Path, count: int, held: bool) -> dict[str, float]:
    """List `count` jobs of `root` in a fresh interpreter: rate and peak RSS."""
    mode = "held" if held else "streamed"
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), str(count), mode],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200_000)
    parser.add_argument("--tree", type=Path, default=None, help="where to generate (or reuse)")
    parser.add_argument("--keep", action="store_true", help="keep the generated tree")
    args = parser.parse_args()
    made = args.tree is None
    tree = args.tree or Path(tempfile.mkdtemp(prefix="crashlens-listing-"))
    try:
        if not (tree / "g00000").is_dir():
            seconds = generate(tree, args.jobs)
            print(f"generated {args.jobs:,} jobs in {seconds:.1f} s under {tree}")
        counts = sorted({c for c in (50_000, 100_000, 200_000, args.jobs) if c <= args.jobs})
        print(f"{'jobs':>9} {'mode':>9} {'jobs/s':>9} {'base MiB':>9} {'peak MiB':>9} {'+MiB':>7}")
        for count in counts:
            for held in (False, True):
                got = measure(tree, count, held)
                rate = got["jobs"] / got["seconds"]
                base, peak = got["base_kib"] / 1024, got["peak_kib"] / 1024
                mode = "held" if held else "streamed"
                print(
                    f"{int(got['jobs']):>9,} {mode:>9} {rate:>9,.0f} {base:>9.1f} {peak:>9.1f}"
                    f" {peak - base:>7.1f}"
                )
    finally:
        if made and not args.keep:
            shutil.rmtree(tree, ignore_errors=True)


if __name__ == "__main__":
    main()
