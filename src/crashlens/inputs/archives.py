"""The members of a tar or zip archive, streamed one at a time, never extracted or read whole.

Each member is handed to `route` (discovery's dispatcher) as a stream, so a member that is
itself compressed or an archive is opened the same way a file on disk would be. Link members
are listed as skipped with the reason, never followed. When the input's budget is spent the
walk stops and the archive gets one row saying what was not read and why.
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from typing import IO, Any, cast

from crashlens.inputs.limits import ENVIRONMENT, Budget, InputLimits, mib, over_ratio
from crashlens.inputs.source import Item, skipped
from crashlens.inputs.streams import Bounded, Notes, read_up_to

Route = Callable[[str, str, IO[bytes], int | None, int, Budget, Notes], Iterator[Item]]
"""discover's dispatcher: (display, name, stream, size, depth, budget, notes) -> items."""


TAR_HEADER_BYTES = 1024 * 1024
"""What the extension headers in front of one tar member may take, together (pax and global
pax headers, GNU long names and links, GNU sparse maps). tarfile reads each one whole; real
ones hold a path, a few times and extended attributes: kilobytes."""
TAR_HEADER_CHAIN = 8
"""Extension headers in a row in front of one member (tarfile nests a call per header)."""
_EXTENSION_HEADERS = {
    tarfile.GNUTYPE_LONGNAME: "GNU long name",
    tarfile.GNUTYPE_LONGLINK: "GNU long link name",
    tarfile.GNUTYPE_SPARSE: "GNU sparse",
    tarfile.XHDTYPE: "pax",
    tarfile.XGLTYPE: "global pax",
    tarfile.SOLARIS_XHDTYPE: "Solaris pax",
}


class TarHeaderRefused(Exception):
    """A tar member's extension headers are too big or too many to be read: the walk stops."""


class _HeaderReader:
    """The archive's stream while extension headers are read: refuses, before it reads, what
    would take the headers of one member past `TAR_HEADER_BYTES`."""

    def __init__(self, stream: Any, outer: _HeaderReader | None, what: str) -> None:
        self.stream = stream
        self.outer = outer
        self.what = what
        self.chain: int = outer.chain + 1 if outer is not None else 1
        self.count = 0

    def read(self, size: int) -> bytes:
        self.spend(size)
        data: bytes = self.stream.read(size)
        return data

    def spend(self, size: int) -> None:
        self.count += size
        if self.count > TAR_HEADER_BYTES:
            raise TarHeaderRefused(
                f"the {self.what} header of a member would take {mib(self.count)} or more "
                f"(a tar member's headers may take {mib(TAR_HEADER_BYTES)})"
            )
        if self.outer is not None:
            self.outer.spend(size)

    def tell(self) -> int:
        position: int = self.stream.tell()
        return position


class _BoundedTarInfo(tarfile.TarInfo):
    """A member header whose extension headers are read within bounds (tarfile would read a
    pax header or a long name of any declared size into memory whole)."""

    def _proc_member(self, archive: tarfile.TarFile) -> tarfile.TarInfo:
        process = cast(Callable[[tarfile.TarFile], tarfile.TarInfo], super()._proc_member)  # type: ignore[misc]
        what = _EXTENSION_HEADERS.get(self.type)
        if what is None:
            return process(archive)
        outer = archive.fileobj if isinstance(archive.fileobj, _HeaderReader) else None
        reader = _HeaderReader(archive.fileobj, outer, what)
        if reader.chain > TAR_HEADER_CHAIN:
            raise TarHeaderRefused(
                f"more than {TAR_HEADER_CHAIN} extension headers in a row in front of a member"
            )
        if self.type != tarfile.GNUTYPE_SPARSE and self.size > TAR_HEADER_BYTES:
            raise TarHeaderRefused(
                f"a {what} header of {mib(self.size)} (a tar member's headers may take "
                f"{mib(TAR_HEADER_BYTES)})"
            )
        archive.fileobj = cast(Any, reader)
        try:
            return process(archive)
        finally:
            archive.fileobj = reader.stream


BOMB = "expands like a compression bomb, and the members after it lie past all of it"
TAR_BUFFER = 1024 * 1024
"""tarfile's read size on a stream (10 KiB by default: 400,000 calls to skip a 4 GiB member)."""


def nested(
    display: str,
    size: int | None,
    depth: int,
    limits: InputLimits,
    members: Callable[[], Iterator[Item]],
) -> Iterator[Item]:
    """The members of an archive found at `depth`, unless it is nested too deep."""
    if depth >= limits.nesting:
        variable = ENVIRONMENT["nesting"][0]
        yield skipped(display, f"archive nested more than {limits.nesting} deep ({variable})", size)
        return
    yield from members()


