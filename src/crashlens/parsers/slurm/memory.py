"""A step's peak memory against what the job asked for: sacct's `MaxRSS` and `ReqMem`.

Slurm's memory limit holds per node: `--mem` (`ReqMem` `16Gn` before Slurm 21.08) per node,
`--mem-per-cpu` (`4000Mc`) times the CPUs allocated on the node. From 21.08 on, `ReqMem` has
no suffix and counts the whole job (what the `mem` TRES says), so it is shared out over the
job's nodes. `MaxRSS` is the largest resident set of any task of the step, sampled every
`JobAcctGatherFrequency` (30 s by default): a step that reached its limit shows a peak at or
just under it, while a short spike between samples can be missed, so a low peak is weak
evidence only. A step's own `ReqMem` is used when it has one, else its job's row.

Fact `slurm.mem_peak_percent`: float, a step's `MaxRSS` as a percent of the memory it could
use on one node; attrs step, job, state (the step's), killed (`yes` when the step ended by
SIGKILL or Slurm's OOM handling: state `OUT_OF_MEMORY`, signal 9 or 125, exit status 137),
peak (`yes` for the step with its job's highest `MaxRSS`), job_oom (`yes` when any row of the
job is `OUT_OF_MEMORY`), max_rss_bytes, limit_bytes, per (`node`, `cpu` or `job`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

from crashlens.model import FactValue

PEAK_KEY = "slurm.mem_peak_percent"
KILL_SIGNALS = frozenset({9, 125})
"""SIGKILL, and the 125 Slurm records for a step its OOM handling ended (`0:125`)."""
KILL_EXITS = frozenset({137})
"""128 + SIGKILL: a batch script whose child was killed."""
MAX_NODES = 100_000
_RANGE_RE = re.compile(r"^([0-9]{1,9})(?:-([0-9]{1,9}))?$")


@dataclass(frozen=True, slots=True)
class MemoryRow:
    """What one sacct row says about memory, and how the step ended."""

    lineno: int
    shown: str
    step: str
    job: str
    state: str | None
    exit_code: int | None
    signal: int | None
    max_rss: int | None
    req_mem: int | None
    per: str | None
    """`node` or `cpu` from ReqMem's suffix; None without one (the job's total)."""
    cpus: int | None
    nodes: int | None

    @property
    def killed(self) -> bool:
        return (
            self.state == "OUT_OF_MEMORY"
            or self.signal in KILL_SIGNALS
            or self.exit_code in KILL_EXITS
        )


@dataclass(frozen=True, slots=True)
class Peak:
    """The fact one step gives: its peak as a percent of its per-node limit."""

    row: MemoryRow
    percent: float
    limit: int
    per: str
    peak: bool
    job_oom: bool

    def attrs(self) -> dict[str, FactValue | None]:
        return {
            "step": self.row.step,
            "job": self.row.job,
            "state": self.row.state,
            "killed": "yes" if self.row.killed else "no",
            "peak": "yes" if self.peak else "no",
            "job_oom": "yes" if self.job_oom else "no",
            "max_rss_bytes": self.row.max_rss,
            "limit_bytes": self.limit,
            "per": self.per,
        }


def node_count(node_list: str | None) -> int | None:
    """Nodes a NodeList names (`node-[01-02,07],gpu3` -> 4); None when it names none."""
    if not node_list or node_list in ("None assigned", "(null)"):
        return None
    count = 0
    for name in re.finditer(r"[^,\[]+(?:\[([^\]]*)\])?", node_list):
        ranges = name.group(1)
        if ranges is None:
            count += 1
            continue
        for part in ranges.split(","):
            found = _RANGE_RE.match(part.strip())
            if found is None:
                return None
            low, high = int(found.group(1)), int(found.group(2) or found.group(1))
            count += max(high - low + 1, 0)
        if count > MAX_NODES:
            return None
    return count or None


def _limit(row: MemoryRow, job: MemoryRow | None) -> tuple[int, str] | None:
    """(bytes the step may use on one node, how ReqMem was given), from its row or its job's."""
    source = row if row.req_mem else job
    if source is None or not source.req_mem:
        return None
    if source.per == "node":
        return source.req_mem, "node"
    if source.per == "cpu":
        cpus = row.cpus or (job.cpus if job else None)
        nodes = row.nodes if row.cpus else (job.nodes if job else None)
        if not cpus:
            return None
        return source.req_mem * max(cpus // max(nodes or 1, 1), 1), "cpu"
    nodes = (job.nodes if job else None) or row.nodes or 1
    return source.req_mem // nodes, "job"


def peaks(rows: list[MemoryRow]) -> Iterator[Peak]:
    """One `Peak` per step that has a MaxRSS and a known limit, job by job."""
    by_job: dict[str, list[MemoryRow]] = defaultdict(list)
    for row in rows:
        by_job[row.job].append(row)
    for job_id, members in by_job.items():
        job = next((row for row in members if row.step == job_id), None)
        job_oom = any(row.state == "OUT_OF_MEMORY" for row in members)
        highest = max((row.max_rss or 0 for row in members), default=0)
        for row in members:
            if not row.max_rss or (limit := _limit(row, job)) is None or limit[0] <= 0:
                continue
            percent = round(100.0 * row.max_rss / limit[0], 1)
            yield Peak(row, percent, limit[0], limit[1], row.max_rss == highest, job_oom)
