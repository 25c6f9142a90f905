"""Launcher output: torchrun / torch.distributed.launch, deepspeed, accelerate, llamafactory-cli,
plain python, mpirun and slurm job output (formats.md section 4).

`split_line` strips the prefixes launchers stack in front of a message and records what they say:
`[rank3]:` / `[default3]:` / `3: ` (rank), pdsh `node-02: ` and NCCL `host:pid:tid ` (host),
deepspeed `[2025-03-14 10:02:04,122] ` and glog `E0325 20:57:27.620000 2606 file.py:869] ` /
`[E314 12:40:11.274431018 ProcessGroupNCCL.cpp:616] ` (timestamp). glog has no year, so
`GLOG_YEAR` stands in: times of one file still order correctly.

The collector only sees anchor lines, in order, and keeps bounded state. Fact keys:

* `launcher.tool`: str torchrun|deepspeed|accelerate|llamafactory|mpirun|slurm|python, the most
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
  `train_runtime`, DeepSpeed `Process N exits successfully`).
* `launcher.cpu_memory_percent`: float, the highest deepspeed `see_memory_usage` CPU percent
  (a host-OOM precursor); attr used_bytes.
* `python.exception`: str "Type: message" (<= 300 chars); attrs rank, host, type, source
  (log | torchelastic-report). One per distinct (rank, text).
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
* `slurm.oom_kill_events`: int attrs step; `slurm.cancelled`: str reason (`TIME LIMIT`...,
  `unspecified` when Slurm gives none) attrs step, node; `slurm.task_failure`: str what srun
  said (`Out Of Memory`, `Bus error`, `Exited with exit code 1`) attrs node, task.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, field
from typing import ClassVar

from crashlens.model import Clock, Fact, FactValue, InputKind, Line
from crashlens.parsers.base import LogCollector, LogParser, Split, fact

GLOG_YEAR = 2000
"""glog prefixes carry month and day only; a fixed (leap) year keeps one file's times ordered."""

MAX_EXCEPTIONS = 200
MAX_NCCL_WARNS = 20
MAX_REPORT_RECORDS = 64
EXCEPTION_CHARS = 300

SIGNALS: dict[int, str] = {
    1: "SIGHUP",
    2: "SIGINT",
    3: "SIGQUIT",
    4: "SIGILL",
    5: "SIGTRAP",
    6: "SIGABRT",
    7: "SIGBUS",
    8: "SIGFPE",
    9: "SIGKILL",
    10: "SIGUSR1",
    11: "SIGSEGV",
    12: "SIGUSR2",
    13: "SIGPIPE",
    14: "SIGALRM",
    15: "SIGTERM",
}
"""Linux numbering (launchers report Linux signals; Python's `signal` module is per platform)."""

SIGNAL_WORDS: dict[str, int] = {
    "killed": 9,
    "bus error": 7,
    "segmentation fault": 11,
    "aborted": 6,
    "terminated": 15,
    "floating point exception": 8,
    "illegal instruction": 4,
}
"""strsignal() wording used by shells, srun and the DataLoader -> signal number."""

# --- split_line prefixes --------------------------------------------------------------------

_RANK_PREFIX = re.compile(r"\[(?:rank|default)([0-9]+)\]:[ ]?")
_TEE_PREFIX = re.compile(r"([0-9]{1,5}): ")
_PDSH_AT = re.compile(r"pdsh@[^ :\t]+: ")
_HOST_PREFIX = re.compile(r"([a-z0-9][a-z0-9._-]*): ")
_NCCL_HOST = re.compile(r"([^ \t:\[\]]+):[0-9]+:[0-9]+ (?=\[[0-9]+\] )")
_STREAM_PREFIX = re.compile(r"(?:stdout|stderr): ")
_DS_TIME = re.compile(
    r"\[([0-9]{4})-([0-9]{2})-([0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})(?:[,.]([0-9]{1,6}))?\] ?"
)
_GLOG = re.compile(
    r"([IWEF])([0-9]{3,4}) ([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{1,9}) +[0-9]+ "
    r"[^ \]]+:[0-9]+\] ?"
)
_GLOG_BRACKET = re.compile(
    r"\[([IWEF])([0-9]{3,4}) ([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{1,9})(?: [0-9]+)? "
    r"[^ \]]+:[0-9]+\] ?"
)
_GLOG_BRACKET_NODATE = re.compile(r"\[[IWEF] [^ \]]+:[0-9]+\] ?")
_NOT_HOSTS = re.compile(r"(?:rank|default|epoch|step|iter|batch|gpu|cuda|line)[0-9]*")


def _fraction(digits: str | None) -> float:
    return int(digits) / 10 ** len(digits) if digits else 0.0


def _epoch(year: int, month: int, day: int, hh: int, mm: int, ss: int) -> float | None:
    """UTC epoch seconds, or None for an impossible date (then the prefix is not a timestamp)."""
    if not (1 <= month <= 12 and 1 <= day <= 31 and hh < 24 and mm < 60 and ss < 62):
        return None
    try:
        return float(calendar.timegm((year, month, day, hh, mm, ss, 0, 0, 0)))
    except (ValueError, OverflowError):
        return None


def _glog_time(match: re.Match[str]) -> float | None:
    """glog packs month and day into `MMDD` (C++ torch drops the month's leading zero)."""
    packed = match.group(2)
    base = _epoch(
        GLOG_YEAR,
        int(packed[:-2]),
        int(packed[-2:]),
        int(match.group(3)),
        int(match.group(4)),
        int(match.group(5)),
    )
    return None if base is None else base + _fraction(match.group(6))


def _ds_time(match: re.Match[str]) -> float | None:
    base = _epoch(*(int(match.group(i)) for i in range(1, 7)))
    return None if base is None else base + _fraction(match.group(7))


@dataclass
class _Prefixes:
    """What the prefixes of one line said, filled in as they are peeled off."""

    rank: int | None = None
    host: str | None = None
    timestamp: float | None = None
    clock: Clock | None = None


_PEELERS = (
    _RANK_PREFIX,
    _GLOG,
    _GLOG_BRACKET,
    _GLOG_BRACKET_NODATE,
    _DS_TIME,
    _NCCL_HOST,
    _PDSH_AT,
    _STREAM_PREFIX,
    _TEE_PREFIX,
    _HOST_PREFIX,
)
"""Known line prefixes, in the order they are tried."""
_ANY_PREFIX = re.compile("|".join(f"(?P<p{i}>{rx.pattern})" for i, rx in enumerate(_PEELERS)))
"""All of them in one alternation: `re` tries the branches in order, as `_peel` would, so one
call finds which prefix (if any) opens the line instead of up to ten failed matches."""