def tar_members(
    display: str,
    stream: IO[bytes],
    depth: int,
    budget: Budget,
    archive_notes: Notes,
    route: Route,
) -> Iterator[Item]:
    """Every member of an (already decompressed) tar stream, in order."""
    found = False

    def explain(error: BaseException) -> str:
        # A member's stream fails when the archive's stream stopped; the archive knows why.
        known = budget.exceeded or archive_notes.last()
        return known or f"the archive is truncated or corrupt ({error})"

    try:
        # Big reads: skipping a member's rest reads it through, one buffer at a time.
        with tarfile.open(
            fileobj=stream, mode="r|", bufsize=TAR_BUFFER, tarinfo=_BoundedTarInfo
        ) as archive:
            for member in archive:
                shown = f"{display}!{member.name}"
                if member.issym() or member.islnk():
                    found = True
                    what = "symbolic" if member.issym() else "hard"
                    target = member.linkname[:200] + ("…" if len(member.linkname) > 200 else "")
                    reason = f"{what} link member (to {target}): not followed"
                    yield skipped(shown, reason, 0)
                    continue
                if not member.isfile():
                    continue
                found = True
                if member.size == 0:
                    yield skipped(shown, "empty file", 0)
                    continue
                raw = archive.extractfile(member)
                if raw is None:
                    continue
                notes = Notes(*archive_notes.base)
                bounded = Bounded(raw, notes, explain=explain)
                guarded = cast(IO[bytes], bounded)
                name = os.path.basename(member.name)
                with guarded:
                    yield from route(shown, name, guarded, member.size, depth + 1, budget, notes)
                if notes.bomb:
                    # Reaching the next member means decompressing all of this one.
                    yield skipped(display, f"rest of the archive not read: {member.name} {BOMB}")
                    return
                left = member.size - bounded.count
                if budget.decoded and budget.decoded + left > budget.limits.archive_bytes:
                    # Known from the member's header: skipping it would spend the budget.
                    variable = ENVIRONMENT["archive_bytes"][0]
                    reason = (
                        f"rest of the archive not read: reaching what follows {member.name} "
                        f"means decompressing {mib(left)} more ({variable})"
                    )
                    yield skipped(display, reason)
                    return
    except TarHeaderRefused as error:
        yield skipped(display, f"rest of the archive not read: {error}")
        return
    except Exception as error:  # tarfile, the decoders and the OS each raise their own
        problem = budget.exceeded or archive_notes.last()
        if problem:
            yield skipped(display, f"rest of the archive not read: {problem}")
        else:
            yield skipped(display, f"archive is truncated or corrupt: {error}")
        return
    problem = budget.exceeded or archive_notes.last()
    if problem:
        yield skipped(display, f"rest of the archive not read: {problem}")
    elif not found:
        yield skipped(display, "archive holds no files")


def buffered_zip(
    display: str,
    stream: IO[bytes],
    size: int | None,
    depth: int,
    budget: Budget,
    notes: Notes,
    route: Route,
) -> Iterator[Item]:
    """A zip read from a stream: its index is at the end, so it is held in memory, if small."""
    limit = budget.limits.buffered_zip_bytes
    data = read_up_to(stream, limit + 1)
    if len(data) > limit:
        variable = ENVIRONMENT["buffered_zip_bytes"][0]
        reason = (
            f"a zip inside an archive or on stdin is held in memory to reach its index, and "
            f"this one is over {mib(limit)} ({variable}): not read"
        )
        yield skipped(display, reason, size)
        return
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as error:
        why = notes.last() or error
        yield skipped(display, f"archive is truncated or corrupt: {why}", size)
        return
    with archive:
        yield from zip_members(display, archive, depth, budget, notes, route)


def zip_members(
    display: str,
    archive: zipfile.ZipFile,
    depth: int,
    budget: Budget,
    archive_notes: Notes,
    route: Route,
) -> Iterator[Item]:
    """Every member of an open zip, each decompressed as it is read."""
    limits = budget.limits
    infos = [info for info in archive.infolist() if not info.is_dir()]
    # Archives inside, and members whose header says they expand past the ratio limit, go
    # last: a bomb that spends the input's budget never costs the ordinary members their turn.
    infos.sort(key=lambda info: _suspect(info, limits))
    if not infos:
        yield skipped(display, "archive holds no files")
    for index, info in enumerate(infos):
        if budget.exceeded:
            left = len(infos) - index
            yield skipped(display, f"{left} more members not read: {budget.exceeded}")
            return
        shown = f"{display}!{info.filename}"
        if stat.S_ISLNK(info.external_attr >> 16):
            yield skipped(shown, "symbolic link member: not followed", 0)
            continue
        if info.flag_bits & 0x1:
            yield skipped(shown, "encrypted member: cannot be read", info.compress_size)
            continue
        if info.file_size == 0:
            yield skipped(shown, "empty file", 0)
            continue
        try:
            member = archive.open(info)
        except Exception as error:  # unsupported method, bad header: zipfile raises many types
            reason = f"archive member cannot be read: {error}"
            yield skipped(shown, reason, info.compress_size)
            continue
        notes = Notes(*archive_notes.base)
        guarded = cast(
            IO[bytes],
            Bounded(
                member,
                notes,
                cap=_declared_cap(info, limits),
                budget=budget,
                counts="decoded",
                explain=lambda e: f"archive member is corrupt ({e})",
                cap_reason=f"it says it expands more than {limits.ratio:g}x: a "
                f"compression bomb? {ENVIRONMENT['ratio'][0]}",
            ),
        )
        name = os.path.basename(info.filename)
        with guarded:
            yield from route(shown, name, guarded, info.compress_size, depth + 1, budget, notes)


def _declared_cap(info: zipfile.ZipInfo, limits: InputLimits) -> int | None:
    """Where to cut a zip member whose header says it expands past the ratio limit.

    zipfile never gives more than the declared size, so the header bounds a member's output;
    the member's stored bytes are read in big blocks, which hides its ratio while it streams.
    """
    if over_ratio(limits, info.file_size, info.compress_size):
        return limits.ratio_floor_bytes
    return None


_ARCHIVE_SUFFIXES = (".zip", ".tar", ".tgz", ".tbz2", ".txz", ".tar.gz", ".tar.bz2", ".tar.xz")


def _suspect(info: zipfile.ZipInfo, limits: InputLimits) -> bool:
    """Whether a zip member may hide a bomb: an archive, or a header claiming a huge ratio."""
    if info.filename.lower().endswith((*_ARCHIVE_SUFFIXES, ".tar.zst")):
        return True
    return info.file_size > limits.ratio * max(info.compress_size, 1)
