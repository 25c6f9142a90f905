"""Tar extension headers (pax, GNU long names) are bounded: an absurd one is refused with a reason.

tarfile reads a pax header or a GNU long name whole, whatever size its header declares; a
crafted archive could make it hold gigabytes. Here each crafted tar is built with tarfile
itself (the extension header's block written by hand where tarfile would refuse to write it).
"""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

from crashlens.inputs.archives import TAR_HEADER_BYTES, TAR_HEADER_CHAIN
from crashlens.model import InputState, Report
from crashlens.pipeline import analyze

BUS_ERROR = (
    b"RuntimeError: DataLoader worker (pid 8127) is killed by signal: Bus error. "
    b"It is possible that dataloader's workers are out of shared memory.\n"
)


def _member(name: str, data: bytes) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info.tobuf(format=tarfile.GNU_FORMAT) + data + bytes(-len(data) % tarfile.BLOCKSIZE)


def _extension(kind: bytes, payload: bytes, declared: int | None = None) -> bytes:
    """An extension header block of type `kind` holding `payload` (declaring `declared`)."""
    info = tarfile.TarInfo("././@LongLink" if kind == tarfile.GNUTYPE_LONGNAME else "pax")
    info.type = kind
    info.size = len(payload) if declared is None else declared
    block = info.tobuf(format=tarfile.GNU_FORMAT)  # base-256 sizes: past 8 GiB too
    return block + payload + bytes(-len(payload) % tarfile.BLOCKSIZE)


def _pax_record(key: str, value: str) -> bytes:
    body = f" {key}={value}\n"
    length = len(body) + 1
    while len(f"{length}{body}") != length:
        length += 1
    return f"{length}{body}".encode()


def _end() -> bytes:
    return bytes(2 * tarfile.BLOCKSIZE)


def _analyze(path: Path, data: bytes) -> Report:
    path.write_bytes(data)
    return analyze([str(path)])


def _reasons(report: Report) -> list[str]:
    return [f"{i.path}: {i.reason}" for i in report.inputs if i.reason]


def test_a_huge_pax_header_is_refused_and_the_members_before_it_are_read(tmp_path: Path) -> None:
    size = 8 * 1024 * 1024  # real bytes (eight times the bound), compressed to almost nothing
    pax = _extension(tarfile.XHDTYPE, _pax_record("comment", "x" * (size - 20)))
    data = _member("logs/train.log", BUS_ERROR) + pax + _member("logs/after.log", b"ok\n")
    report = _analyze(tmp_path / "job.tar.gz", gzip.compress(data + _end(), compresslevel=1))
    assert report.verdict.value == "shm", _reasons(report)
    archive = [i for i in report.inputs if i.path.endswith("job.tar.gz")]
    assert [i.status for i in archive] == [InputState.SKIPPED], report.inputs
    reason = archive[0].reason or ""
    assert reason.startswith("rest of the archive not read: a pax header of 8.0 MiB"), reason
    assert not any(i.path.endswith("after.log") for i in report.inputs)


def test_a_huge_gnu_long_name_is_refused_with_the_reason(tmp_path: Path) -> None:
    name = b"logs/" + b"n" * (5 * 1024 * 1024) + b".log\x00"
    data = _member("first.log", BUS_ERROR) + _extension(tarfile.GNUTYPE_LONGNAME, name)
    data += _member("placeholder", b"Bus error (core dumped)\n") + _end()
    report = _analyze(tmp_path / "job.tar", data)
    reasons = _reasons(report)
    assert any("a GNU long name header of 5.0 MiB" in r for r in reasons), reasons
    assert any(i.path.endswith("first.log") for i in report.inputs), report.inputs


def test_a_declared_size_past_the_data_is_refused_before_anything_is_read(
    tmp_path: Path,
) -> None:
    """A header that claims gigabytes in a small file: refused from its header alone."""
    pax = _extension(tarfile.XHDTYPE, _pax_record("path", "a.log"), declared=8 * 1024**3)
    report = _analyze(tmp_path / "job.tar", _member("train.log", BUS_ERROR) + pax + _end())
    reasons = _reasons(report)
    assert any("a pax header of 8192 MiB" in r for r in reasons), reasons


def test_a_chain_of_extension_headers_is_refused(tmp_path: Path) -> None:
    chain = b"".join(
        _extension(tarfile.XHDTYPE, _pax_record("comment", str(i)))
        for i in range(TAR_HEADER_CHAIN + 4)
    )
    data = _member("train.log", BUS_ERROR) + chain + _member("x.log", b"x\n") + _end()
    reasons = _reasons(_analyze(tmp_path / "job.tar", data))
    assert any(f"more than {TAR_HEADER_CHAIN} extension headers" in r for r in reasons), reasons


def test_ordinary_long_names_and_pax_headers_are_read(tmp_path: Path) -> None:
    """What GNU tar and pax archives really hold: long paths, UTF-8 names, global headers."""
    deep = "logs/" + "/".join(["node-0042-of-a-long-cluster-name"] * 12) + "/train.log"
    buffer = io.BytesIO()
    for fmt, name in ((tarfile.GNU_FORMAT, "gnu"), (tarfile.PAX_FORMAT, "pax")):
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w", format=fmt) as archive:
            archive.pax_headers = {"comment": "global"} if fmt == tarfile.PAX_FORMAT else {}
            info = tarfile.TarInfo(deep.replace("train", "tr\u00e4in"))
            info.size = len(BUS_ERROR)
            info.mtime = 1.5
            archive.addfile(info, io.BytesIO(BUS_ERROR))
        report = _analyze(tmp_path / f"{name}.tar", buffer.getvalue())
        assert report.verdict.value == "shm", (name, _reasons(report))
        paths = [i.path for i in report.inputs]
        assert any(p.endswith("tr\u00e4in.log") and len(p) > 300 for p in paths), paths
        assert not _reasons(report), _reasons(report)
    assert TAR_HEADER_BYTES >= 64 * 1024  # room for real extended attributes