def _peel(text: str, found: _Prefixes) -> str | None:
    """Remove one known prefix from `text`, recording it; None when no prefix is left."""
    opening = _ANY_PREFIX.match(text)
    if opening is None or opening.lastgroup is None:
        return None
    peeler = _PEELERS[int(opening.lastgroup[1:])]
    m = peeler.match(text)
    if m is None:  # pragma: no cover - the alternation just matched this branch
        return None
    if peeler is _RANK_PREFIX or peeler is _TEE_PREFIX:
        found.rank = int(m.group(1))
    elif peeler is _GLOG or peeler is _GLOG_BRACKET:
        found.timestamp, found.clock = _glog_time(m), Clock.YEARLESS
        if found.timestamp is None:
            return None
    elif peeler is _DS_TIME:
        found.timestamp, found.clock = _ds_time(m), Clock.WALL
        if found.timestamp is None:
            return None
    elif peeler is _NCCL_HOST:
        found.host = m.group(1)
    elif peeler is _HOST_PREFIX:
        if not _looks_like_host(m.group(1)):
            return None
        found.host = m.group(1)
    return text[m.end() :]


def _looks_like_host(token: str) -> bool:
    """pdsh host names: lower-case with a digit or a hyphen (logger names and words have none)."""
    if not any(c.isdigit() or c == "-" for c in token):
        return False
    return _NOT_HOSTS.fullmatch(token) is None


def split_launcher_line(raw: str) -> Split:
    """Peel stacked prefixes (`node-02: [rank3]:[E314 ...] msg`) off a cleaned line."""
    found = _Prefixes()
    text = raw
    for _ in range(8):  # a bound: each step consumes at least one character anyway
        rest = _peel(text, found)
        if rest is None or rest == text:
            break
        text = rest
    clock = found.clock if found.timestamp is not None else None
    return Split(
        text=text, rank=found.rank, host=found.host, timestamp=found.timestamp, clock=clock
    )


# --- sizes and shared extractors ----------------------------------------------------------------

_UNITS = {"b": 1, "bytes": 1, "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4}
_UNITS |= {"kb": 1024, "mb": 1024**2, "gb": 1024**3, "tb": 1024**4}
_SIZE = r"([0-9]+(?:\.[0-9]+)?) ?([KMGT]i?B|bytes|B)"


def to_bytes(number: str, unit: str) -> int:
    """`2.00`, `GiB` -> bytes (torch prints binary units)."""
    return int(round(float(number) * _UNITS[unit.lower()]))


_OOM_TRIED = re.compile(r"CUDA out of memory\. Tried to allocate " + _SIZE)
_OOM_NEW = re.compile(
    r"GPU ([0-9]+) has a total capac?i?ty of " + _SIZE + r" of which " + _SIZE + r" is free"
)
_OOM_IN_USE = re.compile(r"has " + _SIZE + r" memory in use")
_OOM_NEW_ALLOC = re.compile(
    r"Of the allocated memory "
    + _SIZE
    + r" is allocated by PyTorch, and "
    + _SIZE
    + r" is reserved by PyTorch but unallocated"
)
_OOM_OLD = re.compile(
    r"\(GPU ([0-9]+); "
    + _SIZE
    + r" total capacity; "
    + _SIZE
    + r" already allocated; "
    + _SIZE
    + r" free;(?: "
    + _SIZE
    + r" (?:reserved in total by PyTorch|cached))?"
)
_OOM_BARE = re.compile(r"CUDA error: out of memory|CUDA out of memory")


def parse_cuda_oom(text: str) -> tuple[int, dict[str, FactValue]] | None:
    """Bytes tried and the figures of a CUDA OOM message (all three wording generations)."""
    tried = _OOM_TRIED.search(text)
    if tried is None:
        if _OOM_BARE.search(text):
            return 0, {"wording": "cuda_error"}
        return None
    attrs: dict[str, FactValue] = {}
    if m := _OOM_NEW.search(text):
        attrs["gpu"] = int(m.group(1))
        attrs["total_bytes"] = to_bytes(m.group(2), m.group(3))
        attrs["free_bytes"] = to_bytes(m.group(4), m.group(5))
        attrs["wording"] = "2.3+" if "non-PyTorch" in text else "2.1"
        if used := _OOM_IN_USE.search(text):
            attrs["in_use_bytes"] = to_bytes(used.group(1), used.group(2))
        if alloc := _OOM_NEW_ALLOC.search(text):
            allocated = to_bytes(alloc.group(1), alloc.group(2))
            attrs["allocated_bytes"] = allocated
            # The new wording gives the unallocated part; keep one meaning: reserved in total.
            attrs["reserved_bytes"] = allocated + to_bytes(alloc.group(3), alloc.group(4))
    elif m := _OOM_OLD.search(text):
        attrs["gpu"] = int(m.group(1))
        attrs["total_bytes"] = to_bytes(m.group(2), m.group(3))
        attrs["allocated_bytes"] = to_bytes(m.group(4), m.group(5))
        attrs["free_bytes"] = to_bytes(m.group(6), m.group(7))
        if m.group(8):
            attrs["reserved_bytes"] = to_bytes(m.group(8), m.group(9))
        attrs["wording"] = "legacy"
    return to_bytes(tried.group(1), tried.group(2)), attrs


_EXCEPTION = re.compile(
    r"^[ \t]*(?:\[[A-Z]+\][ \t]*)?(?:rank[ ]?([0-9]+):[ \t]*)?"
    r"((?:[A-Za-z_][A-Za-z0-9_]*\.)*[A-Z][A-Za-z0-9_]*(?:Error|Exception|Interrupt|Exit))"
    r"(?::[ \t]*(.*))?$"
)
_NOT_WORKER_EXCEPTIONS = frozenset({"ChildFailedError"})
"""The agent's wrapper: its content is the report, read separately."""


def parse_exception(text: str) -> tuple[str, str, int | None] | None:
    """(type, "Type: message", rank named inline) for a Python exception line, else None."""
    m = _EXCEPTION.match(text)
    if m is None:
        return None
    exc_type = m.group(2)
    if exc_type.rsplit(".", 1)[-1] in _NOT_WORKER_EXCEPTIONS:
        return None
    message = (m.group(3) or "").strip()
    value = f"{exc_type}: {message}" if message else exc_type
    rank = int(m.group(1)) if m.group(1) else None
    return exc_type, value[:EXCEPTION_CHARS], rank


_NCCL_VERSION = re.compile(r"NCCL version ([0-9]+\.[0-9]+\.[0-9]+)(?:\+cuda([0-9]+\.[0-9]+))?")
_TORCH_VERSION = re.compile(
    r"torch==([0-9]+\.[0-9]+[0-9a-z.+]*)|(?:PyTorch|torch) version:? ([0-9]+\.[0-9]+[0-9a-z.+]*)"
)
_CUDA_VERSION = re.compile(r"CUDA (?:[Vv]ersion|used to build PyTorch):? ([0-9]+\.[0-9]+)")
_TORCH_CU = re.compile(r"\+cu([0-9]+)([0-9])$")


def version_facts(text: str) -> list[tuple[str, str]]:
    """(key, value) pairs for the nccl / cuda / torch versions a line names."""
    found: list[tuple[str, str]] = []
    if m := _NCCL_VERSION.search(text):
        found.append(("nccl.version", m.group(1)))
        if m.group(2):
            found.append(("cuda.version", m.group(2)))
    if m := _TORCH_VERSION.search(text):
        version = (m.group(1) or m.group(2)).rstrip(".")
        found.append(("torch.version", version))
        if cu := _TORCH_CU.search(version):
            found.append(("cuda.version", f"{int(cu.group(1))}.{cu.group(2)}"))
    if m := _CUDA_VERSION.search(text):
        found.append(("cuda.version", m.group(1)))
    return found


# --- collector-side regexes ---------------------------------------------------------------------

_TOOLS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("llamafactory", re.compile(r"llamafactory|llama_factory|LlamaFactory")),
    ("accelerate", re.compile(r"accelerate launch|accelerate/commands/|bin/accelerate\b")),
    (
        "deepspeed",
        re.compile(r"deepspeed\.launcher|\[(?:launch|runner|multinode_runner)\.py:[0-9]+:"),
    ),
    (
        "torchrun",
        re.compile(r"torchrun|torch\.distributed\.(?:run|launch|elastic)|ChildFailedError"),
    ),
    ("mpirun", re.compile(r"\bmpirun\b|\bmpiexec\b|\bprterun\b")),
    ("slurm", re.compile(r"^(?:slurmstepd|srun): |\bsrun\b")),
    ("python", re.compile(r"Traceback \(most recent call last\)")),
)
_TOOL_ORDER = [name for name, _ in _TOOLS]


