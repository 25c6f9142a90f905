"""The launcher log's collector: one handler per anchor, bounded state, the facts at the end.

The fact keys are listed in the package docstring. `ANCHORS` (after the class) is the table:
the scan pattern of each kind of line, the handler it feeds, and the one-value facts that
settle it. The torchelastic report's four anchors have no handler: `ReportReader` reads them
together, from `on_line`.
"""

from __future__ import annotations

import re
from typing import Any

from crashlens.model import Fact, FactValue, Line
from crashlens.parsers.base import Anchor, fact
from crashlens.parsers.launcher import report
from crashlens.parsers.launcher.barrier_lines import BARRIER_ANCHORS
from crashlens.parsers.launcher.build_lines import DNN_MEMORY_ANCHOR, GPU_ANCHOR
from crashlens.parsers.launcher.deaths import DEATH_ANCHORS, DeathSigns
from crashlens.parsers.launcher.ib_settings import ANCHOR as IB_HCA_ANCHOR
from crashlens.parsers.launcher.ib_settings import ib_hca_setting
from crashlens.parsers.launcher.messages import (
    EXCEPTION_CHARS,
    SIZE,
    num_workers,
    parse_cuda_oom,
    parse_exception,
    version_facts,
    world_facts,
)
from crashlens.parsers.launcher.platform_lines import PLATFORM_ANCHORS
from crashlens.parsers.launcher.probes import HEADER as PROBE_HEADER
from crashlens.parsers.launcher.probes import ProbeTracker
from crashlens.parsers.launcher.report import MAX_REPORT_RECORDS, ReportReader
from crashlens.parsers.launcher.request_lines import REQUEST_ANCHORS
from crashlens.parsers.launcher.settings import ANCHOR as IFNAME_ANCHOR
from crashlens.parsers.launcher.settings import MAX_SETTINGS, socket_ifname_settings
from crashlens.parsers.launcher.signals import SIGNAL_RECEIVED, SIGNAL_WORDS, SIGNALS
from crashlens.parsers.launcher.stacks import ANCHOR as STACK_ANCHOR
from crashlens.parsers.launcher.stacks import (
    MAX_STACKS,
    StackTracker,
    errno_name,
    prefixed_exception,
)
from crashlens.parsers.launcher.teardown import ANCHOR as TEARDOWN_ANCHOR
from crashlens.parsers.launcher.teardown import TeardownTracker, py2_unraisable
from crashlens.parsers.launcher.tools import TOOL_ANCHOR, TOOLS
from crashlens.text.sizes import to_bytes
from crashlens.text.values import bounded_int, finite_float

MAX_EXCEPTIONS = 200
"""Distinct exceptions, OOMs, timeouts, NCCL errors and signals kept, each."""
MAX_NCCL_WARNS = 20

_TOOL_ORDER = [tool.name for tool in TOOLS]

