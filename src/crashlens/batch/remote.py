"""Archives in object stores and remote filesystems: `crashlens scan s3://bucket/prefix`.

Any fsspec URL works as a scan root (`s3://`, `gs://`, `abfs://`, `file://`, ...); `pip install
'crashlens[s3]'` brings fsspec and s3fs. Credentials and endpoints come only from the standard
environment of each store (`AWS_ENDPOINT_URL`, `AWS_PROFILE`, `AWS_ACCESS_KEY_ID`, ...), never
from flags: a flag ends up in shell history and in the process list.

- Listing (`iter_remote_jobs`) follows the local rule of `jobs.py`: every folder (prefix) that
  directly holds files is a job, every archive object a job by itself, hidden names skipped;
  folders are listed one at a time (one delimiter listing each, sorted), depth first, and each
  listing is dropped from fsspec's cache once used, so the driver's memory does not grow with
  the store. A folder that holds `scan-cache.jsonl` is a scan's output and is not walked.
- Reading (`remote_analyses`, in the workers) opens each object as a stream and hands it to
  `inputs.discover.iter_opened`: archives and compressed objects are read member by member as
  locally, nothing is copied to disk.
- An object's ETag stands in for its mtime in the incremental cache (`FileStat.etag`).
- Outputs to a URL (`-o s3://...`, `StagedOutput`): the scan writes into a local temporary
  folder (the cache is fetched there first), then every file is uploaded.

fsspec is imported only here and only when a URL is used: `crashlens analyze` and local scans
never import it.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

from crashlens.batch.jobs import FileStat, JobSpec, glob_matches, is_archive_name

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

    from crashlens.match.rules import Rule
    from crashlens.model import InputAnalysis

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):/(/?)(.*)$", re.DOTALL)
"""`scheme://rest`, also as a `Path` leaves it (`scheme:/rest`: one slash collapsed). The
scheme has two characters at least, so a Windows drive (`C:/`) is never taken for one."""
CACHE_MARK = "scan-cache.jsonl"
READ_BLOCK = 4 * 1024 * 1024
"""Bytes fetched per request while an object is streamed (s3fs would fetch 50 MiB)."""


class RemoteError(RuntimeError):
    """A URL that cannot be used: fsspec or the protocol's package missing, an unknown scheme."""


def is_url(text: str) -> bool:
    """Whether `text` names a location by URL (`s3://...`) rather than a local path."""
    return _URL.match(text) is not None


def url_text(given: str | Path) -> str:
    """The URL as the user typed it, also after a `Path` collapsed its `//`."""
    text = str(given)
    match = _URL.match(text)
    if match is None:
        return text
    scheme, _, rest = match.groups()
    if scheme.lower() == "file" and not rest.startswith("/"):
        rest = "/" + rest  # file:/abs (a collapsed file:///abs)
    return f"{scheme}://{rest}"


def filesystem(url: str) -> tuple[AbstractFileSystem, str]:
    """The fsspec filesystem of `url` and the path inside it; raises RemoteError."""
    try:
        from fsspec.core import url_to_fs
    except ImportError as error:
        raise RemoteError(
            f"{url}: reading URLs needs fsspec: pip install 'crashlens[s3]'"
        ) from error
    try:
        fs, path = url_to_fs(url_text(url))
    except (ImportError, ValueError) as error:
        raise RemoteError(f"{url}: {error}") from error
    return fs, str(path).rstrip("/")


def root_url(given: str | Path) -> str:
    """The canonical form of a URL root (`s3://bucket/prefix`): what rows are relative to."""
    fs, path = filesystem(str(given))
    return _url(fs, path)


def _url(fs: AbstractFileSystem, path: str) -> str:
    return str(fs.unstrip_protocol(path)).rstrip("/")


def exists(url: str) -> bool:
    """Whether something is at `url` (an object or a prefix); raises RemoteError."""
    fs, path = filesystem(url)
    try:
        return bool(fs.exists(path))
    except OSError:
        return False


# -- listing ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Entry:
    path: str
    name: str
    folder: bool
    stat: FileStat | None


def _stamp(info: dict[str, Any]) -> int:
    """Nanoseconds since the epoch of an object's time, whatever the store calls it."""
    for key in ("LastModified", "last_modified", "mtime", "updated", "created", "modified"):
        value = info.get(key)
        if isinstance(value, datetime):
            return int(value.timestamp() * 1e9)
        if isinstance(value, int | float):
            return int(value * 1e9)
        if isinstance(value, str):
            try:
                return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1e9)
            except ValueError:
                continue
    return 0