_TOOL_LITERALS = {
    "llamafactory": ("llamafactory", "llama_factory", "LlamaFactory"),
    "accelerate": ("accelerate launch", "accelerate/commands/", "bin/accelerate"),
    "deepspeed": ("deepspeed.launcher", "launch.py:", "runner.py:"),
    "torchrun": ("torchrun", "torch.distributed.", "ChildFailedError"),
    "mpirun": ("mpirun", "mpiexec", "prterun"),
    "slurm": ("slurmstepd: ", "srun"),
    "python": ("Traceback (most recent call last)",),
}
"""Per tool, substrings one of which every match of its `_TOOLS` pattern contains."""


_HEADER = re.compile(r"^(Root Cause(?: \(first observed failure\))?|(?:Other )?Failures):[ \t]*$")
_INDEX = re.compile(r"^\[([0-9]+)\]:[ \t]*$")
_FIELD = re.compile(r"^[ \t]+(time|host|rank|exitcode|error_file|traceback|msg)[ \t]*:[ \t]?(.*)$")
_BORDER = re.compile(r"^[ \t]*([=*-])\1{19,}[ \t]*$")
_RANK_FIELD = re.compile(r"^(-?[0-9]+)(?: \(local_rank: ([0-9]+)\))?")
_EXIT_FIELD = re.compile(r"^(-?[0-9]+)(?: \(pid: ([0-9]+)\))?")
_SIGNAL_MSG = re.compile(r"Signal ([0-9]+) \((SIG[A-Z0-9]+)\) received by PID ([0-9]+)")
_AGENT_FAILED = re.compile(
    r"failed \(exitcode: (-?[0-9]+)\) local_rank: ([0-9]+) \(pid: ([0-9]+)\)"
)
_DS_RC = re.compile(r"exits with return code = (-?[0-9]+)")
_DS_LOCAL_RANK = re.compile(r"--local_rank=([0-9]+)")
_CPE_SIGNAL = re.compile(r"died with <Signals\.(SIG[A-Z0-9]+): ([0-9]+)>")
_CPE_STATUS = re.compile(r"returned non-zero exit status (-?[0-9]+)")
_WATCHDOG = re.compile(r"Watchdog caught collective operation timeout: WorkNCCL\(")
_WORK_FIELD = re.compile(r"(SeqNum|OpType|Timeout\(ms\))=([A-Za-z0-9_]+)")
_RAN_FOR = re.compile(r"ran for ([0-9]+) milliseconds")
_RANK_IN_TEXT = re.compile(r"\[(?:PG ID [^\]]*)?Rank ([0-9]+)\]")
_WORLD_DICT = re.compile(r"WORLD INFO DICT: \{(.*)\}")
_WORLD_HOST = re.compile(r"'[^']*': \[([0-9, ]*)\]")
_DS_PROCS = re.compile(r"nnodes=([0-9]+), num_local_procs=([0-9]+)")
_WORLD_SIZE = re.compile(
    r"(?:^|[^A-Za-z_])(?:dist_|global_)?(?:world_size|WORLD_SIZE|world size)['\"]?[ \t]*[:=][ \t]*"
    r"([0-9]+)"
)
_NPROC_FLAG = re.compile(r"--nproc[_-]per[_-]node[= ]([0-9]+)")
_NNODES_FLAG = re.compile(r"--nnodes[= ](?:[0-9]+:)?([0-9]+)")
_ACCEL_VALUE = re.compile(r"`--(num_processes|num_machines)` was set to a value of `([0-9]+)`")
_ACCEL_FLAG = re.compile(r"--(num_processes|num_machines)[= ]([0-9]+)")
_NUM_WORKERS = re.compile(
    r"(?<![A-Za-z_])(?:dataloader_)?num_workers['\"]?[ \t]*[:= ][ \t]*([0-9]+)"
)
_SLURM_OOM = re.compile(
    r"Detected ([0-9]+) oom[-_]kill events?(?:\(s\))? in (?:StepId=|step )"
    r"([0-9]+(?:\.[A-Za-z0-9_]+)?)"
)
_SLURM_CANCEL = re.compile(
    r"\*\*\* (?:STEP|JOB) ([0-9][0-9.A-Za-z_]*) ON ([^ ]+) CANCELLED AT ([^ ]+)"
    r"(?: DUE TO ([^*,]+))?"
)
_SRUN_TASK = re.compile(r"srun: error: ([^ \t:]+): tasks? ([0-9][0-9,\-\[\]]*): (.+?)[ \t]*$")
_SRUN_EXIT = re.compile(r"Exited with exit code ([0-9]+)")
_RESTART = re.compile(r"Worker group FAILED\. [0-9]+/[0-9]+ attempts left; will restart")
_DATALOADER_SIG = re.compile(
    r"DataLoader worker \(pid ([0-9]+)\) is killed by signal: ([A-Za-z ]+)"
)
_NCCL_WARN = re.compile(r"^(?:\[([0-9]+)\] )?(?:([^ ]+) )?NCCL WARN (.*)$")
_NCCL_NET = re.compile(r"NCCL INFO Using network ([A-Za-z0-9_]+)")
_NCCL_ERRORS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "ncclRemoteError",
        re.compile(r"ncclRemoteError|remote process exited or there was a network"),
    ),
    ("ncclSystemError", re.compile(r"ncclSystemError|unhandled system error")),
    ("ncclUnhandledCudaError", re.compile(r"ncclUnhandledCudaError|unhandled cuda error")),
    ("ncclInternalError", re.compile(r"ncclInternalError|internal error - please report")),
    ("ncclInvalidUsage", re.compile(r"ncclInvalidUsage|invalid usage")),
    ("ncclInvalidArgument", re.compile(r"ncclInvalidArgument")),
)
_PDSH_EXIT = re.compile(r"^pdsh@[^ :]+: ([^ :]+): ssh exited with exit code ([0-9]+)")
_MPI_SIGNAL = re.compile(
    r"process rank ([0-9]+) with PID ([0-9]+) on node ([^ ]+) exited on signal ([0-9]+)"
)
_SHELL_KILLED = re.compile(
    r"line [0-9]+: +([0-9]+) (Killed|Bus error|Segmentation fault|Aborted)(?: \(core dumped\))?"
)
_CPU_MEM = re.compile(r"CPU Virtual Memory: +used = " + _SIZE + r", percent = ([0-9.]+)%")
_AGENT_SIGNAL = re.compile(r"Received Signals\.(SIG[A-Z0-9]+) death signal")

