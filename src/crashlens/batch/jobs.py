"""Finding the jobs in an archive root, with the file stats a rescan compares.

Default rule: every folder that directly holds log files is one job (its direct files only;
a sub-folder that holds files is a job of its own), and every `.tar*`/`.tgz`/`.zip` file is a
job by itself. `--job-glob` replaces the rule: each path under the root that matches the glob
(matched segment by segment against the path relative to the root, `**` for any depth) is a
job, a folder with everything under it. Hidden entries and the scan's own output folder are
skipped; folder symlinks are not followed (no cycles). A folder that cannot be listed becomes
an `unreadable` job, so it shows up as a row with a reason instead of stopping the walk.

A scan never leaves its root: a symbolic link whose target lies outside the root (a file or a
folder), or that is broken, is not read; it is listed in its job's `skipped` with the reason,
which the job's row shows. (A scan often runs over folders other people can write to: a link
there must not put a file of the scanning account into the scan's output.) A link to a file
inside the root is read like the file.

A scan of one shard (`--shard K/N`) passes `select`, asked with each job's path as soon as the
listing finds the job and before any of its files is stat-ed (or a folder matched by
`--job-glob` is walked): every shard still reads the folders' names, but each pays the
metadata of its own jobs only.

The listing streams (`iter_jobs`, `iter_job_batches`): folders are walked depth first, each
sorted by name as it is listed, and jobs are yielded as they are found, so a listing of millions
of jobs never sits in one list and its consumer submits work as it goes (bench/scan_listing.py
measures the driver's memory against the number of jobs: flat). A root given as a URL
(`s3://bucket/prefix`, any fsspec protocol) is listed by `batch/remote.py` with the same rule.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

ARCHIVE_SUFFIXES = (
    ".tar",
    ".tar.gz",
    ".tgz",
    ".tar.bz2",
    ".tbz2",
    ".tar.xz",
    ".txz",
    ".tar.zst",
    ".zip",
)


@dataclass(frozen=True, slots=True)
class FileStat:
    """One file of a job as found on disk: what the incremental cache compares."""

    name: str
    """Path relative to the job (a folder job) or the file name (an archive job)."""
    size: int
    mtime_ns: int
    etag: str | None = None
    """An object store's entity tag: set for objects, where it replaces mtime in the
    signature (an object's time is when it was uploaded, its ETag changes with its bytes)."""


@dataclass(frozen=True, slots=True)
class JobSpec:
    """One job to analyze: where it is and which files it is made of."""

    rel: str
    """The job's path relative to the root, with `/` separators (`.` for the root itself)."""
    kind: str
    """`folder`, `archive`, `file` (a single log matched by --job-glob) or `unreadable`."""
    inputs: tuple[str, ...]
    """The paths to read, as full paths: a folder job's files, or the one archive/file."""
    files: tuple[FileStat, ...]
    reason: str | None = None
    """Why the job cannot be analyzed (set for `unreadable` jobs)."""
    skipped: tuple[tuple[str, str], ...] = ()
    """(path relative to the root, reason) of the job's entries not read: symbolic links that
    lead out of the root or nowhere."""

    @property
    def size(self) -> int:
        """Bytes on disk (compressed size for archives)."""
        return sum(f.size for f in self.files)

    @property
    def mtime_ns(self) -> int:
        """The newest modification time among the job's files (0 when it has none)."""
        return max((f.mtime_ns for f in self.files), default=0)

    @property
    def signature(self) -> str:
        """A digest of every file's name, size and mtime (ETag for objects): equal means
        unchanged."""
        digest = hashlib.blake2b(digest_size=16)
        digest.update(self.kind.encode())
        for item in self.files:
            stamp = item.mtime_ns if item.etag is None else f"etag:{item.etag}"
            digest.update(f"\0{item.name}\0{item.size}\0{stamp}".encode("utf-8", "surrogateescape"))
        if self.reason:
            digest.update(b"\0!" + self.reason.encode())
        for path, reason in self.skipped:
            digest.update(f"\0?{path}\0{reason}".encode())
        return digest.hexdigest()


def is_archive_name(name: str) -> bool:
    """Whether a file name says it is one job packed in an archive."""
    return name.lower().endswith(ARCHIVE_SUFFIXES)


Select = Callable[[str], bool]
"""Asked once with the path (`JobSpec.rel`) of every job the listing finds, before its files
are stat-ed: False leaves the job out (another shard's)."""


def _everything(rel: str) -> bool:
    return True


def iter_jobs(
    root: str | Path,
    job_glob: str | None = None,
    exclude: str | Path | None = None,
    select: Select | None = None,
) -> Iterator[JobSpec]:
    """Yield the jobs under `root` (a folder, a file, or an fsspec URL) lazily, in a stable
    order: depth first, each folder's entries sorted by name as it is listed.

    `exclude` is a folder never walked (the scan's own output folder when it lies inside root).
    `select` (see `Select`) leaves jobs out before their metadata is read.
    Only the folders still to visit are held, never the jobs already yielded.
    """
    from crashlens.batch.remote import is_url  # no fsspec import: a regex

    if is_url(str(root)):
        from crashlens.batch.remote import iter_remote_jobs

        yield from iter_remote_jobs(str(root), job_glob, select)
        return
    excluded = None if exclude is None else Path(exclude)
    yield from discover_jobs(Path(root), job_glob, excluded, select)


def iter_job_batches(
    jobs: Iterable[JobSpec], max_jobs: int = 8, max_bytes: int = 4 * 1024 * 1024
) -> Iterator[list[JobSpec]]:
    """Consecutive jobs grouped as they arrive: up to `max_jobs` jobs and about `max_bytes`
    (a bigger job goes alone). Lazy: the consumer pulls a batch when it can submit one, so the
    listing never runs ahead of the workers by more than what is in flight."""
    batch: list[JobSpec] = []
    size = 0
    for job in jobs:
        if batch and (len(batch) >= max_jobs or size + job.size > max_bytes):
            yield batch
            batch, size = [], 0
        batch.append(job)
        size += job.size
    if batch:
        yield batch


def discover_jobs(
    root: Path,
    job_glob: str | None = None,
    exclude: Path | None = None,
    select: Select | None = None,
) -> Iterator[JobSpec]:
    """Yield the jobs under the local folder (or file) `root` in a stable (sorted) order,
    lazily; `iter_jobs` also takes URLs.

    `exclude` is a folder never walked (the scan's own output folder when it lies inside root);
    `select` (see `Select`) leaves jobs out before their files are stat-ed.
    """
    root = Path(os.path.abspath(root))
    skip = os.path.abspath(exclude) if exclude is not None else None
    wants = select or _everything
    if root.is_file():
        if wants(_rel(str(root), root.parent)):
            yield _file_job(root, root.name, root.parent)  # named by the user: followed if a link
        return
    walk = _Walk(root=root, top=os.path.realpath(root), skip=skip, wants=wants)
    if job_glob:
        yield from _glob_jobs(walk, _segments(job_glob))
    else:
        yield from _default_jobs(walk)


def _rel(path: str, root: Path) -> str:
    rel = os.path.relpath(path, root)
    return "." if rel == "." else rel.replace(os.sep, "/")


OUTSIDE_ROOT = "symbolic link to a path outside the scanned root: not read"
BROKEN_LINK = "broken symbolic link: not read"


@dataclass(frozen=True, slots=True)
class _Walk:
    """The root being scanned: as named, where it really is, and the folder never walked."""

    root: Path
    top: str
    """The root's real path: no link is followed to a target outside it."""
    skip: str | None
    wants: Select = _everything


@dataclass(frozen=True, slots=True)
class _Listing:
    """One folder's entries, sorted by name, hidden ones left out."""

    folders: list[os.DirEntry[str]]
    files: list[os.DirEntry[str]]
    skipped: list[tuple[str, str]]
    """(full path, reason) of the links not followed."""


def _escapes(path: str, top: str) -> str | None:
    """Why a symbolic link may not be read, or None when its target lies inside `top`."""
    target = os.path.realpath(path)
    if not os.path.exists(target):
        return BROKEN_LINK
    rel = os.path.relpath(target, top)
    if rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
        return OUTSIDE_ROOT
    return None


def _listing(folder: str, top: str) -> _Listing:
    """(sub-folders, regular files, links not followed) of one folder."""
    listing = _Listing([], [], [])
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith("."):
                continue
            try:
                if entry.is_symlink():
                    why = _escapes(entry.path, top)
                    if why is not None:
                        listing.skipped.append((entry.path, why))
                        continue
                if entry.is_dir(follow_symlinks=False):
                    listing.folders.append(entry)
                elif entry.is_file(follow_symlinks=True):
                    listing.files.append(entry)
            except OSError:
                continue
    listing.folders.sort(key=lambda e: e.name)
    listing.files.sort(key=lambda e: e.name)
    listing.skipped.sort()
    return listing


def _stat(entry: os.DirEntry[str], name: str) -> FileStat | None:
    try:
        info = entry.stat(follow_symlinks=True)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return FileStat(name=name, size=info.st_size, mtime_ns=info.st_mtime_ns)


def _unreadable(path: str, root: Path, error: OSError) -> JobSpec:
    reason = f"folder cannot be listed: {error.strerror or error}"
    return JobSpec(rel=_rel(path, root), kind="unreadable", inputs=(), files=(), reason=reason)


def _file_job(path: Path, name: str, root: Path) -> JobSpec:
    try:
        info = path.stat()
        files: tuple[FileStat, ...] = (FileStat(name, info.st_size, info.st_mtime_ns),)
    except OSError as error:
        reason = f"cannot be read: {error.strerror or error}"
        return JobSpec(_rel(str(path), root), "unreadable", (), (), reason)
    kind = "archive" if is_archive_name(name) else "file"
    return JobSpec(rel=_rel(str(path), root), kind=kind, inputs=(str(path),), files=files)


def _default_jobs(walk: _Walk) -> Iterator[JobSpec]:
    root = walk.root
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        try:
            listing = _listing(folder, walk.top)
        except OSError as error:
            if walk.wants(_rel(folder, root)):
                yield _unreadable(folder, root, error)
            continue
        yield from _folder_jobs(walk, folder, listing)
        # Reversed onto the stack, so sub-folders come out in name order (depth first).
        stack.extend(e.path for e in reversed(listing.folders) if e.path != walk.skip)


def _folder_jobs(walk: _Walk, folder: str, listing: _Listing) -> Iterator[JobSpec]:
    """The jobs of one listed folder under the default rule: itself (when it holds logs or
    links not followed) and each archive in it; only those `walk.wants` are stat-ed."""
    root = walk.root
    rel = _rel(folder, root)
    named_logs = [e for e in listing.files if not is_archive_name(e.name)]
    if (named_logs or listing.skipped) and walk.wants(rel):
        logs = [(e.path, item) for e in named_logs if (item := _stat(e, e.name)) is not None]
        skipped = tuple((_rel(path, root), why) for path, why in listing.skipped)
        if logs:
            yield JobSpec(
                rel=rel,
                kind="folder",
                inputs=tuple(path for path, _ in logs),
                files=tuple(item for _, item in logs),
                skipped=skipped,
            )
        elif skipped:
            yield _nothing_readable(rel, skipped)
    for entry in listing.files:
        if is_archive_name(entry.name) and walk.wants(_rel(entry.path, root)):
            item = _stat(entry, entry.name)
            if item is not None:
                yield JobSpec(
                    rel=_rel(entry.path, root), kind="archive", inputs=(entry.path,), files=(item,)
                )


def _nothing_readable(rel: str, skipped: tuple[tuple[str, str], ...]) -> JobSpec:
    """A job whose every entry is a link that may not be read: a row that says so."""
    names = ", ".join(path for path, _ in skipped[:3])
    more = f" and {len(skipped) - 3} more" if len(skipped) > 3 else ""
    reason = f"nothing to read: {skipped[0][1]} ({names}{more})"
    return JobSpec(rel, "unreadable", (), (), reason, skipped)


def _segments(glob: str) -> tuple[str, ...]:
    return tuple(part for part in glob.strip("/").split("/") if part and part != ".")


def glob_matches(parts: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    """Whether a relative path (split in segments) matches a glob; `**` spans any depth."""
    if not pattern:
        return not parts
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(glob_matches(parts[i:], rest) for i in range(len(parts) + 1))
    return bool(parts) and fnmatchcase(parts[0], head) and glob_matches(parts[1:], rest)


def _glob_jobs(walk: _Walk, pattern: tuple[str, ...]) -> Iterator[JobSpec]:
    root = walk.root
    max_depth = None if "**" in pattern else len(pattern)
    stack: list[tuple[str, tuple[str, ...]]] = [(str(root), ())]
    while stack:
        folder, parts = stack.pop()
        try:
            listing = _listing(folder, walk.top)
        except OSError as error:
            if walk.wants(_rel(folder, root)):
                yield _unreadable(folder, root, error)
            continue
        # What each matched entry is, decided in name order; a job is stat-ed (a folder
        # walked) only once it is wanted, and when it comes, so the walk stays lazy.
        found: list[tuple[str, Callable[[], JobSpec] | tuple[str, tuple[str, ...]]]] = []
        for entry in listing.folders:
            if entry.path == walk.skip:
                continue
            sub = (*parts, entry.name)
            if glob_matches(sub, pattern):
                found.append((entry.name, _later(_folder_job, entry.path, walk)))
            elif max_depth is None or len(sub) < max_depth:
                found.append((entry.name, (entry.path, sub)))
        found.extend(
            (entry.name, _later(_file_job, Path(entry.path), entry.name, root))
            for entry in listing.files
            if glob_matches((*parts, entry.name), pattern)
        )
        for path, why in listing.skipped:
            name = os.path.basename(path)
            if glob_matches((*parts, name), pattern):
                rel = _rel(path, root)
                found.append((name, _later(_nothing_readable, rel, ((rel, why),))))
        found.sort(key=lambda item: item[0])
        descend: list[tuple[str, tuple[str, ...]]] = []
        for name, item in found:
            if isinstance(item, tuple):
                descend.append(item)
            elif walk.wants(_rel(os.path.join(folder, name), root)):
                yield item()
        stack.extend(reversed(descend))


def _later(make: Callable[..., JobSpec], *args: object) -> Callable[[], JobSpec]:
    return lambda: make(*args)


def _folder_job(folder: str, walk: _Walk) -> JobSpec:
    """A folder matched by --job-glob: every file under it, recursively."""
    root = walk.root
    inputs: list[str] = []
    files: list[FileStat] = []
    skipped: list[tuple[str, str]] = []
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            listing = _listing(current, walk.top)
        except OSError as error:
            return _unreadable(current, root, error)
        for entry in listing.files:
            item = _stat(entry, os.path.relpath(entry.path, folder).replace(os.sep, "/"))
            if item is not None:
                inputs.append(entry.path)
                files.append(item)
        skipped.extend((_rel(path, root), why) for path, why in listing.skipped)
        stack.extend(e.path for e in reversed(listing.folders))
    if not files:
        if skipped:
            return _nothing_readable(_rel(folder, root), tuple(skipped))
        return JobSpec(_rel(folder, root), "unreadable", (), (), "folder holds no files")
    return JobSpec(
        rel=_rel(folder, root),
        kind="folder",
        inputs=tuple(inputs),
        files=tuple(files),
        skipped=tuple(skipped),
    )
