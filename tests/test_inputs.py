"""Input discovery and bad input: every odd input ends as a reason in the report, never a crash."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import tarfile
import zipfile
from pathlib import Path

import pytest
import zstandard

from crashlens.inputs.discover import Source, iter_inputs
from crashlens.inputs.read import binary_reason, iter_chunks
from crashlens.model import InputStatus
from crashlens.pipeline import analyze

BUS_ERROR = (
    b"RuntimeError: DataLoader worker (pid 8127) is killed by signal: Bus error. "
    b"It is possible that dataloader's workers are out of shared memory.\n"
)


def _statuses(paths: list[str]) -> dict[str, InputStatus]:
    report = analyze(paths)
    return {item.path: item for item in report.inputs}


def test_folder_walk_is_recursive_and_sorted(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "train.log").write_bytes(BUS_ERROR)
    (tmp_path / "a.log").write_bytes(b"hello\n")
    found = [i.path for i in iter_inputs([str(tmp_path)])]
    assert found == [str(tmp_path / "a.log"), str(tmp_path / "b" / "train.log")]


@pytest.mark.parametrize(
    ("suffix", "compress"),
    [
        (".gz", gzip.compress),
        (".bz2", bz2.compress),
        (".xz", lzma.compress),
        (".zst", lambda data: zstandard.ZstdCompressor().compress(data)),
    ],
)
def test_compressed_logs_are_read_in_stream(tmp_path: Path, suffix: str, compress) -> None:
    path = tmp_path / f"train.log{suffix}"
    path.write_bytes(compress(b"step 1\n" + BUS_ERROR))
    report = analyze([str(path)])
    assert report.inputs[0].status == "analyzed"
    assert report.verdict == "shm"
    assert report.causes[0].evidence[0].line == 2


def _tar_bytes(members: dict[str, bytes], mode: str = "w:gz") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_tar_gz_members_are_analyzed_without_extracting(tmp_path: Path) -> None:
    archive = tmp_path / "job.tar.gz"
    archive.write_bytes(_tar_bytes({"logs/train.log": BUS_ERROR, "logs/empty.txt": b""}))
    statuses = _statuses([str(archive)])
    assert statuses[f"{archive}!logs/train.log"].status == "analyzed"
    assert statuses[f"{archive}!logs/empty.txt"].reason == "empty file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.tar.gz"]


def test_zip_members_are_analyzed(tmp_path: Path) -> None:
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("train.log", BUS_ERROR)
        handle.writestr("nested/dmesg.txt.gz", gzip.compress(b"[ 1.0] hello\n"))
    report = analyze([str(archive)])
    paths = [i.path for i in report.inputs]
    assert f"{archive}!train.log" in paths
    assert f"{archive}!nested/dmesg.txt.gz" in paths
    assert report.verdict == "shm"


def test_truncated_archive_keeps_members_read_before_the_cut(tmp_path: Path) -> None:
    big = b"filler line\n" * 20000
    data = _tar_bytes({"a/train.log": BUS_ERROR, "b/big.log": big}, mode="w")
    archive = tmp_path / "cut.tar"
    archive.write_bytes(data[: len(data) // 2])
    report = analyze([str(archive)])
    statuses = {i.path: i for i in report.inputs}
    assert statuses[f"{archive}!a/train.log"].status == "analyzed"
    assert any("truncated" in (i.reason or "") for i in report.inputs)
    assert report.verdict == "shm"


def test_corrupt_gzip_is_skipped_with_reason(tmp_path: Path) -> None:
    path = tmp_path / "broken.log.gz"
    path.write_bytes(gzip.compress(BUS_ERROR * 100)[:40])
    good = tmp_path / "good.log"
    good.write_bytes(BUS_ERROR)
    statuses = _statuses([str(path), str(good)])
    assert statuses[str(good)].status == "analyzed"
    broken = statuses[str(path)]
    assert broken.status == "skipped"
    assert broken.reason and ("gzip" in broken.reason or "could not be read" in broken.reason)


def test_missing_path_and_empty_folder_get_reasons(tmp_path: Path) -> None:
    empty = tmp_path / "nothing"
    empty.mkdir()
    good = tmp_path / "train.log"
    good.write_bytes(BUS_ERROR)
    statuses = _statuses([str(tmp_path / "missing.log"), str(empty), str(good)])
    assert statuses[str(tmp_path / "missing.log")].reason == "no such file or directory"
    assert statuses[str(empty)].reason == "folder holds no files"
    assert statuses[str(good)].status == "analyzed"


def test_empty_file_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "empty.log"
    path.write_bytes(b"")
    assert _statuses([str(path)])[str(path)].reason == "empty file"


def test_binary_file_is_skipped_but_nul_runs_are_a_log(tmp_path: Path) -> None:
    elf = tmp_path / "core"
    elf.write_bytes(b"\x7fELF" + bytes(range(256)) * 50)
    crashed = tmp_path / "crashed.log"
    crashed.write_bytes(b"step 10\n" + b"\x00" * 70000 + b"\n" + BUS_ERROR)
    statuses = _statuses([str(elf), str(crashed)])
    assert statuses[str(elf)].status == "skipped"
    assert "binary" in (statuses[str(elf)].reason or "")
    assert statuses[str(crashed)].status == "analyzed"
    report = analyze([str(crashed)])
    assert report.verdict == "shm"
    assert report.causes[0].evidence[0].line == 3


def test_random_bytes_are_binary() -> None:
    noise = bytes((i * 37 + 11) % 256 for i in range(4096))
    assert binary_reason(noise) is not None
    assert binary_reason("déjà vu — ünïcödé log line\n".encode()) is None


def test_invalid_utf8_is_decoded_with_replacement(tmp_path: Path) -> None:
    path = tmp_path / "latin1.log"
    path.write_bytes("Fehler: Datei überschrieben\n".encode("latin-1") + BUS_ERROR)
    report = analyze([str(path)])
    assert report.inputs[0].status == "analyzed"
    assert report.verdict == "shm"


def test_utf16_log_is_transcoded(tmp_path: Path) -> None:
    path = tmp_path / "windows.log"
    path.write_bytes(BUS_ERROR.decode().encode("utf-16"))
    report = analyze([str(path)])
    assert report.verdict == "shm"
    assert "utf-16" in (report.inputs[0].reason or "")


def test_permission_denied_is_a_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "secret.log"
    path.write_bytes(BUS_ERROR)
    monkeypatch.setattr("os.access", lambda *args, **kwargs: False)
    assert _statuses([str(path)])[str(path)].reason == "permission denied"


def test_single_huge_line_is_bounded(tmp_path: Path) -> None:
    path = tmp_path / "one-line.log"
    path.write_bytes(b"x" * (3 * 1024 * 1024) + b" " + BUS_ERROR)
    report = analyze([str(path)])
    assert report.verdict == "shm"
    assert len(report.causes[0].evidence[0].text) < 2100


def test_chunks_end_at_newlines() -> None:
    data = b"".join(f"line {i}\n".encode() for i in range(5000))
    chunks = list(iter_chunks(io.BytesIO(data), chunk_bytes=1000))
    assert b"".join(chunks) == data
    assert all(chunk.endswith(b"\n") for chunk in chunks)


def test_stdin_is_an_input() -> None:
    report = analyze(["-"], stdin=io.BytesIO(BUS_ERROR))
    assert report.inputs[0].path == "<stdin>"
    assert report.verdict == "shm"


def test_inputs_are_never_modified(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_bytes(BUS_ERROR)
    before = path.stat().st_mtime_ns, path.read_bytes()
    analyze([str(tmp_path)])
    assert (path.stat().st_mtime_ns, path.read_bytes()) == before


def test_source_is_lazy() -> None:
    items = iter_inputs(["-"], io.BytesIO(b"abc\n"))
    first = next(items)
    assert isinstance(first, Source)


def test_links_inside_a_named_folder_are_followed_and_links_out_of_it_are_not(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"password=hunter2\n")
    logs = tmp_path / "logs"
    (logs / ".runs" / "r1").mkdir(parents=True)
    (logs / ".runs" / "r1" / "train.log").write_bytes(BUS_ERROR)
    (logs / "node0").mkdir()
    (logs / "node0" / "dmesg.txt").write_bytes(b"[ 1.0] hello\n")
    (logs / "train.log").symlink_to(logs / ".runs" / "r1" / "train.log")
    (logs / "again.txt").symlink_to("node0/dmesg.txt")
    (logs / "latest").symlink_to("node0")
    (logs / "leak.txt").symlink_to(outside / "secret.txt")
    (logs / "elsewhere").symlink_to(outside)
    (logs / "gone.log").symlink_to(logs / "missing.log")
    (logs / "loop").symlink_to(logs / "loop")
    report = analyze([str(logs)])
    statuses = {item.path: item for item in report.inputs}
    followed = statuses[str(logs / "train.log")]
    assert followed.status == "analyzed"
    assert "symbolic link to" in (followed.reason or "") and "followed" in (followed.reason or "")
    assert statuses[str(logs / "node0" / "dmesg.txt")].reason is None
    for name in ("again.txt", "latest"):
        assert "which is read there" in (statuses[str(logs / name)].reason or "")
    for name in ("leak.txt", "elsewhere"):
        assert statuses[str(logs / name)].status == "skipped"
        assert "outside the named folder" in (statuses[str(logs / name)].reason or "")
    for name in ("gone.log", "loop"):
        assert "broken symbolic link" in (statuses[str(logs / name)].reason or "")
    assert not any("secret" in item.path for item in report.inputs)
    assert report.verdict == "shm"
    # The folder's own files come first; links after them, in name order.
    paths = [item.path for item in report.inputs]
    assert paths.index(str(logs / "node0" / "dmesg.txt")) < paths.index(str(logs / "again.txt"))


def test_a_folder_link_inside_the_folder_is_walked_with_a_note(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    (logs / ".attempt-2").mkdir(parents=True)
    (logs / ".attempt-2" / "train.log").write_bytes(BUS_ERROR)
    (logs / "current").symlink_to(".attempt-2")
    report = analyze([str(logs)])
    (status,) = report.inputs
    assert status.path == str(logs / "current" / "train.log")
    assert "read through the symbolic link" in (status.reason or "")
    assert report.verdict == "shm"


def test_a_link_named_on_the_command_line_is_followed_and_says_so(tmp_path: Path) -> None:
    real = tmp_path / "elsewhere" / "train.log"
    real.parent.mkdir()
    real.write_bytes(BUS_ERROR)
    link = tmp_path / "named.log"
    link.symlink_to(real)
    (status,) = analyze([str(link)]).inputs
    assert status.status == "analyzed"
    assert "symbolic link named on the command line, followed" in (status.reason or "")


def test_link_members_of_archives_are_listed_as_skipped(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as handle:
        info = tarfile.TarInfo("logs/train.log")
        info.size = len(BUS_ERROR)
        handle.addfile(info, io.BytesIO(BUS_ERROR))
        for name, kind, target in (
            ("logs/passwd", tarfile.SYMTYPE, "/etc/passwd"),
            ("logs/hard.log", tarfile.LNKTYPE, "logs/train.log"),
        ):
            link = tarfile.TarInfo(name)
            link.type = kind
            link.linkname = target
            handle.addfile(link)
    archive = tmp_path / "job.tar.gz"
    archive.write_bytes(buffer.getvalue())
    zipped = tmp_path / "job.zip"
    with zipfile.ZipFile(zipped, "w") as handle:
        handle.writestr("train.log", BUS_ERROR)
        entry = zipfile.ZipInfo("passwd")
        entry.external_attr = (0o120777 << 16) | 0x20
        handle.writestr(entry, "/etc/passwd")
    statuses = _statuses([str(archive), str(zipped)])
    symlink = statuses[f"{archive}!logs/passwd"]
    assert symlink.status == "skipped"
    assert symlink.reason == "symbolic link member (to /etc/passwd): not followed"
    assert statuses[f"{archive}!logs/hard.log"].reason == (
        "hard link member (to logs/train.log): not followed"
    )
    assert statuses[f"{zipped}!passwd"].reason == "symbolic link member: not followed"
    assert statuses[f"{archive}!logs/train.log"].status == "analyzed"
    assert statuses[f"{zipped}!train.log"].status == "analyzed"
