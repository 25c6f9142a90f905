"""`scan --shard K/N` and `scan-merge`: shards never overlap, and merged they equal one scan;
the Slurm array and Kubernetes Indexed Job examples run with the variables those set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml
from scan_helpers import generated_archive, oom_job
from typer.testing import CliRunner

from crashlens.batch.jobs import discover_jobs
from crashlens.batch.merge import MergeError, merge_outputs
from crashlens.batch.session import ScanOptions, scan_archive
from crashlens.batch.shards import Shard, ShardError, parse_shard, shard_of
from crashlens.cli import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RUNNER = CliRunner()
RUN_SPECIFIC = {
    "scanned_at",
    "duration_s",
    "analyzed",
    "out",
    "outputs",
    "workers",
    "engine",
    "shard",
    "jobs_listed",
    "merged_from",
}
"""Summary fields that say where and when a scan ran, not what it found."""


def comparable(summary: dict[str, Any]) -> dict[str, Any]:
    """A summary without its run-specific fields (and without from_cache, a run's history)."""
    kept = {k: v for k, v in summary.items() if k not in RUN_SPECIFIC}
    kept["jobs"] = {k: v for k, v in kept["jobs"].items() if k != "from_cache"}
    return kept


def table(folder: Path) -> pl.DataFrame:
    """A scan's rows without the analysis time (the one column that differs run to run)."""
    return pl.read_parquet(folder / "jobs.parquet").drop("seconds")


def test_parse_shard() -> None:
    assert parse_shard("2/8") == Shard(2, 8)
    assert parse_shard(" 1 / 1 ") == Shard(1, 1)
    assert str(Shard(3, 4)) == "3/4"
    for bad, why in [
        ("0/4", "counts from 1"),
        ("5/4", "between 1 and 4"),
        ("1/0", "at least 1"),
        ("1-4", "expected K/N"),
        ("a/b", "expected K/N"),
    ]:
        with pytest.raises(ShardError, match=why):
            parse_shard(bad)


def test_shards_are_stable_disjoint_and_balanced() -> None:
    # Pinned: a rerun, another machine or another crashlens release picks the same jobs.
    assert [shard_of(f"2024-03/job-{n:03d}", 4) for n in range(8)] == [3, 2, 4, 2, 3, 2, 3, 2]
    paths = [f"2024-{m:02d}/job-{n:05d}" for m in range(1, 13) for n in range(500)]
    counts = [0] * 8
    for path in paths:
        owners = [k for k in range(1, 9) if Shard(k, 8).holds(path)]
        assert len(owners) == 1
        counts[owners[0] - 1] += 1
    assert min(counts) > 0.9 * len(paths) / 8 and max(counts) < 1.1 * len(paths) / 8


def test_shards_merged_equal_the_unsharded_scan(tmp_path: Path) -> None:
    root = generated_archive(tmp_path / "archive", 30)
    whole = scan_archive(ScanOptions(root=root, out=tmp_path / "whole", workers=1)).summary
    shard_outs = []
    seen: list[str] = []
    for k in (1, 2, 3):
        out = tmp_path / f"shard-{k}"
        part = scan_archive(ScanOptions(root=root, out=out, workers=1, shard=Shard(k, 3)))
        assert part.summary["shard"] == f"{k}/3" and part.summary["jobs_listed"] == 30
        seen += [row.job for row in part.rows]
        shard_outs.append(out)
    assert sorted(seen) == sorted(job.rel for job in discover_jobs(root))  # no overlap, no gap
    merged = merge_outputs(shard_outs, tmp_path / "merged", ("parquet", "jsonl"))
    assert table(tmp_path / "merged").equals(table(tmp_path / "whole"))
    assert comparable(merged.summary) == comparable(whole)
    on_disk = json.loads((tmp_path / "merged" / "summary.json").read_text())
    assert comparable(on_disk) == comparable(
        json.loads((tmp_path / "whole" / "summary.json").read_text())
    )
    # The summary was recounted, not concatenated: groups span shards.
    assert whole["hotspots"]["hosts"] and whole["fingerprints"]["top"][0]["count"] > 3
    # Read back from jsonl too (a shard scanned with --format jsonl only).
    for out in shard_outs:
        (out / "jobs.parquet").rename(out / "jobs.parquet.bak")
        scan_table = pl.read_parquet(out / "jobs.parquet.bak")
        scan_table.write_ndjson(out / "jobs.jsonl")
    again = merge_outputs(shard_outs, tmp_path / "merged-jsonl")
    assert comparable(again.summary) == comparable(whole)
    assert table(tmp_path / "merged-jsonl").equals(table(tmp_path / "whole"))


def test_each_shard_stats_only_its_own_jobs_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shard filter runs on a job's path as the listing finds it, before its files are
    stat-ed (or a folder matched by --job-glob is walked): N shards split the metadata work."""
    from crashlens.batch import jobs as jobs_module

    root = generated_archive(tmp_path / "archive", 30)
    listed = list(discover_jobs(root))
    stated: list[str] = []
    walked: list[str] = []
    stat, folder_job = jobs_module._stat, jobs_module._folder_job

    def counted_stat(entry: os.DirEntry[str], name: str) -> Any:
        stated.append(entry.path)
        return stat(entry, name)

    def counted_folder_job(folder: str, walk: Any) -> Any:
        walked.append(os.path.relpath(folder, root).replace(os.sep, "/"))
        return folder_job(folder, walk)

    monkeypatch.setattr(jobs_module, "_stat", counted_stat)
    monkeypatch.setattr(jobs_module, "_folder_job", counted_folder_job)
    every_file: list[str] = []
    for k in (1, 2, 3):
        stated.clear()
        shard = Shard(k, 3)
        part = scan_archive(ScanOptions(root=root, out=tmp_path / f"s{k}", workers=1, shard=shard))
        own = [job for job in listed if shard.holds(job.rel)]
        assert sorted(row.job for row in part.rows) == sorted(job.rel for job in own)
        assert sorted(stated) == sorted(path for job in own for path in job.inputs)
        assert part.summary["jobs_listed"] == len(listed)
        every_file += stated
    assert sorted(every_file) == sorted(path for job in listed for path in job.inputs)
    # Under --job-glob a matched folder is walked by its own shard only.
    for k in (1, 2):
        walked.clear()
        shard = Shard(k, 2)
        options = ScanOptions(
            root=root, out=tmp_path / f"g{k}", workers=1, job_glob="*/job-*", shard=shard
        )
        part = scan_archive(options)
        assert walked and all(shard.holds(rel) for rel in walked)
        assert sorted(walked) == sorted(row.job for row in part.rows if "." not in row.job)


def test_merge_refuses_shards_that_do_not_fit(tmp_path: Path) -> None:
    root = generated_archive(tmp_path / "archive", 12)
    outs = []
    for k in (1, 2):
        out = tmp_path / f"s{k}"
        scan_archive(ScanOptions(root=root, out=out, workers=1, shard=Shard(k, 2)))
        outs.append(out)
    with pytest.raises(MergeError, match="shards missing: 2/2"):
        merge_outputs(outs[:1], tmp_path / "m")
    with pytest.raises(MergeError, match="given twice"):
        merge_outputs([outs[0], outs[0]], tmp_path / "m")
    other = tmp_path / "other"
    oom_job(other / "job-x")
    scan_archive(ScanOptions(root=other, out=tmp_path / "o", workers=1))
    with pytest.raises(MergeError, match="different scans: root"):
        merge_outputs([outs[0], tmp_path / "o"], tmp_path / "m")
    with pytest.raises(MergeError, match="no readable summary.json"):
        merge_outputs([tmp_path / "nothing"], tmp_path / "m")
    # Two unsharded outputs of one root hold the same jobs: refused, not doubled.
    scan_archive(ScanOptions(root=root, out=tmp_path / "w1", workers=1))
    scan_archive(ScanOptions(root=root, out=tmp_path / "w2", workers=1))
    with pytest.raises(MergeError, match="is in both"):
        merge_outputs([tmp_path / "w1", tmp_path / "w2"], tmp_path / "m")


def test_shard_and_merge_on_the_command_line(tmp_path: Path) -> None:
    root = generated_archive(tmp_path / "archive", 6)
    bad = RUNNER.invoke(app, ["scan", str(root), "-o", str(tmp_path / "x"), "--shard", "0/2"])
    assert bad.exit_code == 2 and "K counts from 1" in bad.output
    outs = []
    for k in range(1, 7):  # 6 jobs in 6 shards: some shards are empty, and that is no error
        out = tmp_path / f"s{k}"
        args = ["scan", str(root), "-o", str(out), "--shard", f"{k}/6", "-j", "1"]
        result = RUNNER.invoke(app, [*args, "--summary", "json"])
        assert result.exit_code == 0, result.output
        outs.append(str(out))
    merged = RUNNER.invoke(
        app, ["scan-merge", *outs, "-o", str(tmp_path / "m"), "--summary", "json"]
    )
    assert merged.exit_code == 0, merged.output
    assert json.loads(merged.stdout)["jobs"]["scanned"] == 6
    missing = RUNNER.invoke(app, ["scan-merge", *outs[1:], "-o", str(tmp_path / "m2")])
    assert missing.exit_code == 2 and "shards missing: 1/6" in missing.output
    wrong = RUNNER.invoke(app, ["scan-merge", *outs, "-o", str(tmp_path / "m3"), "-f", "xls"])
    assert wrong.exit_code == 2


def _environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The test's environment with this venv's `crashlens` first on PATH."""
    bin_dir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JOB_COMPL"))}
    env["PATH"] = os.pathsep.join([str(tmp_path / "bin"), bin_dir, env.get("PATH", "")])
    env.update(extra)
    return env


def test_slurm_array_example(tmp_path: Path) -> None:
    script = EXAMPLES / "slurm" / "scan-array.sbatch"
    root = generated_archive(tmp_path / "archive", 18)
    out = tmp_path / "scan"
    scan_archive(ScanOptions(root=root, out=tmp_path / "whole", workers=1))
    # Submission: a stand-in sbatch on PATH records what the script asks Slurm for.
    calls = tmp_path / "sbatch-calls"
    (tmp_path / "bin").mkdir()
    sbatch = tmp_path / "bin" / "sbatch"
    sbatch.write_text(f'#!/bin/sh\necho "$@" >> {calls}\necho "4242;cluster"\n')
    sbatch.chmod(0o755)
    env = _environment(tmp_path, SCAN_ROOT=str(root), SCAN_OUT=str(out), SHARDS="3")
    submitted = subprocess.run(
        ["bash", str(script)], env=env, capture_output=True, text=True, check=True
    )
    array, merge = calls.read_text().splitlines()
    assert "--array=1-3" in array and array.endswith(str(script))
    assert "--dependency=afterok:4242 " in merge and merge.endswith(f"{script} merge")
    assert "4242" in submitted.stdout
    # Each array task, as Slurm starts it: 1-based task ids, the task count, the cpus.
    for task in (1, 2, 3):
        slurm = {
            "SLURM_ARRAY_JOB_ID": "4242",
            "SLURM_ARRAY_TASK_ID": str(task),
            "SLURM_ARRAY_TASK_COUNT": "3",
            "SLURM_CPUS_PER_TASK": "1",
        }
        done = subprocess.run(
            ["bash", str(script)], env={**env, **slurm}, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        shard = json.loads((out / f"shard-{task}" / "summary.json").read_text())
        assert shard["shard"] == f"{task}/3"
    merged = subprocess.run(["bash", str(script), "merge"], env=env, capture_output=True, text=True)
    assert merged.returncode == 0, merged.stderr
    assert merged.stdout.startswith("# crashlens scan")
    assert table(out / "merged").equals(table(tmp_path / "whole"))
    whole = json.loads((tmp_path / "whole" / "summary.json").read_text())
    assert comparable(json.loads((out / "merged" / "summary.json").read_text())) == comparable(
        whole
    )


def _shell(container: dict[str, Any], env: dict[str, str], **overrides: str) -> str:
    """Run a container's `sh -c` script with its env (and `overrides`); return its stdout."""
    assert container["command"] == ["/bin/sh", "-c"]
    values = {item["name"]: item["value"] for item in container.get("env", [])}
    values.update(overrides)
    done = subprocess.run(
        ["/bin/sh", "-c", container["args"][0]],
        env={**env, **values},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_kubernetes_indexed_job_example(tmp_path: Path) -> None:
    scan_job, merge_job = yaml.safe_load_all(
        (EXAMPLES / "k8s" / "scan-indexed-job.yaml").read_text()
    )
    spec = scan_job["spec"]
    assert spec["completionMode"] == "Indexed"
    container = spec["template"]["spec"]["containers"][0]
    shards = {e["name"]: e["value"] for e in container["env"]}["SHARDS"]
    assert int(shards) == spec["completions"]
    merge_pod = merge_job["spec"]["template"]["spec"]
    for part in (*merge_pod["initContainers"], *merge_pod["containers"]):
        assert {e["name"]: e["value"] for e in part["env"]}["SHARDS"] == shards
    root = generated_archive(tmp_path / "archive", 18)
    out = tmp_path / "out"
    scan_archive(ScanOptions(root=root, out=tmp_path / "whole", workers=1))
    env = _environment(tmp_path)
    paths = {"SCAN_ROOT": str(root), "SCAN_OUT": str(out), "SHARDS": "3", "WORKERS": "1"}
    for index in (0, 1, 2):  # as Kubernetes numbers an Indexed Job's pods
        _shell(container, env, JOB_COMPLETION_INDEX=str(index), **paths)
    run = {"SCAN_OUT": str(out), "SHARDS": "3"}
    _shell(merge_pod["initContainers"][0], env, **run)  # returns: every shard is marked
    report = _shell(merge_pod["containers"][0], env, **run)
    assert report.startswith("# crashlens scan")
    merged = out / "runs" / "2026-12-01" / "merged"
    assert table(merged).equals(table(tmp_path / "whole"))
    whole = json.loads((tmp_path / "whole" / "summary.json").read_text())
    assert comparable(json.loads((merged / "summary.json").read_text())) == comparable(whole)
