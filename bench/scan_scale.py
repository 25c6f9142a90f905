"""`crashlens scan` at scale: jobs/s, per-job engine overhead and driver memory, local pool
against a 2-worker Dask cluster, on generated archives (bench/gen_jobs.py).

Measures, each in a fresh driver process (this script run again as a child, so the driver's
memory is the scan's own, not this script's):

  jobs/s        a full scan of a tree of small jobs (200,000 by default, a few KB each) on
                each engine; the analysis time (the rows' own seconds) against the wall time
                gives the engine's overhead per job
  driver RSS    the driver's resident memory (/proc/self/status) when the scan starts
                analyzing, when 10k, 50k, 100k and 200k rows are in, and its peak
  overhead      no-op jobs through each engine (jobs that are `unreadable`, so `analyze_job`
                returns at once): the engine's marginal cost per job, start-up left out; as
                shipped and with other jobs per task (`--what-if-batch`)
  listing       the listing alone of a tree of 1,000,000 one-file jobs, streamed and held in a
                list, RSS at each count; and the real scan driver over that tree with
                `--shard 1/1000` (it lists all 1M jobs, analyzes 1,000)
  1 GB          the local pool against Dask on a ~1 GB archive of larger jobs (350 KB median):
                the wall time of the whole command, and its analysis once the workers were
                ready (the summary's `analyzed.startup_s` left out: the pool's rule library
                and database, a cluster's start, code check and warm-up)

The local engine is the process pool (`--workers N`). `dask` is `--dask local`: a LocalCluster
of N worker processes with one thread each (processes=True), started by the command, its
scheduler in the driver. `dask-cluster` is a running cluster, as a site has one: `dask
scheduler` and `dask worker --nworkers N --nthreads 1` started once by this script (workers
preloaded with `crashlens.batch.dask_worker`), each scan `--dask SCHEDULER_FILE`.
Every measurement runs `--rounds` times (2 by default), engines in alternating order; each
line gives the load average when it started (the machine may be shared).

    python bench/scan_scale.py                           # everything, in a temporary folder
    python bench/scan_scale.py --jobs 200000 --root /scratch/jobs-200k --engines local,dask
    python bench/scan_scale.py --quick                   # small sizes: a smoke test

Not run in CI at full size (it writes a million files); tests/test_bench_scale.py runs --quick.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ARCHIVES = BENCH / "out" / "archives"
MARKS = (10_000, 50_000, 100_000, 200_000, 1_000_000)
SCHEDULER_FILE: str | None = None
"""The running cluster's scheduler file, when `dask-cluster` is measured."""
MARKER = ".gen_jobs.json"
"""Written in a generated tree (hidden: a scan skips it) to know it can be reused."""


# --------------------------------------------------------------------------- child (driver)


def _rss_kib() -> tuple[int, int]:
    """(current, peak) resident memory of this process in KiB."""
    fields: dict[str, int] = {}
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    fields[key] = int(value.split()[0])
    except OSError:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak, peak
    return fields.get("VmRSS", 0), fields.get("VmHWM", 0)


def _own_cpu_s() -> float:
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def _cpu_s(spec: dict[str, Any] | None = None) -> tuple[float, float, float]:
    """(this process's, its workers', a running cluster's scheduler's) CPU seconds, user plus
    system. Pool and LocalCluster worker processes are children of the driver (a
    LocalCluster's scheduler and nannies run in it), reaped when the engine stops; a running
    cluster's workers and scheduler (`dask-cluster`) are asked for their own. CPU time,
    unlike wall time, holds on a machine others share."""
    import resource

    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    workers, scheduler = kids.ru_utime + kids.ru_stime, 0.0
    if spec is not None and spec.get("engine") == "dask-cluster":
        import distributed

        with distributed.Client(scheduler_file=spec["scheduler_file"], timeout=60) as client:
            workers = sum(client.run(_own_cpu_s).values())
            scheduler = client.run_on_scheduler(_own_cpu_s)
    return _own_cpu_s(), workers, scheduler


