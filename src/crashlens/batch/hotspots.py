"""Which hosts and GPUs a job implicates in hardware faults, and which keep coming back.

Per job (`implicated`): every hardware-category hit that is not mere context, plus the parsed
facts that are hardware faults by themselves (a hardware Xid, a GPU fallen off the bus or
lost, uncorrected ECC errors, `ERR!` fields in nvidia-smi, machine checks, EDAC, PCIe AER and
link-down). A fault names its host when its line or fact does; otherwise the job's only host,
or the host of the rank that failed first. A GPU is named by every id seen for it in the job:
UUID, board serial and `host/PCI bus id` (a bus id alone is only unique within one host).

Across jobs (`HotspotTracker`): GPU ids seen together in one job are merged (union-find), so
a GPU named by UUID in one job and by bus id in another is one GPU. Hosts and GPUs implicated
in at least `min_jobs` jobs are ranked by job count, then most recent: the drain list.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from crashlens.model import Category, Fact, FactValue, InputAnalysis, Role
from crashlens.text.ids import normalize_pci

HOST_FAULT_FACTS = frozenset({"kernel.mce", "kernel.edac", "kernel.aer", "kernel.pcie_link_down"})
"""Facts that are hardware faults of the host (the device, if any, may not be a GPU)."""
GPU_FAULT_FACTS = frozenset({"kernel.xid", "kernel.gpu_off_bus", "gpu.lost", "gpu.err_field"})
"""Facts that are faults of one GPU whenever present (kernel.xid: when its category is hardware)."""
MAX_EXAMPLES = 3

_PCI = re.compile(
    r"\bPCI:((?:[0-9A-Fa-f]{4,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\b"
    r"|\b([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\b"
)
_UUID = re.compile(r"\bGPU-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b")
_PCI_KEYS = ("pci", "bus_id", "busid", "pci_bus_id", "pci_bus")
_UUID_KEYS = ("uuid", "gpu_uuid")
_SERIAL_KEYS = ("serial", "gpu_serial", "board_serial")


@dataclass(slots=True)
class GpuRef:
    """One GPU as a job names it; any field may be unknown."""

    host: str | None = None
    pci: str | None = None
    uuid: str | None = None
    serial: str | None = None

    def aliases(self) -> list[str]:
        """Ids that are globally unique for this GPU (a bare bus id is not)."""
        ids = []
        if self.uuid:
            ids.append(self.uuid)
        if self.serial:
            ids.append(f"serial:{self.serial}")
        if self.host and self.pci:
            ids.append(f"{self.host}/{self.pci}")
        return ids

    @property
    def label(self) -> str:
        """How the GPU is shown: `host/bus id` (what a drain needs), else UUID, serial, bus."""
        if self.host and self.pci:
            return f"{self.host}/{self.pci}"
        return self.uuid or (f"serial:{self.serial}" if self.serial else f"?/{self.pci}")

    def as_dict(self) -> dict[str, str | None]:
        return {"label": self.label, "host": self.host, "pci": self.pci,
                "uuid": self.uuid, "serial": self.serial}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Implicated:
    """What one job implicates in hardware faults."""

    hosts: tuple[str, ...]
    gpus: tuple[dict[str, str | None], ...]
    """GpuRef.as_dict() of every GPU, one per physical GPU seen in the job."""


def _first(values: dict[str, str], keys: Sequence[str]) -> str | None:
    for key in keys:
        if values.get(key):
            return values[key]
    return None


def _is_fault(item: Fact) -> bool:
    if item.key in HOST_FAULT_FACTS:
        return bool(item.value) and item.value not in (0, "0", "false")
    if item.key == "kernel.xid":
        category = item.attr("category")
        return category is None or category == Category.HARDWARE.value
    if item.key == "gpu.ecc_uncorrected":
        return (
            isinstance(item.value, int | float)
            and not isinstance(item.value, bool)
            and (item.value > 0)
        )
    if item.key in GPU_FAULT_FACTS:
        return item.value not in (False, 0, "0", "false", "")
    return False


def _gpu_from(values: dict[str, str], text: str, host: str | None) -> GpuRef | None:
    pci_raw = _first(values, _PCI_KEYS)
    uuid = _first(values, _UUID_KEYS)
    if pci_raw is None:
        found = _PCI.search(text)
        pci_raw = (found.group(1) or found.group(2)) if found else None
    if uuid is None:
        found_uuid = _UUID.search(text)
        uuid = found_uuid.group(0) if found_uuid else None
    pci = normalize_pci(pci_raw) if pci_raw else None
    serial = _first(values, _SERIAL_KEYS)
    if not (pci or uuid or serial):
        return None
    return GpuRef(host=host, pci=pci, uuid=uuid, serial=serial)


def _strings(attrs: Iterable[tuple[str, FactValue]]) -> dict[str, str]:
    return {key: str(value) for key, value in attrs if value is not None}


def job_hosts(analyses: Sequence[InputAnalysis]) -> list[str]:
    """Every host name a job's hits and facts mention, in first-seen order."""
    seen: dict[str, None] = {}
    for analysis in analyses:
        for hit in analysis.hits:
            if hit.host:
                seen.setdefault(hit.host, None)
        for item in analysis.facts:
            host = item.attr("host")
            if host:
                seen.setdefault(str(host), None)
    return list(seen)


