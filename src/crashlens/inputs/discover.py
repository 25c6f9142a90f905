"""Walk the paths a user named and yield every input inside them, never extracting to disk.

Folders are walked recursively (sorted, so reports are stable); `.tar*`, `.tgz` and `.zip`
archives are read member by member; `.gz`, `.bz2`, `.xz` and `.zst` files are decompressed
as streams. Anything that cannot be opened becomes a skipped `InputStatus` with a reason, and
the walk goes on. Sources are yielded lazily: a source's stream is only valid until the
generator is advanced, which is what lets a truncated archive still give its first members.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import stat
import sys
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

from crashlens.model import InputState, InputStatus

MAX_NESTING = 3
"""Archives inside archives are followed this deep, then skipped with a reason."""

_COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst", ".lzma")
_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst")
COLLECT_RECORD_MARKERS = (b"# crashlens collect manifest", b'{\n  "crashlens_collect":')
"""How the files `crashlens collect` writes about its own steps begin (MANIFEST.txt,
collect-report.json): skipped, since a step's refusal message is not evidence of the failure."""


@dataclass(frozen=True, slots=True)
class Source:
    """One input to analyze: a display path and a way to read its (decompressed) bytes."""

    path: str
    """Display path: as the user gave it; members of archives as `archive!member`."""
    open: Callable[[], IO[bytes]]
    """Open a fresh binary stream. Valid until the discovery generator advances."""
    size_bytes: int | None
    """Size on disk or in the archive (compressed sources: the compressed size)."""
    name: str
    """The file name without compression suffixes, used as a weak hint for detection."""


Item = Source | InputStatus


def skipped(path: str, reason: str, size: int | None = None) -> InputStatus:
    """An input that could not be analyzed, with the reason shown to the user."""
    return InputStatus(
        path=path, kind=None, status=InputState.SKIPPED, reason=reason, size_bytes=size
    )


def iter_inputs(paths: list[str], stdin: IO[bytes] | None = None) -> Iterator[Item]:
    """Yield every source found under `paths` (and on stdin for `-`), or why it was skipped."""
    for given in paths:
        if given == "-":
            stream = stdin if stdin is not None else sys.stdin.buffer
            data = stream.read()
            yield from _from_bytes("<stdin>", "stdin", data, depth=0)
            continue
        yield from _from_path(Path(given), given, depth=0)


def _from_path(path: Path, display: str, depth: int) -> Iterator[Item]:
    try:
        info = path.stat()
    except FileNotFoundError:
        yield skipped(display, "no such file or directory")
        return
    except PermissionError:
        yield skipped(display, "permission denied")
        return
    except OSError as error:
        yield skipped(display, f"cannot be read: {error.strerror or error}")
        return
    if stat.S_ISDIR(info.st_mode):
        yield from _walk_dir(path, display)
        return
    if not stat.S_ISREG(info.st_mode):
        yield skipped(display, "not a regular file (device, socket or pipe)")
        return
    if not os.access(path, os.R_OK):
        yield skipped(display, "permission denied", info.st_size)
        return
    if info.st_size == 0:
        yield skipped(display, "empty file", 0)
        return
    yield from _from_file(path, display, info.st_size, depth)


def _walk_dir(root: Path, display: str) -> Iterator[Item]:
    found = False
    errors: list[OSError] = []
    for dirpath, dirnames, filenames in os.walk(root, onerror=errors.append):
        dirnames.sort()
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for filename in sorted(filenames):
            if filename.startswith("."):
                continue
            found = True
            full = Path(dirpath) / filename
            shown = os.path.join(display, os.path.relpath(full, root))
            yield from _from_path(full, shown, depth=0)
    for error in errors:
        where = error.filename or display
        yield skipped(str(where), f"folder cannot be listed: {error.strerror or error}")
    if not found and not errors:
        yield skipped(display, "folder holds no files")


def _strip_compression(name: str) -> str:
    lower = name.lower()
    for suffix in _COMPRESSED_SUFFIXES:
        if lower.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _is_tar_name(name: str) -> bool:
    return name.lower().endswith(_TAR_SUFFIXES)


def _from_file(path: Path, display: str, size: int, depth: int) -> Iterator[Item]:
    def opener() -> IO[bytes]:
        return path.open("rb")

    try:
        with path.open("rb") as stream:
            magic = stream.read(262)
    except OSError as error:
        yield skipped(display, f"cannot be read: {error.strerror or error}", size)
        return
    yield from _dispatch(display, path.name, opener, magic, size, depth)


def _from_bytes(display: str, name: str, data: bytes, depth: int) -> Iterator[Item]:
    if not data:
        yield skipped(display, "empty input", 0)
        return
    yield from _dispatch(display, name, lambda: io.BytesIO(data), data[:262], len(data), depth)


def _compression_of(magic: bytes) -> str | None:
    if magic.startswith(b"\x1f\x8b"):
        return "gzip"
    if magic.startswith(b"BZh"):
        return "bzip2"
    if magic.startswith(b"\xfd7zXZ\x00"):
        return "xz"
    if magic.startswith(b"(\xb5/\xfd"):
        return "zstd"
    return None