class _Sampler:
    """A scan's progress hook that samples the driver's RSS at given row counts. It accepts
    any arguments to `start`, so it fits the session's Progress however that grows."""

    def __init__(self, marks: list[int]) -> None:
        self.marks = set(marks)
        self.rows = 0
        self.analysis_s = 0.0
        self.rss: dict[str, int] = {}
        self.started = self.first = self.finished = 0.0

    def start(self, *args: Any, **kwargs: Any) -> None:
        self.started = time.perf_counter()
        # Called after the listing by a driver that collects it first, before it by one that
        # streams it.
        self.rss["start"] = _rss_kib()[0]

    def advance(self, row: Any) -> None:
        if not self.rows:
            self.first = time.perf_counter()
        self.rows += 1
        self.analysis_s += float(getattr(row, "seconds", 0.0) or 0.0)
        if self.rows in self.marks:
            self.rss[str(self.rows)] = _rss_kib()[0]

    def finish(self) -> None:
        self.finished = time.perf_counter()


def _child_scan(spec: dict[str, Any]) -> dict[str, Any]:
    from crashlens.batch.session import ScanOptions, scan_archive
    from crashlens.batch.shards import parse_shard

    sampler = _Sampler(spec["marks"])
    options = ScanOptions(
        root=Path(spec["root"]),
        out=Path(spec["out"]),
        workers=spec["workers"],
        use_cache=False,
        shard=parse_shard(spec["shard"]) if spec.get("shard") else None,
        engine=_choice(spec),
    )
    if spec.get("limit_s"):
        # Stop as Ctrl-C does (the session keeps the rows so far): a bounded measurement.
        import signal
        import threading

        stop = threading.Timer(spec["limit_s"], os.kill, (os.getpid(), signal.SIGINT))
        stop.daemon = True
        stop.start()
    cpu_before = _cpu_s(spec)
    started = time.perf_counter()
    outcome = scan_archive(options, sampler)
    wall = time.perf_counter() - started
    cpu_after = _cpu_s(spec)
    current, peak = _rss_kib()
    sampler.rss["done"], sampler.rss["peak"] = current, peak
    summary = outcome.summary
    return {
        "wall_s": wall,
        "analyze_s": (sampler.finished or time.perf_counter()) - (sampler.started or started),
        "first_row_s": (sampler.first or started) - (sampler.started or started),
        "rows": sampler.rows,
        "analysis_s": sampler.analysis_s,
        "bytes": summary.get("analyzed", {}).get("bytes", 0),
        "engine": summary.get("engine"),
        "workers": summary.get("workers"),
        "rss_kib": sampler.rss,
        "driver_cpu_s": cpu_after[0] - cpu_before[0],
        "workers_cpu_s": cpu_after[1] - cpu_before[1],
        "scheduler_cpu_s": cpu_after[2] - cpu_before[2],
        "interrupted": outcome.interrupted,
        "startup_s": summary.get("analyzed", {}).get("startup_s") or 0.0,
    }


def _choice(spec: dict[str, Any]) -> Any:
    """The engine a child's spec names: `local`, `dask` (a LocalCluster of its own) or
    `dask-cluster` (the running cluster of `scheduler_file`)."""
    from crashlens.batch.engine import EngineChoice

    engine = spec["engine"]
    if engine == "dask-cluster":
        return EngineChoice(dask=spec["scheduler_file"])
    return EngineChoice(dask="local" if engine == "dask" else None)


def _child_noop(spec: dict[str, Any]) -> dict[str, Any]:
    from crashlens.batch import pool
    from crashlens.batch.engine import make_engine
    from crashlens.batch.jobs import JobSpec

    choice = _choice(spec)
    if spec.get("batch_jobs"):  # a what-if: at most this many jobs per task
        if choice.distributed:
            from crashlens.batch import task_sizing

            size = task_sizing.DASK_TASK
            task_sizing.DASK_TASK = task_sizing.TaskSize(spec["batch_jobs"], size.max_bytes)
        else:
            pool.BATCH_JOBS = spec["batch_jobs"]
    engine = make_engine(choice, "/nonexistent", spec["workers"], "auto", job_timeout=None)
    jobs = (
        JobSpec(f"noop/{n:08d}", "unreadable", (), (), reason="no-op") for n in range(spec["jobs"])
    )
    cpu_before = _cpu_s(spec)
    started = time.perf_counter()
    first = last = started
    count = 0
    for _ in engine.run(jobs):
        last = time.perf_counter()
        if count == 0:
            first = last
        count += 1
    cpu_after = _cpu_s(spec)
    return {
        "jobs": count,
        "driver_cpu_s": cpu_after[0] - cpu_before[0],
        "workers_cpu_s": cpu_after[1] - cpu_before[1],
        "startup_s": first - started,
        "steady_s": last - first,
        "workers": engine.workers,
        "load": os.getloadavg()[0],
    }


