"""`crashlens scan` on the command line: summary formats, outputs and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from scan_helpers import healthy_job, oom_job, xid_job
from typer.testing import CliRunner

from crashlens.cli import app

RUNNER = CliRunner()


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "archive"
    oom_job(root / "job-1")
    xid_job(root / "job-2", host="gpu-a12")
    xid_job(root / "job-3", host="gpu-a12")
    healthy_job(root / "job-4")
    return root


def test_scan_prints_the_summary_and_writes_outputs(tmp_path: Path) -> None:
    root = _root(tmp_path)
    out = tmp_path / "out"
    result = RUNNER.invoke(app, ["scan", str(root), "--out", str(out), "-j", "1"])
    assert result.exit_code == 0, result.output
    assert "Scanned 4 jobs" in result.stdout
    assert "gpu-a12" in result.stdout  # the drain list
    assert {p.name for p in out.iterdir()} >= {
        "jobs.parquet",
        "summary.json",
        "summary.md",
        "scan-cache.jsonl",
    }


def test_scan_json_summary_and_csv_table(tmp_path: Path) -> None:
    root = _root(tmp_path)
    out = tmp_path / "out"
    args = ["scan", str(root), "-o", str(out), "--summary", "json", "-f", "csv", "-j", "2"]
    args += ["--job-timeout", "0"]  # no limit
    result = RUNNER.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["jobs"]["failed"] == 3
    assert (out / "jobs.csv").exists() and not (out / "jobs.parquet").exists()
    markdown = RUNNER.invoke(app, ["scan", str(root), "-o", str(out), "--summary", "markdown"])
    assert markdown.stdout.startswith("# crashlens scan")


def test_scan_usage_errors(tmp_path: Path) -> None:
    missing = RUNNER.invoke(app, ["scan", str(tmp_path / "nope")])
    assert missing.exit_code == 2
    assert "no such file" in missing.output
    bad = RUNNER.invoke(app, ["scan", str(tmp_path), "-f", "xlsx"])
    assert bad.exit_code == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    none = RUNNER.invoke(app, ["scan", str(empty), "-o", str(tmp_path / "o")])
    assert none.exit_code == 1
    assert "no job found" in none.output