def failure_host(analyses: Sequence[InputAnalysis]) -> str | None:
    """The host of the rank torchelastic names as the first failure, when it says."""
    for analysis in analyses:
        for item in analysis.facts:
            if item.key == "launcher.first_failure" and item.attr("host"):
                return str(item.attr("host"))
    return None


def implicated(analyses: Sequence[InputAnalysis]) -> Implicated:
    """The hosts and GPUs one job implicates in hardware faults."""
    hosts_seen = job_hosts(analyses)
    fallback = hosts_seen[0] if len(hosts_seen) == 1 else failure_host(analyses)
    hosts: dict[str, None] = {}
    gpus: list[GpuRef] = []

    def note(host: str | None, gpu: GpuRef | None) -> None:
        host = host or fallback
        if host:
            hosts.setdefault(host, None)
        if gpu is not None:
            gpu.host = gpu.host or host
            gpus.append(gpu)

    for analysis in analyses:
        for hit in analysis.hits:
            if hit.category is Category.HARDWARE and hit.role is not Role.CONTEXT:
                note(hit.host, _gpu_from(dict(hit.captures), hit.text, hit.host))
        for item in analysis.facts:
            if not _is_fault(item):
                continue
            host_attr = item.attr("host")
            host = str(host_attr) if host_attr else None
            gpu = None
            if item.key not in HOST_FAULT_FACTS:
                gpu = _gpu_from(_strings(item.attrs), item.text, host)
            note(host, gpu)
    return Implicated(hosts=tuple(hosts), gpus=tuple(g.as_dict() for g in _merge(gpus)))


def _merge(gpus: list[GpuRef]) -> list[GpuRef]:
    """One GpuRef per physical GPU of a job: refs sharing a UUID, serial or bus id merge."""
    merged: list[GpuRef] = []
    for gpu in gpus:
        for other in merged:
            if (
                (gpu.uuid and gpu.uuid == other.uuid)
                or (gpu.serial and gpu.serial == other.serial)
                or (gpu.pci and gpu.pci == other.pci and (gpu.host or None) == (other.host or None))
            ):
                other.uuid = other.uuid or gpu.uuid
                other.serial = other.serial or gpu.serial
                other.pci = other.pci or gpu.pci
                other.host = other.host or gpu.host
                break
        else:
            merged.append(GpuRef(gpu.host, gpu.pci, gpu.uuid, gpu.serial))
    return merged


# --- across jobs ----------------------------------------------------------------------------


