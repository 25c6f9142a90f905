"""`crashlens scan s3://...`: an archive in an object store, read through fsspec and s3fs.

The store is moto's S3 server, started as its own process and spoken to over HTTP, so the
requests are the ones a real store receives (listings with delimiters, ranged GETs, ETags). The
client finds it through the standard environment (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`), as
a user's scan would: there is no endpoint or credential flag to pass.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scan_helpers import enospc_job, generated_archive, healthy_job, oom_job, tar_job, write

from crashlens.batch.jobs import iter_jobs
from crashlens.batch.remote import is_url, url_text
from crashlens.batch.session import ScanOptions, scan_archive

pytest_plugins = ("service_helpers",)  # the shared Dask and S3 fixtures

s3fs = pytest.importorskip("s3fs")
BUCKET = "crash-archive"
VOLATILE = ("seconds", "job_mtime")
"""What differs between a local and an S3 scan of the same bytes: the time a job took and
the time its files were written (a local file's mtime, an object's upload)."""


@pytest.fixture
def store(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """An empty bucket, and the environment a user's scan would find its store in."""
    environment = {
        "AWS_ENDPOINT_URL": s3_endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    s3fs.S3FileSystem.clear_instance_cache()
    fs = s3fs.S3FileSystem()
    fs.mkdir(BUCKET)
    yield fs
    fs.rm(BUCKET, recursive=True)
    s3fs.S3FileSystem.clear_instance_cache()


def _archive(root: Path) -> Path:
    """Folders, a .tar.gz job, a .zip job, a gzipped log, a healthy job and hidden files."""
    generated_archive(root, count=12)
    enospc_job(root / "2024-06" / "job-gz")
    log = root / "2024-06" / "job-gz" / "launcher.log"
    log.with_name("launcher.log.gz").write_bytes(gzip.compress(log.read_bytes()))
    log.unlink()
    oom_job(root / "2024-06" / "zipped")
    with zipfile.ZipFile(root / "2024-06" / "job-zip.zip", "w") as packed:
        packed.write(root / "2024-06" / "zipped" / "launcher.log", "logs/launcher.log")
    shutil.rmtree(root / "2024-06" / "zipped")
    tar_job(root / "2024-07" / "nested" / "job-tar.tar.gz", {"a/launcher.log": "plain\n" * 3})
    healthy_job(root / "2024-07" / "healthy")
    write(root / "2024-07" / ".hidden" / "launcher.log", "never listed\n")
    write(root / "2024-07" / "healthy" / "empty.log", "")
    return root


def _upload(fs: Any, root: Path, prefix: str) -> None:
    for path in sorted(root.rglob("*")):
        if path.is_file():
            fs.put_file(str(path), f"{prefix}/{path.relative_to(root).as_posix()}")


def _rows(rows: list[Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.to_dict().items() if k not in VOLATILE} for row in rows]


def _stable(line: str) -> dict[str, Any]:
    return {k: v for k, v in json.loads(line).items() if k not in VOLATILE}


def _scan(root: str | Path, out: Path, workers: int = 2) -> Any:
    return scan_archive(ScanOptions(root=Path(root), out=out, workers=workers))


def test_urls_are_told_from_paths_also_after_path_collapsed_them() -> None:
    assert is_url("s3://bucket/x") and is_url(str(Path("s3://bucket/x")))
    assert url_text(Path("s3://bucket/x/")) == "s3://bucket/x"
    assert url_text(Path("file:///tmp/a")) == "file:///tmp/a"
    assert not is_url("/data/s3:/x") and not is_url("C:/logs") and not is_url("logs/a:b")


def test_an_s3_scan_gives_the_rows_of_the_local_scan(store: Any, tmp_path: Path) -> None:
    root = _archive(tmp_path / "archive")
    _upload(store, root, f"{BUCKET}/cluster-a")
    local = _scan(root, tmp_path / "local-out")
    remote = _scan(f"s3://{BUCKET}/cluster-a", tmp_path / "s3-out")
    assert remote.summary["root"] == f"s3://{BUCKET}/cluster-a"
    assert _rows(remote.rows) == _rows(local.rows)
    by_job = {row.job: row for row in remote.rows}
    # compressed and archived jobs are read member by member, as locally
    assert by_job["2024-06/job-gz"].verdict == "filesystem"
    assert by_job["2024-06/job-gz"].evidence.startswith("2024-06/job-gz/launcher.log.gz:")
    assert by_job["2024-06/job-zip.zip"].verdict == "gpu_oom"
    assert "job-zip.zip!logs/launcher.log" in by_job["2024-06/job-zip.zip"].evidence
    assert by_job["2024-07/nested/job-tar.tar.gz"].reason is None
    assert any(row.job.endswith(".tar.gz") and row.verdict for row in remote.rows)
    assert "2024-07/healthy/empty.log: empty file" in by_job["2024-07/healthy"].skipped
    assert not any(".hidden" in row.job for row in remote.rows)


def test_a_rescan_keeps_objects_by_etag_and_reads_only_changed_ones(
    store: Any, tmp_path: Path
) -> None:
    root = _archive(tmp_path / "archive")
    prefix = f"{BUCKET}/cluster-b"
    _upload(store, root, prefix)
    out = tmp_path / "out"
    first = _scan(f"s3://{prefix}", out)
    assert first.summary["analyzed"]["jobs"] == len(first.rows)
    cache = (out / "scan-cache.jsonl").read_text(encoding="utf-8")
    assert '"root": "s3://crash-archive/cluster-b"' in cache.splitlines()[0]
    # The same bytes uploaded again: a new upload time, the same ETag: still cached.
    time.sleep(1.1)
    log = root / "2024-07" / "healthy" / "launcher.log"
    store.put_file(str(log), f"{prefix}/2024-07/healthy/launcher.log")
    again = _scan(f"s3://{prefix}", out)
    assert again.summary["analyzed"]["jobs"] == 0
    assert _rows(again.rows) == _rows(first.rows)
    # Other bytes, same size: a new ETag, so that job alone is analyzed again.
    text = log.read_text(encoding="utf-8")
    log.write_text(text.replace("0.91", "0.92"), encoding="utf-8")
    store.put_file(str(log), f"{prefix}/2024-07/healthy/launcher.log")
    third = _scan(f"s3://{prefix}", out)
    assert third.summary["analyzed"]["jobs"] == 1
    assert third.summary["jobs"]["from_cache"] == len(first.rows) - 1


def test_jobs_are_listed_as_locally_and_a_scan_output_under_the_root_is_not_a_job(
    store: Any, tmp_path: Path
) -> None:
    root = _archive(tmp_path / "archive")
    _upload(store, root, f"{BUCKET}/cluster-c")
    write(tmp_path / "out" / "scan-cache.jsonl", "{}\n")
    write(tmp_path / "out" / "summary.md", "# a scan's own output\n")
    _upload(store, tmp_path / "out", f"{BUCKET}/cluster-c/scan-out")
    local = [(job.rel, job.kind, [f.name for f in job.files]) for job in iter_jobs(root)]
    store.invalidate_cache()
    listed = list(iter_jobs(f"s3://{BUCKET}/cluster-c"))
    assert s3fs.S3FileSystem() is store  # the instance the listing used
    assert not store.dircache  # each folder's listing dropped once used: no growth
    assert [(job.rel, job.kind, [f.name for f in job.files]) for job in listed] == local
    assert all(f.etag for job in listed for f in job.files)
    globbed = [j.rel for j in iter_jobs(f"s3://{BUCKET}/cluster-c", job_glob="*/job-00*")]
    assert globbed == [j.rel for j in iter_jobs(root, job_glob="*/job-00*")]
    assert globbed  # the glob matched something


def test_the_cli_scans_a_bucket_and_writes_its_outputs_to_a_bucket(
    store: Any, s3_endpoint: str, tmp_path: Path
) -> None:
    root = _archive(tmp_path / "archive")
    _upload(store, root, f"{BUCKET}/cluster-d")
    command = [sys.executable, "-m", "crashlens", "scan", f"s3://{BUCKET}/cluster-d"]
    command += ["-o", f"s3://{BUCKET}/reports/d", "--summary", "json", "--format", "jsonl"]
    done = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["out"] == f"s3://{BUCKET}/reports/d"
    assert f"s3://{BUCKET}/reports/d/jobs.jsonl" in summary["outputs"]
    store.invalidate_cache()
    written = sorted(p.rsplit("/", 1)[-1] for p in store.ls(f"{BUCKET}/reports/d"))
    assert written == ["jobs.jsonl", "scan-cache.jsonl", "summary.json", "summary.md"]
    stored = json.loads(store.cat_file(f"{BUCKET}/reports/d/summary.json"))
    assert stored["out"] == summary["out"] and stored["jobs"] == summary["jobs"]
    table = store.cat_file(f"{BUCKET}/reports/d/jobs.jsonl").decode().splitlines()
    local_out = tmp_path / "local-out"
    scan_archive(ScanOptions(root=root, out=local_out, workers=2, formats=("jsonl",)))
    local_table = (local_out / "jobs.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(table) == len(local_table) == 16
    assert [_stable(line) for line in table] == [_stable(line) for line in local_table]
    # The next run fetches the cache from the bucket: nothing is analyzed again.
    again = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ))
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["analyzed"]["jobs"] == 0


