"""Hostile inputs: bombs, endless streams, huge members, damaged compressed data.

Each input is generated here, small on disk. Every one must end as an analyzed input (cut,
with the reason) or a skipped one (with the reason), never a crash, and the other inputs of
the same run must still be analyzed. Limits are lowered through the environment so the tests
stay fast; `bench/hostile_inputs.py` measures the real sizes with the default limits.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import subprocess
import sys
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard

from crashlens.inputs.discover import Source, iter_inputs
from crashlens.inputs.limits import MIB, InputLimits, from_env
from crashlens.model import InputStatus
from crashlens.pipeline import analyze

BUS_ERROR = (
    b"RuntimeError: DataLoader worker (pid 8127) is killed by signal: Bus error. "
    b"It is possible that dataloader's workers are out of shared memory.\n"
)
FILLER = b"".join(b"step %d loss 1.%04d lr 3e-4\n" % (i, (i * 7919) % 10000) for i in range(4000))
VARIED = b"".join(
    b"step %d loss %d.%04d\n" % (i, i % 7, (i * 7919) % 10007) for i in range(150_000)
)
"""About 3 MiB of lines that never repeat: every compressor's blocks come evenly sized."""


@pytest.fixture(autouse=True)
def _small_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 1 MiB ratio floor: a bomb is recognised after 1 MiB instead of 32."""
    monkeypatch.setenv("CRASHLENS_RATIO_FLOOR_MB", "1")


def _statuses(paths: list[str]) -> dict[str, InputStatus]:
    return {item.path: item for item in analyze(paths).inputs}


def _gzip_stream(block: bytes, count: int) -> bytes:
    """`block` repeated `count` times, gzipped without holding the whole in memory."""
    encoder = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [encoder.compress(block) for _ in range(count)]
    return b"".join([*parts, encoder.flush()])


def _zip_bytes(members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _zip_of_zeros(size: int) -> bytes:
    buffer = io.BytesIO()
    with (
        zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive,
        archive.open("zeros.log", "w", force_zip64=True) as member,
    ):
        for _ in range(size // MIB):
            member.write(bytes(MIB))
    return buffer.getvalue()


def test_a_gzip_bomb_is_cut_with_the_reason_and_the_other_inputs_are_analyzed(
    tmp_path: Path,
) -> None:
    bomb = tmp_path / "bomb.log.gz"
    bomb.write_bytes(_gzip_stream(bytes(MIB), 64))  # 64 MiB of NULs in 64 KiB
    good = tmp_path / "train.log"
    good.write_bytes(BUS_ERROR)
    statuses = _statuses([str(bomb), str(good)])
    assert statuses[str(good)].status == "analyzed"
    cut = statuses[str(bomb)]
    assert cut.status == "analyzed"
    assert "expands more than 200x" in (cut.reason or "")
    assert "CRASHLENS_MAX_RATIO" in (cut.reason or "")


def test_a_zip_member_that_says_it_is_a_bomb_is_cut_and_its_siblings_are_read(
    tmp_path: Path,
) -> None:
    archive = tmp_path / "job.zip"
    outer = io.BytesIO()
    with zipfile.ZipFile(outer, "w", zipfile.ZIP_DEFLATED) as handle:
        handle.writestr("huge.log", bytes(48 * MIB))
        handle.writestr("train.log", BUS_ERROR)
    archive.write_bytes(outer.getvalue())
    assert archive.stat().st_size < 200 * 1024
    report = analyze([str(archive)])
    statuses = {item.path: item for item in report.inputs}
    huge = statuses[f"{archive}!huge.log"]
    assert huge.status == "analyzed"
    assert "it says it expands more than 200x" in (huge.reason or "")
    assert statuses[f"{archive}!train.log"].status == "analyzed"
    assert report.verdict == "shm"


def test_a_nested_zip_bomb_stops_after_one_bomb_and_reads_the_ordinary_members(
    tmp_path: Path,
) -> None:
    part = _zip_of_zeros(32 * MIB)
    archive = tmp_path / "nested.zip"
    members = {f"part-{i}.zip": part for i in range(8)}
    members["logs/train.log"] = BUS_ERROR
    archive.write_bytes(_zip_bytes(members))
    report = analyze([str(archive)])
    statuses = {item.path: item for item in report.inputs}
    assert statuses[f"{archive}!logs/train.log"].status == "analyzed"
    assert report.verdict == "shm"
    rest = statuses[str(archive)]
    assert rest.status == "skipped"
    assert "more members not read" in (rest.reason or "")
    assert "expands more than 200x" in (rest.reason or "")
    read = [path for path in statuses if path.endswith("zeros.log")]
    assert len(read) == 1  # one bomb spent the input's budget; the other seven were not opened


def test_archives_nested_too_deep_are_skipped_with_the_reason(tmp_path: Path) -> None:
    data = _zip_bytes({"train.log": BUS_ERROR})
    for level in range(4):
        data = _zip_bytes({f"level-{level}.zip": data})
    archive = tmp_path / "deep.zip"
    archive.write_bytes(data)
    reasons = [item.reason or "" for item in analyze([str(archive)]).inputs]
    assert any("nested more than 3 deep" in reason for reason in reasons)


def test_a_member_over_the_member_limit_is_cut_and_keeps_its_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRASHLENS_MAX_MEMBER_MB", "1")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as handle:
        for name, data in (("big.log", BUS_ERROR + FILLER * 40), ("small.log", FILLER)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            handle.addfile(info, io.BytesIO(data))
    archive = tmp_path / "job.tar.gz"
    archive.write_bytes(buffer.getvalue())
    report = analyze([str(archive)])
    statuses = {item.path: item for item in report.inputs}
    big = statuses[f"{archive}!big.log"]
    assert big.status == "analyzed"
    assert "cut after 1 MiB (CRASHLENS_MAX_MEMBER_MB)" in (big.reason or "")
    assert statuses[f"{archive}!small.log"].status == "analyzed"
    assert statuses[f"{archive}!small.log"].reason is None
    assert report.verdict == "shm"


class _Endless(io.RawIOBase):
    """What `yes` writes into a pipe: a line, forever. Counts what was taken from it."""

    def __init__(self, line: bytes) -> None:
        super().__init__()
        self._block = line * (65536 // len(line))
        self.taken = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        count = min(len(buffer), len(self._block))
        buffer[:count] = self._block[:count]
        self.taken += count
        return count


def test_an_endless_stdin_is_read_in_chunks_and_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRASHLENS_MAX_STDIN_MB", "4")
    endless = _Endless(b"y\n")
    stdin = io.BufferedReader(endless)
    report = analyze(["-"], stdin=stdin)
    (status,) = report.inputs
    assert status.status == "analyzed"
    assert "cut after 4 MiB (CRASHLENS_MAX_STDIN_MB)" in (status.reason or "")
    assert endless.taken < 6 * MIB  # streamed: never read far past the limit


def test_stdin_is_streamed_not_read_whole() -> None:
    endless = _Endless(BUS_ERROR)
    items = iter_inputs(["-"], io.BufferedReader(endless))
    first = next(items)
    assert isinstance(first, Source)
    assert endless.taken < MIB  # discovery looked at the head only


COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.compress,
    "bzip2": bz2.compress,
    "xz": lzma.compress,
    "zstd": lambda data: zstandard.ZstdCompressor(write_checksum=True).compress(data),
}


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_a_truncated_compressed_log_keeps_what_decoded_before_the_cut(
    tmp_path: Path, kind: str
) -> None:
    data = COMPRESSORS[kind](BUS_ERROR + VARIED)
    path = tmp_path / "train.log.cut"
    path.write_bytes(data[: len(data) * 2 // 3])
    report = analyze([str(path)])
    (status,) = report.inputs
    assert status.status == "analyzed"
    assert "truncated" in (status.reason or "")
    assert "what decoded before the cut was read" in (status.reason or "")
    assert report.verdict == "shm"


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_a_corrupt_compressed_log_keeps_what_decoded_before_the_damage(
    tmp_path: Path, kind: str
) -> None:
    data = bytearray(COMPRESSORS[kind](BUS_ERROR + VARIED))
    for offset in range(len(data) * 3 // 4, len(data) * 3 // 4 + 64):
        data[offset] ^= 0x5A
    path = tmp_path / "train.log.damaged"
    path.write_bytes(bytes(data))
    report = analyze([str(path)])
    (status,) = report.inputs
    assert status.status == "analyzed"
    assert "corrupt" in (status.reason or "")
    assert report.verdict == "shm"


def test_concatenated_gzip_members_are_all_read(tmp_path: Path) -> None:
    path = tmp_path / "rotated.log.gz"
    path.write_bytes(gzip.compress(FILLER) + gzip.compress(BUS_ERROR))
    report = analyze([str(path)])
    assert report.inputs[0].reason is None
    assert report.verdict == "shm"


def test_a_zip_inside_a_tarball_is_read_and_one_too_big_to_hold_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRASHLENS_MAX_NESTED_ZIP_MB", "1")
    small = _zip_bytes({"train.log": BUS_ERROR})
    large = _zip_bytes({"noise.log": os.urandom(2 * MIB)}, zipfile.ZIP_STORED)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as handle:
        for name, data in (("small.zip", small), ("large.zip", large)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            handle.addfile(info, io.BytesIO(data))
    archive = tmp_path / "job.tgz"
    archive.write_bytes(buffer.getvalue())
    report = analyze([str(archive)])
    statuses = {item.path: item for item in report.inputs}
    assert statuses[f"{archive}!small.zip!train.log"].status == "analyzed"
    skipped = statuses[f"{archive}!large.zip"]
    assert skipped.status == "skipped"
    assert "CRASHLENS_MAX_NESTED_ZIP_MB" in (skipped.reason or "")
    assert report.verdict == "shm"


def test_limits_come_from_the_environment_and_bad_values_keep_the_defaults() -> None:
    limits = from_env({"CRASHLENS_MAX_MEMBER_MB": "2", "CRASHLENS_MAX_RATIO": "50"})
    assert limits.member_bytes == 2 * MIB
    assert limits.ratio == 50
    assert from_env({"CRASHLENS_MAX_MEMBER_MB": "lots", "CRASHLENS_MAX_RATIO": "-1"}) == (
        InputLimits()
    )
    assert from_env({"CRASHLENS_MAX_RATIO": "nan"}) == InputLimits()


_UNDER_LIMIT = """
import resource, sys
limit = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from crashlens.pipeline import analyze
report = analyze([sys.argv[1]])
print(report.inputs[0].status, report.inputs[0].reason)
"""


def _tar_gz_of_one_member(name: str, block: bytes, count: int) -> bytes:
    """A tar.gz whose one member is `block` repeated `count` times, built as a stream."""
    info = tarfile.TarInfo(name)
    info.size = len(block) * count
    encoder = zlib.compressobj(1, zlib.DEFLATED, 31)
    parts = [encoder.compress(info.tobuf(format=tarfile.GNU_FORMAT))]
    parts.extend(encoder.compress(block) for _ in range(count))
    padding = -info.size % tarfile.BLOCKSIZE
    parts.append(encoder.compress(bytes(padding + 2 * tarfile.BLOCKSIZE)))
    parts.append(encoder.flush())
    return b"".join(parts)


def test_a_member_bigger_than_the_memory_limit_is_streamed(tmp_path: Path) -> None:
    """A 448 MiB member under a 400 MiB address-space limit: read whole, it could not fit."""
    archive = tmp_path / "job.tar.gz"
    archive.write_bytes(_tar_gz_of_one_member("train.log", FILLER, 448 * MIB // len(FILLER)))
    env = {**os.environ, "CRASHLENS_MAX_RATIO": "100000"}  # read it all, whatever its ratio
    done = subprocess.run(
        [sys.executable, "-c", _UNDER_LIMIT, str(archive), str(400 * MIB)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("analyzed None")


def test_a_tarball_stops_at_a_bomb_member_rather_than_decompress_past_it(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as handle:
        noise = os.urandom(MIB)  # does not compress: the archive as a whole expands little
        members = (
            ("a/noise.bin", noise),
            ("a/train.log", BUS_ERROR),
            ("b/core.log", bytes(16 * MIB)),
        )
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            handle.addfile(info, io.BytesIO(data))
        info = tarfile.TarInfo("c/after.log")
        info.size = len(FILLER)
        handle.addfile(info, io.BytesIO(FILLER))
    archive = tmp_path / "job.tar.gz"
    archive.write_bytes(buffer.getvalue())
    report = analyze([str(archive)])
    statuses = {item.path: item for item in report.inputs}
    assert statuses[f"{archive}!a/train.log"].status == "analyzed"
    assert "expands more than 200x" in (statuses[f"{archive}!b/core.log"].reason or "")
    assert f"{archive}!c/after.log" not in statuses
    rest = statuses[str(archive)]
    assert rest.reason == (
        "rest of the archive not read: b/core.log expands like a compression bomb, "
        "and the members after it lie past all of it"
    )
    assert report.verdict == "shm"


class _Failing(io.RawIOBase):
    """A pipe whose reads fail after the first block (a disk or network error)."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        self.reads += 1
        if self.reads > 1:
            raise OSError(5, "Input/output error")
        data = gzip.compress(BUS_ERROR)[:20]
        buffer[: len(data)] = data
        return len(data)


