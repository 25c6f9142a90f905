"""Launcher output: torchrun / torch.distributed.launch, deepspeed, accelerate, llamafactory-cli,
plain python, mpirun and slurm job output (docs/formats.md section 4).

`split_line` strips the prefixes launchers stack in front of a message and records what they say
(rank, host, a timestamp and its clock: `prefixes.py`). The collector (`collector.py`) only
sees anchor lines, in order, and keeps bounded state; the torchelastic failure report is read
by `report.py`, the messages themselves (CUDA OOM, exceptions, versions) by `messages.py`,
which launcher wrote the log by `tools.py`, how a process died or how the log ends by
`deaths.py` and `ending.py` (their keys are listed there), and sniffing is `sniff.py`.
Fact keys:

* `launcher.tool`: str torchrun|deepspeed|accelerate|llamafactory|mpirun|slurm|ray|python, the most
  specific launcher seen; attr `seen` lists every launcher marker found.
* `launcher.exit_code`: int (negative = killed by signal N); attrs rank, local_rank, host, pid,
  source: torchelastic-root-cause | torchelastic-failure | elastic-agent | deepspeed |
  accelerate | subprocess (a CalledProcessError outside accelerate) | srun | mpirun | pdsh
  (`pdsh@a: b: ssh exited with exit code N`, the remote launcher's status).
* `launcher.first_failure`: int global rank of torchelastic `Root Cause` (the last report wins);
  attrs host, exit_code, pid, local_rank, time, error_file.
* `launcher.signal`: str SIGKILL, SIGBUS ... attrs rank, pid, host, source (torchelastic,
  exit-code, accelerate, dataloader-worker, shell, srun, agent-received). The agent's own
  `Sending process N closing signal SIGTERM` teardown of healthy peers is not reported.
* `launcher.nproc_per_node`, `launcher.nnodes`, `launcher.world_size`: int (attr derived=True
  when computed from the other two).
* `launcher.num_workers`: int DataLoader workers from the command line / args dump.
* `launcher.restarts`: int `Worker group FAILED. N/M attempts left; will restart` lines seen.
* `launcher.completed`: True at the last line saying the run finished (`Training completed.`,
  `train_runtime`, Lightning's `` `Trainer.fit` stopped: ``, DeepSpeed `Process N exits
  successfully`, torchrun's agent finding its worker group SUCCEEDED: the lines of the
  finish signs' catalog, `tables/finish_signs.toml`); attr scope: `run` once a line said the
  training finished, `process` while only a process's exit did (one process of many may exit
  cleanly while another dies); attr tool, the program that printed it.
* `launcher.killing_workers`: str `deepspeed`, at DeepSpeed's launcher's first `Killing
  subprocess N` (its sigkill_handler, run when a process failed or the launcher got a signal)
  when no `Main process received SIGINT, exiting` says it was a stop; attrs pid, host, silent
  (True when the input shows no exception, exit status or signal: the process whose exit set
  off the teardown died without a word, as a process the kernel kills does).
* `launcher.cpu_memory_percent`: float, the highest deepspeed `see_memory_usage` CPU percent
  (a host-OOM precursor); attr used_bytes.
* `python.exception`: str "Type: message" (<= 300 chars); attrs rank, host, type, source
  (log | torchelastic-report), teardown (`thread`, `finalizer`, `shutdown`, `handled`: its
  traceback is one the process reports and goes on from, `teardown.py`; a size probe's
  caught out-of-memory message, printed bare under its profile table, is `handled` too,
  `probes.py`). One per distinct (rank, text).
* `cuda.oom`: int bytes the allocator tried to get (0 when the message gives no figure, e.g.
  `CUDA error: out of memory`); attrs gpu, total_bytes, free_bytes, allocated_bytes (by
  PyTorch), reserved_bytes (reserved in total by PyTorch), in_use_bytes, rank, host, wording
  (2.3+ | 2.1 | legacy | cuda_error).
* `nccl.timeout`: int timeout_ms of a ProcessGroupNCCL watchdog timeout; attrs rank, op,
  ran_ms, seq.
* `nccl.version`, `cuda.version`, `torch.version`: str.
* `nccl.warn`: str an `NCCL WARN` message (first 20); attrs host, dev, where (source file).
* `nccl.error`: str ncclRemoteError | ncclSystemError | ncclUnhandledCudaError |
  ncclInternalError | ncclInvalidUsage | ncclInvalidArgument; attrs rank, host.
* `nccl.transport`: str the network NCCL chose (`Using network IB|Socket`).
* `nccl.ib_unavailable`: str the settings that asked NCCL for InfiniBand (`NCCL_IB_HCA`,
  `NCCL_IB_DISABLE` set to 0, comma-joined), at NCCL's `NET/IB : No device found`: the job
  wants verbs devices that the process cannot see (it falls back to TCP sockets).
* `nccl.ib_devices`: str the InfiniBand/RoCE devices NCCL opened, comma-joined as printed
  (`mlx5_0:1/IB,mlx5_3:1/RoCE`, from `NET/IB : Using [0]mlx5_0:1/IB ...`): verbs are in use.
* `nccl.ib_hca`: str the InfiniBand/RoCE adapters the job tells NCCL to use (`NCCL_IB_HCA`, as
  set or echoed; `ib_settings.py`): NCCL runs over verbs.
* `python.stack`: str the innermost file of the traceback an exception line closes; attrs frames,
  exception, errno, rank, host (`stacks.py`).
* `net.socket_ifname`: str the interface NCCL or Gloo is told to use (`NCCL_SOCKET_IFNAME`,
  `GLOO_SOCKET_IFNAME`, as set on a command line or echoed by NCCL); attrs var, host, source
  (`settings.py`).
* `rendezvous.overcount`: int how many more processes PyTorch's store-based barrier counted than
  the world size; attrs world_size, joined (`barrier_lines.py`).
* `slurm.oom_kill_events`: int attrs step; `slurm.cancelled`: str reason (`TIME LIMIT`...,
  `unspecified` when Slurm gives none) attrs step, node; `slurm.task_failure`: str what srun
  said (`Out Of Memory`, `Bus error`, `Exited with exit code 1`) attrs node, task.
"""

from __future__ import annotations

from typing import ClassVar

from crashlens.model import InputKind
from crashlens.parsers.base import LogCollector, LogParser, Split, patterns_of
from crashlens.parsers.launcher.collector import ANCHORS, LauncherCollector
from crashlens.parsers.launcher.messages import parse_cuda_oom
from crashlens.parsers.launcher.prefixes import GLOG_YEAR, split_launcher_line
from crashlens.parsers.launcher.sniff import sniff_launcher


class LauncherParser(LogParser):
    """stdout/stderr of torchrun, deepspeed, accelerate, llamafactory-cli, python, mpirun, slurm."""

    kind = InputKind.LAUNCHER
    name = "launcher output"
    filenames = ("slurm-*.out", "*.out", "*.err", "*train*.log", "*launcher*.log")
    anchors: ClassVar[tuple[str, ...]] = patterns_of(ANCHORS)

    @staticmethod
    def sniff(head: str) -> float:
        return sniff_launcher(head)

    def split_line(self, raw: str) -> Split:
        return split_launcher_line(raw)

    def collector(self, path: str) -> LogCollector:
        return LauncherCollector(path)


__all__ = ["GLOG_YEAR", "LauncherParser", "parse_cuda_oom"]
