"""Benchmark `crashlens scan` against ripgrep on a synthetic job-log archive.

Generates (or reuses) a ~1 GB archive with bench/gen_jobs.py (dated cluster job folders, 350 KB
median launcher log; bench/scan_scale.py shares it), plus 0.25 GB and 0.5 GB archives made of
its first jobs (hard links: the generator's job plan for a smaller size is a prefix of the one
for a larger size, so they are exactly what it would generate).
Then, in turns, times on all cores:

    crashlens scan ARCHIVE --no-cache --workers N           (the full analysis of every job)
    rg -a --no-unicode -c -f PATTERNS -j N ARCHIVE          (search only)

where PATTERNS are crashlens's own scan patterns (every rule pattern and parser anchor; the
few that ripgrep's regex engine rejects are left out and counted). Prints the median wall
time of each, their ratio, MB/s, crashlens's peak RSS (largest single process, from wait4,
as /usr/bin/time reports it) and the time per GB at each size (linear growth means a flat
time per GB). With --accuracy, also the per-job verdicts against the generator's manifest.

ripgrep is NOT a crashlens dependency: the script installs ripgrep==14.1.0 (the last version
with a wheel for this platform; 15.x builds from source) with pip into bench/out/tools/ the
first time, unless --rg names a binary.

    python bench/scan_vs_ripgrep.py [--sizes 0.25,0.5,1] [--rounds 3] [--workers 0]
                                    [--accuracy] [--rg PATH]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import gen_jobs

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
ARCHIVES = OUT / "archives"
TOOLS = OUT / "tools"
RIPGREP_VERSION = "14.1.0"


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def find_rg(given: str | None) -> str:
    """The rg binary: --rg, bench/out/tools, PATH, else pip-install the pinned wheel."""
    if given:
        return given
    local = TOOLS / "ripgrep" / "bin" / "rg"
    if local.exists():
        return str(local)
    on_path = shutil.which("rg")
    if on_path:
        return on_path
    print(f"installing ripgrep=={RIPGREP_VERSION} into {TOOLS / 'ripgrep'} (bench only)")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--target", str(TOOLS / "ripgrep"),
         f"ripgrep=={RIPGREP_VERSION}"],
        check=True,
    )  # fmt: skip
    return str(local)


MEDIAN_KB = 350
"""The generator's median launcher log for these archives (larger jobs than scan_scale's)."""


def ensure_archive(gb: float, seed: int) -> tuple[Path, Path]:
    """The archive of `gb` GiB and its manifest, generated once and reused."""
    folder, manifest = gen_jobs.archive_paths(ARCHIVES, gb, seed)
    if manifest.exists() and folder.is_dir():
        return folder, manifest
    print(f"generating {folder} ...", flush=True)
    done = gen_jobs.generate(
        folder, gb=gb, median_kb=MEDIAN_KB, seed=seed, procs=os.cpu_count() or 1,
        manifest=manifest,
    )  # fmt: skip
    print(f"{done.jobs:,} jobs, {done.bytes / 1e6:,.0f} MB in {done.seconds:.0f} s")
    return folder, manifest


def prefix_archive(full: Path, manifest: Path, gb: float, seed: int) -> tuple[Path, Path]:
    """The first jobs of `full` that the generator would make for `gb`, as hard links."""
    folder, small_manifest = gen_jobs.archive_paths(ARCHIVES, gb, seed)
    if small_manifest.exists() and folder.is_dir():
        return folder, small_manifest
    count = sum(1 for _ in gen_jobs.plan(seed, gb=gb, median_kb=MEDIAN_KB))
    lines = manifest.read_text().splitlines()[:count]
    for line in lines:
        job = json.loads(line)["job"]
        (folder / job).mkdir(parents=True, exist_ok=True)
        for name in os.listdir(full / job):
            target = folder / job / name
            if not target.exists():
                os.link(full / job / name, target)
    small_manifest.write_text("\n".join(lines) + "\n")
    return folder, small_manifest


def export_patterns(rg: str, path: Path) -> tuple[int, int]:
    """Write crashlens's scan patterns as an rg -f file; returns (kept, rejected by rg)."""
    from crashlens.match.engine import build_matcher
    from crashlens.match.rules import shipped_rules

    matcher = build_matcher(shipped_rules())
    patterns: list[str] = []
    for rule in matcher.rules:
        patterns.extend(("(?i)" if rule.ignore_case else "") + p for p in rule.patterns)
    for regexes in matcher.anchors.values():
        for anchor in regexes:
            # An anchor is a text.linear.Linear: the compiled pattern and its pre-checks.
            compiled = anchor.pattern if isinstance(anchor.pattern, re.Pattern) else anchor
            text = compiled.pattern
            if isinstance(text, bytes):
                text = text.decode("utf-8", "replace")
            patterns.append(("(?i)" if compiled.flags & re.IGNORECASE else "") + text)
    # rg joins all patterns into one regex: group names would clash, and it needs none
    patterns = [re.sub(r"\(\?P<[A-Za-z_][A-Za-z0-9_]*>", "(", p) for p in patterns]
    kept: list[str] = []
    empty = path.with_suffix(".empty")
    empty.write_text("")
    for pattern in dict.fromkeys(patterns):
        done = subprocess.run(
            [rg, "-a", "--no-unicode", "-c", "-e", pattern, "--", str(empty)],
            capture_output=True,
        )
        if done.returncode in (0, 1):
            kept.append(pattern)
    path.write_text("\n".join(kept) + "\n")
    return len(kept), len(set(patterns)) - len(kept)


