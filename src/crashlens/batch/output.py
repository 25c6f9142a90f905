"""Writing the per-job table with polars: jobs.parquet, and jobs.jsonl / jobs.csv on request.

polars costs ~0.2 s to import, so it is imported lazily: this module is used by the scan
command only, and `crashlens analyze` never loads polars where hyperscan is available (without
it, the scan backend uses polars' Aho-Corasick).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crashlens.batch.row import COLUMNS, JobRow

if TYPE_CHECKING:
    import polars as pl

TABLE_FORMATS = ("parquet", "jsonl", "csv")
_TIME_COLUMNS = ("first_failure_at", "job_mtime")
_LIST_COLUMNS = ("rules", "hosts", "gpus", "hardware_hosts", "skipped")
_NESTED_COLUMNS = (*_LIST_COLUMNS, "gpu_details")


def _schema() -> dict[str, Any]:
    import polars as pl

    text = pl.Utf8
    return {
        "job": text,
        "verdict": text,
        "confidence": pl.Float64,
        "fingerprint": text,
        "signature": text,
        "summary": text,
        "evidence": text,
        "rules": pl.List(text),
        "hosts": pl.List(text),
        "gpus": pl.List(text),
        "hardware_hosts": pl.List(text),
        "gpu_details": pl.List(
            pl.Struct(dict.fromkeys(("label", "host", "pci", "uuid", "serial"), text))
        ),
        "first_failure_at": pl.Float64,
        "job_mtime": pl.Float64,
        "files": pl.Int64,
        "bytes": pl.Int64,
        "skipped": pl.List(text),
        "reason": text,
        "seconds": pl.Float64,
    }


def table_schema() -> dict[str, Any]:
    """The columns of the written table (times as UTC datetimes): what reads it back."""
    import polars as pl

    return {
        **_schema(),
        **{name: pl.Datetime("us", "UTC") for name in _TIME_COLUMNS},
    }


def frame(rows: Sequence[JobRow]) -> pl.DataFrame:
    """The rows as a polars DataFrame, sorted by job, times as UTC datetimes."""
    import polars as pl

    schema = _schema()
    assert tuple(schema) == COLUMNS, "output schema and JobRow fields disagree"
    rows = [_inert(row) for row in rows]
    # Built column by column: polars converts a list per column far faster than a dict per row.
    # Nested columns go through JSON: polars decodes it in Rust ~20x faster than it converts
    # Python lists of dicts (gpu_details alone cost ~25 ms per 1000 jobs).
    columns = {
        name: pl.Series(
            name, [json.dumps(getattr(row, name)) for row in rows], dtype=pl.Utf8
        ).str.json_decode(schema[name])
        if name in _NESTED_COLUMNS
        else pl.Series(name, [getattr(row, name) for row in rows], dtype=schema[name])
        for name in COLUMNS
    }
    data = pl.DataFrame(columns, schema)
    return data.sort("job").with_columns(
        [
            pl.from_epoch((pl.col(name) * 1_000_000).round(0).cast(pl.Int64), time_unit="us")
            .dt.replace_time_zone("UTC")
            .alias(name)
            for name in _TIME_COLUMNS
        ]
    )


def write_table(rows: Sequence[JobRow], folder: Path, formats: Sequence[str]) -> list[Path]:
    """Write `jobs.<format>` for each format into `folder`; return the paths written."""
    import polars as pl

    folder.mkdir(parents=True, exist_ok=True)
    data = frame(rows)
    written = []
    for name in formats:
        path = folder / f"jobs.{name}"
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        if name == "parquet":
            data.write_parquet(temporary)
        elif name == "jsonl":
            data.write_ndjson(temporary)
        elif name == "csv":
            flat = data.with_columns(
                [pl.col(c).list.join(";").alias(c) for c in _LIST_COLUMNS]
                + [
                    pl.col("gpu_details")
                    .map_elements(_json_list, return_dtype=pl.Utf8)
                    .alias("gpu_details")
                ]
            )
            inert_csv(flat).write_csv(temporary)
        else:
            raise ValueError(f"unknown table format {name!r}")
        os.replace(temporary, path)
        written.append(path)
    return written


FORMULA_STARTS = "=+-@\t\r\uff1d\uff0b\uff0d\uff20"
"""What makes a spreadsheet run a cell as a formula (OWASP's list, and the full-width forms
some spreadsheets fold to them). A log line, a host or a file name can start with any."""


def inert_csv(data: pl.DataFrame) -> pl.DataFrame:
    """`data` with every text cell a spreadsheet would run prefixed with `'` (shown, not run).

    Only text columns are touched: numbers stay numbers (a negative value is not a formula)."""
    import polars as pl

    starts = "^[" + "".join(f"\\x{{{ord(c):x}}}" for c in FORMULA_STARTS) + "]"
    return data.with_columns(
        [
            pl.when(pl.col(name).str.contains(starts))
            .then(pl.lit("'") + pl.col(name))
            .otherwise(pl.col(name))
            .alias(name)
            for name, dtype in data.schema.items()
            if dtype == pl.Utf8
        ]
    )


def _inert(row: JobRow) -> JobRow:
    """A copy of `row` with its text in visible form. Rows are made inert where they are made
    (`analyze_job`); this also covers rows read back from a cache an older version wrote."""
    copy = JobRow.from_dict(row.to_dict())
    copy.make_inert()
    return copy


def _json_list(value: Any) -> str:
    items = value.to_list() if hasattr(value, "to_list") else list(value or [])
    return json.dumps(items, ensure_ascii=False)
