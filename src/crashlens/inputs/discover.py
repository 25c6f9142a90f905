"""Walk the paths a user named and yield every input inside them, never extracting to disk.

Folders are walked recursively (sorted, so reports are stable); `.tar*`, `.tgz` and `.zip`
archives are read member by member, each member streamed; `.gz`, `.bz2`, `.xz` and `.zst`
files and stdin are streamed too, never read whole. Everything that comes out of a decoder
counts against the limits of `inputs/limits.py`: past one, a stream is cut (what was read is
kept, and the input says so) and an archive's remaining members are listed as not read. A
truncated or corrupt compressed stream keeps what decoded before the damage, with a note.
Anything that cannot be opened becomes a skipped `InputStatus` with a reason, and the walk goes
on. Sources are yielded lazily: a source's stream is only valid until the generator is
advanced, which is what lets a truncated archive still give its first members. A file that is
not on a local disk (an object in a store, opened by `batch/remote.py`) goes through the same
readers from a file-like object: `iter_opened`.

Symbolic links, by policy:
- a path named on the command line is followed, whatever it is (the user chose it);
- inside a named folder, a link is followed when its target lies inside that same folder
  (said in the input's notes), and listed as skipped when it leads out of it, is broken or
  points to what the walk reads anyway; links are taken after the folder's own files, so a
  file is listed under its real name first;
- a link member of an archive is listed as skipped, never followed.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, cast

from crashlens.inputs.archives import buffered_zip, nested, tar_members, zip_members
from crashlens.inputs.limits import ENVIRONMENT, Budget, InputLimits, from_env
from crashlens.inputs.source import Item, Source, skipped
from crashlens.inputs.streams import Bounded, Counting, Decompressed, Notes, peek, read_once

__all__ = ["COLLECT_RECORD_MARKERS", "Item", "Source", "iter_inputs", "iter_opened", "skipped"]

MAGIC_BYTES = 262
"""Enough of a stream to tell a tar (its `ustar` mark ends at 262), a zip or a compressor."""
_COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst", ".lzma")
_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst")
COLLECT_RECORD_MARKERS = (b"# crashlens collect manifest", b'{\n  "crashlens_collect":')
"""How the files `crashlens collect` writes about its own steps begin (MANIFEST.txt,
collect-report.json): skipped, since a step's refusal message is not evidence of the failure."""


def iter_inputs(
    paths: list[str], stdin: IO[bytes] | None = None, limits: InputLimits | None = None
) -> Iterator[Item]:
    """Yield every source found under `paths` (and on stdin for `-`), or why it was skipped.

    `limits`: how far decompressed data may expand (default: `limits.from_env()`)."""
    limits = limits if limits is not None else from_env()
    for given in paths:
        try:
            yield from _from_given(given, stdin, limits)
        except Exception as error:  # an I/O error (or a bug) under one path spares the others
            shown = "<stdin>" if given == "-" else given
            yield skipped(shown, f"reading stopped: {type(error).__name__}: {error}")


def _from_given(given: str, stdin: IO[bytes] | None, limits: InputLimits) -> Iterator[Item]:
    if given == "-":
        yield from _from_stdin(stdin if stdin is not None else sys.stdin.buffer, limits)
        return
    path = Path(given)
    base: tuple[str, ...] = ()
    if path.is_symlink():
        base = (f"a symbolic link named on the command line, followed (to {_target(path)})",)
    yield from _from_path(path, given, limits, base, None)


def _from_stdin(stream: IO[bytes], limits: InputLimits) -> Iterator[Item]:
    budget = Budget(limits)
    notes = Notes()
    counted = cast(IO[bytes], Counting(stream, budget, owns=False))
    variable = ENVIRONMENT["stdin_bytes"][0]
    capped = Bounded(counted, notes, cap=limits.stdin_bytes, cap_reason=variable, owns=False)
    yield from _route("<stdin>", "stdin", cast(IO[bytes], capped), None, 0, budget, notes)


def _target(link: Path) -> str:
    try:
        return os.readlink(link)
    except OSError:
        return "?"


@dataclass(slots=True)
class _Walk:
    """One named folder being walked: where it really is and what was read already."""

    top: str
    """The folder's real path: a link is followed only to a target under it."""
    display: str
    """The folder as the user named it."""
    files: set[tuple[int, int]] = field(default_factory=set)
    folders: set[tuple[int, int]] = field(default_factory=set)


