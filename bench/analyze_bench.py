"""Benchmark `crashlens analyze`: a 1 GB launcher log, a small job folder, and start-up.

Prints wall time, throughput and peak RSS of each run (a child process per run, so the
figures are those a user sees). Generated inputs are kept under bench/out/ and reused.

    python bench/analyze_bench.py [--size-mb 1024] [--backend auto|python|hyperscan]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
EXAMPLE = ROOT / "examples" / "llamafactory-shm-bus-error"

_NOISE = (
    "[rank{r}]:[2025-03-14 09:{m:02d}:{s:02d},{ms:03d}] [INFO] [logging.py:128:log_dist] "
    "[Rank {r}] step={step}, skipped=0, lr=[1.2e-05], mom=[(0.9, 0.95)]\n",
    "node-0{n}:{pid}:{pid} [{r}] NCCL INFO Channel {c:02d}/0 : {r}[{r}] -> {p}[{p}] "
    "via P2P/CUMEM\n",
    "{{'loss': {loss:.4f}, 'grad_norm': 0.{g}, 'learning_rate': 1.2e-05, 'epoch': 0.{e}}}\n",
    " {pct}%|███▍      | {step}/100000 [12:{m:02d}<3:41:{s:02d},  1.{ms}it/s]\r",
    "[rank{r}]:/opt/conda/lib/python3.11/site-packages/torch/utils/checkpoint.py:91: "
    "UserWarning: None of the inputs have requires_grad=True. Gradients will be None\n",
)
_FAILURE = (
    "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 "
    "has a total capacity of 79.10 GiB of which 1.06 GiB is free. Of the allocated memory "
    "74.21 GiB is allocated by PyTorch, and 2.11 GiB is reserved by PyTorch but unallocated.\n"
    "E0314 09:59:59.620000 2606 torch/distributed/elastic/multiprocessing/api.py:869] "
    "failed (exitcode: 1) local_rank: 3 (pid: 2610) of binary: /opt/conda/bin/python3\n"
)


def make_log(path: Path, size_mb: int) -> None:
    """Write a launcher log of about `size_mb` MB: noise, then a CUDA OOM at the end."""
    if path.exists() and path.stat().st_size >= size_mb * 1_000_000:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(7)
    target = size_mb * 1_000_000
    written = 0
    with path.open("w", encoding="utf-8") as stream:
        while written < target:
            block = []
            for step in range(2000):
                template = _NOISE[rng.randrange(len(_NOISE))]
                block.append(
                    template.format(
                        r=rng.randrange(8),
                        p=rng.randrange(8),
                        n=rng.randrange(4),
                        pid=rng.randrange(1000, 99999),
                        c=rng.randrange(32),
                        step=step,
                        m=rng.randrange(60),
                        s=rng.randrange(60),
                        ms=rng.randrange(1000),
                        loss=rng.random() * 4,
                        g=rng.randrange(10**6),
                        e=rng.randrange(99),
                        pct=rng.randrange(100),
                    )
                )
            text = "".join(block)
            stream.write(text)
            written += len(text.encode("utf-8"))
        stream.write(_FAILURE)


def run(args: list[str]) -> tuple[float, float, int]:
    """Run crashlens in a child; return (seconds, peak RSS MiB, exit status)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "crashlens", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # ru_maxrss of children is the maximum over all children so far: run the big one last.
    return seconds, max(peak, before) / 1024, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--backend", default="auto", choices=["auto", "python", "hyperscan"])
    options = parser.parse_args()
    log = OUT / f"launcher-{options.size_mb}mb.log"
    make_log(log, options.size_mb)
    size = log.stat().st_size

    help_times = []
    for _ in range(5):
        seconds, _, _ = run(["--help"])
        help_times.append(seconds)
    small_times = []
    for _ in range(3):
        seconds, _, status = run(["analyze", str(EXAMPLE), "--format", "json"])
        small_times.append(seconds)
    seconds, peak, status = run(
        ["analyze", str(log), "--format", "json", "--backend", options.backend]
    )
    print(f"crashlens --help (median of 5)        {sorted(help_times)[2]:7.3f} s")
    print(f"small job folder ({EXAMPLE.name})  {sorted(small_times)[1]:7.3f} s")
    print(
        f"launcher log {size / 1e9:.2f} GB ({options.backend})     {seconds:7.2f} s"
        f"  {size / 1e6 / seconds:7.1f} MB/s  peak RSS {peak:6.1f} MiB  exit {status}"
    )
    print(f"cpu count {os.cpu_count()}")


if __name__ == "__main__":
    main()