# Anchors: line-safe (no \s, negated classes exclude \n, no lookbehind), each with a literal.
ANCHORS: tuple[str, ...] = (
    # 0 launcher markers
    r"torchrun|torch\.distributed\.(?:run|launch|elastic)|ChildFailedError|deepspeed\.launcher"
    r"|\[(?:launch|runner|multinode_runner)\.py:[0-9]+:|accelerate launch|accelerate/commands/"
    r"|bin/accelerate|llamafactory|llama_factory|LlamaFactory|mpirun|mpiexec|prterun"
    r"|slurmstepd: |srun: |Traceback \(most recent call last\)",
    # 1 torchelastic report: section headers
    r"^(?:Root Cause(?: \(first observed failure\))?|(?:Other )?Failures):[ \t]*$",
    # 2 torchelastic report: record index `[0]:`
    r"^\[[0-9]+\]:[ \t]*$",
    # 3 torchelastic report: record fields
    r"^[ \t]+(?:time|host|rank|exitcode|error_file|traceback|msg)[ \t]*:",
    # 4 torchelastic report: borders
    r"^[ \t]*(?:={20,}|-{20,}|\*{20,})[ \t]*$",
    # 5 Python exception lines
    r"[A-Z][A-Za-z0-9_]*(?:Error|Exception|Interrupt|Exit)(?::|[ \t]*$)",
    # 6 CUDA OOM
    r"CUDA out of memory|CUDA error: out of memory",
    # 7 elastic agent verdict
    r"failed \(exitcode: -?[0-9]+\) local_rank: [0-9]+",
    # 8 deepspeed verdict
    r"exits with return code = -?[0-9]+",
    # 9 subprocess verdicts (accelerate simple launcher, llamafactory-cli)
    r"died with <Signals\.SIG[A-Z0-9]+: [0-9]+>|returned non-zero exit status -?[0-9]+",
    # 10 NCCL watchdog
    r"Watchdog caught collective operation timeout",
    # 11 versions: NCCL (every rank prints it; may name its CUDA)
    r"NCCL version [0-9]",
    # 12 world layout
    r"WORLD INFO DICT|num_local_procs=|world_size|WORLD_SIZE|world size|--nproc[_-]per[_-]node"
    r"|--nnodes|--num_processes|--num_machines",
    # 13 DataLoader workers
    r"num_workers",
    # 14 slurm cgroup OOM
    r"Detected [0-9]+ oom[-_]kill event",
    # 15 slurm cancellation
    r"\*\*\* (?:STEP|JOB) [0-9][^\n]* CANCELLED AT ",
    # 16 srun task status
    r"srun: error: [^ \t\n:]+: tasks? [0-9]",
    # 17 elastic restarts
    r"Worker group FAILED\. [0-9]+/[0-9]+ attempts left",
    # 18 signal messages (torchelastic report, DataLoader, agent, shell, mpirun)
    r"Signal [0-9]+ \(SIG[A-Z0-9]+\) received by PID|DataLoader worker \(pid [0-9]+\) is killed"
    r"|Received Signals\.SIG[A-Z0-9]+ death signal|exited on signal [0-9]+"
    r"|line [0-9]+: +[0-9]+ (?:Killed|Bus error|Segmentation fault|Aborted)",
    # 19 NCCL warnings and error names
    r"NCCL WARN |nccl(?:Remote|System|Internal|UnhandledCuda)Error"
    r"|ncclInvalid(?:Usage|Argument)|unhandled (?:system|cuda) error"
    r"|remote process exited or there was a network",
    # 20 pdsh remote status
    r"ssh exited with exit code [0-9]+",
    # 21 deepspeed host memory
    r"CPU Virtual Memory: +used = ",
    # 22 the run finished (HF Trainer, DeepSpeed launcher): earlier tracebacks did not end it
    r"Training completed\.|'train_runtime': |train_runtime +=|Process [0-9]+ exits successfully",
    # 23 NCCL transport: every rank prints it, the first one is all that is kept
    r"NCCL INFO Using network ",
    # 24 versions: torch (its `+cu121` names CUDA too)
    r"torch==[0-9]|(?:PyTorch|torch) version:? [0-9]",
    # 25 versions: CUDA (nvidia-smi banners in the log, torch.utils.collect_env)
    r"CUDA (?:[Vv]ersion|used to build PyTorch):? [0-9]",
)

(
    A_TOOL,
    A_HEADER,
    A_INDEX,
    A_FIELD,
    A_BORDER,
    A_EXCEPTION,
    A_OOM,
    A_AGENT,
    A_DEEPSPEED,
    A_SUBPROCESS,
    A_WATCHDOG,
    A_VERSION,
    A_WORLD,
    A_WORKERS,
    A_SLURM_OOM,
    A_SLURM_CANCEL,
    A_SRUN,
    A_RESTART,
    A_SIGNAL,
    A_NCCL,
    A_PDSH,
    A_CPU_MEM,
    A_COMPLETED,
    A_TRANSPORT,
    A_VERSION_TORCH,
    A_VERSION_CUDA,
) = range(len(ANCHORS))

_SINGLE_KEYS = {
    A_VERSION: ("nccl.version", "cuda.version"),
    A_VERSION_TORCH: ("torch.version", "cuda.version"),
    A_VERSION_CUDA: ("cuda.version",),
    A_WORLD: ("launcher.nnodes", "launcher.nproc_per_node", "launcher.world_size"),
    A_WORKERS: ("launcher.num_workers",),
    A_TRANSPORT: ("nccl.transport",),
}
"""Anchors whose handler only keeps the first value of these keys: once every one of them is
known, further lines of the anchor change nothing and the engine may skip them undecoded."""

REPORT_SPAN = 400
"""Lines a torchelastic report may span; a record field further away is not one of its fields."""