def _child_listing(spec: dict[str, Any]) -> dict[str, Any]:
    from crashlens.batch.jobs import iter_job_batches, iter_jobs

    marks = set(spec["marks"])
    rss: dict[str, int] = {"before": _rss_kib()[0]}
    started = time.perf_counter()
    kept: list[Any] = []
    listed = 0
    if spec.get("shard"):  # one shard's listing, as `scan --shard K/N` lists
        from crashlens.batch.shards import parse_shard

        holds = parse_shard(spec["shard"]).holds
        try:
            jobs = iter_jobs(spec["root"], select=holds)
        except TypeError:  # crashlens before the listing took `select`: filtered after it
            jobs = (job for job in iter_jobs(spec["root"]) if holds(job.rel))
        listed = sum(1 for _ in jobs)
    elif spec["held"]:
        for job in iter_jobs(spec["root"]):
            kept.append(job)
            listed += 1
            if listed in marks:
                rss[str(listed)] = _rss_kib()[0]
    else:
        for batch in iter_job_batches(iter_jobs(spec["root"])):
            for _ in batch:
                listed += 1
                if listed in marks:
                    rss[str(listed)] = _rss_kib()[0]
    seconds = time.perf_counter() - started
    rss["peak"] = _rss_kib()[1]
    return {"jobs": listed, "seconds": seconds, "rss_kib": rss}


def _child(spec: dict[str, Any]) -> None:
    run = {"scan": _child_scan, "noop": _child_noop, "listing": _child_listing}[spec["mode"]]
    load = os.getloadavg()[0]  # when the measurement starts
    print("RESULT " + json.dumps({"load_at_start": load, **run(spec)}), flush=True)