def timed(command: list[str]) -> tuple[float, int, int, str]:
    """(wall seconds, peak RSS KiB of the largest process, exit code, stdout) of a command."""
    with tempfile.TemporaryFile() as stdout:
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=stdout, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        stdout.seek(0)
        text = stdout.read().decode(errors="replace")
    return wall, usage.ru_maxrss, child.returncode, text


def archive_bytes(folder: Path) -> int:
    return sum(
        os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(folder) for f in files
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="0.25,0.5,1", help="generator --gb values")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=0, help="0: every core")
    parser.add_argument("--rg", default=None, help="an rg binary (default: pip-installed)")
    parser.add_argument("--accuracy", action="store_true", help="also check the verdicts")
    args = parser.parse_args()
    sizes = sorted(float(s) for s in args.sizes.split(","))
    workers = args.workers or len(os.sched_getaffinity(0))
    rg = find_rg(args.rg)
    full, manifest = ensure_archive(sizes[-1], args.seed)
    archives = {sizes[-1]: (full, manifest)}
    for gb in sizes[:-1]:
        archives[gb] = prefix_archive(full, manifest, gb, args.seed)
    patterns = OUT / "scan-patterns.rg.txt"
    kept, rejected = export_patterns(rg, patterns)
    print(f"ripgrep {RIPGREP_VERSION}: {kept} crashlens scan patterns ({rejected} rejected by rg)")
    print(f"{workers} workers, {args.rounds} rounds in turns (median shown)\n")
    scan_out = Path(tempfile.mkdtemp(prefix="crashlens-scan-bench-"))
    results: dict[float, dict[str, list[Any]]] = {gb: {"cl": [], "rg": []} for gb in sizes}
    crashlens = [sys.executable, "-m", "crashlens", "scan"]
    summaries: dict[float, dict[str, Any]] = {}
    for round_index in range(args.rounds + 1):  # round 0 warms the page cache
        for gb in sizes:
            folder = archives[gb][0]
            order = ["rg", "cl"] if round_index % 2 else ["cl", "rg"]
            for tool in order:
                if tool == "rg":
                    command = [rg, "-a", "--no-unicode", "-c", "-f", str(patterns),
                               "-j", str(workers), str(folder)]  # fmt: skip
                else:
                    command = [
                        *crashlens,
                        str(folder),
                        "--out",
                        str(scan_out / f"{gb:g}"),
                        "--no-cache",
                        "--workers",
                        str(workers),
                        "--summary",
                        "json",
                    ]
                wall, rss, code, text = timed(command)
                if code not in (0, 1):
                    raise SystemExit(f"{command[0]} failed with exit code {code}")
                if tool == "cl":
                    summaries[gb] = json.loads(text)
                if round_index:
                    results[gb][tool].append((wall, rss))
    print(
        f"{'size':>8} {'jobs':>6} {'rg s':>7} {'crashlens s':>11} {'ratio':>6} "
        f"{'rg MB/s':>8} {'cl MB/s':>8} {'cl RSS MiB':>10} {'rg RSS MiB':>10} {'cl s/GB':>8}"
    )
    fit: dict[str, list[tuple[float, float]]] = {"rg": [], "cl": []}
    for gb in sizes:
        size = archive_bytes(archives[gb][0])
        rg_wall = statistics.median(w for w, _ in results[gb]["rg"])
        cl_wall = statistics.median(w for w, _ in results[gb]["cl"])
        fit["rg"].append((size / 1e9, rg_wall))
        fit["cl"].append((size / 1e9, cl_wall))
        cl_rss = max(r for _, r in results[gb]["cl"]) / 1024
        rg_rss = max(r for _, r in results[gb]["rg"]) / 1024
        jobs = summaries[gb]["jobs"]["scanned"]
        print(
            f"{size / 1e9:>6.2f}GB {jobs:>6} {rg_wall:>7.2f} {cl_wall:>11.2f} "
            f"{cl_wall / rg_wall:>5.2f}x {size / 1e6 / rg_wall:>8.0f} {size / 1e6 / cl_wall:>8.0f} "
            f"{cl_rss:>10.0f} {rg_rss:>10.0f} {cl_wall / (size / 1e9):>8.2f}"
        )
    if len(sizes) >= 2:
        # Linear growth: wall = fixed + per_gb * size, fitted over the sizes, and how far the
        # measured times stray from that line.
        print()
        for tool, name in (("cl", "crashlens"), ("rg", "ripgrep")):
            xs, ys = zip(*fit[tool], strict=True)
            per_gb, fixed = statistics.linear_regression(xs, ys)
            worst = max(abs(y - (fixed + per_gb * x)) / y for x, y in fit[tool])
            print(
                f"{name:>9}: {fixed:.2f} s fixed + {per_gb:.2f} s per GB "
                f"(largest deviation from that line {worst:.1%})"
            )
    if args.accuracy:
        accuracy = _load(Path(__file__).with_name("scan_accuracy.py"), "scan_accuracy")
        gb = sizes[-1]
        print()
        accuracy.report(scan_out / f"{gb:g}" / "jobs.parquet", archives[gb][1])
    shutil.rmtree(scan_out, ignore_errors=True)


if __name__ == "__main__":
    main()
