"""Synthetic cluster job-log archives for the scan benchmarks, deterministic from a seed.

Each job is one folder of the files a cluster keeps for a run, in the dated layout archives
use (`CLUSTER/YYYY/MM/DD/JOBID/`):

    launcher.log          always: torchrun output, rank-prefixed, training progress, the ending
    dmesg.txt             for kernel-side causes (OOM killer, Xid), and now and then on a
                          healthy run (boot noise, a link flap)
    docker-inspect.json   for the shared-memory cause (the 64 MiB default ShmSize), sometimes
                          on others

About one job in five fails, with one of CAUSES (the names bench/scan_accuracy.py scores).
Jobs run on a few hundred hosts of three clusters; hardware faults keep coming back on a few
flaky hosts, as they do on real fleets. A small fraction of healthy lines look like errors
(retries, warnings), so a scanner cannot get by on keywords.

Sizes: `--jobs N` makes N small jobs (`--median-kb`, a few KB: the 200,000-job scale bench);
`--gb G` makes jobs until G GiB (`--median-kb 350`: the 1 GB archive). The plan is drawn job
by job from one seed, so a smaller archive is exactly the first jobs of a larger one.

    python bench/gen_jobs.py --out DIR --jobs 200000 [--median-kb 3] [--procs 2]
    python bench/gen_jobs.py --out DIR --gb 1 --median-kb 350 --manifest DIR.manifest.jsonl

The manifest (one JSON object per job: job path, cause, files, bytes) is written outside the
tree, so a scan never reads it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

CAUSES = {
    "shm_bus_error": 3.0,
    "cuda_oom": 4.0,
    "oom_killer": 3.0,
    "nccl_timeout": 4.0,
    "xid79": 2.0,
    "xid48": 1.5,
    "ext4_enospc": 1.5,
}
"""Failure causes and their weights (percent of all jobs); the rest of the jobs succeed."""
CLUSTERS = ("north", "south", "west")
RACKS, NODES_PER_RACK = 16, 8
"""Hosts per cluster: 128, so 384 in all."""
FLAKY = ("north-r03n05", "south-r11n02", "west-r07n07", "north-r14n01")
"""Hosts whose GPUs fault over and over: most hardware failures land on them."""
JOBS_PER_DAY = 600
EPOCH = 1735689600  # 2025-01-01 00:00 UTC
PCI_BUSES = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")
MODELS = ("llama-3-8b", "mistral-7b", "qwen2-7b", "vit-h-14", "t5-xl", "gpt-neox-20b")
USERS = ("ana", "bo", "chidi", "dana", "emre", "fei", "gaia", "hugo", "ines", "jun")


@dataclass(frozen=True, slots=True)
class JobPlan:
    """One job to generate: where it goes, why it ends, how long its launcher log is."""

    index: int
    rel: str
    cause: str
    """A key of CAUSES, or `success`."""
    log_bytes: int


def job_rel(index: int, seed: int) -> str:
    """The job's folder relative to the root: CLUSTER/YYYY/MM/DD/JOBID (a function of the
    index alone, so a smaller archive is a prefix of a larger one)."""
    cluster = CLUSTERS[(index * 7 + seed) % len(CLUSTERS)]
    day = time.gmtime(EPOCH + (index // JOBS_PER_DAY) * 86400)
    return f"{cluster}/{day.tm_year:04d}/{day.tm_mon:02d}/{day.tm_mday:02d}/{4_000_000 + index}"


def plan(
    seed: int, *, jobs: int | None = None, gb: float | None = None, median_kb: float = 3.0
) -> Iterator[JobPlan]:
    """The jobs to generate, in order: `jobs` of them, or until `gb` GiB (log plus the
    side files, about 1.5 KB a job on average)."""
    rng = random.Random(seed)
    causes, weights = list(CAUSES), list(CAUSES.values())
    fail_share = sum(weights) / 100
    budget = None if gb is None else gb * (1 << 30)
    low, high = (20 << 10, 32 << 20) if median_kb >= 64 else (1 << 10, 64 << 10)
    sigma = 1.1 if median_kb >= 64 else 0.6
    total = 0
    for index in itertools.count():
        if (jobs is not None and index >= jobs) or (budget is not None and total >= budget):
            return
        size = int(rng.lognormvariate(math.log(median_kb * 1024), sigma))
        size = min(high, max(low, size))
        cause = rng.choices(causes, weights)[0] if rng.random() < fail_share else "success"
        total += size + 1536
        yield JobPlan(index, job_rel(index, seed), cause, size)


class _Job:
    """The generated text of one job, drawn from its own random stream."""

    def __init__(self, item: JobPlan, seed: int) -> None:
        self.item = item
        self.rng = rng = random.Random(f"{seed}:{item.index}")
        self.cluster = item.rel.split("/", 1)[0]
        hardware = item.cause in ("xid79", "xid48")
        if hardware and rng.random() < 0.7:
            flaky = [h for h in FLAKY if h.startswith(self.cluster)]
            first = flaky[rng.randrange(len(flaky))]
            self.nodes = 1
            self.hosts = [first]
        else:
            self.nodes = rng.choice((1, 1, 1, 2, 2, 4))
            rack = rng.randrange(1, RACKS + 1)
            start = rng.randrange(1, NODES_PER_RACK - self.nodes + 2)
            self.hosts = [f"{self.cluster}-r{rack:02d}n{start + n:02d}" for n in range(self.nodes)]
        self.world = 8 * self.nodes
        self.start = EPOCH + (item.index // JOBS_PER_DAY) * 86400 + rng.randrange(86400)
        self.clock = float(self.start)
        self.pid = rng.randrange(2000, 400_000)
        self.model = rng.choice(MODELS)
        self.user = rng.choice(USERS)
        self.bad_rank = rng.randrange(self.world)
        self.lines: list[str] = []
        self.size = 0

    def emit(self, line: str) -> None:
        self.lines.append(line)
        self.size += len(line) + 1

    def stamp(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(self.clock))

    def glog(self, level: str) -> str:
        """A torch C++ log prefix: W0314 02:11:05.123456 1234"""
        moment = time.gmtime(self.clock)
        micros = int((self.clock % 1) * 1e6)
        return f"{level}{time.strftime('%m%d %H:%M:%S', moment)}.{micros:06d} {self.pid}"

    def launcher(self) -> bytes:
        rng, item = self.rng, self.item
        self.emit(f"[{self.stamp()}] job {4_000_000 + item.index} on {','.join(self.hosts)}")
        self.emit(f"[{self.stamp()}] user={self.user} model={self.model} world_size={self.world}")
        self.emit(
            f"{self.glog('W')} torch/distributed/run.py:792] Setting OMP_NUM_THREADS "
            "environment variable for each process to be 1 in default, to avoid your system "
            "being overloaded, please further tune the variable for optimal performance."
        )
        for rank in range(min(self.world, 8)):
            self.emit(
                f"[rank{rank}]: {self.hosts[rank // 8]}:{self.pid + rank}:{self.pid + rank} "
                f"[{rank}] NCCL INFO NCCL version 2.21.5+cuda12.4"
            )
        budget = item.log_bytes - 700  # about what the ending adds
        step, loss = 0, rng.uniform(2.5, 4.0)
        lr = rng.choice((1e-5, 3e-5, 1e-4, 3e-4))
        while self.size < budget:
            step += 1
            self.clock += rng.expovariate(0.5)
            loss *= 0.9995
            roll = rng.random()
            if roll < 0.55:
                self.emit(
                    f"[rank0]: {{'loss': {loss:.4f}, 'grad_norm': {roll * 3:.3f}, "
                    f"'learning_rate': {lr:.3e}, 'epoch': {step / 5000:.3f}}}"
                )
            elif roll < 0.8:
                self.emit(
                    f"[rank0]: step {step} | {900 + roll * 400:.1f} samples/s | "
                    f"mem {60 + roll * 15:.1f} GiB | {self.stamp()}"
                )
            elif roll < 0.98:
                rank = step % self.world
                self.emit(
                    f"[rank{rank}]: [{self.stamp()}] INFO data: shard {step % 4096:05d} "
                    f"opened, {int(roll * 900)} MB, {rank % 8} readers"
                )
            else:
                self.emit(self.benign(step))
        self.lines.extend(self.ending())
        return ("\n".join(self.lines) + "\n").encode()

    def benign(self, step: int) -> str:
        """A healthy line that looks like trouble."""
        host = self.hosts[0]
        return self.rng.choice(
            (
                "[rank0]: wandb: Network error (ReadTimeout), entering retry loop.",
                f"[rank1]: {self.glog('W')} ProcessGroupNCCL.cpp:1302] Warning: "
                "TORCH_NCCL_ASYNC_ERROR_HANDLING is deprecated, use TORCH_NCCL_ASYNC_ERROR_"
                "HANDLING instead",
                f"[rank0]: checkpoint-{step}: saved in 41.2 s (no errors, 0 retries)",
                f"[rank2]: [W socket.cpp:464] [c10d] The server socket on {host}:29500 "
                "is still connecting, retrying (errno: 111 - Connection refused).",
                "[rank0]: dataloader: 0 workers killed, 0 timeouts, shm use 1.2 GiB",
            )
        )

    def ending(self) -> list[str]:
        """The last lines of the launcher log: a clean exit or the failure's traceback."""
        cause, rank, rng = self.item.cause, self.bad_rank, self.rng
        prefix = f"[rank{rank}]: "
        tail = self.elastic_failure
        if cause == "success":
            return [
                f"[rank0]: {{'train_runtime': {rng.uniform(3000, 90000):.1f}, "
                f"'train_loss': {rng.uniform(0.5, 2.0):.4f}, 'epoch': 3.0}}",
                f"[rank0]: Training completed. Model saved to /ckpt/{self.user}/{self.model}",
                f"[{self.stamp()}] all {self.world} ranks exited with code 0",
            ]
        if cause == "shm_bus_error":
            worker = self.pid + 1000 + rng.randrange(64)
            return [
                prefix + "ERROR: Unexpected bus error encountered in worker. This might be "
                "caused by insufficient shared memory (shm).",
                prefix + "Traceback (most recent call last):",
                prefix + '  File "/usr/local/lib/python3.11/site-packages/torch/utils/data/'
                'dataloader.py", line 1243, in _try_get_data',
                prefix + "    data = self._data_queue.get(timeout=timeout)",
                prefix + f"RuntimeError: DataLoader worker (pid {worker}) is killed by signal: "
                "Bus error. It is possible that dataloader's workers are out of shared memory. "
                "Please try to raise your shared memory limit.",
                *tail(1),
            ]
        if cause == "cuda_oom":
            gib = rng.choice((1.0, 2.0, 2.5, 4.0, 8.0))
            return [
                prefix + "Traceback (most recent call last):",
                prefix + '  File "/workspace/train.py", line 311, in training_step',
                prefix + "    loss.backward()",
                prefix + f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                f"{gib:.2f} GiB. GPU {rank % 8} has a total capacity of 79.10 GiB of which "
                f"{gib / 3:.2f} GiB is free. Including non-PyTorch memory, this process has "
                "78.51 GiB memory in use. Of the allocated memory 74.90 GiB is allocated by "
                "PyTorch, and 2.12 GiB is reserved by PyTorch but unallocated.",
                *tail(1),
            ]
        if cause == "oom_killer":
            return tail(-9)
        if cause == "nccl_timeout":
            seq = rng.randrange(10_000, 90_000)
            return [
                f"[rank{r}]:[E{time.strftime('%m%d', time.gmtime(self.clock))} "
                f"ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation "
                f"timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=262144, "
                "NumelOut=262144, Timeout(ms)=600000) ran for 600071 milliseconds before "
                "timing out."
                for r in range(min(self.world, 4))
            ] + [
                prefix + "terminate called after throwing an instance of 'c10::DistBackendError'",
                *tail(-6),
            ]
        if cause in ("xid79", "xid48"):
            error = (
                "unspecified launch failure"
                if cause == "xid79"
                else "uncorrectable ECC error encountered"
            )
            return [
                prefix + f"RuntimeError: CUDA error: {error}",
                prefix + "CUDA kernel errors might be asynchronously reported at some other API "
                "call, so the stacktrace below might be incorrect.",
                *tail(1),
            ]
        if cause == "ext4_enospc":
            step = rng.randrange(100, 9000)
            return [
                prefix + "Traceback (most recent call last):",
                prefix + '  File "/usr/local/lib/python3.11/site-packages/torch/serialization.py"'
                ", line 652, in save",
                prefix + "    _save(obj, opened_zipfile, pickle_module, pickle_protocol)",
                prefix + "OSError: [Errno 28] No space left on device: "
                f"'/data/ckpt/{self.user}/{self.model}/checkpoint-{step}/optimizer.pt'",
                *tail(1),
            ]
        raise ValueError(cause)

    def elastic_failure(self, exitcode: int) -> list[str]:
        rank = self.bad_rank
        lines = [
            f"{self.glog('W')} torch/distributed/elastic/multiprocessing/api.py:897] Sending "
            f"process {self.pid + r} closing signal SIGTERM"
            for r in range(min(self.world, 8))
            if r != rank % 8
        ]
        lines.append(
            f"{self.glog('E')} torch/distributed/elastic/multiprocessing/api.py:869] failed "
            f"(exitcode: {exitcode}) local_rank: {rank % 8} (pid: {self.pid + rank % 8}) of "
            "binary: /usr/bin/python3"
        )
        lines.append("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:")
        return lines

    def dmesg(self) -> bytes | None:
        cause, rng = self.item.cause, self.rng
        uptime = rng.uniform(1e4, 4e6)
        host = self.hosts[self.bad_rank // 8]
        journal = rng.random() < 0.5  # `journalctl -k` names the host, `dmesg` does not
        lines: list[str] = []

        def kernel(text: str) -> None:
            nonlocal uptime
            uptime += rng.uniform(0.001, 2.0)
            if journal:
                stamp = time.strftime("%b %d %H:%M:%S", time.gmtime(self.clock))
                lines.append(f"{stamp} {host} kernel: {text}")
            else:
                lines.append(f"[{uptime:12.6f}] {text}")

        for _ in range(rng.randrange(3, 12)):
            kernel(
                rng.choice(
                    (
                        "mlx5_core 0000:0c:00.0: mlx5_fw_tracer_handle_traces: FW tracer event",
                        "IPv6: ADDRCONF(NETDEV_CHANGE): ib0: link becomes ready",
                        "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 00000, NVSwitch ok",
                        "EXT4-fs (nvme0n1p2): mounted filesystem with ordered data mode.",
                        'audit: type=1400 apparmor="STATUS" operation="profile_load"',
                    )
                )
            )
        pci = f"0000:{PCI_BUSES[self.bad_rank % 8]}:00"
        pid = self.pid + self.bad_rank % 8
        if cause == "oom_killer":
            kernel("python3 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE), order=0")
            kernel(
                f"Out of memory: Killed process {pid} (python3) "
                f"total-vm:{rng.randrange(10**8, 10**9)}kB, "
                f"anon-rss:{rng.randrange(10**7, 10**8)}kB, file-rss:0kB, shmem-rss:0kB, "
                "UID:1000 pgtables:412312kB oom_score_adj:0"
            )
        elif cause == "xid79":
            kernel(
                f"NVRM: Xid (PCI:{pci}): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
                "off the bus."
            )
            kernel(f"NVRM: GPU {pci}.0: GPU has fallen off the bus.")
        elif cause == "xid48":
            kernel(
                f"NVRM: Xid (PCI:{pci}): 48, pid={pid}, name=python3, An uncorrectable double "
                "bit error (DBE) has been detected on GPU in the framebuffer at partition 3, "
                "subpartition 0."
            )
            kernel(
                f"NVRM: Xid (PCI:{pci}): 63, pid={pid}, name=python3, Row Remapper: New row "
                "marked for remapping, reset gpu to activate."
            )
        elif rng.random() > 0.2:
            return None
        return ("\n".join(lines) + "\n").encode()

    def docker_inspect(self) -> bytes | None:
        shm = self.item.cause == "shm_bus_error"
        if not shm and self.rng.random() > 0.25:
            return None
        size = 67_108_864 if shm else self.rng.choice((17_179_869_184, 68_719_476_736))
        failed = self.item.cause != "success"
        exit_code = 137 if self.item.cause == "oom_killer" else int(failed)
        inspect = [
            {
                "Id": f"{self.rng.getrandbits(128):032x}" * 2,
                "Name": f"/{self.user}-{self.model}-{self.item.index}",
                "State": {"Status": "exited", "ExitCode": exit_code, "OOMKilled": False},
                "Config": {"Hostname": self.hosts[0], "Image": "registry.local/train:24.05"},
                "HostConfig": {"ShmSize": size, "IpcMode": "private", "Runtime": "nvidia"},
            }
        ]
        return (json.dumps(inspect, indent=4) + "\n").encode()


def render(item: JobPlan, seed: int) -> dict[str, bytes]:
    """The files of one job, by name."""
    job = _Job(item, seed)
    files = {"launcher.log": job.launcher()}
    extra = {"dmesg.txt": job.dmesg(), "docker-inspect.json": job.docker_inspect()}
    files.update({name: data for name, data in extra.items() if data is not None})
    return files


def _write_chunk(args: tuple[str, int, list[JobPlan]]) -> list[dict[str, object]]:
    root, seed, items = args
    entries = []
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    for item in items:
        folder = os.path.join(root, item.rel)
        os.makedirs(folder, exist_ok=True)
        files = render(item, seed)
        for name, data in files.items():
            handle = os.open(os.path.join(folder, name), flags, 0o644)
            os.write(handle, data)
            os.close(handle)
        entries.append(
            {"job": item.rel, "cause": item.cause, "files": sorted(files),
             "bytes": sum(len(d) for d in files.values())}
        )  # fmt: skip
    return entries


@dataclass(frozen=True, slots=True)
class Generated:
    jobs: int
    bytes: int
    seconds: float


def generate(
    root: Path,
    *,
    jobs: int | None = None,
    gb: float | None = None,
    median_kb: float = 3.0,
    seed: int = 42,
    procs: int = 1,
    manifest: Path | None = None,
) -> Generated:
    """Write the archive under `root` (and its manifest, if asked)."""
    started = time.perf_counter()
    root.mkdir(parents=True, exist_ok=True)
    items = plan(seed, jobs=jobs, gb=gb, median_kb=median_kb)
    chunk = 64 if median_kb < 64 else 4
    work = iter(lambda: list(itertools.islice(items, chunk)), [])
    count = total = 0
    sink = manifest.open("w") if manifest is not None else None
    try:
        with ProcessPoolExecutor(max(1, procs)) as pool:
            for entries in pool.map(_write_chunk, ((str(root), seed, c) for c in work)):
                for entry in entries:
                    count += 1
                    total += int(str(entry["bytes"]))
                    if sink is not None:
                        sink.write(json.dumps(entry) + "\n")
    finally:
        if sink is not None:
            sink.close()
    return Generated(count, total, time.perf_counter() - started)


def archive_paths(where: Path, gb: float, seed: int) -> tuple[Path, Path]:
    """Where the ~`gb` GiB archive of larger jobs (350 KB median) and its manifest live, so
    the benchmarks that share it generate it once."""
    folder = where / f"jobs-{gb:g}gb-s{seed}"
    return folder, folder.with_name(folder.name + ".manifest.jsonl")


def listing_tree(root: Path, jobs: int, seed: int = 42) -> float:
    """`jobs` job folders in the same layout, each with one 40-byte log: for timing a listing
    (the files are never analyzed). Returns the seconds it took."""
    started = time.perf_counter()
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    made: set[str] = set()
    for index in range(jobs):
        rel = job_rel(index, seed)
        parent = os.path.join(root, rel.rsplit("/", 1)[0])
        if parent not in made:
            os.makedirs(parent, exist_ok=True)
            made.add(parent)
        folder = os.path.join(root, rel)
        os.mkdir(folder)
        handle = os.open(os.path.join(folder, "launcher.log"), flags, 0o644)
        os.write(handle, b"[rank0]: step 1 | loss 1.00 | ok\n")
        os.close(handle)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    size = parser.add_mutually_exclusive_group(required=True)
    size.add_argument("--jobs", type=int, help="this many jobs")
    size.add_argument("--gb", type=float, help="jobs until this many GiB")
    parser.add_argument("--median-kb", type=float, default=None, help="median launcher.log")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--procs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--manifest", type=Path, default=None)
    args = parser.parse_args()
    median = args.median_kb or (350.0 if args.gb else 3.0)
    done = generate(
        args.out, jobs=args.jobs, gb=args.gb, median_kb=median, seed=args.seed,
        procs=args.procs, manifest=args.manifest,
    )  # fmt: skip
    print(f"{done.jobs:,} jobs, {done.bytes / 1e6:.1f} MB in {done.seconds:.1f} s -> {args.out}")


if __name__ == "__main__":
    main()