def _in_child(spec: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """Run one measurement in a fresh interpreter: (its result, the whole command's wall)."""
    if SCHEDULER_FILE is not None:
        spec = {**spec, "scheduler_file": SCHEDULER_FILE}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            result: dict[str, Any] = json.loads(line[len("RESULT ") :])
            return result, wall
    raise SystemExit(f"measurement {spec['mode']} failed:\n{done.stdout}\n{done.stderr[-4000:]}")


# --------------------------------------------------------------------------- parent


def _mib(kib: int) -> str:
    return f"{kib / 1024:,.0f} MiB"


def _per_job_ms(got: dict[str, Any], key: str) -> str:
    return f"{got[key] / max(1, got.get('rows', got.get('jobs', 0))) * 1e3:.3f}"


def _marks(total: int) -> list[int]:
    if total >= MARKS[0]:
        return [m for m in MARKS if m <= total] + ([total] if total not in MARKS else [])
    return sorted({max(1, total // 20), max(1, total // 4), max(1, total // 2), total})


def _order(engines: list[str], round_index: int) -> list[str]:
    return engines if round_index % 2 == 0 else engines[::-1]


def ensure_tree(root: Path, jobs: int, seed: int, procs: int) -> tuple[int, int]:
    """The small-job tree at `root`, generated unless it is already there: (jobs, bytes)."""
    import gen_jobs

    marker = root / MARKER
    if marker.exists():
        made = json.loads(marker.read_text())
        print(f"tree: reusing {made['jobs']:,} jobs ({made['bytes'] / 1e6:,.0f} MB) in {root}")
        return int(made["jobs"]), int(made["bytes"])
    if root.is_dir() and any(root.iterdir()):
        print(f"tree: reusing {root} as it is (not generated here)")
        return 0, 0
    done = gen_jobs.generate(root, jobs=jobs, seed=seed, procs=procs)
    marker.write_text(json.dumps({"jobs": done.jobs, "bytes": done.bytes, "seed": seed}))
    print(
        f"tree: generated {done.jobs:,} jobs, {done.bytes / 1e6:,.0f} MB "
        f"({done.bytes / max(1, done.jobs) / 1e3:.1f} KB a job) in {done.seconds:.0f} s"
    )
    return done.jobs, done.bytes


def ensure_archive(gb: float, seed: int, procs: int, where: Path | None = None) -> Path:
    """The ~`gb` GiB archive of larger jobs (bench/out/archives, shared with
    scan_vs_ripgrep.py), generated once."""
    import gen_jobs

    folder, manifest = gen_jobs.archive_paths(where or ARCHIVES, gb, seed)
    if not manifest.exists():
        print(f"1 GB: generating {folder} ...", flush=True)
        gen_jobs.generate(folder, gb=gb, median_kb=350, seed=seed, procs=procs, manifest=manifest)
    return folder


def measure_scans(
    root: Path,
    engines: list[str],
    rounds: int,
    workers: int,
    out: Path,
    total: int,
    limit_s: float | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """A scan of the whole tree per engine and round; `limit_s` stops each after that many
    seconds (Ctrl-C: the rows so far are kept), on a machine too busy to scan it all."""
    marks = _marks(total) if total else list(MARKS)
    results: dict[str, list[dict[str, Any]]] = {e: [] for e in engines}
    for round_index in range(rounds):
        for engine in _order(engines, round_index):
            spec = {"mode": "scan", "root": str(root), "out": str(out / engine),
                    "engine": engine, "workers": workers, "marks": marks,
                    "limit_s": limit_s}  # fmt: skip
            got, command_wall = _in_child(spec)
            got["command_s"] = command_wall
            results[engine].append(got)
            rows, wall = got["rows"], got["wall_s"]
            steady = got["analyze_s"] - got["first_row_s"]  # a Dask cluster's start-up left out
            print(
                f"jobs/s {engine:>5} round {round_index + 1}: {rows:,} jobs in {wall:.1f} s = "
                f"{rows / wall:,.0f} jobs/s (after the first row {rows / steady:,.0f} jobs/s; "
                f"start-up {got['first_row_s']:.1f} s); CPU per job: workers "
                f"{_per_job_ms(got, 'workers_cpu_s')} ms + driver "
                f"{_per_job_ms(got, 'driver_cpu_s')} ms; a row's own wall "
                f"{got['analysis_s'] / max(1, rows) * 1e3:.2f} ms"
                + (f"; stopped at the {limit_s:g} s limit" if got.get("interrupted") else ""),
                flush=True,
            )
            rss = got["rss_kib"]
            steps = " | ".join(f"{int(k):,} rows {_mib(v)}" for k, v in rss.items() if k.isdigit())
            parts = [f"at start {_mib(rss['start'])}", *([steps] if steps else [])]
            print(
                f"driver RSS {engine:>5} round {round_index + 1}: {' | '.join(parts)} | peak "
                f"{_mib(rss['peak'])}",
                flush=True,
            )
    return results


def measure_noop(
    engines: list[str], rounds: int, workers: int, jobs: int, what_if: list[int]
) -> None:
    """No-op jobs through each engine; `what_if`: other jobs-per-task than the shipped."""
    for round_index in range(rounds):
        for engine in _order(engines, round_index):
            for batch in [0, *what_if]:
                spec = {"mode": "noop", "engine": engine, "workers": workers, "jobs": jobs,
                        "batch_jobs": batch}  # fmt: skip
                got, _ = _in_child(spec)
                per_job = got["steady_s"] / max(1, got["jobs"] - 1) * 1e3
                label = f"{batch} jobs per task (what-if)" if batch else "as shipped"
                print(
                    f"overhead {engine:>5} round {round_index + 1}: {got['jobs']:,} no-op jobs "
                    f"{label}, {per_job:.3f} ms/job of driver wall time on "
                    f"{got['workers']} workers (start-up {got['startup_s']:.1f} s, left out); "
                    f"CPU per job: workers {_per_job_ms(got, 'workers_cpu_s')} ms + driver "
                    f"{_per_job_ms(got, 'driver_cpu_s')} ms (start-up included)",
                    flush=True,
                )


def measure_listing(root: Path, jobs: int, rounds: int, workers: int, out: Path) -> None:
    import gen_jobs

    if not (root / MARKER).exists():
        seconds = gen_jobs.listing_tree(root, jobs)
        (root / MARKER).write_text(json.dumps({"jobs": jobs}))
        print(f"listing: generated {jobs:,} one-file jobs in {seconds:.0f} s", flush=True)
    marks = _marks(jobs)
    for round_index in range(rounds):
        for held in (False, True):
            got, _ = _in_child({"mode": "listing", "root": str(root), "held": held,
                                "marks": marks})  # fmt: skip
            rss = got["rss_kib"]
            steps = " | ".join(f"{int(k):,} {_mib(v)}" for k, v in rss.items() if k.isdigit())
            print(
                f"listing RSS {'held' if held else 'streamed':>8} round {round_index + 1}: "
                f"{got['jobs']:,} jobs at {got['jobs'] / got['seconds']:,.0f} jobs/s; "
                f"before {_mib(rss['before'])} | {steps} | peak {_mib(rss['peak'])}",
                flush=True,
            )
        shard = f"1/{max(1, jobs // 1000)}"
        got, _ = _in_child({"mode": "scan", "root": str(root), "out": str(out / "shard"),
                            "engine": "local", "workers": workers, "marks": [],
                            "shard": shard})  # fmt: skip
        print(
            f"driver RSS at {jobs:,} listed jobs round {round_index + 1} (scan --shard {shard}, "
            f"{got['rows']:,} analyzed): peak {_mib(got['rss_kib']['peak'])}, "
            f"{got['wall_s']:.1f} s",
            flush=True,
        )


SYSCALLS = ("getdents64", "openat", "newfstatat", "statx", "lstat", "stat", "fstat", "close")


def _strace_counts(spec: dict[str, Any], strace: str, log: Path) -> tuple[dict[str, int], int]:
    """(calls per syscall, jobs listed) of one listing child under `strace -c`."""
    command = [strace, "-f", "-c", "-o", str(log), sys.executable, str(Path(__file__).resolve()),
               "--child", json.dumps(spec)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    jobs = 0
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            jobs = int(json.loads(line[len("RESULT ") :])["jobs"])
    counts: dict[str, int] = {}
    for line in log.read_text().splitlines():
        parts = line.split()
        if parts and parts[-1] in SYSCALLS and len(parts) >= 5:
            counts[parts[-1]] = int(parts[3])
    return counts, jobs


def measure_syscalls(root: Path, scratch: Path, shards: int = 8) -> None:
    """Filesystem calls per listed job (what a Lustre MDS or NFS server would be asked):
    a listing of one month of the tree under strace, less an empty folder's listing; then the
    listing of one of `shards` shards of it (`scan --shard 1/N`), per job of the whole."""
    strace = shutil.which("strace")
    month = next((p for p in sorted(root.glob("*/*/*")) if p.is_dir()), None)
    if strace is None or month is None:
        print("listing syscalls: skipped (no strace, or no tree)")
        return
    empty = scratch / "empty"
    empty.mkdir(exist_ok=True)
    spec: dict[str, Any] = {"mode": "listing", "held": False, "marks": []}
    base, _ = _strace_counts({**spec, "root": str(empty)}, strace, scratch / "strace-empty")
    full, jobs = _strace_counts({**spec, "root": str(month)}, strace, scratch / "strace-tree")
    per_job = {
        name: (full.get(name, 0) - base.get(name, 0)) / max(1, jobs)
        for name in SYSCALLS
        if full.get(name, 0) > base.get(name, 0)
    }
    shown = ", ".join(f"{name} {value:.2f}" for name, value in per_job.items())
    print(
        f"listing syscalls per job ({jobs:,} jobs of {month.relative_to(root)}, strace -c): "
        f"{shown}; {sum(per_job.values()):.2f} in all",
        flush=True,
    )
    shard = {**spec, "root": str(month), "shard": f"1/{shards}"}
    part, found = _strace_counts(shard, strace, scratch / "strace-shard")
    per_listed = {
        name: (part.get(name, 0) - base.get(name, 0)) / max(1, jobs)
        for name in SYSCALLS
        if part.get(name, 0) > base.get(name, 0)
    }
    shown = ", ".join(f"{name} {value:.2f}" for name, value in per_listed.items())
    print(
        f"listing syscalls of shard 1/{shards} per job of the whole ({found:,} of {jobs:,} "
        f"jobs are its own): {shown}; {sum(per_listed.values()):.2f} in all",
        flush=True,
    )


def measure_archive(folder: Path, engines: list[str], rounds: int, workers: int, out: Path) -> None:
    """The ~1 GB archive on each engine, alternating: the whole command's wall time, and the
    analysis once the engine's workers were ready (start-up left out, for every engine)."""
    walls: dict[str, list[float]] = {e: [] for e in engines}
    ready: dict[str, list[float]] = {e: [] for e in engines}
    cpus: dict[str, list[float]] = {e: [] for e in engines}
    loads: list[float] = []
    for round_index in range(rounds):
        for engine in _order(engines, round_index):
            spec = {"mode": "scan", "root": str(folder), "out": str(out / f"gb-{engine}"),
                    "engine": engine, "workers": workers, "marks": []}  # fmt: skip
            got, wall = _in_child(spec)
            walls[engine].append(wall)
            after_ready = got["analyze_s"] - got["startup_s"]
            ready[engine].append(after_ready)
            cpus[engine].append(
                got["workers_cpu_s"] + got["driver_cpu_s"] + got.get("scheduler_cpu_s", 0.0)
            )
            loads.append(got["load_at_start"])
            gigabytes = max(got["bytes"], 1) / 1e9
            print(
                f"1 GB {engine:>5} round {round_index + 1}: {got['rows']:,} jobs, "
                f"{gigabytes:.2f} GB in {wall:.2f} s command wall ({gigabytes * 1e3 / wall:,.0f}"
                f" MB/s; load {got['load_at_start']:.1f}; start-up {got['startup_s']:.2f} s, "
                f"then {after_ready:.2f} s of analysis with the workers ready, first row after "
                f"{got['first_row_s']:.2f} s); CPU: workers {got['workers_cpu_s']:.1f} s "
                f"({got['workers_cpu_s'] / gigabytes:.2f} s/GB), driver "
                f"{got['driver_cpu_s']:.1f} s"
                + (
                    f", scheduler {got['scheduler_cpu_s']:.1f} s"
                    if engine == "dask-cluster"
                    else ""
                ),
                flush=True,
            )
    for other in [e for e in engines if e != "local"]:
        if "local" not in walls:
            break
        each = ", ".join(
            f"round {n + 1} {d / loc - 1:+.1%}"
            for n, (loc, d) in enumerate(zip(walls["local"], walls[other], strict=True))
        )
        local, theirs = statistics.median(walls["local"]), statistics.median(walls[other])
        phase = statistics.median(ready[other]) / statistics.median(ready["local"]) - 1
        cpu = statistics.median(cpus[other]) / statistics.median(cpus["local"]) - 1
        # A round's two scans run one after the other, so on a shared machine their ratio
        # is steadier than the ratio of the medians, whose scans may come from other rounds.
        paired = statistics.median(
            d / loc - 1 for loc, d in zip(walls["local"], walls[other], strict=True)
        )
        print(
            f"{other} vs local on 1 GB: {each}; median {theirs / local - 1:+.1%} "
            f"(median of the rounds' {paired:+.1%}; "
            f"command wall: local {local:.2f} s, {other} {theirs:.2f} s; with the workers "
            f"ready {phase:+.1%}: local {statistics.median(ready['local']):.2f} s, {other} "
            f"{statistics.median(ready[other]):.2f} s; CPU of driver, scheduler and workers "
            f"{cpu:+.1%}; "
            f"load {min(loads):.1f} to {max(loads):.1f}; target within +15 %)",
            flush=True,
        )


def _scan_settings(folder: Path) -> Path:
    """A Dask configuration folder with crashlens' `SCAN_SETTINGS`, as a site would give its
    scheduler and workers (a JSON file is YAML too)."""
    from crashlens.batch.dask_engine import SCAN_SETTINGS

    nested: dict[str, Any] = {}
    for dotted, value in SCAN_SETTINGS.items():
        *parents, leaf = dotted.split(".")
        level = nested
        for part in parents:
            level = level.setdefault(part, {})
        level[leaf] = value
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "crashlens-scan.yaml").write_text(json.dumps(nested, indent=2))
    return folder


@contextlib.contextmanager
def running_cluster(workers: int, folder: Path) -> Iterator[str]:
    """A Dask cluster as a site runs one: `dask scheduler` and `dask worker` processes (one
    thread each, preloaded with crashlens' warm-up, configured with its `SCAN_SETTINGS`),
    started once; yields the scheduler file."""
    import distributed

    scheduler_file = folder / "scheduler.json"
    dask = str(Path(sys.executable).parent / "dask")
    common = ["--scheduler-file", str(scheduler_file), "--no-dashboard"]
    environ = {**os.environ, "DASK_CONFIG": str(_scan_settings(folder / "config"))}
    logs = contextlib.ExitStack()
    started = [
        subprocess.Popen(
            [dask, "scheduler", "--host", "127.0.0.1", "--port", "0", *common],
            stdout=subprocess.DEVNULL,
            stderr=logs.enter_context((folder / "scheduler.log").open("w")),
            env=environ,
        )
    ]
    try:
        while not scheduler_file.exists():
            time.sleep(0.1)
        started.append(
            subprocess.Popen(
                [
                    dask,
                    "worker",
                    "--nworkers",
                    str(workers),
                    "--nthreads",
                    "1",
                    "--preload",
                    "crashlens.batch.dask_worker",
                    *common,
                ],  # fmt: skip
                stdout=subprocess.DEVNULL,
                stderr=logs.enter_context((folder / "workers.log").open("w")),
                env=environ,
            )
        )
        with distributed.Client(scheduler_file=str(scheduler_file), timeout=120) as client:
            client.wait_for_workers(workers, timeout=300)
        yield str(scheduler_file)
    finally:
        for process in reversed(started):
            process.terminate()
        for process in reversed(started):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        logs.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=200_000, help="small jobs in the tree")
    parser.add_argument("--root", type=Path, default=None, help="tree to reuse or create")
    parser.add_argument("--engines", default="local,dask", help="of local, dask, dask-cluster")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--scan-seconds", type=float, default=None, help="stop each scan after this long"
    )
    parser.add_argument("--noop-jobs", type=int, default=50_000)
    parser.add_argument(
        "--what-if-batch", default="8,32", help="no-op runs with these jobs per task too"
    )
    parser.add_argument("--listing-jobs", type=int, default=1_000_000, help="0: skip")
    parser.add_argument("--listing-root", type=Path, default=None)
    parser.add_argument("--gb", type=float, default=1.0, help="archive size; 0: skip")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--skip", default="", help="comma list of scan,noop,listing,archive")
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        _child(json.loads(args.child))
        return
    if args.quick:
        args.jobs, args.noop_jobs, args.listing_jobs = 200, 400, 400
        args.gb, args.rounds, args.what_if_batch = min(args.gb, 0.004), 1, ""
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    procs = len(os.sched_getaffinity(0))
    print(
        f"machine: {procs} cores (load average {os.getloadavg()[0]:.1f}; shared with other "
        f"work), Python {platform.python_version()}, {args.workers} workers per engine, "
        f"{args.rounds} rounds",
        flush=True,
    )
    scratch = Path(tempfile.mkdtemp(prefix="crashlens-scale-"))
    services = contextlib.ExitStack()
    try:
        if "dask-cluster" in engines:
            global SCHEDULER_FILE
            (scratch / "cluster").mkdir()
            SCHEDULER_FILE = services.enter_context(
                running_cluster(args.workers, scratch / "cluster")
            )
        if "scan" not in skip:
            root = args.root or scratch / "tree"
            total, _ = ensure_tree(root, args.jobs, args.seed, procs)
            measure_scans(
                root, engines, args.rounds, args.workers, scratch / "out", total,
                args.scan_seconds,
            )  # fmt: skip
        if "noop" not in skip:
            what_if = [int(n) for n in args.what_if_batch.split(",") if n.strip()]
            measure_noop(engines, args.rounds, args.workers, args.noop_jobs, what_if)
        if "listing" not in skip and args.listing_jobs:
            listing = args.listing_root or scratch / "listing"
            measure_listing(listing, args.listing_jobs, args.rounds, args.workers, scratch)
            measure_syscalls(listing, scratch)
        if "archive" not in skip and args.gb:
            where = scratch / "archives" if args.quick else None
            folder = ensure_archive(args.gb, args.seed, procs, where)
            measure_archive(folder, engines, args.rounds, args.workers, scratch / "out")
    finally:
        services.close()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