@dataclass
class _Record:
    """One `[N]:` entry of a torchelastic report."""

    root: bool
    lineno: int
    last: int
    fields: dict[str, tuple[str, int, str]] = field(default_factory=dict)
    """field name -> (value, lineno, line text)."""

    @property
    def rank(self) -> int | None:
        m = _RANK_FIELD.match(self.value("rank"))
        return int(m.group(1)) if m else None

    def value(self, name: str) -> str:
        entry = self.fields.get(name)
        return entry[0].strip() if entry else ""


class LauncherCollector(LogCollector):
    """Bounded state over the anchor lines of one launcher log."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.facts: list[Fact] = []
        self.tools: dict[str, Fact] = {}
        self.exceptions: set[tuple[int | None, str]] = set()
        self.ooms: set[tuple[int | None, int | None, int]] = set()
        self.timeouts: set[tuple[int | None, str | None]] = set()
        self.signals: dict[tuple[str, str | None], Fact] = {}
        self.singles: dict[str, Fact] = {}
        """First fact of each one-value key (versions, world layout, num_workers)."""
        self.nccl_errors: set[tuple[str, int | None]] = set()
        self.nccl_warns = 0
        self.restarts: Fact | None = None
        self.restart_count = 0
        self.cpu_mem: Fact | None = None
        self.subprocess_exits: list[Fact] = []
        self.section: tuple[bool, int] | None = None
        """(root?, lineno) of the report section being read."""
        self.record: _Record | None = None
        self.records = 0
        self.first_failure: Fact | None = None

    # --- plumbing ---------------------------------------------------------------------------

    def _add(self, key: str, value: FactValue, line: Line, **attrs: FactValue | None) -> Fact:
        made = fact(key, value, self.path, line.lineno, text=line.raw, **attrs)
        self.facts.append(made)
        return made

    def _single(self, key: str, value: FactValue, line: Line, **attrs: FactValue | None) -> None:
        if key not in self.singles:
            self.singles[key] = fact(key, value, self.path, line.lineno, text=line.raw, **attrs)

    def feed(self, line: Line, anchors: frozenset[int]) -> None:
        """Dispatch the line to the handlers of the anchors it matched."""
        self._report(line, anchors)
        for index in sorted(anchors):
            handler = _HANDLERS.get(index)
            if handler is not None:
                handler(self, line)
            keys = _SINGLE_KEYS.get(index)
            if keys is not None and all(key in self.singles for key in keys):
                # `_report` ignores these anchors, so skipping their lines changes no fact.
                self.settled.add(index)

    # --- torchelastic report ----------------------------------------------------------------

    def _report(self, line: Line, anchors: frozenset[int]) -> None:
        """Track the report's sections and records; fields only count inside a record."""
        text = line.text
        if A_HEADER in anchors and (m := _HEADER.match(text)):
            self._close_record()
            self.section = (m.group(1).startswith("Root Cause"), line.lineno)
            return
        if A_INDEX in anchors and (m := _INDEX.match(text)):
            self._close_record()
            if self.section and line.lineno - self.section[1] <= REPORT_SPAN:
                self.record = _Record(root=self.section[0], lineno=line.lineno, last=line.lineno)
            return
        if A_BORDER in anchors and _BORDER.match(text):
            self._close_record()
            if text.strip()[:1] in "=*":
                self.section = None
            return
        record = self.record
        if record is None:
            return
        if line.lineno - record.last > REPORT_SPAN:
            self._close_record()
            return
        if A_FIELD in anchors and (m := _FIELD.match(text)):
            record.fields.setdefault(m.group(1), (m.group(2), line.lineno, line.raw))
            record.last = line.lineno

    def _close_record(self) -> None:
        record, self.record = self.record, None
        if record is None or self.records >= MAX_REPORT_RECORDS:
            return
        self.records += 1
        exit_entry = record.fields.get("exitcode")
        rank_m = _RANK_FIELD.match(record.value("rank"))
        exit_m = _EXIT_FIELD.match(record.value("exitcode"))
        rank = int(rank_m.group(1)) if rank_m else None
        local_rank = int(rank_m.group(2)) if rank_m and rank_m.group(2) else None
        code = int(exit_m.group(1)) if exit_m else None
        pid = int(exit_m.group(2)) if exit_m and exit_m.group(2) else None
        host = record.value("host") or None
        error_file = record.value("error_file") or None
        source = "torchelastic-root-cause" if record.root else "torchelastic-failure"
        if code is not None and exit_entry is not None:
            self.facts.append(
                fact(
                    "launcher.exit_code",
                    code,
                    self.path,
                    exit_entry[1],
                    text=exit_entry[2],
                    rank=rank,
                    local_rank=local_rank,
                    host=host,
                    pid=pid,
                    source=source,
                )
            )
        if record.root and rank is not None:
            entry = record.fields["rank"]
            self.first_failure = fact(
                "launcher.first_failure",
                rank,
                self.path,
                entry[1],
                text=entry[2],
                host=host,
                exit_code=code,
                pid=pid,
                local_rank=local_rank,
                time=record.value("time") or None,
                error_file=None if error_file == "<N/A>" else error_file,
            )
        self._record_signal(record, rank, pid, code)

    def _record_signal(
        self, record: _Record, rank: int | None, pid: int | None, code: int | None
    ) -> None:
        for name in ("traceback", "msg"):
            entry = record.fields.get(name)
            if entry and (m := _SIGNAL_MSG.search(entry[0])):
                self._signal(
                    m.group(2),
                    entry[1],
                    entry[2],
                    rank=rank,
                    pid=int(m.group(3)),
                    source="torchelastic",
                )
                return
        if code is not None and code < 0 and "exitcode" in record.fields:
            entry = record.fields["exitcode"]
            self._signal_from_code(code, entry[1], entry[2], rank=rank, pid=pid)

    def _signal(self, name: str, lineno: int, text: str, **attrs: FactValue | None) -> None:
        """Record a signal once per (signal, pid): the agent line and the report name the same
        death, and the report's entry (it knows the global rank) is the better one to keep."""
        pid, rank = attrs.get("pid"), attrs.get("rank")
        key = (name, _s(pid)) if pid is not None else (name, f"{rank}@{attrs.get('host')}")
        known = self.signals.get(key)
        if known is not None and (rank is None or known.attr("rank") is not None):
            return
        if known is None and len(self.signals) >= MAX_EXCEPTIONS:
            return
        self.signals[key] = fact("launcher.signal", name, self.path, lineno, text=text, **attrs)

    def _signal_from_code(
        self, code: int, lineno: int, text: str, **attrs: FactValue | None
    ) -> None:
        name = SIGNALS.get(-code)
        if name:
            self._signal(name, lineno, text, source="exit-code", **attrs)

    def _in_report(self, line: Line) -> _Record | None:
        """The record whose traceback this (indented) line continues, if any."""
        record = self.record
        if record is None or "traceback" not in record.fields:
            return None
        if line.lineno - record.last > REPORT_SPAN or not line.text[:1].isspace():
            return None
        return record

    # --- handlers -----------------------------------------------------------------------------

    def on_tool(self, line: Line) -> None:
        text = line.text
        for name, rx in _TOOLS:
            # The literal test first: most such lines (tracebacks) name no tool not yet seen.
            if name in self.tools or not any(lit in text for lit in _TOOL_LITERALS[name]):
                continue
            if rx.search(text):
                self.tools[name] = fact("launcher.tool", name, self.path, line.lineno, line.raw)

    def on_exception(self, line: Line) -> None:
        parsed = parse_exception(line.text)
        if parsed is None:
            return
        exc_type, value, inline_rank = parsed
        rank, host, source = line.rank, line.host, "log"
        record = self._in_report(line)
        if record is not None:
            rank = record.rank if rank is None else rank
            host = host or record.value("host") or None
            source = "torchelastic-report"
        rank = inline_rank if rank is None else rank
        key = (rank, value)
        if key in self.exceptions or len(self.exceptions) >= MAX_EXCEPTIONS:
            return
        self.exceptions.add(key)
        self._add(
            "python.exception", value, line, rank=rank, host=host, type=exc_type, source=source
        )

    def on_oom(self, line: Line) -> None:
        parsed = parse_cuda_oom(line.text)
        if parsed is None:
            return
        tried, attrs = parsed
        rank = line.rank
        record = self._in_report(line)
        if rank is None and record is not None:
            rank = record.rank
        if rank is None and (inline := parse_exception(line.text)):
            rank = inline[2]
        gpu = attrs.get("gpu")
        key = (rank, gpu if isinstance(gpu, int) else None, tried)
        if key in self.ooms or len(self.ooms) >= MAX_EXCEPTIONS:
            return
        self.ooms.add(key)
        self._add("cuda.oom", tried, line, rank=rank, host=line.host, **attrs)

    def on_agent(self, line: Line) -> None:
        m = _AGENT_FAILED.search(line.text)
        if m is None:
            return
        code, local_rank, pid = int(m.group(1)), int(m.group(2)), int(m.group(3))
        self._add(
            "launcher.exit_code",
            code,
            line,
            local_rank=local_rank,
            pid=pid,
            host=line.host,
            source="elastic-agent",
        )
        if code < 0:
            self._signal_from_code(code, line.lineno, line.raw, pid=pid, host=line.host)

    def on_deepspeed(self, line: Line) -> None:
        m = _DS_RC.search(line.text)
        if m is None:
            return
        code = int(m.group(1))
        lr = _DS_LOCAL_RANK.search(line.text)
        local_rank = int(lr.group(1)) if lr else None
        self._add(
            "launcher.exit_code",
            code,
            line,
            local_rank=local_rank,
            host=line.host,
            source="deepspeed",
        )
        if code < 0:
            self._signal_from_code(
                code, line.lineno, line.raw, host=line.host, local_rank=local_rank
            )

    def on_subprocess(self, line: Line) -> None:
        # The source depends on the launcher, known only at the end: kept until finish().
        if m := _CPE_SIGNAL.search(line.text):
            code = -int(m.group(2))
            self._signal(m.group(1), line.lineno, line.raw, source="subprocess", host=line.host)
        elif m := _CPE_STATUS.search(line.text):
            code = int(m.group(1))
        else:
            return
        if len(self.subprocess_exits) < MAX_REPORT_RECORDS:
            self.subprocess_exits.append(
                fact(
                    "launcher.exit_code",
                    code,
                    self.path,
                    line.lineno,
                    text=line.raw,
                    host=line.host,
                )
            )

    def on_watchdog(self, line: Line) -> None:
        m = _WATCHDOG.search(line.text)
        if m is None:
            return
        rest = line.text[m.end() :]
        work = dict(_WORK_FIELD.findall(rest))
        timeout = work.get("Timeout(ms)")
        if timeout is None or not timeout.isdigit():
            return
        rank = line.rank
        if rank is None and (r := _RANK_IN_TEXT.search(line.text)):
            rank = int(r.group(1))
        seq = work.get("SeqNum")
        key = (rank, seq)
        if key in self.timeouts or len(self.timeouts) >= MAX_EXCEPTIONS:
            return
        self.timeouts.add(key)
        ran = _RAN_FOR.search(rest)
        self._add(
            "nccl.timeout",
            int(timeout),
            line,
            rank=rank,
            op=work.get("OpType"),
            ran_ms=int(ran.group(1)) if ran else None,
            seq=int(seq) if seq and seq.isdigit() else None,
            host=line.host,
        )

    def on_version(self, line: Line) -> None:
        for key, value in version_facts(line.text):
            self._single(key, value, line)

    def on_world(self, line: Line) -> None:
        text = line.text
        if m := _WORLD_DICT.search(text):
            sizes = [
                len([r for r in ranks.split(",") if r.strip()])
                for ranks in _WORLD_HOST.findall(m.group(1))
            ]
            if sizes:
                self._single("launcher.nnodes", len(sizes), line)
                self._single("launcher.nproc_per_node", max(sizes), line)
                self._single("launcher.world_size", sum(sizes), line)
        if m := _DS_PROCS.search(text):
            self._single("launcher.nnodes", int(m.group(1)), line)
            self._single("launcher.nproc_per_node", int(m.group(2)), line)
        if m := _WORLD_SIZE.search(text):
            self._single("launcher.world_size", int(m.group(1)), line)
        if m := _NPROC_FLAG.search(text):
            self._single("launcher.nproc_per_node", int(m.group(1)), line)
        if m := _NNODES_FLAG.search(text):
            self._single("launcher.nnodes", int(m.group(1)), line)
        flags = () if "unintended" in text else tuple(_ACCEL_FLAG.finditer(text))
        for m in (*_ACCEL_VALUE.finditer(text), *flags):
            key = "launcher.world_size" if m.group(1) == "num_processes" else "launcher.nnodes"
            self._single(key, int(m.group(2)), line)

    def on_workers(self, line: Line) -> None:
        if m := _NUM_WORKERS.search(line.text):
            self._single("launcher.num_workers", int(m.group(1)), line)

    def on_slurm_oom(self, line: Line) -> None:
        if m := _SLURM_OOM.search(line.text):
            self._add("slurm.oom_kill_events", int(m.group(1)), line, step=m.group(2))

    def on_slurm_cancel(self, line: Line) -> None:
        if m := _SLURM_CANCEL.search(line.text):
            reason = (m.group(4) or "unspecified").strip()
            self._add(
                "slurm.cancelled", reason, line, step=m.group(1), node=m.group(2), time=m.group(3)
            )

    def on_srun(self, line: Line) -> None:
        m = _SRUN_TASK.search(line.text)
        if m is None:
            return
        node, task, what = m.group(1), m.group(2), m.group(3)
        self._add("slurm.task_failure", what, line, node=node, task=task)
        task_attr: FactValue = int(task) if task.isdigit() else task
        if ex := _SRUN_EXIT.search(what):
            self._add(
                "launcher.exit_code",
                int(ex.group(1)),
                line,
                host=node,
                task=task_attr,
                source="srun",
            )
        elif (signum := SIGNAL_WORDS.get(what.lower())) is not None:
            self._add("launcher.exit_code", -signum, line, host=node, task=task_attr, source="srun")
            self._signal(
                SIGNALS[signum], line.lineno, line.raw, host=node, task=task_attr, source="srun"
            )

    def on_restart(self, line: Line) -> None:
        if _RESTART.search(line.text):
            self.restart_count += 1
            self.restarts = fact(
                "launcher.restarts", self.restart_count, self.path, line.lineno, text=line.raw
            )

    def on_signal(self, line: Line) -> None:
        text = line.text
        if self.record is None and (m := _SIGNAL_MSG.search(text)):
            self._signal(
                m.group(2),
                line.lineno,
                line.raw,
                rank=line.rank,
                pid=int(m.group(3)),
                source="torchelastic",
            )
        if m := _DATALOADER_SIG.search(text):
            signum = SIGNAL_WORDS.get(m.group(2).strip().rstrip(".").lower())
            if signum:
                self._signal(
                    SIGNALS[signum],
                    line.lineno,
                    line.raw,
                    rank=line.rank,
                    pid=int(m.group(1)),
                    host=line.host,
                    source="dataloader-worker",
                )
        if m := _AGENT_SIGNAL.search(text):
            self._signal(m.group(1), line.lineno, line.raw, host=line.host, source="agent-received")
        if m := _MPI_SIGNAL.search(text):
            rank, pid, node, signum = int(m.group(1)), int(m.group(2)), m.group(3), int(m.group(4))
            self._add(
                "launcher.exit_code", -signum, line, rank=rank, pid=pid, host=node, source="mpirun"
            )
            self._signal_from_code(-signum, line.lineno, line.raw, rank=rank, pid=pid, host=node)
        if m := _SHELL_KILLED.search(text):
            signum = SIGNAL_WORDS[m.group(2).lower()]
            self._signal(
                SIGNALS[signum], line.lineno, line.raw, pid=int(m.group(1)), source="shell"
            )

    def on_nccl(self, line: Line) -> None:
        text = line.text
        if (m := _NCCL_WARN.match(text)) and self.nccl_warns < MAX_NCCL_WARNS:
            self.nccl_warns += 1
            dev = int(m.group(1)) if m.group(1) else None
            self._add(
                "nccl.warn",
                m.group(3)[:EXCEPTION_CHARS],
                line,
                host=line.host,
                dev=dev,
                where=m.group(2),
            )
        for name, rx in _NCCL_ERRORS:
            if rx.search(text):
                record = self._in_report(line)
                rank = line.rank if line.rank is not None or record is None else record.rank
                key = (name, rank)
                if key not in self.nccl_errors and len(self.nccl_errors) < MAX_EXCEPTIONS:
                    self.nccl_errors.add(key)
                    self._add("nccl.error", name, line, rank=rank, host=line.host)
                break

    def on_pdsh(self, line: Line) -> None:
        if m := _PDSH_EXIT.search(line.raw):
            self._add("launcher.exit_code", int(m.group(2)), line, host=m.group(1), source="pdsh")

    def on_transport(self, line: Line) -> None:
        if m := _NCCL_NET.search(line.text):
            self._single("nccl.transport", m.group(1), line)

    def on_completed(self, line: Line) -> None:
        """Keep the last line saying the run finished (`launcher.completed`)."""
        self.singles.pop("launcher.completed", None)
        self._single("launcher.completed", True, line)

    def on_cpu_mem(self, line: Line) -> None:
        m = _CPU_MEM.search(line.text)
        if m is None:
            return
        percent = float(m.group(3))
        if self.cpu_mem is None or percent > float(self.cpu_mem.value):
            self.cpu_mem = fact(
                "launcher.cpu_memory_percent",
                percent,
                self.path,
                line.lineno,
                text=line.raw,
                used_bytes=to_bytes(m.group(1), m.group(2)),
            )

    # --- the end ------------------------------------------------------------------------------

    def finish(self) -> list[Fact]:
        """Close the open report record and add the whole-file facts."""
        self._close_record()
        facts = list(self.facts)
        facts.extend(self.signals.values())
        tool = self._tool()
        if tool is not None:
            facts.append(tool)
        source = "accelerate" if "accelerate" in self.tools else "subprocess"
        facts.extend(
            fact(
                pending.key,
                pending.value,
                self.path,
                pending.lineno,
                text=pending.text,
                source=source,
                **dict(pending.attrs),
            )
            for pending in self.subprocess_exits
        )
        facts.extend(self.singles.values())
        self._derive_world(facts)
        facts.extend(f for f in (self.first_failure, self.restarts, self.cpu_mem) if f is not None)
        return facts

    def _tool(self) -> Fact | None:
        """The most specific launcher seen (llamafactory runs torchrun, which may run in slurm)."""
        for name in _TOOL_ORDER:
            if name in self.tools:
                chosen = self.tools[name]
                seen = ",".join(n for n in _TOOL_ORDER if n in self.tools)
                return fact(
                    chosen.key, chosen.value, self.path, chosen.lineno, text=chosen.text, seen=seen
                )
        return None

    def _derive_world(self, facts: list[Fact]) -> None:
        """Fill in the third of nnodes / nproc_per_node / world_size from the other two."""
        nnodes = self.singles.get("launcher.nnodes")
        nproc = self.singles.get("launcher.nproc_per_node")
        world = self.singles.get("launcher.world_size")
        if nnodes and nproc and not world:
            value = int(nnodes.value) * int(nproc.value)
            facts.append(
                fact(
                    "launcher.world_size",
                    value,
                    self.path,
                    nproc.lineno,
                    text=nproc.text,
                    derived=True,
                )
            )
        elif nnodes and world and not nproc and int(nnodes.value) > 0:
            value = int(world.value) // int(nnodes.value)
            facts.append(
                fact(
                    "launcher.nproc_per_node",
                    value,
                    self.path,
                    world.lineno,
                    text=world.text,
                    derived=True,
                )
            )


