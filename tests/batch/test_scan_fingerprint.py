"""Fingerprints: the same failure groups across jobs whatever its pids, paths, ranks, hosts."""

from __future__ import annotations

from pathlib import Path

from scan_helpers import enospc_job, healthy_job, oom_job, xid_job

from crashlens.batch.fingerprint import FINGERPRINT_VERSION, fingerprint, normalize
from crashlens.batch.job import analyze_job
from crashlens.batch.jobs import discover_jobs


def _rows(root: Path) -> dict[str, object]:
    return {job.rel: analyze_job(job, str(root)) for job in discover_jobs(root)}


def test_same_failure_different_pids_paths_ranks_hosts_same_fingerprint(tmp_path: Path) -> None:
    oom_job(tmp_path / "job-a", rank=3, pid=2610, size="2.00 GiB")
    oom_job(tmp_path / "job-b", rank=6, pid=91234, size="784.00 MiB")
    xid_job(tmp_path / "job-c", host="gpu-a12", pci="0000:18:00")
    xid_job(tmp_path / "job-d", host="gpu-h07", pci="0000:DB:00",
            uuid="GPU-99999999-8888-7777-6666-555544443333")  # fmt: skip
    enospc_job(tmp_path / "job-e", "/mnt/ckpt/alice-run/checkpoint-100")
    enospc_job(tmp_path / "job-f", "/lustre/proj/bob/ckpt/checkpoint-98000")
    rows = _rows(tmp_path)
    a, b, c, d, e, f = (rows[f"job-{x}"] for x in "abcdef")
    assert a.verdict == b.verdict == "gpu_oom"  # type: ignore[attr-defined]
    assert c.verdict == d.verdict == "hardware"  # type: ignore[attr-defined]
    assert a.fingerprint == b.fingerprint  # type: ignore[attr-defined]
    assert c.fingerprint == d.fingerprint  # type: ignore[attr-defined]
    assert e.fingerprint == f.fingerprint  # type: ignore[attr-defined]
    distinct = {a.fingerprint, c.fingerprint, e.fingerprint}  # type: ignore[attr-defined]
    assert len(distinct) == 3
    assert all(fp.startswith(f"fp{FINGERPRINT_VERSION}-") for fp in distinct)


def test_same_category_different_failure_differs(tmp_path: Path) -> None:
    xid_job(tmp_path / "job-79", host="gpu-a12", xid=79)
    xid_job(tmp_path / "job-48", host="gpu-a12", xid=48)
    rows = _rows(tmp_path)
    assert rows["job-79"].verdict == rows["job-48"].verdict == "hardware"  # type: ignore[attr-defined]
    assert rows["job-79"].fingerprint != rows["job-48"].fingerprint  # type: ignore[attr-defined]


def test_healthy_jobs_have_no_fingerprint(tmp_path: Path) -> None:
    healthy_job(tmp_path / "job-ok")
    row = _rows(tmp_path)["job-ok"]
    assert row.verdict == "none"  # type: ignore[attr-defined]
    assert row.fingerprint is None  # type: ignore[attr-defined]


def test_normalize_masks_what_varies_and_keeps_what_names_the_failure() -> None:
    one = normalize(
        "[rank3]:[E0320 12:55:16.078423023 819 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog "
        "caught collective operation timeout: WorkNCCL(SeqNum=7130, OpType=ALLREDUCE, "
        "NumelIn=1234, NumelOut=99, Timeout(ms)=1800000) ran for 1800495 milliseconds"
    )
    two = normalize(
        "gpu-b07: [E0101 01:02:03.000000001 42 ProcessGroupNCCL.cpp:630] [Rank 11] Watchdog "
        "caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, "
        "NumelIn=5, NumelOut=5, Timeout(ms)=600000) ran for 600001 milliseconds",
        host="gpu-b07",
    )
    assert one == two
    assert "OpType=ALLREDUCE" in one
    dmesg = "[ 1234.600000] NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python3, GPU lost"
    syslog = (
        "Mar  1 10:00:01 node7 kernel: NVRM: Xid (PCI:0000:db:00): 79, pid=9, name=python3, "
        "GPU lost"
    )
    assert normalize(dmesg) == normalize(syslog)
    assert "79" in normalize(dmesg)
    assert normalize("Xid (PCI:0000:18:00): 48, pid=7, name=python3.10, DBE") == normalize(
        "Xid (PCI:0000:3a:00): 48, pid=9, name=python3.11, DBE"
    )
    assert "Errno 28" in normalize("OSError: [Errno 28] No space left on device: '/a/b/c.pt'")
    assert "<path>" in normalize("PermissionError: [Errno 13] Permission denied: '/data/x/y'")
    assert normalize("DataLoader worker (pid 81) is killed by signal: Bus error.") == normalize(
        "DataLoader worker (pid 123456) is killed by signal: Bus error."
    )


def test_fingerprint_is_versioned_and_depends_on_verdict() -> None:
    assert fingerprint("shm", "r", "s") == fingerprint("shm", "r", "s")
    assert fingerprint("shm", "r", "s") != fingerprint("hardware", "r", "s")
    assert fingerprint("shm", "r", "s").startswith(f"fp{FINGERPRINT_VERSION}-")


def test_the_same_disk_failure_on_other_disks_and_paths_groups_together() -> None:
    remounts = [
        "EXT4-fs (md0): Remounting filesystem read-only",
        "EXT4-fs (nvme0n1p2): Remounting filesystem read-only",
        "EXT4-fs (sdb1): Remounting filesystem read-only",
    ]
    assert len({normalize(line) for line in remounts}) == 1
    io_errors = [
        "Buffer I/O error on dev dm-3, logical block 9",
        "Buffer I/O error on dev sda, logical block 1",
    ]
    assert normalize(io_errors[0]) == normalize(io_errors[1])
    denied = [
        "PermissionError: [Errno 13] Permission denied: '/data/cache/cache-1a2b3c4d5e6f7a8b.arrow'",
        "PermissionError: [Errno 13] Permission denied: '/home/u/.cache/x/train-00001.arrow'",
        "PermissionError: [Errno 13] Permission denied: '/data/x/y'",
    ]
    assert {normalize(line) for line in denied} == {
        "PermissionError: [Errno 13] Permission denied: '<path>'"
    }
    # words that only look like device names outside a device context are kept
    assert "md5" in normalize("md5 checksum mismatch for hdf5 file")
    assert "sdk" in normalize("the sdk was too old")
    assert FINGERPRINT_VERSION >= 2  # a normalization change is a new version
