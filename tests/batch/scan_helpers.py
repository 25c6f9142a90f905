"""Small generated job folders for the `crashlens scan` tests (real log formats, tiny sizes)."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import fields
from pathlib import Path

from crashlens.batch.jobs import JobSpec
from crashlens.batch.row import JobRow

_JOB_FIELDS = tuple(f.name for f in fields(JobSpec))

NOISE = (
    "[rank{r}]:{{'loss': 1.2345, 'grad_norm': 0.41, 'learning_rate': 1.2e-05, 'epoch': 0.{r}}}\n"
    "[rank{r}]: 12%|█▍        | 120/1000 [01:02<07:31,  1.95it/s]\n"
    "[rank{r}]:[2024-03-05 10:0{r}:00,000] [INFO] [logging.py:96:log_dist] step=120, skipped=0\n"
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def elastic_summary(rank: int, pid: int, host: str, exitcode: int = 1) -> str:
    return (
        f"E0305 10:15:00.620000 2606 torch/distributed/elastic/multiprocessing/api.py:869] "
        f"failed (exitcode: {exitcode}) local_rank: {rank} (pid: {pid}) of binary: "
        "/usr/bin/python3\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        "============================================================\n"
        "train.py FAILED\n"
        "------------------------------------------------------------\n"
        "Failures:\n"
        "  <NO_OTHER_FAILURES>\n"
        "------------------------------------------------------------\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  time      : 2024-03-05_10:15:00\n"
        f"  host      : {host}\n"
        f"  rank      : {rank} (local_rank: {rank})\n"
        f"  exitcode  : {exitcode} (pid: {pid})\n"
        "  error_file: <N/A>\n"
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
        "============================================================\n"
    )


def oom_job(folder: Path, rank: int = 3, pid: int = 2610, size: str = "2.00 GiB") -> Path:
    """A CUDA out-of-memory failure on one rank."""
    text = NOISE.format(r=rank) + (
        f"[rank{rank}]:Traceback (most recent call last):\n"
        f'[rank{rank}]:  File "/workspace/{folder.name}/train.py", line 412, in <module>\n'
        f"[rank{rank}]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {size}. "
        f"GPU {rank} has a total capacity of 79.15 GiB of which 1.06 GiB is free. Process {pid} "
        "has 78.02 GiB memory in use.\n"
    )
    write(folder / "launcher.log", text + elastic_summary(rank, pid, f"node-{rank:02d}"))
    return folder


def enospc_job(folder: Path, checkpoint: str = "/mnt/ckpt/run-1/checkpoint-400") -> Path:
    """A checkpoint write that fails on a full disk."""
    text = NOISE.format(r=0) + (
        "[rank0]:Traceback (most recent call last):\n"
        f"[rank0]:OSError: [Errno 28] No space left on device: '{checkpoint}/optimizer.pt'\n"
    )
    write(folder / "launcher.log", text + elastic_summary(0, 4242, "node-07"))
    return folder


def xid_job(
    folder: Path,
    host: str,
    pci: str = "0000:18:00",
    xid: int = 79,
    uuid: str = "GPU-6a1b2c3d-1111-2222-3333-444455556666",
) -> Path:
    """A GPU that fell off the bus (or another Xid) on `host`, seen in its kernel log."""
    message = {
        79: "GPU has fallen off the bus.",
        48: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer.",
    }[xid]
    write(
        folder / "kern.log",
        f"Mar  5 10:14:58 {host} kernel: [ 1234.567890] NVRM: GPU at PCI:{pci}: {uuid}\n"
        f"Mar  5 10:14:59 {host} kernel: [ 1234.600000] NVRM: Xid (PCI:{pci}): {xid}, "
        f"pid='<unknown>', name=<unknown>, {message}\n",
    )
    write(
        folder / "launcher.log",
        NOISE.format(r=2)
        + "[rank2]:RuntimeError: CUDA error: unspecified launch failure\n"
        + elastic_summary(2, 777, host, exitcode=-6),
    )
    return folder


def healthy_job(folder: Path) -> Path:
    write(
        folder / "launcher.log",
        NOISE.format(r=0) * 3
        + "{'train_runtime': 3600.1, 'train_samples_per_second': 12.3, 'train_loss': 0.91}\n",
    )
    return folder


def tar_job(path: Path, files: dict[str, str]) -> Path:
    """A job packed as one .tar.gz."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as archive:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def generated_archive(root: Path, count: int = 24) -> Path:
    """`count` jobs of every kind (folders by month, some packed as .tar.gz), hardware faults
    repeating on a few hosts: enough for fingerprint groups, hotspots and a timeline."""
    for n in range(count):
        folder = root / f"2024-0{3 + n % 3}" / f"job-{n:03d}"
        kind = n % 6
        if kind == 0:
            oom_job(folder, rank=n % 8, pid=2000 + n)
        elif kind == 1:
            enospc_job(folder, checkpoint=f"/mnt/ckpt/run-{n}/checkpoint-{n * 100}")
        elif kind == 2:
            xid_job(folder, host=f"gpu-a{n % 4:02d}", xid=79 if n % 4 else 48)
        elif kind == 3:
            healthy_job(folder)
        elif kind == 4:
            tar_job(
                folder.with_name(f"{folder.name}.tar.gz"),
                {"launcher.log": NOISE.format(r=1) + elastic_summary(1, 3000 + n, "node-x")},
            )
        else:
            xid_job(folder, host="gpu-b07", pci="0000:3b:00")
    return root


class JobTally:
    """Jobs alive in this process (the driver), and the most alive at once."""

    alive = 0
    peak = 0

    @classmethod
    def reset(cls) -> None:
        cls.alive = cls.peak = 0


class CountedJob(JobSpec):
    """A job that counts itself in `JobTally` while alive (in the process that listed it;
    a copy unpickled by a worker counts in the worker's own tally)."""

    def __init__(self, job: JobSpec) -> None:
        super().__init__(**{name: getattr(job, name) for name in _JOB_FIELDS})
        JobTally.alive += 1
        JobTally.peak = max(JobTally.peak, JobTally.alive)

    def __del__(self) -> None:
        JobTally.alive -= 1


def count_jobs(jobs: Iterable[JobSpec]) -> Iterator[JobSpec]:
    """A listing whose jobs are counted (`JobTally`) while alive."""
    for job in jobs:
        yield CountedJob(job)


def tiny_tree(root: Path, jobs: int, per_folder: int = 500) -> Path:
    """`jobs` job folders of one short log each, `per_folder` to a parent folder."""
    for n in range(jobs):
        folder = root / f"g{n // per_folder:04d}" / f"job-{n:06d}"
        folder.mkdir(parents=True)
        (folder / "launcher.log").write_bytes(b"[rank0]: step=1 loss=1.0\n")
    return root


class StopAfter:
    """A progress that presses Ctrl-C after `count` rows."""

    def __init__(self, count: int) -> None:
        self.count = count

    def start(self, jobs: int, total_bytes: int, cached: int) -> None:
        return None

    def advance(self, row: JobRow) -> None:
        self.count -= 1
        if self.count == 0:
            raise KeyboardInterrupt

    def finish(self) -> None:
        return None