def _etag(info: dict[str, Any]) -> str | None:
    for key in ("ETag", "etag", "md5Hash", "content_md5", "checksum"):
        value = info.get(key)
        if value:
            return str(value).strip('"')
    return None


def _listing(fs: AbstractFileSystem, folder: str) -> tuple[list[_Entry], list[_Entry]]:
    """(sub-folders, files) directly under `folder`, sorted by name, hidden names left out."""
    entries = cast(list[dict[str, Any]], fs.ls(folder, detail=True))
    fs.invalidate_cache(folder)  # a listing is used once: the cache would hold the whole store
    folders: list[_Entry] = []
    files: list[_Entry] = []
    for info in entries:
        path = str(info.get("name", "")).rstrip("/")
        name = path.rsplit("/", 1)[-1]
        if not name or name.startswith(".") or path == folder:
            continue
        if info.get("type") == "directory":
            folders.append(_Entry(path, name, True, None))
        else:
            size = int(info.get("size") or 0)
            stat = FileStat(name=name, size=size, mtime_ns=_stamp(info), etag=_etag(info))
            files.append(_Entry(path, name, False, stat))
    folders.sort(key=lambda e: e.name)
    files.sort(key=lambda e: e.name)
    return folders, files


def _unreadable(rel: str, error: Exception) -> JobSpec:
    reason = f"folder cannot be listed: {getattr(error, 'strerror', None) or error}"
    return JobSpec(rel=rel, kind="unreadable", inputs=(), files=(), reason=reason)


@dataclass(frozen=True, slots=True)
class _Store:
    """The root being listed: its filesystem and its path there."""

    fs: AbstractFileSystem
    top: str
    wants: Callable[[str], bool]
    """`jobs.Select`: whether a job at this path (relative) is listed on."""

    def rel(self, path: str) -> str:
        """A path relative to the root, `.` for the root itself (as local rows name jobs)."""
        return path[len(self.top) :].strip("/") or "."

    def job(self, path: str, kind: str, files: list[_Entry], folder: str) -> JobSpec:
        """A job at `path` made of `files`, their names relative to `folder`."""
        stats = tuple(
            FileStat(e.path[len(folder) :].lstrip("/"), s.size, s.mtime_ns, s.etag)
            for e in files
            if (s := e.stat) is not None
        )
        inputs = tuple(_url(self.fs, e.path) for e in files)
        return JobSpec(rel=self.rel(path), kind=kind, inputs=inputs, files=stats)


def iter_remote_jobs(
    root: str, job_glob: str | None = None, select: Callable[[str], bool] | None = None
) -> Iterator[JobSpec]:
    """Yield the jobs under the URL `root`, lazily, in the order a local scan lists them.
    `select` as in `jobs.iter_jobs`: a job it declines is left out before a folder matched by
    --job-glob is listed (a store's listing gives the other jobs' sizes at no extra cost)."""
    fs, top = filesystem(root)
    store = _Store(fs, top, select or (lambda rel: True))
    try:
        whole = cast(dict[str, Any], fs.info(top))
    except FileNotFoundError:
        return
    if whole.get("type") != "directory":
        name = top.rsplit("/", 1)[-1]
        stat = FileStat(name, int(whole.get("size") or 0), _stamp(whole), _etag(whole))
        kind = "archive" if is_archive_name(name) else "file"
        if store.wants(name):
            yield JobSpec(rel=name, kind=kind, inputs=(_url(fs, top),), files=(stat,))
        return
    pattern = tuple(p for p in (job_glob or "").strip("/").split("/") if p and p != ".")
    stack: list[tuple[str, tuple[str, ...]]] = [(top, ())]
    while stack:
        folder, parts = stack.pop()
        try:
            folders, files = _listing(fs, folder)
        except Exception as error:  # a store error costs the folder, not the scan
            if store.wants(store.rel(folder)):
                yield _unreadable(store.rel(folder), error)
            continue
        if folder != top and any(e.name == CACHE_MARK for e in files):
            continue  # a scan's own output folder
        if pattern:
            yield from _glob_step(store, folder, parts, pattern, (folders, files), stack)
            continue
        logs = [e for e in files if not is_archive_name(e.name)]
        if logs and store.wants(store.rel(folder)):
            yield store.job(folder, "folder", logs, folder)
        for entry in files:
            if is_archive_name(entry.name) and store.wants(store.rel(entry.path)):
                parent = entry.path[: -len(entry.name)]
                yield store.job(entry.path, "archive", [entry], parent)
        stack.extend((e.path, ()) for e in reversed(folders))