def _s(value: FactValue | None) -> str | None:
    return None if value is None else str(value)


_HANDLERS = {
    A_TOOL: LauncherCollector.on_tool,
    A_EXCEPTION: LauncherCollector.on_exception,
    A_OOM: LauncherCollector.on_oom,
    A_AGENT: LauncherCollector.on_agent,
    A_DEEPSPEED: LauncherCollector.on_deepspeed,
    A_SUBPROCESS: LauncherCollector.on_subprocess,
    A_WATCHDOG: LauncherCollector.on_watchdog,
    A_VERSION: LauncherCollector.on_version,
    A_WORLD: LauncherCollector.on_world,
    A_WORKERS: LauncherCollector.on_workers,
    A_SLURM_OOM: LauncherCollector.on_slurm_oom,
    A_SLURM_CANCEL: LauncherCollector.on_slurm_cancel,
    A_SRUN: LauncherCollector.on_srun,
    A_RESTART: LauncherCollector.on_restart,
    A_SIGNAL: LauncherCollector.on_signal,
    A_NCCL: LauncherCollector.on_nccl,
    A_TRANSPORT: LauncherCollector.on_transport,
    A_VERSION_TORCH: LauncherCollector.on_version,
    A_VERSION_CUDA: LauncherCollector.on_version,
    A_PDSH: LauncherCollector.on_pdsh,
    A_CPU_MEM: LauncherCollector.on_cpu_mem,
    A_COMPLETED: LauncherCollector.on_completed,
}

