"""The per-GPU record every nvidia-smi format is read into, and how it becomes facts.

Each format's reader fills `Gpu` and `GpuProcess` records, keeping for every value the line it
was read from; `FactEmitter` turns them into facts the same way for all of them, so rules see
one vocabulary whatever command the user ran.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from crashlens.model import Fact, FactValue
from crashlens.parsers.base import fact

INT_RE = re.compile(r"^-?\d+$")
"""A cell that is a plain integer (no unit, no decimals)."""

_ERR_SENTINELS = {
    "err!": "ERR!",
    "[err!]": "ERR!",
    "unknown error": "Unknown Error",
    "[unknown error]": "Unknown Error",
    "gpu requires reset": "GPU requires reset",
    "[gpu requires reset]": "GPU requires reset",
}
"""Cell values that mean NVML could not read the field (hardware or a lost GPU), by lower case."""


def error_sentinel(value: str | None) -> str | None:
    """The canonical error sentinel a cell shows (`ERR!`...), or None."""
    if value is None:
        return None
    return _ERR_SENTINELS.get(value.strip().lower())


Located = tuple[FactValue, int | None, str | None]
"""A value with the line number and line text it was read from."""

ErrField = tuple[str, str, str, int | None, str | None]
"""A field showing an error sentinel: (canonical field, label, sentinel, lineno, text)."""


@dataclass
class GpuProcess:
    """One process holding GPU memory."""

    name: str
    pid: int | None
    lineno: int | None = None
    text: str | None = None
    used_mib: int | None = None
    used_text: str | None = None
    ptype: str | None = None
    gi: str | None = None
    ci: str | None = None
    index: int | None = None
    pci: str | None = None
    uuid: str | None = None
    share_percent: float | None = None
    """Its memory as a share of its GPU's total (0..100), when both are known."""


@dataclass
class Gpu:
    """What one input says about one GPU; every field keeps where it was read."""

    index: int | None = None
    pci: str | None = None
    uuid: str | None = None
    serial: str | None = None
    name: Located | None = None
    mem_used: Located | None = None
    mem_total: int | None = None
    mig_mode: Located | None = None
    ecc: dict[str, Located] = field(default_factory=dict)
    """Uncorrected ECC errors by scope (volatile, aggregate)."""
    ecc_corrected: dict[str, Located] = field(default_factory=dict)
    """Corrected ECC errors by scope (volatile, aggregate)."""
    flags: dict[str, Located] = field(default_factory=dict)
    """Bool/int/str facts by key suffix: retired_pages_pending, remapping_failure,
    reset_required, recovery_action, fabric_state..."""
    clock_events: list[Located] = field(default_factory=list)
    """The clock event (throttle) reasons shown `Active`, by canonical name (`hw_slowdown`...)."""
    errs: list[ErrField] = field(default_factory=list)
    processes: list[GpuProcess] = field(default_factory=list)


class FactEmitter:
    """The facts and warnings of one input, and the one way GPU records become facts."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.facts: list[Fact] = []
        self.warnings: list[str] = []

    def add(
        self,
        key: str,
        value: FactValue,
        lineno: int | None = None,
        text: str | None = None,
        **attrs: FactValue | None,
    ) -> None:
        """Add one fact (text defaults to `key = value`)."""
        self.facts.append(fact(key, value, self.path, lineno, text, **attrs))

    def gpu(self, gpu: Gpu) -> None:
        """Emit every fact known about one GPU."""
        ident: dict[str, FactValue | None] = {"index": gpu.index, "pci": gpu.pci}
        if gpu.name is not None:
            value, lineno, text = gpu.name
            self.add("gpu.name", value, lineno, text, **ident, uuid=gpu.uuid, serial=gpu.serial)
        if gpu.mem_used is not None:
            used, lineno, text = gpu.mem_used
            self.add("gpu.memory_used_mib", used, lineno, text, **ident, total_mib=gpu.mem_total)
            if gpu.mem_total and isinstance(used, int):
                percent = round(100.0 * used / gpu.mem_total, 2)
                self.add("gpu.memory_used_percent", percent, lineno, text, **ident)
        if gpu.mig_mode is not None:
            self.add("gpu.mig_mode", gpu.mig_mode[0], gpu.mig_mode[1], gpu.mig_mode[2], **ident)
        for scope, (count, lineno, text) in gpu.ecc.items():
            self.add("gpu.ecc_uncorrected", count, lineno, text, **ident, scope=scope)
        for scope, (count, lineno, text) in gpu.ecc_corrected.items():
            self.add("gpu.ecc_corrected", count, lineno, text, **ident, scope=scope)
        for reason, lineno, text in gpu.clock_events:
            self.add("gpu.clocks_event", reason, lineno, text, **ident)
        for suffix, (value, lineno, text) in gpu.flags.items():
            self.add(f"gpu.{suffix}", value, lineno, text, **ident)
        for name, label, shown, lineno, text in gpu.errs:
            self.add("gpu.err_field", name, lineno, text, **ident, label=label, sentinel=shown)
        for proc in gpu.processes:
            proc.index = gpu.index if proc.index is None else proc.index
            proc.pci = proc.pci or gpu.pci
            proc.uuid = proc.uuid or gpu.uuid
            if gpu.mem_total and proc.used_mib is not None and proc.share_percent is None:
                proc.share_percent = round(100.0 * proc.used_mib / gpu.mem_total, 1)
            self.process(proc)

    def process(self, proc: GpuProcess) -> None:
        """Emit one `gpu.process` fact."""
        self.add(
            "gpu.process",
            proc.name,
            proc.lineno,
            proc.text,
            pid=proc.pid,
            index=proc.index,
            pci=proc.pci,
            uuid=proc.uuid,
            used_mib=proc.used_mib,
            used_text=proc.used_text,
            type=proc.ptype,
            gi=proc.gi,
            ci=proc.ci,
            share_percent=proc.share_percent,
        )


CLOCK_EVENT_REASONS = {
    "idle": "idle",
    "gpu_idle": "idle",
    "applications_clocks_setting": "applications_clocks_setting",
    "sw_power_cap": "sw_power_cap",
    "hw_slowdown": "hw_slowdown",
    "hw_thermal_slowdown": "hw_thermal_slowdown",
    "hw_power_brake_slowdown": "hw_power_brake_slowdown",
    "sync_boost": "sync_boost",
    "sw_thermal_slowdown": "sw_thermal_slowdown",
    "display_clock_setting": "display_clock_setting",
    "display_clocks_setting": "display_clock_setting",
}
"""Clock event (throttle) reasons as -q labels (spaces made `_`) and XML tag suffixes print
them -> one canonical name. Unknown labels (a mangled dump's `Invalid HW Slowdown`) are not
reasons."""


def clock_event_reason(label: str) -> str | None:
    """The canonical reason for a -q label or XML tag suffix, or None."""
    return CLOCK_EVENT_REASONS.get(label.strip().lower().replace(" ", "_"))


def add_count(
    counts: dict[str, Located], scope: str, count: int, lineno: int | None, line: str | None
) -> None:
    """Add one counter to a per-scope sum, citing the first line with a non-zero count."""
    previous = counts.get(scope)
    if previous is None:
        counts[scope] = (count, lineno, line)
        return
    keep_new = int(previous[0]) == 0 and count > 0
    total = int(previous[0]) + count
    counts[scope] = (total, lineno if keep_new else previous[1], line if keep_new else previous[2])
