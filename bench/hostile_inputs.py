"""Hostile inputs through `crashlens analyze`: peak RSS, wall time, tracebacks, what it says.

Builds each input under bench/out/hostile/ (small on disk, reused), runs `crashlens analyze`
on it in a child process with the default limits, and prints one row per input: size on
disk, wall time, CPU time (user + system: on a shared machine the wall time counts the
waits for a core too), peak RSS, whether a traceback reached stderr, the verdict and the
reasons the inputs table gives. The issue's targets: < 400 MB RSS, no traceback, no input
over 10 s.

    python bench/hostile_inputs.py [--only NAME ...] [--backend auto|python|hyperscan]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tarfile
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out" / "hostile"
MIB = 1024 * 1024
BUS_ERROR = (
    b"RuntimeError: DataLoader worker (pid 8127) is killed by signal: Bus error. "
    b"It is possible that dataloader's workers are out of shared memory.\n"
)
LAUNCHER_LINE = (
    b"[rank3]:[E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation "
    b"timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600012 ms\n"
)


def _gzip_blocks(blocks: Iterator[bytes], wbits: int = 31) -> bytes:
    encoder = zlib.compressobj(6, zlib.DEFLATED, wbits)
    parts = [encoder.compress(block) for block in blocks]
    parts.append(encoder.flush())
    return b"".join(parts)


def _repeat(block: bytes, total: int) -> Iterator[bytes]:
    for _ in range(total // len(block)):
        yield block


def _tar_gz(name: str, blocks: Iterator[bytes], size: int, extra: dict[str, bytes]) -> bytes:
    """A tar.gz with one big member streamed from `blocks`, then the `extra` members."""

    def tar_stream() -> Iterator[bytes]:
        info = tarfile.TarInfo(name)
        info.size = size
        yield info.tobuf(format=tarfile.GNU_FORMAT)
        yield from blocks
        yield bytes(-size % tarfile.BLOCKSIZE)
        for other, data in extra.items():
            small = tarfile.TarInfo(other)
            small.size = len(data)
            yield small.tobuf(format=tarfile.GNU_FORMAT)
            yield data + bytes(-len(data) % tarfile.BLOCKSIZE)
        yield bytes(2 * tarfile.BLOCKSIZE)

    return _gzip_blocks(tar_stream())


def _zip_with_zeros(size: int, extra: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("huge.log", "w", force_zip64=True) as member:
            for block in _repeat(bytes(16 * MIB), size):
                member.write(block)
        for name, data in extra.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def member_1gib_zip() -> bytes:
    return _zip_with_zeros(1024 * MIB, {"train.log": BUS_ERROR})


def member_1gib_lines_tar_gz() -> bytes:
    block = b"".join(
        b"step %d loss 1.%04d lr 3e-4\n" % (i, (i * 7919) % 10007) for i in range(40000)
    )
    size = (1024 * MIB // len(block)) * len(block)
    return _tar_gz("logs/rank0.log", _repeat(block, size), size, {"logs/train.log": BUS_ERROR})


def member_4gib_tar_gz() -> bytes:
    size = 4096 * MIB
    return _tar_gz("core.log", _repeat(bytes(16 * MIB), size), size, {"train.log": BUS_ERROR})


def nested_zip_bomb() -> bytes:
    """About 20 KB holding 10 GiB: ten zips of one 1 GiB member each, and a real log."""
    part = _zip_with_zeros(1024 * MIB, {})
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for index in range(10):
            archive.writestr(f"part-{index}.zip", part)
        archive.writestr("logs/train.log", BUS_ERROR)
    return buffer.getvalue()


def gzip_bomb_10gib() -> bytes:
    return _gzip_blocks(_repeat(bytes(16 * MIB), 10 * 1024 * MIB))


def launcher_lines_1gib_gz() -> bytes:
    return _gzip_blocks(_repeat(LAUNCHER_LINE * 10000, 1024 * MIB))


def launcher_lines_1gib() -> Iterator[bytes]:
    """A plain file (no ratio limit applies): every line a launcher event, 1 GiB of them."""
    return _repeat(LAUNCHER_LINE * 10000, 1024 * MIB)


def truncated_gz() -> bytes:
    lines = b"".join(
        b"step %d loss %d.%04d\n" % (i, i % 7, (i * 7919) % 10007) for i in range(300000)
    )
    data = _gzip_blocks(iter([BUS_ERROR, lines, lines]))
    return data[: len(data) * 2 // 3]


@dataclass(frozen=True)
class Case:
    name: str
    file: str
    build: Callable[[], bytes | Iterator[bytes]] | None
    """None: the input is `yes` on stdin."""


CASES = (
    Case("1 GiB zip member (zeros)", "member-1gib.zip", member_1gib_zip),
    Case("1 GiB tar.gz member (lines)", "member-1gib-lines.tar.gz", member_1gib_lines_tar_gz),
    Case("4 GiB tar.gz member", "member-4gib.tar.gz", member_4gib_tar_gz),
    Case("nested zip bomb (10 GiB)", "nested-bomb.zip", nested_zip_bomb),
    Case("gzip bomb (10 GiB)", "bomb-10gib.log.gz", gzip_bomb_10gib),
    Case("1 GiB launcher lines .gz", "launcher-1gib.log.gz", launcher_lines_1gib_gz),
    Case("1 GiB launcher lines (plain)", "launcher-1gib.log", launcher_lines_1gib),
    Case("truncated .gz", "truncated.log.gz", truncated_gz),
    Case("endless stdin (yes)", "-", None),
)


def _build(file: str) -> None:
    """Write one input (run in a child, so that this process stays small: a child's peak RSS
    counts the pages it shared with its parent before exec)."""
    case = next(c for c in CASES if c.file == file)
    assert case.build is not None
    path = OUT / case.file
    OUT.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(path.suffix + ".tmp")
    data = case.build()
    with temporary.open("wb") as output:
        for block in [data] if isinstance(data, bytes) else data:
            output.write(block)
    temporary.rename(path)


def _input(case: Case) -> Path | None:
    if case.build is None:
        return None
    path = OUT / case.file
    if not path.exists():
        started = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--build", case.file], check=True)
        size = path.stat().st_size
        print(f"  built {case.file} ({size:,} bytes) in {time.perf_counter() - started:.1f} s")
    return path


def _run(case: Case, backend: str) -> dict[str, object]:
    path = _input(case)
    report = OUT / (case.file.replace("-", "stdin") + ".json")
    command = [sys.executable, "-m", "crashlens", "analyze", str(path or "-"), "-f", "json"]
    command += (
        ["-o", str(report), "--backend", backend] if backend != "auto" else ["-o", str(report)]
    )
    feeder = None
    started = time.perf_counter()
    if path is None:
        feeder = subprocess.Popen(["yes"], stdout=subprocess.PIPE)
        child = subprocess.Popen(command, stdin=feeder.stdout, stderr=subprocess.PIPE)
        assert feeder.stdout is not None
        feeder.stdout.close()  # the child holds the pipe; `yes` dies when the child stops reading
    else:
        child = subprocess.Popen(command, stderr=subprocess.PIPE)
    assert child.stderr is not None
    stderr = child.stderr.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if feeder is not None:
        feeder.kill()
        feeder.wait()
    verdict, reasons = "-", []
    if report.exists():
        data = json.loads(report.read_text(encoding="utf-8"))
        verdict = data.get("verdict", "-")
        reasons = [
            f"{i['path'].rsplit('/', 1)[-1]}: {i['status']}"
            + (f" ({i['reason']})" if i.get("reason") else "")
            for i in data.get("inputs", [])
        ]
        report.unlink()
    return {
        "size": path.stat().st_size if path else None,
        "seconds": seconds,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "rss_mib": usage.ru_maxrss / 1024,
        "exit": child.returncode,
        "traceback": "Traceback" in stderr,
        "verdict": verdict,
        "reasons": reasons,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="names of cases (substring match)")
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--build", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build:
        _build(args.build)
        return
    chosen = [c for c in CASES if not args.only or any(o in c.name for o in args.only)]
    print(
        f"{'input':30} {'on disk':>12} {'wall s':>7} {'CPU s':>6} {'RSS MiB':>8} exit tb  verdict"
    )
    worst_seconds = worst_cpu = worst_rss = 0.0
    tracebacks = 0
    for case in chosen:
        result = _run(case, args.backend)
        size = f"{result['size']:,}" if result["size"] is not None else "-"
        seconds = float(result["seconds"])  # type: ignore[arg-type]
        cpu = float(result["cpu_seconds"])  # type: ignore[arg-type]
        rss = float(result["rss_mib"])  # type: ignore[arg-type]
        worst_seconds, worst_rss = max(worst_seconds, seconds), max(worst_rss, rss)
        worst_cpu = max(worst_cpu, cpu)
        tracebacks += bool(result["traceback"])
        print(
            f"{case.name:30} {size:>12} {seconds:7.2f} {cpu:6.2f} {rss:8.0f} {result['exit']:>4} "
            f"{'yes' if result['traceback'] else 'no':3}  {result['verdict']}"
        )
        for reason in result["reasons"]:  # type: ignore[attr-defined]
            print(f"    {reason[:180]}")
    print(
        f"worst: {worst_seconds:.2f} s wall, {worst_cpu:.2f} s CPU, {worst_rss:.0f} MiB RSS, "
        f"{tracebacks} tracebacks"
    )


if __name__ == "__main__":
    main()
