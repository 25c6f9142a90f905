"""Host and GPU hotspots: who is implicated in hardware faults across jobs, ranked."""

from __future__ import annotations

from pathlib import Path

from scan_helpers import oom_job, xid_job

from crashlens.batch.hotspots import HotspotTracker
from crashlens.batch.job import analyze_job
from crashlens.batch.jobs import discover_jobs
from crashlens.batch.summary import SummaryBuilder
from crashlens.text.ids import normalize_pci


def _gpu(host: str | None, pci: str | None, uuid: str | None = None) -> dict[str, str | None]:
    return {"label": "", "host": host, "pci": pci, "uuid": uuid, "serial": None}


def test_ranking_by_job_count_then_recency() -> None:
    tracker = HotspotTracker()
    tracker.add("j1", 100.0, "hardware", ["node-a"], [_gpu("node-a", "0000:18:00.0")])
    tracker.add("j2", 200.0, "hardware", ["node-a"], [_gpu("node-a", "0000:18:00.0")])
    tracker.add("j3", 300.0, "hardware", ["node-a"], [_gpu("node-a", "0000:3A:00.0")])
    tracker.add("j4", 400.0, "hardware", ["node-b"], [_gpu("node-b", "0000:18:00.0")])
    tracker.add("j5", 500.0, "unknown", ["node-b"], [])
    tracker.add("j6", 600.0, "hardware", ["node-c"], [_gpu(None, "0000:18:00.0")])
    hosts = tracker.hosts(min_jobs=2)
    assert [(h["id"], h["jobs"]) for h in hosts] == [("node-a", 3), ("node-b", 2)]
    assert hosts[0]["first_seen"] == 100.0 and hosts[0]["last_seen"] == 300.0
    assert hosts[1]["verdicts"] == {"hardware": 1, "unknown": 1}
    gpus = tracker.gpus(min_jobs=2)
    # the same bus id on another host is another GPU; a bus id without a host never groups
    assert [(g["id"], g["jobs"]) for g in gpus] == [("node-a/0000:18:00.0", 2)]
    assert gpus[0]["examples"] == ["j1", "j2"]
    assert [g["id"] for g in tracker.gpus(min_jobs=1)][:1] == ["node-a/0000:18:00.0"]


def test_gpu_ids_seen_together_merge_across_jobs() -> None:
    tracker = HotspotTracker()
    uuid = "GPU-6a1b2c3d-1111-2222-3333-444455556666"
    tracker.add("j1", 1.0, "hardware", [], [_gpu(None, "0000:18:00.0", uuid)])  # uuid only
    tracker.add("j2", 2.0, "hardware", ["n1"], [_gpu("n1", "0000:18:00.0")])  # bus only
    tracker.add("j3", 3.0, "hardware", ["n1"], [_gpu("n1", "0000:18:00.0", uuid)])  # both
    (gpu,) = tracker.gpus(min_jobs=2)
    assert gpu["jobs"] == 3
    assert gpu["id"] == "n1/0000:18:00.0"
    assert uuid in gpu["ids"]


def test_one_job_counts_once_per_gpu() -> None:
    tracker = HotspotTracker()
    gpu = _gpu("n1", "0000:18:00.0")
    tracker.add("j1", 1.0, "hardware", ["n1", "n1"], [gpu, gpu])
    assert tracker.gpus(min_jobs=2) == [] and tracker.hosts(min_jobs=2) == []


def test_pci_bus_ids_are_normalized() -> None:
    assert normalize_pci("0000:db:00") == "0000:DB:00.0"
    assert normalize_pci("00000000:DB:00.0") == "0000:DB:00.0"
    assert normalize_pci("PCI:0000:18:00.1") == "0000:18:00.1"
    assert normalize_pci("db:00.0") == "0000:DB:00.0"
    assert normalize_pci("not a bus id") is None


def test_a_bad_gpu_across_jobs_tops_the_drain_list(tmp_path: Path) -> None:
    for index in range(3):
        xid_job(tmp_path / f"job-{index}", host="gpu-a12", pci="0000:18:00")
    xid_job(tmp_path / "job-7", host="gpu-b03", pci="0000:3a:00", xid=48,
            uuid="GPU-11111111-2222-3333-4444-555555555555")  # fmt: skip
    oom_job(tmp_path / "job-8")
    builder = SummaryBuilder(min_jobs=2)
    rows = [analyze_job(job, str(tmp_path)) for job in discover_jobs(tmp_path)]
    for row in rows:
        builder.add(row)
    by_job = {row.job: row for row in rows}
    assert by_job["job-0"].hardware_hosts == ["gpu-a12"]
    assert by_job["job-0"].gpus == ["gpu-a12/0000:18:00.0"]
    assert by_job["job-8"].gpus == [] and by_job["job-8"].hardware_hosts == []
    hotspots = builder.summary()["hotspots"]
    assert [(h["id"], h["jobs"]) for h in hotspots["hosts"]] == [("gpu-a12", 3)]
    assert [(g["id"], g["jobs"]) for g in hotspots["gpus"]] == [("gpu-a12/0000:18:00.0", 3)]
    assert hotspots["gpus"][0]["verdicts"] == {"hardware": 3}