def _from_path(
    path: Path, display: str, limits: InputLimits, base: tuple[str, ...], walk: _Walk | None
) -> Iterator[Item]:
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
        walk = walk or _Walk(top=os.path.realpath(path), display=display)
        yield from _walk_dir(path, display, limits, base, walk)
        return
    if not stat.S_ISREG(info.st_mode):
        yield skipped(display, "not a regular file (device, socket or pipe)")
        return
    if walk is not None:
        walk.files.add((info.st_dev, info.st_ino))
    if not os.access(path, os.R_OK):
        yield skipped(display, "permission denied", info.st_size)
        return
    if info.st_size == 0:
        yield skipped(display, "empty file", 0)
        return
    yield from _from_file(path, display, info.st_size, limits, base)


def _walk_dir(
    root: Path, display: str, limits: InputLimits, base: tuple[str, ...], walk: _Walk
) -> Iterator[Item]:
    found = False
    errors: list[OSError] = []
    links: list[tuple[Path, str]] = []
    for dirpath, dirnames, filenames in os.walk(root, onerror=errors.append):
        try:
            here = os.stat(dirpath)
            walk.folders.add((here.st_dev, here.st_ino))
        except OSError:
            pass
        kept = []
        for dirname in sorted(dirnames):
            if dirname.startswith("."):
                continue
            full = Path(dirpath) / dirname
            if full.is_symlink():  # os.walk lists a folder link but does not enter it
                found = True
                links.append((full, os.path.join(display, os.path.relpath(full, root))))
            else:
                kept.append(dirname)
        dirnames[:] = kept
        for filename in sorted(filenames):
            if filename.startswith("."):
                continue
            found = True
            full = Path(dirpath) / filename
            shown = os.path.join(display, os.path.relpath(full, root))
            if full.is_symlink():
                links.append((full, shown))
                continue
            yield from _from_path(full, shown, limits, base, walk)
    for error in errors:
        where = error.filename or display
        yield skipped(str(where), f"folder cannot be listed: {error.strerror or error}")
    for link, shown in sorted(links, key=lambda item: item[1]):
        yield from _follow(link, shown, limits, base, walk)
    if not found and not errors:
        yield skipped(display, "folder holds no files")


def _follow(
    link: Path, shown: str, limits: InputLimits, base: tuple[str, ...], walk: _Walk
) -> Iterator[Item]:
    """A symbolic link met inside a named folder: followed only to a target inside it."""
    try:
        target = Path(os.path.realpath(link))
        info = target.stat()
    except OSError:
        yield skipped(shown, "broken symbolic link (its target is missing or loops)")
        return
    rel = os.path.relpath(target, walk.top)
    if rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
        yield skipped(shown, "symbolic link to a path outside the named folder: not followed")
        return
    where = walk.display if rel == os.curdir else os.path.join(walk.display, rel)
    key = (info.st_dev, info.st_ino)
    if stat.S_ISDIR(info.st_mode):
        if key in walk.folders:
            yield skipped(shown, f"symbolic link to {where}, which is read there")
            return
        note = f"read through the symbolic link {shown} (to {where}, inside the named folder)"
        yield from _walk_dir(target, shown, limits, (*base, note), walk)
        return
    if key in walk.files:
        yield skipped(shown, f"symbolic link to {where}, which is read there")
        return
    note = f"a symbolic link to {where} (inside the named folder), followed"
    yield from _from_path(target, shown, limits, (*base, note), walk)


def _strip_compression(name: str) -> str:
    lower = name.lower()
    for suffix in _COMPRESSED_SUFFIXES:
        if lower.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _is_tar_name(name: str) -> bool:
    return name.lower().endswith(_TAR_SUFFIXES)


def _is_tar(magic: bytes) -> bool:
    return len(magic) >= MAGIC_BYTES and magic[257:262] == b"ustar"


def _is_zip(magic: bytes) -> bool:
    return magic.startswith((b"PK\x03\x04", b"PK\x05\x06"))


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


def iter_opened(
    display: str,
    name: str,
    size: int,
    opener: Callable[[], IO[bytes]],
    limits: InputLimits | None = None,
) -> Iterator[Item]:
    """One file that is not on a local disk (an object in a store), read through `opener` as
    a local file is read: routed by its content, archives member by member, compressed
    data streamed, nothing staged on disk. `opener` is called once to sniff the head and
    once to read (each call a fresh stream); what it raises makes the file skipped."""
    limits = limits if limits is not None else from_env()
    if size == 0:
        yield skipped(display, "empty file", 0)
        return
    try:
        yield from _from_opener(opener, display, name, size, limits, ())
    except Exception as error:  # as in iter_inputs: one broken file never stops a job
        yield skipped(display, f"reading stopped: {type(error).__name__}: {error}")


