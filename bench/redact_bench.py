"""Redaction speed on large realistic logs: MB/s of the learning pass, the writing pass and both.

Each log is built from real inputs: the shared samples of tests/data/samples (launcher logs
with pdsh and NCCL prefixes, dmesg, nvidia-smi, docker inspect, df, ...) and the planted
two-node job of tests/data/redaction/two_node_job.py, repeated with shifted numbers (so no
two copies are identical) up to --mb megabytes, then redacted in 1 MiB pieces as `collect`
does: one `learn()` pass over everything, one `text()` pass, with a fresh Redactor.

Three shapes by default, each measured --rounds times (wall clock and this process's CPU time;
on a shared machine the CPU figure is the steadier one, and both should be read over rounds):
`mixed` (every sample kind), `launcher` (launcher logs and the job only, the shape of the
big logs collect copies: most lines carry a host prefix) and `dmesg` (kernel logs and the job:
a syslog date and host on most lines); then the total of each round over all of them.
One process, one core: the figures are single-core.

    python bench/redact_bench.py --mb 32 --rounds 2
    python bench/redact_bench.py --mb 16 --backend python   # the pure-Python gates
    python bench/redact_bench.py --kinds launcher           # one shape: launcher logs and the job
    python bench/redact_bench.py --digests before.json      # what every text redacts to (below)
    python bench/redact_bench.py --digests after.json --compare before.json
    python bench/redact_bench.py --mb 16 --phases           # where the CPU time goes
    python bench/redact_bench.py --archive /tmp/arch        # a job-log archive's files

`--archive DIR` measures the files of a folder instead, as `collect` sees a bundle: every file
learned, then every file written, through one Redactor. A realistic archive comes from the
shared generator (`python ../shared/bench/gen_archive.py --out /tmp/arch --gb 0.05`): launcher
logs with tqdm progress bars (characters Latin-1 lacks, on a third of the bytes), NCCL floods,
rank prefixes, dmesg and nvidia-smi files.

`--digests` measures nothing: it writes the SHA-256 of what every corpus and sample file (and
4 MB of each bench log) redacts to, on both gate backends, each file alone (learned, then
written, path included) and all files through one Redactor (all learned, then all written;
the mapping too), so a change meant to be only faster can be shown byte-identical.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import io
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


Timing = tuple[float, float]
"""(wall clock seconds, CPU seconds of this process)."""


def measure(data: bytes, backend: str) -> tuple[Timing, Timing, int]:
    """The learning pass's and the writing pass's times over `data`, and the pseudonyms made."""
    return measure_files([data], backend)


def measure_files(files: list[bytes], backend: str) -> tuple[Timing, Timing, int]:
    """The learning pass's and the writing pass's times over `files` through one Redactor (all
    learned, then all written, as `collect` does), and the pseudonyms made."""
    redactor = Redactor(backend=backend)
    wall, cpu = time.perf_counter(), time.process_time()
    for data in files:
        for text in text_chunks(io.BytesIO(data)):
            redactor.learn(text)
    learned = (time.perf_counter() - wall, time.process_time() - cpu)
    wall, cpu = time.perf_counter(), time.process_time()
    for data in files:
        for text in text_chunks(io.BytesIO(data)):
            redactor.text(text)
    wrote = (time.perf_counter() - wall, time.process_time() - cpu)
    return learned, wrote, len(redactor.mapping())


def archive_rounds(root: Path, backend: str, rounds: int) -> None:
    """Print the MB/s of `measure_files` over every file under `root`, `rounds` times."""
    files = [path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()]
    megabytes = sum(map(len, files)) / 1_000_000
    print(f"{'archive':>10} {'MB':>6} {'round':>5} {'learn':>13} {'text':>13} {'both':>13}")
    for round_ in range(1, rounds + 1):
        learned, wrote, pseudonyms = measure_files(files, backend)
        rates = " ".join(
            _rate(megabytes, *timings) for timings in ((learned,), (wrote,), (learned, wrote))
        )
        print(f"{'archive':>10} {megabytes:6.1f} {round_:5d} {rates}")
    print(f"archive: {len(files)} files, {pseudonyms} pseudonyms", file=sys.stderr)


PHASES = (
    ("gates", "crashlens.redact.gates", "Gates", "lines"),
    ("rows", "crashlens.redact.redactor", "Redactor", "_line_edits"),
    ("names compiled", "crashlens.redact.gates", "Literals", "build"),
    ("names found", "crashlens.redact.redactor", "Redactor", "_known"),
)
"""The phases `--phases` times: the gates' pass (which lines each row may touch), the rows
on those lines (the learning pass's work after the gates, rows found again included), the
learned names' matcher (compiled once the learning is done) and their replacement (less the
compiling, which it calls)."""


def _timed(function: Callable[..., Any], spent: dict[str, float], name: str) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent[name] += time.process_time() - started

    return timed


def phases(data: bytes, backend: str) -> dict[str, float]:
    """CPU seconds of each of PHASES over one measurement of `data`, and of each pass."""
    spent: dict[str, float] = dict.fromkeys([name for name, *_ in PHASES], 0.0)
    originals: list[tuple[type, str, Any]] = []
    for name, module_name, owner_name, method in PHASES:
        owner = getattr(importlib.import_module(module_name), owner_name)
        original = owner.__dict__[method]
        originals.append((owner, method, original))
        if isinstance(original, classmethod):
            setattr(owner, method, classmethod(_timed(original.__func__, spent, name)))
        else:
            setattr(owner, method, _timed(original, spent, name))
    try:
        learned, wrote, _ = measure(data, backend)
    finally:
        for owner, method, original in originals:
            setattr(owner, method, original)
    spent["names found"] -= spent["names compiled"]
    spent["learn, all"] = learned[1]
    spent["text, all"] = wrote[1]
    return spent


def _rate(megabytes: float, *timings: Timing) -> str:
    wall = megabytes / sum(t[0] for t in timings)
    cpu = megabytes / sum(t[1] for t in timings)
    return f"{wall:6.1f}/{cpu:<6.1f}"


SHAPES = {"mixed": (), "launcher": ("launcher",), "dmesg": ("dmesg",)}
"""The default logs: every sample kind, launcher logs alone, kernel logs alone."""

DIGEST_ROOTS = (ROOT / "corpus", ROOT / "tests" / "data", ROOT / "examples")
"""Where the files of `--digests` come from (every file, compressed ones as bytes)."""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _digest_inputs() -> dict[str, str]:
    """Name -> text of every file under DIGEST_ROOTS and of 4 MB of each bench log."""
    inputs: dict[str, str] = {}
    for root in DIGEST_ROOTS:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                raw = path.read_bytes()
                inputs[str(path.relative_to(ROOT))] = raw.decode("utf-8", "surrogateescape")
    for name, kinds in SHAPES.items():
        inputs[f"bench:{name}"] = build_log(4, kinds).decode("utf-8", "surrogateescape")
    return inputs


def digests(backend: str) -> dict[str, str]:
    """What every input redacts to: alone (`alone:`), and through one shared Redactor
    (`shared:`, the mapping last)."""
    inputs = _digest_inputs()
    found: dict[str, str] = {}
    for name, text in inputs.items():
        redactor = Redactor(backend=backend)
        pieces = list(text_chunks(io.BytesIO(text.encode("utf-8", "surrogateescape"))))
        for piece in pieces:
            redactor.learn(piece)
        redactor.learn(name)
        written = "".join(redactor.text(piece) for piece in pieces)
        found[f"alone:{name}"] = _digest(redactor.name(name) + "\0" + written)
    shared = Redactor(backend=backend)
    for name, text in inputs.items():
        shared.learn(name)
        shared.learn(text)
    for name, text in inputs.items():
        found[f"shared:{name}"] = _digest(shared.name(name) + "\0" + shared.text(text))
    found["shared:mapping"] = _digest(json.dumps(shared.mapping(), ensure_ascii=False))
    return found


def write_digests(path: Path, compare: Path | None) -> int:
    """Both backends' digests to `path`; with `compare`, the keys whose digest differs."""
    lists = {backend: digests(backend) for backend in ("hyperscan", "python")}
    path.write_text(json.dumps(lists, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    counted = sum(len(found) for found in lists.values())
    if compare is None:
        print(f"{counted} digests written to {path}")
        return 0
    before = json.loads(compare.read_text(encoding="utf-8"))
    differ = [
        f"{backend} {key}"
        for backend, found in lists.items()
        for key, value in found.items()
        if before.get(backend, {}).get(key) != value
    ]
    for line in differ[:40]:
        print("differs:", line)
    print(f"{counted} digests, {len(differ)} differ from {compare}")
    return 1 if differ else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=32.0, help="size of each log (MB)")
    parser.add_argument("--backend", default="auto", choices=("auto", "hyperscan", "python"))
    parser.add_argument("--rounds", type=int, default=2, help="measurements of each log")
    parser.add_argument(
        "--kinds",
        default="",
        help="one log of these sample kinds, comma-separated (default: the mixed, launcher and "
        "dmesg logs); `launcher` is the shape of the big logs collect copies",
    )
    parser.add_argument(
        "--phases", action="store_true", help="CPU seconds of each phase (one round per log)"
    )
    parser.add_argument("--archive", type=Path, help="measure the files under this folder")
    parser.add_argument("--digests", type=Path, help="write output digests here, time nothing")
    parser.add_argument("--compare", type=Path, help="with --digests: the digests to match")
    args = parser.parse_args()
    if args.digests is not None:
        raise SystemExit(write_digests(args.digests, args.compare))
    if args.archive is not None:
        print("MB/s as wall clock / CPU time of this process")
        archive_rounds(args.archive, args.backend, args.rounds)
        return
    shapes = dict(SHAPES)
    if args.kinds:
        shapes = {args.kinds: tuple(k for k in args.kinds.split(",") if k)}
    from crashlens.redact.redactor import gates

    if args.phases:
        for name, kinds in shapes.items():
            data = build_log(args.mb, kinds)
            spent = phases(data, args.backend)
            shown = " ".join(f"{phase}={seconds:.3f}" for phase, seconds in spent.items())
            print(f"{name} ({len(data) / 1e6:.1f} MB, CPU seconds): {shown}")
        return
    print(f"gates on {gates(args.backend).backend}; MB/s as wall clock / CPU time of this process")
    print(f"{'log':>10} {'MB':>6} {'round':>5} {'learn':>13} {'text':>13} {'both':>13}")
    rounds: dict[int, list[Timing]] = {round_: [] for round_ in range(1, args.rounds + 1)}
    total = 0.0
    for name, kinds in shapes.items():
        data = build_log(args.mb, kinds)
        megabytes = len(data) / 1_000_000
        total += megabytes
        for round_ in range(1, args.rounds + 1):
            learned, wrote, pseudonyms = measure(data, args.backend)
            rates = " ".join(
                _rate(megabytes, *timings) for timings in ((learned,), (wrote,), (learned, wrote))
            )
            print(f"{name:>10} {megabytes:6.1f} {round_:5d} {rates}")
            rounds[round_] += [learned, wrote]
        print(f"{name}: {pseudonyms} pseudonyms", file=sys.stderr)
    if len(shapes) > 1:
        for round_, timings in rounds.items():
            print(f"{'total':>10} {total:6.1f} {round_:5d} {'':>27} {_rate(total, *timings)}")
    print("both: collect reads each log twice (learn, then text); total: all logs, one round")


if __name__ == "__main__":
    main()