def test_an_input_whose_reads_fail_is_a_reason_and_the_next_input_is_read(
    tmp_path: Path,
) -> None:
    good = tmp_path / "train.log"
    good.write_bytes(BUS_ERROR)
    items = list(iter_inputs(["-", str(good)], io.BufferedReader(_Failing())))
    reasons = [item.reason for item in items if isinstance(item, InputStatus)]
    assert reasons and "Input/output error" in (reasons[0] or "")
    assert [item.path for item in items if isinstance(item, Source)] == [str(good)]


def test_a_tarball_stops_where_skipping_a_member_would_spend_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRASHLENS_MAX_ARCHIVE_MB", "2")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as handle:
        for name, data in (("big.log", VARIED), ("train.log", BUS_ERROR)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            handle.addfile(info, io.BytesIO(data))
    archive = tmp_path / "job.tar.gz"
    archive.write_bytes(buffer.getvalue())
    items = list(iter_inputs([str(archive)]))  # what `crashlens detect` does: heads only
    assert [item.path for item in items if isinstance(item, Source)] == [f"{archive}!big.log"]
    (rest,) = [item for item in items if isinstance(item, InputStatus)]
    assert (rest.reason or "").startswith(
        "rest of the archive not read: reaching what follows big.log means decompressing"
    )
    assert "CRASHLENS_MAX_ARCHIVE_MB" in (rest.reason or "")


def _tar_bytes(members: dict[str, bytes], mode: str = "w") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as handle:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            handle.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _patch_central_entry(raw: bytearray, name: bytes, offset: int, value: int) -> None:
    """Set a 2-byte field of `name`'s entry in a zip's central directory (what zipfile reads)."""
    at = raw.find(b"PK\x01\x02")
    while at >= 0:
        length = int.from_bytes(raw[at + 28 : at + 30], "little")
        if raw[at + 46 : at + 46 + length] == name:
            raw[at + offset : at + offset + 2] = value.to_bytes(2, "little")
            return
        at = raw.find(b"PK\x01\x02", at + 4)
    raise AssertionError(name)


def test_odd_zip_members_each_get_a_reason(tmp_path: Path) -> None:
    archive = tmp_path / "odd.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("train.log", BUS_ERROR)
        handle.writestr("empty.log", b"")
        locked = zipfile.ZipInfo("locked.log")
        handle.writestr(locked, b"ciphertext")
        strange = zipfile.ZipInfo("strange.log")
        handle.writestr(strange, b"data")
    raw = bytearray(archive.read_bytes())
    _patch_central_entry(raw, b"locked.log", 8, 0x1)  # general purpose flags: encrypted
    _patch_central_entry(raw, b"strange.log", 10, 99)  # compression method 99 (AES)
    archive.write_bytes(bytes(raw))
    statuses = _statuses([str(archive)])
    assert statuses[f"{archive}!train.log"].status == "analyzed"
    assert statuses[f"{archive}!empty.log"].reason == "empty file"
    assert statuses[f"{archive}!locked.log"].reason == "encrypted member: cannot be read"
    assert "archive member cannot be read" in (statuses[f"{archive}!strange.log"].reason or "")


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("empty.tar.gz", gzip.compress(_tar_bytes({}), mtime=0), "archive holds no files"),
        ("empty.zip", _zip_bytes({}), "archive holds no files"),
        (
            "nested.tar.gz",
            gzip.compress(_tar_bytes({"x.zip": b"PK\x03\x04broken"}), mtime=0),
            "corrupt",
        ),
        ("nothing.gz", gzip.compress(b"", mtime=0), "empty after gzip decompression"),
    ],
    # Named by file: the data is bytes, and an id made of them must be the same in every
    # pytest-xdist worker (gzip stamps the time, hence mtime=0 too).
    ids=["empty.tar.gz", "empty.zip", "nested.tar.gz", "nothing.gz"],
)
def test_empty_and_broken_archives_say_why(
    tmp_path: Path, name: str, data: bytes, reason: str
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    reasons = [item.reason or "" for item in analyze([str(path)]).inputs]
    assert any(reason in found for found in reasons), reasons


def test_archives_and_compressed_data_on_stdin_are_read(tmp_path: Path) -> None:
    for data in (
        _tar_bytes({"logs/train.log": BUS_ERROR}, "w:gz"),
        _zip_bytes({"logs/train.log": BUS_ERROR}),
        bz2.compress(BUS_ERROR),
    ):
        report = analyze(["-"], stdin=io.BytesIO(data))
        assert report.verdict == "shm"
        assert report.inputs[0].path.startswith("<stdin>")


@pytest.mark.parametrize("kind", ["bzip2", "xz", "zstd"])
def test_concatenated_streams_are_all_read_and_trailing_garbage_is_noted(
    tmp_path: Path, kind: str
) -> None:
    compress = COMPRESSORS[kind]
    path = tmp_path / "rotated.log.x"
    path.write_bytes(compress(FILLER) + compress(BUS_ERROR) + b"\x00" * 8 + b"garbage!")
    report = analyze([str(path)])
    assert report.verdict == "shm"
    assert report.inputs[0].reason == f"data after the end of the {kind} stream was ignored"


def test_a_collect_record_inside_an_archive_is_not_evidence(tmp_path: Path) -> None:
    archive = tmp_path / "bundle.tar.gz"
    manifest = b"# crashlens collect manifest\nstep dmesg: failed (Operation not permitted)\n"
    archive.write_bytes(_tar_bytes({"MANIFEST.txt": manifest, "train.log": BUS_ERROR}, "w:gz"))
    statuses = _statuses([str(archive)])
    assert "record of its own steps" in (statuses[f"{archive}!MANIFEST.txt"].reason or "")