def _from_file(
    path: Path, display: str, size: int, limits: InputLimits, base: tuple[str, ...]
) -> Iterator[Item]:
    yield from _from_opener(lambda: path.open("rb"), display, path.name, size, limits, base)


def _from_opener(
    opener: Callable[[], IO[bytes]],
    display: str,
    name: str,
    size: int,
    limits: InputLimits,
    base: tuple[str, ...],
) -> Iterator[Item]:
    try:
        with opener() as probe:
            magic = probe.read(MAGIC_BYTES)
    except OSError as error:
        yield skipped(display, f"cannot be read: {error.strerror or error}", size)
        return
    if magic.startswith(COLLECT_RECORD_MARKERS):
        yield skipped(display, "crashlens collect's record of its own steps (not evidence)", size)
        return
    if not (_is_zip(magic) or _is_tar(magic) or _compression_of(magic)):
        # A plain file is read as it is, whatever its size: no limit applies to it.
        notes = Notes(*base)
        yield Source(display, opener, size, name, notes)
        return
    budget = Budget(limits, stored=size)
    try:
        raw = opener()
    except OSError as error:
        yield skipped(display, f"cannot be read: {error.strerror or error}", size)
        return
    with Counting(raw, budget) as counted:
        stream = cast(IO[bytes], counted)
        if _is_zip(magic):
            yield from _zip_file(display, stream, size, budget, Notes(*base))
        else:
            yield from _route(display, name, stream, size, 0, budget, Notes(*base))


def _zip_file(
    display: str, stream: IO[bytes], size: int, budget: Budget, notes: Notes
) -> Iterator[Item]:
    import zipfile

    try:
        archive = zipfile.ZipFile(stream)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as error:
        yield skipped(display, f"archive is truncated or corrupt: {error}", size)
        return
    with archive:
        yield from zip_members(display, archive, 0, budget, notes, _route)


def _problem(notes: Notes) -> str | None:
    """What went wrong while reading, if anything (not how the input was reached)."""
    found = notes()
    return found[-1] if len(found) > len(notes.base) else None


def _route(
    display: str,
    name: str,
    stream: IO[bytes],
    size: int | None,
    depth: int,
    budget: Budget,
    notes: Notes,
) -> Iterator[Item]:
    """Route one stream by its content: zip, tar, compressed stream, or a plain input."""
    limits = budget.limits
    head, stream = peek(stream, MAGIC_BYTES)
    if not head:
        yield skipped(display, _problem(notes) or "empty input", size)
        return
    if head.startswith(COLLECT_RECORD_MARKERS):
        yield skipped(display, "crashlens collect's record of its own steps (not evidence)", size)
        return
    if _is_zip(head):
        held = stream
        yield from nested(
            display,
            size,
            depth,
            limits,
            lambda: buffered_zip(display, held, size, depth, budget, notes, _route),
        )
        return
    if _is_tar(head):
        plain = stream
        yield from nested(
            display,
            size,
            depth,
            limits,
            lambda: tar_members(display, plain, depth, budget, notes, _route),
        )
        return
    compression = _compression_of(head)
    if compression is None:
        yield _streamed(display, name, stream, size, budget, notes)
        return
    decoded = cast(IO[bytes], Decompressed(stream, compression, budget, notes))
    inner, decoded = peek(decoded, MAGIC_BYTES)
    if not inner:
        reason = _problem(notes) or f"empty after {compression} decompression"
        yield skipped(display, reason, size)
        return
    if _is_tar(inner) or _is_tar_name(name):
        unpacked = decoded
        yield from nested(
            display,
            size,
            depth,
            limits,
            lambda: tar_members(display, unpacked, depth, budget, notes, _route),
        )
        return
    if _is_zip(inner):
        held = decoded
        yield from nested(
            display,
            size,
            depth,
            limits,
            lambda: buffered_zip(display, held, size, depth, budget, notes, _route),
        )
        return
    yield _streamed(display, _strip_compression(name), decoded, size, budget, notes)


def _streamed(
    display: str, name: str, stream: IO[bytes], size: int | None, budget: Budget, notes: Notes
) -> Source:
    """A streamed input, cut at the member limit, readable once."""
    bounded = Bounded(
        stream, notes, cap=budget.limits.member_bytes, budget=budget, counts="analyzed"
    )
    opener = read_once(cast(IO[bytes], bounded))
    return Source(path=display, open=opener, size_bytes=size, name=name, notes=notes)