def _glob_step(
    store: _Store,
    folder: str,
    parts: tuple[str, ...],
    pattern: tuple[str, ...],
    listing: tuple[list[_Entry], list[_Entry]],
    stack: list[tuple[str, tuple[str, ...]]],
) -> Iterator[JobSpec]:
    """One folder under --job-glob: matched entries are jobs, the others are walked on."""
    folders, files = listing
    max_depth = None if "**" in pattern else len(pattern)
    found: list[tuple[str, _Entry | tuple[str, tuple[str, ...]]]] = []
    for entry in folders:
        sub = (*parts, entry.name)
        if glob_matches(sub, pattern):
            found.append((entry.name, entry))
        elif max_depth is None or len(sub) < max_depth:
            found.append((entry.name, (entry.path, sub)))
    found.extend(
        (entry.name, entry) for entry in files if glob_matches((*parts, entry.name), pattern)
    )
    found.sort(key=lambda item: item[0])
    descend: list[tuple[str, tuple[str, ...]]] = []
    for _name, item in found:
        if isinstance(item, tuple):
            descend.append(item)
        elif not store.wants(store.rel(item.path)):
            continue  # another shard's: a matched folder is not even listed
        elif item.folder:
            yield _folder_job(store, item.path)
        else:
            kind = "archive" if is_archive_name(item.name) else "file"
            yield store.job(item.path, kind, [item], folder)
    stack.extend(reversed(descend))


def _folder_job(store: _Store, folder: str) -> JobSpec:
    """A folder matched by --job-glob: every file under it, in the local walk's order."""
    files: list[_Entry] = []
    pending = [folder]
    while pending:
        current = pending.pop()
        try:
            subfolders, found = _listing(store.fs, current)
        except Exception as error:
            return _unreadable(store.rel(current), error)
        files.extend(found)
        pending.extend(e.path for e in reversed(subfolders))
    if not files:
        return JobSpec(store.rel(folder), "unreadable", (), (), "folder holds no files")
    return store.job(folder, "folder", files, folder)


# -- reading, in the workers -------------------------------------------------------------------


def remote_analyses(job: JobSpec, rules: tuple[Rule, ...], backend: str) -> list[InputAnalysis]:
    """Every input of a job read from URLs, analyzed as `pipeline.analyze_inputs` would."""
    from crashlens.inputs.discover import iter_opened
    from crashlens.match.engine import analyze_source
    from crashlens.model import InputAnalysis, InputStatus

    analyses: list[InputAnalysis] = []
    for url, item in zip(job.inputs, job.files, strict=False):
        name = url.rsplit("/", 1)[-1]
        for found in iter_opened(url, name, item.size, _opener(url)):
            if isinstance(found, InputStatus):
                analyses.append(InputAnalysis(status=found))
            else:
                analyses.append(analyze_source(found, rules, None, backend))
    return analyses


def _opener(url: str) -> Any:
    def open_stream() -> IO[bytes]:
        fs, path = filesystem(url)
        return cast(IO[bytes], fs.open(path, "rb", block_size=READ_BLOCK))

    return open_stream


# -- outputs to a URL --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StagedOutput:
    """A scan's output folder at a URL, written locally first and uploaded at the end."""

    url: str
    local: Path

    @classmethod
    def start(cls, given: str | Path, fetch_cache: bool = True) -> StagedOutput:
        """A local folder for the scan, holding the URL's cache when there is one."""
        url = root_url(given)
        local = Path(tempfile.mkdtemp(prefix="crashlens-out-"))
        if fetch_cache:
            fs, path = filesystem(f"{url}/{CACHE_MARK}")
            with contextlib.suppress(OSError):  # no cache yet (or unreadable): a full scan
                fs.get_file(path, str(local / CACHE_MARK))
        return cls(url, local)

    def shown(self, path: str) -> str:
        """A path of the local folder as its URL."""
        base = str(self.local)
        return self.url + path[len(base) :] if path.startswith(base) else path

    def publish(self, summary: dict[str, Any]) -> dict[str, Any]:
        """Name the URL in the summary, rewrite it, upload every file, drop the local copy."""
        from crashlens.batch.session import write_summary

        summary = {**summary, "out": self.url}
        summary["outputs"] = [self.shown(str(p)) for p in summary.get("outputs", [])]
        write_summary(self.local, summary)
        fs, path = filesystem(self.url)
        for item in sorted(self.local.iterdir()):
            if item.is_file() and not item.name.startswith("."):
                fs.put_file(str(item), f"{path}/{item.name}")
        self.discard()
        return summary

    def discard(self) -> None:
        shutil.rmtree(self.local, ignore_errors=True)