# --- sniffing -------------------------------------------------------------------------------------

# Sniffing runs on every file of a scan, and `re` has no fast path for an alternation: each
# family is gated by plain substring tests (memchr speed) and its regex runs only when one of
# its literals is present.
_SNIFF_FAMILIES: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (
        ("torch.distributed.", "ChildFailedError", "Root Cause (first observed failure)"),
        re.compile(
            r"torch\.distributed\.(?:elastic|run|launch)|ChildFailedError"
            r"|Root Cause \(first observed failure\)"
        ),
    ),
    (
        (
            "[launch.py:",
            "runner.py:",
            "[real_accelerator.py:",
            "[engine.py:",
            "[utils.py:",
            "[config.py:",
            "deepspeed.launcher",
            "ds_accelerator",
        ),
        re.compile(
            r"\[(?:launch|runner|multinode_runner|real_accelerator|engine|utils|config)\.py:[0-9]+:"
            r"|deepspeed\.launcher|ds_accelerator"
        ),
    ),
    (
        ("accelerate launch", "accelerate/commands/", "bin/accelerate"),
        re.compile(r"accelerate launch|accelerate/commands/|bin/accelerate\b"),
    ),
    (("llamafactory", "llama_factory"), re.compile(r"llamafactory|llama_factory")),
    (
        ("NCCL ", "ProcessGroupNCCL"),
        re.compile(r"NCCL (?:INFO|WARN|TRACE) |NCCL version [0-9]|ProcessGroupNCCL"),
    ),
    (("[rank", "[default"), re.compile(r"\[(?:rank|default)[0-9]+\]:")),
    (
        ("slurmstepd: ", "srun: ", "kill event"),
        re.compile(r"slurmstepd: error: |srun: (?:error|Terminating|Force)|oom[-_]kill event"),
    ),
    (
        ("mpirun ", "Primary job"),
        re.compile(r"mpirun noticed|mpirun detected|Primary job +terminated"),
    ),
)
_SNIFF_GLOG = re.compile(r"[IWEF][0-9]{4} [0-9:]{8}\.[0-9]{6} +[0-9]+ [^ \]\n]+:[0-9]+\]")
"""glog prefixes (torch >= 2.4 elastic agent), matched at line starts only."""
_SNIFF_LINES = 200
"""Lines looked at for line-start markers (glog prefixes, kernel timestamps)."""
_SNIFF_PYTHON = (
    "Traceback (most recent call last)",
    "CUDA out of memory",
    "DataLoader worker",
    "CalledProcessError",
    "torchrun",
    "deepspeed",
)
_SNIFF_EXCEPTION = ("Error: ", "Exception: ")
_EXCEPTION_PREFIX = re.compile(r"(?:\[[a-z]+[0-9]+\]: ?)?[A-Za-z_][A-Za-z0-9_.]*")
_JSON_LIST = re.compile(r"\[[ \t\r\n]*[{\"\]]")
_YAML_COMPOSE = re.compile(r"^services:[ \t]*$", re.MULTILINE)
_KERNEL_PREFIX = re.compile(r"(?:<[0-9]>)?\[ *[0-9]+\.[0-9]+\]|kern +:")
_KERNEL_STAMP = re.compile(r"\[ *[0-9]+\.[0-9]+\]")
"""In every line `_KERNEL_PREFIX` matches without `kern`; a leading literal, so `re` skips fast."""


