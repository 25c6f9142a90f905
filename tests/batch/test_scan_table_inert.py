"""The scan's job table (parquet, jsonl, csv) carries no raw control character from a log.

A job whose lines (and file and folder names) carry a clipboard write (`ESC ]52;`), a terminal
reset (`ESC c`), the single-byte CSI and NUL is scanned into every table format; every text
cell holds the visible form (`\\x1b]52;`), numbers stay numbers, and a CSV cell a spreadsheet
would run is still neutralized.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import polars as pl
from typer.testing import CliRunner

from crashlens.batch.output import write_table
from crashlens.batch.row import JobRow
from crashlens.cli import app

HOSTILE = "\x1b]52;c;ZWNobyBwd25lZA==\x07 \x1b]52;c;eA==\x1b\\ \x1bc \x9b31m \x00 \x85"
RAW = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
"""What must not reach a file (tab is layout; no cell holds a newline either)."""


def _hostile_root(tmp_path: Path) -> Path:
    job = tmp_path / "archive" / "=HYPERLINK(1) \x1bc job"
    job.mkdir(parents=True)
    (job / "train \x1b]0;T\x07.log").write_text(
        f"[rank0]: Traceback (most recent call last):\nBus error (core dumped) {HOSTILE}\n"
        "ERROR: Unexpected bus error encountered in worker. This might be caused by "
        f"insufficient shared memory (shm). {HOSTILE}\n",
        encoding="utf-8",
    )
    return job.parent


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def test_scan_tables_hold_no_raw_control_characters(tmp_path: Path) -> None:
    out = tmp_path / "out"
    command = ["scan", str(_hostile_root(tmp_path)), "-o", str(out), "-j", "1"]
    result = CliRunner().invoke(app, [*command, "-f", "parquet", "-f", "jsonl", "-f", "csv"])
    assert result.exit_code == 0, result.output

    jsonl = (out / "jobs.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in jsonl.splitlines()]
    assert len(rows) == 1
    row = rows[0]
    assert row["verdict"] == "shm", row  # the escapes cost nothing of the diagnosis
    assert isinstance(row["files"], int) and isinstance(row["bytes"], int)
    assert isinstance(row["confidence"], float)
    for value in _strings(row):  # what `jq -r` prints
        assert RAW.search(value) is None, value
    # reading the log drops complete OSC sequences; what is left is shown, not dropped
    assert "\\x1bc \\x9b31m" in row["evidence"], row["evidence"]
    assert "\\x1b]0;T\\x07" in row["evidence"] and "\\x1bc" in row["job"], row

    parquet = pl.read_parquet(out / "jobs.parquet")
    assert parquet.schema["files"] == pl.Int64 and parquet.schema["confidence"] == pl.Float64
    for value in _strings(parquet.to_dicts()):
        assert RAW.search(value) is None, value

    raw_csv = (out / "jobs.csv").read_text(encoding="utf-8")
    assert RAW.search(raw_csv.replace("\n", "")) is None
    [cells] = list(csv.DictReader(raw_csv.splitlines()))
    assert cells["job"].startswith("'=HYPERLINK(1) \\x1bc job"), cells["job"]
    assert cells["files"] == "1" and float(cells["confidence"]) == row["confidence"]


def test_rows_from_an_older_cache_are_made_inert_when_written(tmp_path: Path) -> None:
    """A row that reaches the writer raw (a cache an older version wrote) is shown too."""
    raw = JobRow(
        job="job-\x1bc",
        verdict="shm",
        evidence=f"train.log:2: Bus error {HOSTILE}",
        hosts=["node-\x9b1"],
        gpu_details=[{"label": "\x00gpu", "host": None, "pci": None, "uuid": None, "serial": None}],
        files=3,
        confidence=0.5,
    )
    [path] = write_table([raw], tmp_path, ["jsonl"])
    [row] = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for value in _strings(row):
        assert RAW.search(value) is None, value
    assert row["gpu_details"][0]["label"] == "\\x00gpu" and row["gpu_details"][0]["host"] is None
    assert row["files"] == 3 and row["confidence"] == 0.5
    assert raw.job == "job-\x1bc"  # the caller's row is left as it was