class _Owning(io.RawIOBase):
    """A decompressing reader that also closes the compressed stream under it."""

    def __init__(self, outer: IO[bytes], inner: IO[bytes]) -> None:
        super().__init__()
        self._outer = outer
        self._inner = inner

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        return self._outer.read(-1 if size is None else size)

    def readinto(self, buffer: Any) -> int:
        data = self._outer.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        try:
            self._outer.close()
        finally:
            self._inner.close()
            super().close()


def _decompressing(kind: str, raw: IO[bytes]) -> IO[bytes]:
    outer: IO[bytes]
    if kind == "gzip":
        outer = cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="rb"))
    elif kind == "bzip2":
        outer = bz2.BZ2File(raw, mode="rb")  # noqa: SIM115 (closed by _Owning)
    elif kind == "xz":
        outer = lzma.LZMAFile(raw, mode="rb")  # noqa: SIM115 (closed by _Owning)
    else:
        import zstandard  # deferred: only needed for .zst inputs

        outer = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
    return cast(IO[bytes], _Owning(outer, raw))


def _is_tar(magic: bytes) -> bool:
    return len(magic) >= 262 and magic[257:262] == b"ustar"


def _dispatch(
    display: str,
    name: str,
    opener: Callable[[], IO[bytes]],
    magic: bytes,
    size: int,
    depth: int,
) -> Iterator[Item]:
    """Route one byte source by its content: zip, tar, compressed stream, or a plain input."""
    if magic.startswith(COLLECT_RECORD_MARKERS):
        yield skipped(display, "crashlens collect's record of its own steps (not evidence)", size)
        return
    if magic.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        yield from _nested(display, size, depth, lambda: _zip_members(display, opener, depth))
        return
    if _is_tar(magic):
        yield from _nested(display, size, depth, lambda: _tar_members(display, opener, depth))
        return
    compression = _compression_of(magic)
    if compression is None:
        yield Source(path=display, open=opener, size_bytes=size, name=name)
        return
    inner_name = _strip_compression(name)

    def open_decompressed() -> IO[bytes]:
        return _decompressing(compression, opener())

    try:
        with open_decompressed() as stream:
            inner_magic = stream.read(262)
    except (OSError, EOFError, lzma.LZMAError, ValueError) as error:
        yield skipped(display, f"corrupt {compression} data: {error}", size)
        return
    except Exception as error:  # zstandard raises its own ZstdError
        yield skipped(display, f"corrupt {compression} data: {error}", size)
        return
    if not inner_magic:
        yield skipped(display, f"empty after {compression} decompression", size)
        return
    if _is_tar(inner_magic) or _is_tar_name(name):
        yield from _nested(
            display, size, depth, lambda: _tar_members(display, open_decompressed, depth)
        )
        return
    yield Source(path=display, open=open_decompressed, size_bytes=size, name=inner_name)


def _nested(
    display: str, size: int, depth: int, members: Callable[[], Iterator[Item]]
) -> Iterator[Item]:
    if depth >= MAX_NESTING:
        yield skipped(display, f"archive nested more than {MAX_NESTING} deep", size)
        return
    yield from members()


def _tar_members(display: str, opener: Callable[[], IO[bytes]], depth: int) -> Iterator[Item]:
    found = False
    try:
        with opener() as raw, tarfile.open(fileobj=raw, mode="r|*") as archive:
            for member in archive:
                if not member.isfile():
                    continue
                shown = f"{display}!{member.name}"
                if member.size == 0:
                    found = True
                    yield skipped(shown, "empty file", 0)
                    continue
                stream = archive.extractfile(member)
                if stream is None:
                    continue
                found = True
                data = stream.read()
                base = os.path.basename(member.name)
                yield from _from_bytes(shown, base, data, depth + 1)
    except (tarfile.TarError, OSError, EOFError, lzma.LZMAError, zipfile.BadZipFile) as error:
        yield skipped(display, f"archive is truncated or corrupt: {error}")
        return
    if not found:
        yield skipped(display, "archive holds no files")


def _zip_members(display: str, opener: Callable[[], IO[bytes]], depth: int) -> Iterator[Item]:
    with opener() as raw:
        try:
            archive = zipfile.ZipFile(raw if raw.seekable() else io.BytesIO(raw.read()))
        except (zipfile.BadZipFile, OSError, EOFError) as error:
            yield skipped(display, f"archive is truncated or corrupt: {error}")
            return
        with archive:
            yield from _zip_entries(display, archive, depth)


def _zip_entries(display: str, archive: zipfile.ZipFile, depth: int) -> Iterator[Item]:
    infos = [info for info in archive.infolist() if not info.is_dir()]
    if not infos:
        yield skipped(display, "archive holds no files")
    for info in infos:
        shown = f"{display}!{info.filename}"
        try:
            data = archive.read(info)
        except (zipfile.BadZipFile, OSError, EOFError, lzma.LZMAError) as error:
            yield skipped(shown, f"archive member is corrupt: {error}", info.compress_size)
            continue
        except RuntimeError as error:  # encrypted member
            yield skipped(shown, f"archive member cannot be read: {error}")
            continue
        yield from _from_bytes(shown, os.path.basename(info.filename), data, depth + 1)
