"""Rows kept on disk as they come, read back in job order: the driver never holds a scan.

The engine hands rows over in completion order, the cache hands over rows of unchanged jobs
as the listing reaches them; the summary, the table and the next cache want them in job order
(the summary of the same rows must not depend on which worker finished first). `RowSpool`
writes each row to disk at once, in sorted runs of `RUN_ROWS`, and merges the runs at the end
(an external sort): memory is one run, whatever the number of jobs. `RowFile` is the merged
result, a sequence of rows read from disk on demand (what `ScanOutcome.rows` is).
"""

from __future__ import annotations

import heapq
import json
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, overload

from crashlens.batch.row import JobRow

RUN_ROWS = 4096
"""Rows sorted in memory before they go to disk as one run."""
FAN_IN = 64
"""Runs merged at once (open files); more runs are merged in rounds."""


@dataclass(frozen=True, slots=True)
class SpooledRow:
    """One job's row as the scan got it."""

    row: dict[str, Any]
    """`JobRow.to_dict`: what the cache and the table are written from."""
    signature: str
    """The signature of the job's files, as listed."""
    cached: bool
    """Taken from the previous scan's cache, not analyzed now."""
    keep: bool
    """Goes into the next cache (a crashed job is retried by the next scan instead)."""
    source: str = ""
    """Where the row was read from (`scan-merge`: the shard's folder)."""

    @property
    def job(self) -> str:
        return str(self.row["job"])


def _line(item: SpooledRow) -> str:
    # ASCII: a name with undecodable bytes must not stop the spool (they are escaped).
    fields = [item.job, item.signature, item.cached, item.keep, item.row, item.source]
    return json.dumps(fields) + "\n"


def _parse(line: str) -> SpooledRow:
    _job, signature, cached, keep, row, source = json.loads(line)
    return SpooledRow(row=row, signature=signature, cached=cached, keep=keep, source=source)


def _keyed(path: str) -> Iterator[tuple[str, str]]:
    """(job, line) of a run file, in its (sorted) order."""
    with open(path, encoding="ascii") as stream:
        for line in stream:
            yield json.loads(line)[0], line


class RowSpool:
    """Rows added in any order, on disk at once; `sorted_rows` gives them back by job."""

    def __init__(self, run_rows: int | None = None, fan_in: int | None = None) -> None:
        """`run_rows`, `fan_in`: RUN_ROWS and FAN_IN unless given."""
        self.folder = tempfile.mkdtemp(prefix="crashlens-rows-")
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.folder, True)
        self.run_rows = max(1, run_rows or RUN_ROWS)
        self.fan_in = max(2, fan_in or FAN_IN)
        self.count = 0
        self._buffer: list[tuple[str, str]] = []
        self._runs: list[str] = []
        self._made = 0

    def add(self, item: SpooledRow) -> None:
        self._buffer.append((item.job, _line(item)))
        self.count += 1
        if len(self._buffer) >= self.run_rows:
            self._flush()

    def _path(self) -> str:
        self._made += 1
        return os.path.join(self.folder, f"run-{self._made:06d}.jsonl")

    def _flush(self) -> None:
        if not self._buffer:
            return
        self._buffer.sort(key=lambda item: item[0])
        path = self._path()
        with open(path, "w", encoding="ascii") as stream:
            stream.writelines(line for _, line in self._buffer)
        self._buffer = []
        self._runs.append(path)

    def _merge(self, runs: list[str]) -> Iterator[tuple[str, str]]:
        return heapq.merge(*(_keyed(run) for run in runs), key=lambda item: item[0])

    def sorted_rows(self) -> Iterator[SpooledRow]:
        """Every row added, in job order (a job added twice comes out twice)."""
        self._flush()
        while len(self._runs) > self.fan_in:
            first, self._runs = self._runs[: self.fan_in], self._runs[self.fan_in :]
            path = self._path()
            with open(path, "w", encoding="ascii") as stream:
                stream.writelines(line for _, line in self._merge(first))
            for run in first:
                os.remove(run)
            self._runs.append(path)
        for _, line in self._merge(self._runs):
            yield _parse(line)

    def close(self) -> None:
        """Delete the spool's files."""
        self._cleanup()


class RowFile(Sequence[JobRow]):
    """Rows in a file of their own, one JSON object a line, read back on demand.

    Iterating reads the file; indexing reads up to the row asked for. The file is deleted with
    the object."""

    def __init__(self) -> None:
        folder = tempfile.mkdtemp(prefix="crashlens-table-")
        self._cleanup = weakref.finalize(self, shutil.rmtree, folder, True)
        self.path = Path(folder) / "rows.jsonl"
        self.path.touch()
        self._count = 0
        self._writing: IO[str] | None = None

    def add(self, row: dict[str, Any]) -> None:
        """Append a row (`JobRow.to_dict`)."""
        if self._writing is None:
            self._writing = self.path.open("a", encoding="ascii")
        self._writing.write(json.dumps(row) + "\n")
        self._count += 1

    def done(self) -> None:
        """No more rows: the file is complete (iterating also finishes it)."""
        if self._writing is not None:
            self._writing.close()
            self._writing = None

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[JobRow]:
        self.done()
        with self.path.open(encoding="ascii") as stream:
            for line in stream:
                yield JobRow.from_dict(json.loads(line))

    @overload
    def __getitem__(self, index: int) -> JobRow: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[JobRow]: ...

    def __getitem__(self, index: int | slice) -> JobRow | Sequence[JobRow]:
        if isinstance(index, slice):
            return list(self)[index]
        position = index + self._count if index < 0 else index
        if not 0 <= position < self._count:
            raise IndexError(index)
        for number, row in enumerate(self):
            if number == position:
                return row
        raise IndexError(index)  # pragma: no cover (the file holds `_count` rows)
