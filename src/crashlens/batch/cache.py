"""The incremental-scan cache: a rescan re-analyzes only the jobs whose files changed.

`scan-cache.jsonl` in the output folder: a header line, then one line per job with its path
relative to the root, the signature of its files (name, size and mtime of each; for objects in
a store, name, size and ETag: an object's time is its upload, see `jobs.FileStat`) and its row.
The header names everything a row depends on besides the job's files: the cache format, the
fingerprint version, a digest of the crashlens code and rule library, the scanned root and
the job rule. When any of them differs the whole cache is ignored, so an upgrade never mixes
old and new verdicts. The file is written aside as rows come (`CacheWriter`) and renamed
into place at the end; a rescan looks jobs up through an index on disk (`ScanCache`), so
neither holds the cache in memory.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import IO, Any, cast

from crashlens import __version__
from crashlens.batch.fingerprint import FINGERPRINT_VERSION
from crashlens.batch.row import JobRow
from crashlens.match.rules import Rule

CACHE_NAME = "scan-cache.jsonl"
CACHE_FORMAT = 1


@cache
def code_digest() -> str:
    """A digest of the crashlens package's source (a change to a parser changes results)."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.blake2b(digest_size=12)
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def rules_digest(rules: tuple[Rule, ...]) -> str:
    """A digest of everything in the rule library that can change a verdict."""
    digest = hashlib.blake2b(digest_size=12)
    for rule in rules:
        parts = (
            rule.id,
            rule.category,
            rule.role,
            rule.weight,
            rule.inputs and sorted(rule.inputs),
            rule.patterns,
            rule.excludes,
            rule.facts,
            rule.ignore_case,
            rule.also,
            rule.knock_on,
            rule.failure,
            rule.summary,
        )
        digest.update(repr(parts).encode() + b"\n")
    return digest.hexdigest()


def header(root: str, job_glob: str | None, rules: tuple[Rule, ...]) -> dict[str, Any]:
    """What a cached row depends on besides the job's own files."""
    return {
        "cache_format": CACHE_FORMAT,
        "crashlens": __version__,
        "fingerprint_version": FINGERPRINT_VERSION,
        "code": code_digest(),
        "rules": rules_digest(rules),
        "root": root,
        "job_glob": job_glob,
    }


