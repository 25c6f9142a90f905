"""Redaction speed on a large realistic log: prints MB/s of the learning pass and the writing pass.

The log is built from real inputs: every shared sample of tests/data/samples (launcher logs
with pdsh and NCCL prefixes, dmesg, nvidia-smi, docker inspect, df, ...) and the planted
two-node job of tests/data/redaction/two_node_job.py, repeated with shifted numbers (so no
two copies are identical) up to --mb megabytes, then redacted in 1 MiB pieces as `collect`
does: one `learn()` pass over everything, one `text()` pass.

    python bench/redact_bench.py --mb 64
    python bench/redact_bench.py --mb 16 --backend python   # the pure-Python gates
    python bench/redact_bench.py --kinds launcher           # launcher logs and the job only
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import random
import sys
import time
from pathlib import Path

from crashlens.collect.files import text_chunks
from crashlens.redact import Redactor

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "tests" / "data" / "samples"
JOB = ROOT / "tests" / "data" / "redaction" / "two_node_job.py"


def _job_texts() -> list[str]:
    spec = importlib.util.spec_from_file_location("two_node_job", JOB)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.job_texts().values())


def _digit_table(shift: int) -> dict[int, int]:
    """Copy `shift`'s digits: rotated for the first ten copies, then shuffled (a seeded
    permutation per copy), so no two copies are identical and a cache of what was already
    redacted cannot flatter the figure."""
    digits = "0123456789"
    if shift < 10:
        return str.maketrans(digits, digits[shift:] + digits[:shift])
    shuffled = list(digits)
    random.Random(shift).shuffle(shuffled)
    return str.maketrans(digits, "".join(shuffled))


def build_log(megabytes: float, kinds: tuple[str, ...] = ()) -> bytes:
    """Real samples (of `kinds`, or all) and the planted job, repeated with shifted digits, to
    `megabytes` MB."""
    texts = [
        path.read_bytes().decode("utf-8", errors="replace")
        for path in sorted(SAMPLES.rglob("*"))
        if path.is_file()
        and path.suffix not in (".md", ".gz", ".zst", ".zip")
        and (not kinds or path.relative_to(SAMPLES).parts[0] in kinds)
    ]
    texts.extend(_job_texts())
    base = "\n".join(texts) + "\n"
    target = int(megabytes * 1_000_000)
    copies: list[str] = []
    size = 0
    shift = 0
    while size < target:
        copy = base.translate(_digit_table(shift)) if shift else base
        copies.append(copy)
        size += len(copy.encode())
        shift += 1
    return "".join(copies).encode("utf-8")[:target]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=64.0, help="size of the log (MB)")
    parser.add_argument("--backend", default="auto", choices=("auto", "hyperscan", "python"))
    parser.add_argument(
        "--kinds",
        default="",
        help="sample kinds to build the log from, comma-separated (default: every kind); "
        "`launcher` is the shape of the big logs collect copies",
    )
    args = parser.parse_args()
    data = build_log(args.mb, tuple(k for k in args.kinds.split(",") if k))
    megabytes = len(data) / 1_000_000
    redactor = Redactor(backend=args.backend)
    wall, cpu = time.perf_counter(), time.process_time()
    for text in text_chunks(io.BytesIO(data)):
        redactor.learn(text)
    learned = (time.perf_counter() - wall, time.process_time() - cpu)
    wall, cpu = time.perf_counter(), time.process_time()
    written = 0
    for text in text_chunks(io.BytesIO(data)):
        written += len(redactor.text(text))
    wrote = (time.perf_counter() - wall, time.process_time() - cpu)
    from crashlens.redact.redactor import gates

    def rate(*seconds: float) -> str:
        return f"{megabytes / sum(seconds):7.1f} MB/s"

    print(f"log: {megabytes:.1f} MB, gates on {gates(args.backend).backend}")
    print("          wall clock     CPU time (of this process: other work counts less)")
    print(f"learn: {rate(learned[0])}  {rate(learned[1])}")
    print(f"text:  {rate(wrote[0])}  {rate(wrote[1])}")
    both = f"{rate(learned[0], wrote[0])}  {rate(learned[1], wrote[1])}"
    print(f"both:  {both}  (collect reads each log twice)")
    print(f"pseudonyms: {len(redactor.mapping())}", file=sys.stderr)


if __name__ == "__main__":
    main()