@dataclass(slots=True)
class _Seen:
    jobs: int = 0
    first: float | None = None
    last: float | None = None
    examples: list[str] = field(default_factory=list)
    verdicts: dict[str, int] = field(default_factory=dict)
    labels: dict[str, int] = field(default_factory=dict)

    def add(self, job: str, when: float | None, verdict: str | None) -> None:
        self.jobs += 1
        if when is not None:
            self.first = when if self.first is None else min(self.first, when)
            self.last = when if self.last is None else max(self.last, when)
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(job)
        key = verdict or "unreadable"
        self.verdicts[key] = self.verdicts.get(key, 0) + 1


class HotspotTracker:
    """Counts, across jobs, how often each host and GPU is implicated in hardware faults."""

    def __init__(self) -> None:
        self._hosts: dict[str, _Seen] = {}
        self._parent: dict[str, str] = {}
        self._gpu_jobs: dict[str, list[tuple[str, float | None, str | None, str]]] = {}

    def _find(self, alias: str) -> str:
        root = self._parent.setdefault(alias, alias)
        while root != self._parent[root]:
            root = self._parent[root]
        while alias != root:  # path compression
            self._parent[alias], alias = root, self._parent[alias]
        return root

    def _union(self, first: str, second: str) -> None:
        a, b = self._find(first), self._find(second)
        if a != b:
            self._parent[b] = a

    def add(
        self,
        job: str,
        when: float | None,
        verdict: str | None,
        hosts: Iterable[str],
        gpus: Iterable[dict[str, Any]],
    ) -> None:
        """Record one job's implicated hosts and GPUs (GpuRef.as_dict() records)."""
        for host in dict.fromkeys(hosts):
            self._hosts.setdefault(host, _Seen()).add(job, when, verdict)
        for gpu in gpus:
            ref = GpuRef(gpu.get("host"), gpu.get("pci"), gpu.get("uuid"), gpu.get("serial"))
            aliases = ref.aliases()
            if not aliases:
                continue  # a bus id on an unknown host cannot be matched across jobs
            self._find(aliases[0])
            for alias in aliases[1:]:
                self._union(aliases[0], alias)
            self._gpu_jobs.setdefault(aliases[0], []).append((job, when, verdict, ref.label))

    def hosts(self, min_jobs: int = 2) -> list[dict[str, Any]]:
        """Hosts implicated in at least `min_jobs` jobs, most implicated first."""
        rows = [_row(host, seen) for host, seen in self._hosts.items() if seen.jobs >= min_jobs]
        return _ranked(rows)

    def gpus(self, min_jobs: int = 2) -> list[dict[str, Any]]:
        """GPUs implicated in at least `min_jobs` jobs (aliases merged), most implicated first."""
        members: dict[str, set[str]] = {}
        for alias in self._parent:
            members.setdefault(self._find(alias), set()).add(alias)
        groups: dict[str, tuple[_Seen, set[str]]] = {}
        for alias, records in self._gpu_jobs.items():
            seen, jobs = groups.setdefault(self._find(alias), (_Seen(), set()))
            for job, when, verdict, label in records:
                seen.labels[label] = seen.labels.get(label, 0) + 1
                if job not in jobs:
                    jobs.add(job)
                    seen.add(job, when, verdict)
        rows = []
        for root, (seen, _jobs) in groups.items():
            if seen.jobs >= min_jobs:
                row = _row(_best_label(seen.labels), seen)
                row["ids"] = sorted(members[root])
                rows.append(row)
        return _ranked(rows)


def _best_label(labels: dict[str, int]) -> str:
    """Prefer a `host/bus` label (what an operator drains), then the most frequent."""
    return max(labels, key=lambda label: ("/" in label and "?" not in label, labels[label], label))


def _row(name: str, seen: _Seen) -> dict[str, Any]:
    return {
        "id": name,
        "jobs": seen.jobs,
        "first_seen": seen.first,
        "last_seen": seen.last,
        "verdicts": dict(sorted(seen.verdicts.items(), key=lambda kv: (-kv[1], kv[0]))),
        "examples": list(seen.examples),
    }


def _ranked(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows.sort(key=lambda row: (-row["jobs"], -(row["last_seen"] or 0.0), row["id"]))
    return rows