class ScanCache:
    """Cached rows by job path, each with the signature of the files it was computed from.

    Only an index (job -> where its line starts in the cache file) is kept, and it is kept on
    disk (SQLite, in a temporary file): a rescan of millions of jobs looks each one up without
    holding the cache in memory. A row is read and decoded only when its job is asked for.
    """

    def __init__(self, header: dict[str, Any], path: Path | None = None) -> None:
        self.header = header
        self.size = 0
        """Jobs in the cache."""
        self._stream: IO[bytes] | None = None
        self._index: sqlite3.Connection | None = None
        self._folder: str | None = None
        self._remembering = False
        if path is not None:
            self._open(path)

    def _open(self, path: Path) -> None:
        try:
            stream = path.open("rb")
        except OSError:
            return
        try:
            first = stream.readline()
            if not first or json.loads(first) != self.header:
                stream.close()
                return
        except ValueError:
            stream.close()
            return
        self._stream = stream
        self._folder = tempfile.mkdtemp(prefix="crashlens-cache-index-")
        index = self._index = sqlite3.connect(os.path.join(self._folder, "index.sqlite"))
        index.execute("PRAGMA journal_mode=OFF")
        index.execute("PRAGMA synchronous=OFF")
        index.execute("CREATE TABLE line (job TEXT PRIMARY KEY, offset INTEGER) WITHOUT ROWID")
        # A later line for the same job wins, as the dict this index replaces did.
        index.executemany("INSERT OR REPLACE INTO line VALUES (?, ?)", self._offsets(stream))
        index.commit()
        self.size = int(index.execute("SELECT COUNT(*) FROM line").fetchone()[0])

    @staticmethod
    def _offsets(stream: IO[bytes]) -> Iterator[tuple[str, int]]:
        while True:
            offset = stream.tell()
            line = stream.readline()
            if not line:
                return
            try:
                job = json.loads(line)["job"]
            except (ValueError, KeyError, TypeError):
                continue  # a torn last line after a crash: that job is rescanned
            if isinstance(job, str):
                yield job, offset

    def get(self, job: str, signature: str) -> JobRow | None:
        """The cached row of `job` if its files are unchanged, else None."""
        entry = self.entry(job, signature)
        return None if entry is None else JobRow.from_dict(entry)

    def entry(self, job: str, signature: str) -> dict[str, Any] | None:
        """The cached row of `job` as data if its files are unchanged, else None."""
        if self._index is None or self._stream is None:
            return None
        found = self._index.execute("SELECT offset FROM line WHERE job = ?", (job,)).fetchone()
        if found is None:
            return None
        self._stream.seek(int(found[0]))
        try:
            item = json.loads(self._stream.readline())
            row = item["row"]
        except (ValueError, KeyError, TypeError):
            return None
        if item.get("sig") != signature or not isinstance(row, dict):
            return None
        return cast(dict[str, Any], row)

    def remember(self, job: str) -> None:
        """Note that the next cache has a row of its own for `job` (`forgotten_lines`)."""
        if self._index is None:
            return
        if not self._remembering:
            self._index.execute("CREATE TEMP TABLE kept (job TEXT PRIMARY KEY) WITHOUT ROWID")
            self._remembering = True
        self._index.execute("INSERT OR IGNORE INTO kept VALUES (?)", (job,))

    def forgotten_lines(self) -> Iterator[str]:
        """This cache's lines of the jobs not `remember`ed, as they are in the file: a scan
        stopped before its listing's end hands them on to the next cache."""
        if self._index is None or self._stream is None:
            return
        query = "SELECT offset FROM line ORDER BY offset"
        if self._remembering:
            query = (
                "SELECT offset FROM line WHERE job NOT IN (SELECT job FROM kept) ORDER BY offset"
            )
        for (offset,) in self._index.execute(query):  # streamed: a cache of millions
            self._stream.seek(int(offset))
            line = self._stream.readline()
            if line.endswith(b"\n"):  # a torn last line is left behind
                yield line.decode("utf-8", "replace")

    def close(self) -> None:
        """Drop the index and close the cache file (it may be replaced now)."""
        if self._index is not None:
            self._index.close()
            self._index = None
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

    def __enter__(self) -> ScanCache:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def load(folder: Path, expected: dict[str, Any]) -> ScanCache:
    """The cache in `folder` when it was made under the same `expected` header, else empty.
    Close it when done (it holds the file open and an index on disk)."""
    return ScanCache(expected, folder / CACHE_NAME)


class CacheWriter:
    """Writes the next cache line by line as rows come, into a file aside; `commit` puts it
    in place atomically, so a scan that dies leaves the previous cache as it was."""

    def __init__(self, folder: Path, head: dict[str, Any]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / CACHE_NAME
        self.temporary = self.path.with_name(f".{CACHE_NAME}.{os.getpid()}.tmp")
        self._stream: IO[str] | None = self.temporary.open("w", encoding="utf-8")
        self._stream.write(json.dumps(head, sort_keys=True) + "\n")

    def add(self, signature: str, row: dict[str, Any]) -> None:
        """One job's row (as `JobRow.to_dict` gives it) under the signature of its files."""
        assert self._stream is not None, "the cache was already committed"
        item = {"job": row["job"], "sig": signature, "row": row}
        self._stream.write(json.dumps(item, ensure_ascii=False) + "\n")

    def add_line(self, line: str) -> None:
        """A line of another cache of the same header, as it was (`ScanCache.forgotten_lines`)."""
        assert self._stream is not None, "the cache was already committed"
        self._stream.write(line)

    def commit(self) -> None:
        """Replace the cache with what was added."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None
            os.replace(self.temporary, self.path)

    def abort(self) -> None:
        """Leave the previous cache in place."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None
            self.temporary.unlink(missing_ok=True)


def save(folder: Path, head: dict[str, Any], rows: list[tuple[str, JobRow]]) -> None:
    """Write the cache for `rows` ((signature, row) pairs) atomically."""
    writer = CacheWriter(folder, head)
    try:
        for signature, row in rows:
            writer.add(signature, row.to_dict())
    except BaseException:
        writer.abort()
        raise
    writer.commit()