_AGENT_FAILED = re.compile(
    # The pid is optional: a launcher killed mid-write leaves the line cut after the rank.
    r"failed \(exitcode: (-?[0-9]+)\) local_rank: ([0-9]+)(?: \(pid: ([0-9]+)\))?"
)
_DS_RC = re.compile(r"exits with return code = (-?[0-9]+)")
_DS_LOCAL_RANK = re.compile(r"--local_rank=([0-9]+)")
_CPE_SIGNAL = re.compile(r"died with <Signals\.(SIG[A-Z0-9]+): ([0-9]+)>")
_CPE_STATUS = re.compile(r"returned non-zero exit status (-?[0-9]+)")
_WATCHDOG = re.compile(r"Watchdog caught collective operation timeout: WorkNCCL\(")
_WORK_FIELD = re.compile(r"(SeqNum|OpType|Timeout\(ms\))=([A-Za-z0-9_]+)")
_RAN_FOR = re.compile(r"ran for ([0-9]+) milliseconds")
_RANK_IN_TEXT = re.compile(r"\[(?:PG ID [^\][]*)?Rank ([0-9]+)\]")
_SLURM_OOM = re.compile(
    r"Detected ([0-9]+) oom[-_]kill events?(?:\(s\))? in (?:StepId=|step )"
    r"([0-9]+(?:\.[A-Za-z0-9_]+)?)"
)
_SLURM_CANCEL = re.compile(
    r"\*\*\* (?:STEP|JOB) ([0-9][0-9.A-Za-z_]*) ON ([^ ]+) CANCELLED AT ([^ ]+)"
    r"(?: DUE TO ([^*,]+))?"
)
_SRUN_TASK = re.compile(
    r"srun: error: ([^ \t:]+): tasks? ([0-9][0-9,\-\[\]]*): (.*?[^ \t])[ \t]*+$"
)
_SRUN_EXIT = re.compile(r"Exited with exit code ([0-9]+)")
_RESTART = re.compile(r"Worker group FAILED\. [0-9]+/[0-9]+ attempts left; will restart")
_DATALOADER_SIG = re.compile(
    r"DataLoader worker \(pid ([0-9]+)\) is killed by signal: ([A-Za-z ]+)"
)
_NCCL_WARN = re.compile(r"^(?:\[([0-9]+)\] )?(?:([^ ]+) )?NCCL WARN (.*)$")
_NCCL_NET = re.compile(r"NCCL INFO Using network ([A-Za-z0-9_]+)")
# `NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_3:1/RoCE ; OOB ib0:10.0.0.12<0>`: the verbs devices
# NCCL opened (not printed when it finds none: `NET/IB : No device found.`)
_NCCL_IB = re.compile(r"NCCL INFO NET/IB ?: ?Using ((?:\[[0-9]+\][^ \t;\[]+[ \t]*)+)")
# NCCL's echo of an environment setting that asks for InfiniBand (an HCA named, IB not
# disabled), and its report that it found no verbs device to use
_NCCL_IB_ASKED = re.compile(
    r"NCCL INFO (NCCL_IB_HCA) set |NCCL INFO (NCCL_IB_DISABLE) set [^\n]*to 0\b"
)
_NCCL_IB_NONE = re.compile(r"NCCL INFO NET/IB ?: ?No device found")
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
_CPU_MEM = re.compile(r"CPU Virtual Memory: +used = " + SIZE + r", percent = ([0-9.]+)%")
_AGENT_SIGNAL = re.compile(r"Received (?:Signals\.(SIG[A-Z0-9]+)|([0-9]{1,2})) death signal")
"""torchelastic's agent names the signal it got (`Received Signals.SIGTERM death signal`);
releases before the Signals enum printed its number (`Received 15 death signal`)."""
_DS_KILLING = re.compile(r"sigkill_handler\] Killing subprocess ([0-9]+)")
_DS_RECEIVED = re.compile(r"Main process received (SIG[A-Z0-9]+), exiting")