def test_a_missing_prefix_is_a_usage_error(store: Any) -> None:
    command = [sys.executable, "-m", "crashlens", "scan", f"s3://{BUCKET}/nothing-here"]
    done = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ))
    assert done.returncode == 2
    assert f"s3://{BUCKET}/nothing-here" in done.stderr


def test_local_scans_and_analyze_never_import_fsspec(tmp_path: Path) -> None:
    job = healthy_job(tmp_path / "archive" / "job-1")
    code = (
        "import sys\nfrom crashlens.cli import main\n"
        "sys.argv = ['crashlens', sys.argv[1], sys.argv[2]] + sys.argv[3:]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('fsspec' in sys.modules, file=sys.stderr)"
    )
    for args in (
        ["analyze", str(job)],
        ["scan", str(tmp_path / "archive"), "-o", str(tmp_path / "o")],
    ):
        done = subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True
        )
        assert done.stderr.strip().splitlines()[-1] == "False", args


def test_any_fsspec_url_is_a_root_file_urls_too(tmp_path: Path) -> None:
    root = _archive(tmp_path / "archive")
    local = _scan(root, tmp_path / "local-out")
    through_fsspec = _scan(f"file://{root}", tmp_path / "url-out")
    assert through_fsspec.summary["root"] == f"file://{root}"
    assert _rows(through_fsspec.rows) == _rows(local.rows)
    assert [j.rel for j in iter_jobs(f"file://{root}")] == [j.rel for j in iter_jobs(root)]
