"""bench/scan_scale.py runs end to end on tiny sizes and prints every figure it promises, and
bench/gen_jobs.py plans archives whose smaller sizes are prefixes of the larger ones (what
bench/scan_vs_ripgrep.py relies on when it hard-links its 0.25 and 0.5 GB archives)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _gen_jobs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_jobs", BENCH / "gen_jobs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_jobs"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def _scale(tmp_path: Path, *args: str) -> list[str]:
    command = [sys.executable, str(BENCH / "scan_scale.py"), "--quick",
               "--root", str(tmp_path / "tree"), "--listing-root", str(tmp_path / "listing"),
               *args]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return done.stdout.splitlines()


def _one(lines: list[str], pattern: str) -> str:
    found = [line for line in lines if re.match(pattern, line)]
    assert len(found) == 1, (pattern, lines)
    return found[0]


def test_quick_run_prints_throughput_overhead_and_memory_figures(tmp_path: Path) -> None:
    lines = _scale(tmp_path, "--engines", "local")
    assert _one(lines, r"tree: generated 200 jobs, ")
    scan = _one(lines, r"jobs/s local round 1: 200 jobs in [\d.]+ s = [\d,]+ jobs/s ")
    assert re.search(r"CPU per job: workers [\d.]+ ms \+ driver [\d.]+ ms; ", scan)
    rss = _one(lines, r"driver RSS local round 1: at start [\d,]+ MiB \| 10 rows [\d,]+ MiB")
    assert re.search(r"\| 200 rows [\d,]+ MiB \| peak [\d,]+ MiB$", rss)
    noop = _one(lines, r"overhead local round 1: 400 no-op jobs as shipped, [\d.]+ ms/job ")
    assert re.search(r"CPU per job: workers [\d.]+ ms \+ driver [\d.]+ ms", noop)
    for mode in ("streamed", "held"):
        listing = _one(lines, rf"listing RSS +{mode} round 1: 400 jobs at [\d,]+ jobs/s; ")
        assert re.search(r"\| 400 [\d,]+ MiB \| peak [\d,]+ MiB$", listing)
    assert _one(lines, r"driver RSS at 400 listed jobs round 1 \(scan --shard 1/1, 400 analyzed")
    archive = _one(lines, r"1 GB local round 1: \d+ jobs, [\d.]+ GB in [\d.]+ s command wall")
    assert re.search(r"CPU: workers [\d.]+ s \([\d.]+ s/GB\), driver [\d.]+ s$", archive)
    assert _one(lines, r"listing syscalls per job \(\d+ jobs of ")
    # The tree is kept where --root says, marked, and reused by the next run.
    made = json.loads((tmp_path / "tree" / ".gen_jobs.json").read_text())
    assert made["jobs"] == 200
    again = _scale(tmp_path, "--engines", "local", "--skip", "noop,listing,archive")
    assert _one(again, r"tree: reusing 200 jobs ")


def test_quick_run_compares_dask_with_the_local_pool(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    lines = _scale(tmp_path, "--engines", "local,dask", "--skip", "scan,noop,listing")
    assert _one(lines, r"1 GB  dask round 1: \d+ jobs, ")
    assert _one(lines, r"dask vs local on 1 GB: round 1 [+-][\d.]+%; median [+-][\d.]+% ")


def test_a_smaller_archive_is_the_first_jobs_of_a_larger_one() -> None:
    gen_jobs = _gen_jobs()
    small = list(gen_jobs.plan(7, gb=0.02, median_kb=350))
    large = list(gen_jobs.plan(7, gb=0.05, median_kb=350))
    assert 0 < len(small) < len(large)
    assert large[: len(small)] == small
    assert list(gen_jobs.plan(7, jobs=50)) == list(gen_jobs.plan(7, jobs=80))[:50]
    # The same plan renders the same bytes, and the folders are dated cluster paths.
    item = large[-1]
    assert gen_jobs.render(item, 7) == gen_jobs.render(item, 7)
    assert re.fullmatch(r"(north|south|west)/2025/\d\d/\d\d/\d{7}", item.rel)


def test_the_mix_holds_every_cause_on_a_few_hundred_hosts() -> None:
    gen_jobs = _gen_jobs()
    items = list(gen_jobs.plan(42, jobs=3000))
    causes = {item.cause for item in items}
    assert causes == {"success", *gen_jobs.CAUSES}
    hosts: set[str] = set()
    for item in items[:600]:
        log = gen_jobs.render(item, 42)["launcher.log"].decode()
        hosts.update(re.findall(r"\b(?:north|south|west)-r\d\dn\d\d\b", log.splitlines()[0]))
        if item.cause == "shm_bus_error":
            inspect = json.loads(gen_jobs.render(item, 42)["docker-inspect.json"])
            assert inspect[0]["HostConfig"]["ShmSize"] == 64 * 1024 * 1024
        if item.cause in ("xid79", "xid48"):
            assert "NVRM: Xid" in gen_jobs.render(item, 42)["dmesg.txt"].decode()
    assert len(hosts) > 150