class LauncherCollector(DeathSigns):
    """Bounded state over the anchor lines of one launcher log (death signs: `DeathSigns`)."""

    def __init__(self, path: str) -> None:
        super().__init__(path, ANCHORS)
        self.facts: list[Fact] = []
        self.tools: dict[str, Fact] = {}
        self.exceptions: set[tuple[int | None, str]] = set()
        self.ooms: set[tuple[int | None, int | None, int]] = set()
        self.timeouts: set[tuple[int | None, str | None]] = set()
        self.nccl_errors: set[tuple[str, int | None]] = set()
        self.nccl_warns = 0
        self.restarts: Fact | None = None
        self.restart_count = 0
        self.cpu_mem: Fact | None = None
        self.ds_killing: Line | None = None
        """DeepSpeed's launcher's first `Killing subprocess N` (its sigkill_handler)."""
        self.ds_received = False
        """Whether that launcher said it received a signal itself (a stop, not a failure)."""
        self.subprocess_exits: list[Fact] = []
        self.report = ReportReader(path, self.facts, self.signals)
        self.teardown = TeardownTracker()
        self.probes = ProbeTracker()
        self.stacks = StackTracker()
        self.stack_keys: set[tuple[int | None, str, str]] = set()
        self.ifname_keys: set[tuple[str, str, str | None]] = set()
        self.ib_asked: dict[str, Line] = {}
        self.ib_none: Line | None = None

    def _add(self, key: str, value: FactValue, line: Line, **attrs: FactValue | None) -> Fact:
        made = fact(key, value, self.path, line.lineno, text=line.raw, **attrs)
        self.facts.append(made)
        return made

    def on_line(self, line: Line, matched: tuple[Anchor[Any], ...]) -> None:
        """Every fed line goes to the report reader first (it ends a report left open)."""
        self.report.read(line, matched)

    def on_tool(self, line: Line) -> None:
        text = line.text
        for tool in TOOLS:
            # Gated by the tool's literals: most such lines (tracebacks) name no new tool.
            if tool.name not in self.tools and tool.says.search(text) is not None:
                self.tools[tool.name] = fact(
                    "launcher.tool", tool.name, self.path, line.lineno, line.raw
                )

    def on_traceback(self, line: Line) -> None:
        self.teardown.read(line.text, line.lineno)

    def on_socket_ifname(self, line: Line) -> None:
        for var, value, source in socket_ifname_settings(line.text):
            key = (var, value, line.host)
            if key in self.ifname_keys or len(self.ifname_keys) >= MAX_SETTINGS:
                continue
            self.ifname_keys.add(key)
            self._add("net.socket_ifname", value, line, var=var, host=line.host, source=source)

    def on_ib_hca(self, line: Line) -> None:
        if found := ib_hca_setting(line.text):
            self.keep_first("nccl.ib_hca", found[0], line, source=found[1])

    def on_frame(self, line: Line) -> None:
        self.stacks.read(line.text, line.rank, line.lineno)

    def _stack(self, line: Line, exc_type: str, value: str, rank: int | None) -> None:
        """The `python.stack` fact of the traceback this exception line closes (stacks.py)."""
        frames = self.stacks.close(line.rank, line.lineno)
        if not frames or len(self.stack_keys) >= MAX_STACKS:
            return
        key = (rank, value, frames[-1])
        if key in self.stack_keys:
            return
        self.stack_keys.add(key)
        self._add(
            "python.stack",
            frames[-1],
            line,
            frames="|".join(frames),
            exception=exc_type,
            errno=errno_name(value),
            rank=rank,
            host=line.host,
        )

    def on_exception(self, line: Line) -> None:
        if (unraisable := py2_unraisable(line.text)) is not None:
            self._ignored_by_python2(line, *unraisable)
            return
        parsed = parse_exception(line.text)
        if parsed is None:
            if (prefixed := prefixed_exception(line.text)) is not None:
                self._stack(line, *prefixed, line.rank)
            return
        teardown = self.teardown.close()
        exc_type, value, inline_rank = parsed
        self._stack(line, exc_type, value, inline_rank if line.rank is None else line.rank)
        rank, host, source = line.rank, line.host, "log"
        record = self.report.continued_by(line)
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
            "python.exception",
            value,
            line,
            rank=rank,
            host=host,
            type=exc_type,
            source=source,
            teardown=teardown,
        )

    def on_probe_table(self, line: Line) -> None:
        self.probes.read_header(line.lineno)

    def on_oom(self, line: Line) -> None:
        parsed = parse_cuda_oom(line.text)
        if parsed is None:
            return
        if self.probes.caught(line.text, line.lineno):
            self._caught_by_probe(line)
        tried, attrs = parsed
        rank = line.rank
        record = self.report.continued_by(line)
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

    def _caught_by_probe(self, line: Line) -> None:
        """A size probe's caught out-of-memory error (probes.py): an exception the process
        reported and went on from, as `teardown.py`'s `handled`."""
        value = f"OutOfMemoryError: {line.text.strip()}"
        self._went_on_from(line, "OutOfMemoryError", value, "handled")

    def _ignored_by_python2(self, line: Line, exc_type: str, value: str) -> None:
        """Python 2's one-line report of a finalizer's exception (`teardown.py`): an exception
        the interpreter reported and went on from, as `finalizer` tracebacks are."""
        short = exc_type.rpartition(".")[2]
        self._went_on_from(line, short, f"{short}: {value}", "finalizer")

    def _went_on_from(self, line: Line, exc_type: str, value: str, teardown: str) -> None:
        """A python.exception fact for a one-line report of an exception the process went on
        from (`teardown`: its `teardown.py` kind), counted once per rank and text."""
        value = value[:EXCEPTION_CHARS]
        key = (line.rank, value)
        if key in self.exceptions or len(self.exceptions) >= MAX_EXCEPTIONS:
            return
        self.exceptions.add(key)
        self._add(
            "python.exception",
            value,
            line,
            rank=line.rank,
            host=line.host,
            type=exc_type,
            source="log",
            teardown=teardown,
        )

    def on_agent(self, line: Line) -> None:
        m = _AGENT_FAILED.search(line.text)
        if m is None:
            return
        code, local_rank = bounded_int(m.group(1)), bounded_int(m.group(2))
        pid = bounded_int(m.group(3)) if m.group(3) else None
        if code is None:
            return  # an absurd number: the line is left unparsed
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
            self.signals.add_exit_code(code, line.lineno, line.raw, pid=pid, host=line.host)

    def on_deepspeed(self, line: Line) -> None:
        m = _DS_RC.search(line.text)
        if m is None:
            return
        code = bounded_int(m.group(1))
        lr = _DS_LOCAL_RANK.search(line.text)
        local_rank = bounded_int(lr.group(1)) if lr else None
        if code is None:
            return
        self._add(
            "launcher.exit_code",
            code,
            line,
            local_rank=local_rank,
            host=line.host,
            source="deepspeed",
        )
        if code < 0:
            self.signals.add_exit_code(
                code, line.lineno, line.raw, host=line.host, local_rank=local_rank
            )

    def on_subprocess(self, line: Line) -> None:
        # The source depends on the launcher, known only at the end: kept until finish().
        code: int | None
        if m := _CPE_SIGNAL.search(line.text):
            signum = bounded_int(m.group(2))
            code = -signum if signum is not None else None
            self.signals.add(m.group(1), line.lineno, line.raw, source="subprocess", host=line.host)
        elif m := _CPE_STATUS.search(line.text):
            code = bounded_int(m.group(1))
        else:
            return
        if code is None:
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
        timeout_ms = bounded_int(timeout) if timeout is not None and timeout.isdigit() else None
        if timeout_ms is None:
            return
        rank = line.rank
        if rank is None and (r := _RANK_IN_TEXT.search(line.text)):
            rank = bounded_int(r.group(1))
        seq = work.get("SeqNum")
        key = (rank, seq)
        if key in self.timeouts or len(self.timeouts) >= MAX_EXCEPTIONS:
            return
        self.timeouts.add(key)
        ran = _RAN_FOR.search(rest)
        self._add(
            "nccl.timeout",
            timeout_ms,
            line,
            rank=rank,
            op=work.get("OpType"),
            ran_ms=bounded_int(ran.group(1)) if ran else None,
            seq=bounded_int(seq) if seq and seq.isdigit() else None,
            host=line.host,
        )

    def on_version(self, line: Line) -> None:
        for key, value in version_facts(line.text):
            self.keep_first(key, value, line)

    def on_world(self, line: Line) -> None:
        for key, value in world_facts(line.text):
            self.keep_first(key, value, line)

    def on_workers(self, line: Line) -> None:
        if (workers := num_workers(line.text)) is not None:
            self.keep_first("launcher.num_workers", workers, line)

    def on_slurm_oom(self, line: Line) -> None:
        m = _SLURM_OOM.search(line.text)
        if m and (events := bounded_int(m.group(1))) is not None:
            self._add("slurm.oom_kill_events", events, line, step=m.group(2))

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
        task_number = bounded_int(task) if task.isdigit() else None
        task_attr: FactValue = task_number if task_number is not None else task
        ex = _SRUN_EXIT.search(what)
        code = bounded_int(ex.group(1)) if ex else None
        if ex and code is not None:
            self._add(
                "launcher.exit_code",
                code,
                line,
                host=node,
                task=task_attr,
                source="srun",
            )
        elif (signum := SIGNAL_WORDS.get(what.lower())) is not None:
            self._add("launcher.exit_code", -signum, line, host=node, task=task_attr, source="srun")
            self.signals.add(
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
        if self.report.record is None and (m := SIGNAL_RECEIVED.search(text)):
            self.signals.add(
                m.group(2),
                line.lineno,
                line.raw,
                rank=line.rank,
                pid=bounded_int(m.group(3)),
                source="torchelastic",
            )
        if m := _DATALOADER_SIG.search(text):
            signum = SIGNAL_WORDS.get(m.group(2).strip().rstrip(".").lower())
            if signum:
                self.signals.add(
                    SIGNALS[signum],
                    line.lineno,
                    line.raw,
                    rank=line.rank,
                    pid=bounded_int(m.group(1)),
                    host=line.host,
                    source="dataloader-worker",
                )
        if (m := _AGENT_SIGNAL.search(text)) and (
            received := m.group(1) or SIGNALS.get(int(m.group(2)))
        ):
            self.signals.add(
                received, line.lineno, line.raw, host=line.host, source="agent-received"
            )
        mpi = _MPI_SIGNAL.search(text)
        mpi_signum = bounded_int(mpi.group(4)) if mpi else None
        if mpi and mpi_signum is not None:
            rank, pid, node = bounded_int(mpi.group(1)), bounded_int(mpi.group(2)), mpi.group(3)
            signum = mpi_signum
            self._add(
                "launcher.exit_code", -signum, line, rank=rank, pid=pid, host=node, source="mpirun"
            )
            self.signals.add_exit_code(
                -signum, line.lineno, line.raw, rank=rank, pid=pid, host=node
            )
        if m := _SHELL_KILLED.search(text):
            signum = SIGNAL_WORDS[m.group(2).lower()]
            self.signals.add(
                SIGNALS[signum], line.lineno, line.raw, pid=bounded_int(m.group(1)), source="shell"
            )

    def on_nccl(self, line: Line) -> None:
        text = line.text
        if (m := _NCCL_WARN.match(text)) and self.nccl_warns < MAX_NCCL_WARNS:
            self.nccl_warns += 1
            dev = bounded_int(m.group(1)) if m.group(1) else None
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
                record = self.report.continued_by(line)
                rank = line.rank if line.rank is not None or record is None else record.rank
                key = (name, rank)
                if key not in self.nccl_errors and len(self.nccl_errors) < MAX_EXCEPTIONS:
                    self.nccl_errors.add(key)
                    self._add("nccl.error", name, line, rank=rank, host=line.host)
                break

    def on_pdsh(self, line: Line) -> None:
        m = _PDSH_EXIT.search(line.raw)
        if m and (code := bounded_int(m.group(2))) is not None:
            self._add("launcher.exit_code", code, line, host=m.group(1), source="pdsh")

    def on_transport(self, line: Line) -> None:
        if m := _NCCL_NET.search(line.text):
            self.keep_first("nccl.transport", m.group(1), line)

    def on_ib_request(self, line: Line) -> None:
        if m := _NCCL_IB_ASKED.search(line.text):
            self.ib_asked.setdefault(m.group(1) or m.group(2), line)
        elif _NCCL_IB_NONE.search(line.text) and self.ib_none is None:
            self.ib_none = line

    def _ib_unavailable(self) -> Fact | None:
        """`nccl.ib_unavailable`: InfiniBand asked for, no device found (see the docstring)."""
        if self.ib_none is None or not self.ib_asked:
            return None
        line = self.ib_none
        asked = ",".join(sorted(self.ib_asked))
        return fact("nccl.ib_unavailable", asked, self.path, line.lineno, text=line.raw)

    def on_ib_devices(self, line: Line) -> None:
        if m := _NCCL_IB.search(line.text):
            # a part without its `[N]` (a line torn by a stray control character) is skipped
            parts = (part.partition("]")[2] for part in m.group(1).split())
            devices = ",".join(device for device in parts if device)
            self.keep_first("nccl.ib_devices", devices, line)

    def on_cpu_mem(self, line: Line) -> None:
        m = _CPU_MEM.search(line.text)
        if m is None:
            return
        percent = finite_float(m.group(3))
        if percent is None:
            return
        if self.cpu_mem is None or percent > float(self.cpu_mem.value):
            self.cpu_mem = fact(
                "launcher.cpu_memory_percent",
                percent,
                self.path,
                line.lineno,
                text=line.raw,
                used_bytes=to_bytes(m.group(1), m.group(2)),
            )

    def on_deepspeed_teardown(self, line: Line) -> None:
        """DeepSpeed's launcher kills every process it started from its sigkill_handler, and
        it runs that handler for two reasons only: a process exited with a non-zero code (the
        handler then prints `exits with return code = N`), or the launcher itself received
        SIGINT or SIGTERM (`Main process received SIGINT, exiting`). A log that ends in the
        kills, before either line (the launcher killed too, or the output cut), still shows
        the run ended; with the received signal it is that stop."""
        if m := _DS_RECEIVED.search(line.text):
            self.ds_received = True
            self.signals.add(
                m.group(1), line.lineno, line.raw, host=line.host, source="agent-received"
            )
        elif self.ds_killing is None and _DS_KILLING.search(line.text):
            self.ds_killing = line

    def _deepspeed_teardown(self) -> Fact | None:
        line = self.ds_killing
        if line is None or self.ds_received:
            return None
        m = _DS_KILLING.search(line.text)
        return fact(
            "launcher.killing_workers",
            "deepspeed",
            self.path,
            line.lineno,
            text=line.raw,
            pid=bounded_int(m.group(1)) if m else None,
            host=line.host,
            silent=self._nothing_says_how_it_died(),
        )

    def _nothing_says_how_it_died(self) -> bool:
        """No exception, exit status or signal anywhere in the input: the process whose exit
        set off a teardown died without a word."""
        if self.exceptions or self.signals.facts:
            return False
        return not any(item.key == "launcher.exit_code" for item in self.facts)

    # --- the end ------------------------------------------------------------------------------

    def finish(self) -> list[Fact]:
        """Close the open report record and add the whole-file facts."""
        self.report.close()
        facts = list(self.facts)
        facts.extend(self.signals.facts.values())
        facts.extend(self.death_facts())
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
        facts.extend(
            f
            for f in (
                self.report.first_failure,
                self.restarts,
                self.cpu_mem,
                self._ib_unavailable(),
                self._deepspeed_teardown(),
            )
            if f is not None
        )
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


_VERSION_KEYS = ("nccl.version", "cuda.version")
_WORLD_KEYS = ("launcher.nnodes", "launcher.nproc_per_node", "launcher.world_size")

L = LauncherCollector  # short, so that most rows fit on one line
# Line-safe (see `Anchor`). The order is the dispatch order for a line matching several; the
# report's anchors sit where `on_line` reads them, before every handler.
ANCHORS: tuple[Anchor[Any], ...] = (
    Anchor(TOOL_ANCHOR, L.on_tool),
    report.HEADER,
    report.INDEX,
    report.FIELD,
    report.BORDER,
    # a traceback's header, chain and the lines of a report Python goes on from (teardown.py)
    Anchor(TEARDOWN_ANCHOR, L.on_traceback),
    # the frames of a traceback, for the exception line that closes it (stacks.py)
    Anchor(STACK_ANCHOR, L.on_frame),
    # the interface NCCL or Gloo is told to use (settings.py)
    Anchor(IFNAME_ANCHOR, L.on_socket_ifname),
    # the InfiniBand adapters NCCL is told to use (ib_settings.py)
    Anchor(IB_HCA_ANCHOR, L.on_ib_hca, settles=("nccl.ib_hca",)),
    Anchor(r"[A-Z][A-Za-z0-9_]*(?:Error|Exception|Interrupt|Exit)(?::|[ \t]*$)", L.on_exception),
    # a size probe's table, whose caught out-of-memory errors are printed bare (probes.py)
    Anchor(PROBE_HEADER, L.on_probe_table),
    Anchor(r"CUDA out of memory|CUDA error: out of memory", L.on_oom),
    Anchor(r"failed \(exitcode: -?[0-9]+\) local_rank: [0-9]+", L.on_agent),
    Anchor(r"exits with return code = -?[0-9]+", L.on_deepspeed),
    Anchor(
        r"sigkill_handler\] Killing subprocess [0-9]+"
        r"|Main process received SIG[A-Z0-9]+, exiting",
        L.on_deepspeed_teardown,
    ),
    # accelerate's simple launcher, llamafactory-cli
    Anchor(
        r"died with <Signals\.SIG[A-Z0-9]+: [0-9]+>|returned non-zero exit status -?[0-9]+",
        L.on_subprocess,
    ),
    Anchor(r"Watchdog caught collective operation timeout", L.on_watchdog),
    # every rank prints it (it may name its CUDA too): settled once both are known
    Anchor(r"NCCL version [0-9]", L.on_version, settles=_VERSION_KEYS),
    Anchor(
        r"WORLD INFO DICT|num_local_procs=|world_size|WORLD_SIZE|world size"
        r"|--nproc[_-]per[_-]node|--nnodes|--num_processes|--num_machines",
        L.on_world,
        settles=_WORLD_KEYS,
    ),
    Anchor(r"num_workers", L.on_workers, settles=("launcher.num_workers",)),
    Anchor(r"Detected [0-9]+ oom[-_]kill event", L.on_slurm_oom),
    Anchor(r"\*\*\* (?:STEP|JOB) [0-9][^\n]* CANCELLED AT ", L.on_slurm_cancel),
    Anchor(r"srun: error: [^ \t\n:]+: tasks? [0-9]", L.on_srun),
    Anchor(r"Worker group FAILED\. [0-9]+/[0-9]+ attempts left", L.on_restart),
    # torchelastic report, DataLoader, agent, shell, mpirun
    Anchor(
        r"Signal [0-9]+ \(SIG[A-Z0-9]+\) received by PID|DataLoader worker \(pid [0-9]+\) is killed"
        r"|Received (?:Signals\.SIG[A-Z0-9]+|[0-9]{1,2}) death signal|exited on signal [0-9]+"
        r"|line [0-9]+: +[0-9]+ (?:Killed|Bus error|Segmentation fault|Aborted)",
        L.on_signal,
    ),
    Anchor(
        r"NCCL WARN |nccl(?:Remote|System|Internal|UnhandledCuda)Error"
        r"|ncclInvalid(?:Usage|Argument)|unhandled (?:system|cuda) error"
        r"|remote process exited or there was a network",
        L.on_nccl,
    ),
    Anchor(r"ssh exited with exit code [0-9]+", L.on_pdsh),
    Anchor(r"CPU Virtual Memory: +used = ", L.on_cpu_mem),
    # every rank prints it; the first one is all that is kept
    Anchor(r"NCCL INFO Using network ", L.on_transport, settles=("nccl.transport",)),
    Anchor(r"NCCL INFO NET/IB ?: ?Using \[", L.on_ib_devices, settles=("nccl.ib_devices",)),
    Anchor(
        r"NCCL INFO NCCL_IB_(?:HCA|DISABLE) set |NCCL INFO NET/IB ?: ?No device found",
        L.on_ib_request,
    ),
    # its `+cu121` names CUDA too
    Anchor(
        r"torch==[0-9]|(?:PyTorch|torch) version:? [0-9]",
        L.on_version,
        settles=("torch.version", "cuda.version"),
    ),
    # nvidia-smi banners in the log, torch.utils.collect_env; TensorFlow's load of its runtime
    Anchor(
        r"CUDA (?:[Vv]ersion|used to build PyTorch):? [0-9]|libcudart\.so\.[0-9]",
        L.on_version,
        settles=("cuda.version",),
    ),
    # torch.utils.collect_env's driver line (nvidia-smi's driver version)
    Anchor(r"^Nvidia driver version: [0-9]", L.on_version, settles=("nvidia_smi.driver_version",)),
    # the GPU the job runs on, by name or stated capability (for the CUDA build's reach)
    GPU_ANCHOR,
    # the GPU memory free when a cuDNN handle could not be created (XLA, TensorFlow)
    DNN_MEMORY_ANCHOR,
    # how a process died, as any text log shows it (deaths.py)
    *DEATH_ANCHORS,
    # where the job was hosted, as the platform's own lines say (platform_lines.py)
    *PLATFORM_ANCHORS,
    *REQUEST_ANCHORS,
    # a rendezvous barrier counting more processes than the job has (barrier_lines.py)
    *BARRIER_ANCHORS,
)
del L