def sniff_launcher(head: str) -> float:
    """Launcher markers (torchrun, deepspeed, NCCL, rank prefixes, slurm) -> >= 0.65."""
    stripped = head.lstrip("\ufeff \t\r\n")
    if not stripped:
        return 0.0
    lines = head.split("\n", _SNIFF_LINES)[:_SNIFF_LINES]
    score = _marker_score(head, lines)
    compose = "services:" in head and _YAML_COMPOSE.search(head)
    if stripped[0] == "{" or _JSON_LIST.match(stripped) or compose:
        # JSON (a torchelastic error file, docker inspect) or a compose file quoting a command
        return min(score, 0.1)
    kernel = 0
    if "kern" in head or _KERNEL_STAMP.search(head):  # most launcher logs have neither
        kernel = sum(1 for line in lines if "kernel: " in line or _KERNEL_PREFIX.match(line))
    if kernel * 4 > len(lines):
        score *= 0.4  # mostly a kernel log that mentions a launcher or a traceback
    return min(score, 0.95)


def _exception_line(head: str, marker: str) -> bool:
    """`Error: ` / `Exception: ` as the end of an exception type opening its line
    (`torch.OutOfMemoryError: `), not inside a kernel message (`Graphics Exception: ESR`)."""
    at = head.find(marker)
    while at >= 0:
        line_start = head.rfind("\n", 0, at) + 1
        if _EXCEPTION_PREFIX.fullmatch(head, line_start, at) is not None:
            return True
        at = head.find(marker, at + len(marker))
    return False


def _marker_score(head: str, lines: list[str]) -> float:
    """0.65 for one launcher family, more for each other family; 0.5-0.65 for Python alone."""
    families = sum(
        1
        for literals, pattern in _SNIFF_FAMILIES
        if any(literal in head for literal in literals) and pattern.search(head)
    )
    families += any(_SNIFF_GLOG.match(line) for line in lines)
    python = sum(1 for marker in _SNIFF_PYTHON if marker in head)
    python += any(_exception_line(head, marker) for marker in _SNIFF_EXCEPTION)
    if families:
        score = 0.65 + 0.07 * (families - 1) + (0.05 if python else 0.0)
    elif python:
        score = 0.45 + 0.05 * min(python, 4)
    else:
        score = 0.0
    return score


class LauncherParser(LogParser):
    """stdout/stderr of torchrun, deepspeed, accelerate, llamafactory-cli, python, mpirun, slurm."""

    kind = InputKind.LAUNCHER
    name = "launcher output"
    filenames = ("slurm-*.out", "*.out", "*.err", "*train*.log", "*launcher*.log")
    anchors: ClassVar[tuple[str, ...]] = ANCHORS

    @staticmethod
    def sniff(head: str) -> float:
        return sniff_launcher(head)

    def split_line(self, raw: str) -> Split:
        return split_launcher_line(raw)

    def collector(self, path: str) -> LogCollector:
        return LauncherCollector(path)
