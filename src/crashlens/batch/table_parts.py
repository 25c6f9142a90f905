"""Writing the per-job table from a stream of rows in job order, a part at a time.

`output.write_table` builds one polars frame from its rows; a scan of millions of jobs would
hold them all at once. Here the rows come in parts of `PART_ROWS`: each part is written by
`output.write_table` (same columns, same types, same cell rules) into a folder of its own, and
the parts are then joined into the final file: parquet through polars' streaming sink, JSON
lines and CSV by concatenation (CSV without the parts' repeated header lines). A table of one
part is the part itself, byte for byte what `output.write_table` writes.
"""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

from crashlens.batch.row import JobRow

PART_ROWS = 5_000
"""Rows in memory at once while the table is written."""


def write_table_in_parts(
    rows: Iterable[JobRow],
    folder: Path,
    formats: Sequence[str],
    part_rows: int | None = None,
) -> list[Path]:
    """Write `jobs.<format>` for each format into `folder` from `rows` (sorted by job), at
    most `part_rows` (PART_ROWS) in memory at once; return the paths written."""
    from crashlens.batch.output import write_table

    part_rows = max(1, part_rows or PART_ROWS)
    stream = iter(rows)
    first = list(itertools.islice(stream, part_rows))
    second = list(itertools.islice(stream, part_rows))
    if not second:  # one part: written in place
        return write_table(first, folder, formats)
    folder.mkdir(parents=True, exist_ok=True)
    staging = folder / f".jobs-parts.{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    parts: list[Path] = []
    try:
        part: list[JobRow] = first
        while part:
            place = staging / f"{len(parts):06d}"
            write_table(part, place, formats)
            parts.append(place)
            part, second = second, list(itertools.islice(stream, part_rows))
        return [_join(parts, folder, name, part_rows) for name in formats]
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _join(parts: list[Path], folder: Path, name: str, part_rows: int) -> Path:
    path = folder / f"jobs.{name}"
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pieces = [part / path.name for part in parts]
    if name == "parquet":
        import polars as pl

        # Row groups of a part: with polars' default (far larger) the sink holds the table.
        pl.scan_parquet(pieces).sink_parquet(temporary, row_group_size=part_rows)
    else:
        with temporary.open("wb") as joined:
            for number, piece in enumerate(pieces):
                with piece.open("rb") as stream:
                    if name == "csv" and number > 0:
                        stream.readline()  # the header, written once
                    shutil.copyfileobj(stream, joined)
    os.replace(temporary, path)
    return path
