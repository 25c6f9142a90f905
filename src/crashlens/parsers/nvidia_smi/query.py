"""`nvidia-smi -q`: an indentation tree, 4 spaces a level, one block per GPU.

Keys are matched by their lower-case label path (`fb memory usage.used`), so a mis-indented
line (seen in real dumps) still lands in the nearest section above it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from crashlens.model import FactValue
from crashlens.parsers.nvidia_smi.gpu import (
    INT_RE,
    FactEmitter,
    Gpu,
    GpuProcess,
    add_count,
    clock_event_reason,
    error_sentinel,
)
from crashlens.text.ids import normalize_pci
from crashlens.text.values import bounded_int, int_with_unit, yes_no

_Q_GPU_RE = re.compile(r"^GPU\s+(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])")
_Q_FIELDS = {
    "fan speed": "fan.speed",
    "performance state": "pstate",
    "fb memory usage.used": "memory.used",
    "fb memory usage.total": "memory.total",
    "temperature.gpu current temp": "temperature.gpu",
    "power readings.power draw": "power.draw",
    "gpu power readings.power draw": "power.draw",
    "gpu power readings.instantaneous power draw": "power.draw",
    "gpu power readings.average power draw": "power.draw.average",
    "utilization.gpu": "utilization.gpu",
    "product name": "name",
}
"""-q label paths (lower case) -> the `--query-gpu` field name used in `gpu.err_field`."""


_Q_TOP_KEYS = {
    "driver version": "nvidia_smi.driver_version",
    "kmd version": "nvidia_smi.driver_version",
    "cuda version": "nvidia_smi.cuda_version",
    "cuda umd version": "nvidia_smi.cuda_version",
}


@dataclass
class _QueryState:
    """The -q reader: the section stack and the GPU block being read."""

    stack: list[tuple[int, str]] = field(default_factory=list)
    gpu: Gpu | None = None
    gpus: list[Gpu] = field(default_factory=list)
    pending_ids: dict[str, str] = field(default_factory=dict)
    attached: tuple[int, int, str] | None = None
    versions: set[str] = field(default_factory=set)
    """Version keys already emitted (`Driver Version` wins over the later `KMD Version`)."""


def _q_split(line: str) -> tuple[int, str, str | None]:
    """(indent, key, value or None) of one -q line; keys can carry trailing spaces."""
    expanded = line.replace("\t", "    ") if "\t" in line else line
    body = expanded.lstrip(" ")
    indent = len(expanded) - len(body)
    key, colon, value = body.partition(":")
    if not colon:
        return indent, body.strip(), None
    return indent, key.strip(), value.strip()


def _q_ecc(gpu: Gpu, path: list[str], value: str, lineno: int, line: str) -> None:
    """One ECC counter or flag.

    Counters: `*uncorrectable*` / `*correctable*` (A100+: SRAM/DRAM, 590 splits SRAM into
    Parity and SEC-DED) or `Double Bit/Total` / `Single Bit/Total` (older), summed per scope.
    Flags (590+): `Aggregate/SRAM Threshold Exceeded`, `Channel Repair Pending`, `TPC Repair
    Pending`, `Unrepairable Memory`.
    """
    flag = _ECC_FLAGS.get(path[-1])
    if flag is not None and (parsed := yes_no(value)) is not None:
        gpu.flags[flag] = (parsed, lineno, line)
        return
    if len(path) < 3 or path[1] not in ("volatile", "aggregate"):
        return
    count = int_with_unit(value)
    if count is None:
        return
    label = path[2] if len(path) == 3 else ""
    if "uncorrectable" in label or path[2:] == ["double bit", "total"]:
        add_count(gpu.ecc, path[1], count, lineno, line)
    elif "correctable" in label or path[2:] == ["single bit", "total"]:
        add_count(gpu.ecc_corrected, path[1], count, lineno, line)


_ECC_FLAGS = {
    "sram threshold exceeded": "sram_threshold_exceeded",
    "channel repair pending": "channel_repair_pending",
    "tpc repair pending": "tpc_repair_pending",
    "unrepairable memory": "unrepairable_memory",
}
"""ECC flags (`Yes`/`No`) by -q label -> fact key suffix."""


def _q_flag(gpu: Gpu, path: list[str], value: str, lineno: int, line: str) -> None:
    """Retired pages, remapped rows and reset status fields."""
    section, key = path[0], path[-1]
    found: tuple[str, FactValue | None] | None = None
    if section == "retired pages" and len(path) == 2 and key.startswith("pending"):
        found = ("retired_pages_pending", yes_no(value))
    elif section == "retired pages" and key == "double bit ecc":
        found = ("retired_pages_dbe", int_with_unit(value))
    elif section == "retired pages" and key == "single bit ecc":
        found = ("retired_pages_sbe", int_with_unit(value))
    elif section == "remapped rows" and key == "pending":
        found = ("remapped_rows_pending", yes_no(value))
    elif section == "remapped rows" and key.startswith("remapping failure"):
        found = ("remapping_failure", yes_no(value))
    elif section == "remapped rows" and key == "uncorrectable error":
        found = ("remapped_rows_uncorrectable", int_with_unit(value))
    elif section == "remapped rows" and key == "correctable error":
        found = ("remapped_rows_correctable", int_with_unit(value))
    elif section == "gpu reset status" and key == "reset required":
        found = ("reset_required", yes_no(value))
    elif section == "gpu reset status" and key == "drain and reset recommended":
        found = ("drain_and_reset_recommended", yes_no(value))
    elif path == ["gpu recovery action"]:
        found = ("recovery_action", _known(value))
    elif section == "fabric" and len(path) == 2 and key in ("state", "status"):
        found = (f"fabric_{key}", _known(value))
    if found is None:
        return
    suffix, parsed = found
    if parsed is None:
        return
    previous = gpu.flags.get(suffix)
    # Several keys can feed one flag (Pending Page Blacklist / Pending Page Retirement): any
    # `Yes` wins.
    if previous is None or (parsed is True and previous[0] is not True):
        gpu.flags[suffix] = (parsed, lineno, line)


def _known(value: str) -> str | None:
    """A field's text, or None when nvidia-smi says it does not apply (`N/A`, deprecated)."""
    text = value.strip()
    if not text or text == "N/A" or text.startswith(("Requested functionality", "[N/A]")):
        return None
    return text


def _q_clock_event(gpu: Gpu, path: list[str], value: str, lineno: int, line: str) -> None:
    """`Clocks Event Reasons` (`Clocks Throttle Reasons` before 535): the `Active` ones."""
    reason = clock_event_reason(path[-1])
    if reason is not None and value.strip() == "Active":
        gpu.clock_events.append((reason, lineno, line))


def _q_process(
    state: _QueryState, gpu: Gpu, path: list[str], value: str, ln: int, line: str
) -> None:
    """Fields of the `Processes` section; `Process ID` starts a record."""
    key = path[-1]
    if len(path) == 2 and key in ("gpu instance id", "compute instance id"):
        state.pending_ids[key] = value
    elif len(path) == 2 and key == "process id":
        gpu.processes.append(
            GpuProcess(
                name="",
                pid=int_with_unit(value),
                lineno=ln,
                text=line,
                gi=state.pending_ids.pop("gpu instance id", None),
                ci=state.pending_ids.pop("compute instance id", None),
            )
        )
    elif gpu.processes and len(path) == 3:
        proc = gpu.processes[-1]
        if key == "name":
            proc.name = value
        elif key == "type":
            proc.ptype = value
        elif key == "used gpu memory":
            proc.used_mib = int_with_unit(value)
            proc.used_text = None if proc.used_mib is not None else value


_CLOCK_EVENT_SECTIONS = ("clocks event reasons", "clocks throttle reasons")
"""The section's -q label since driver 535, and before it."""

_Q_READ_SECTIONS = frozenset(
    {
        "product name",
        "serial number",
        "gpu uuid",
        "pci",
        "fb memory usage",
        "mig mode",
        "ecc errors",
        "processes",
        "retired pages",
        "remapped rows",
        "gpu reset status",
        "gpu recovery action",
        "fabric",
        *_CLOCK_EVENT_SECTIONS,
    }
)
"""The -q sections (first path element) `_q_field` reads beyond error sentinels."""


def _q_field(state: _QueryState, path: list[str], value: str, lineno: int, line: str) -> None:
    """One `Key : Value` inside a GPU block."""
    gpu = state.gpu
    if gpu is None:
        return
    sentinel = error_sentinel(value)
    if not sentinel and path[0] not in _Q_READ_SECTIONS:
        return  # clocks, power, temperatures...: only an error sentinel there matters
    joined = ".".join(path)
    if sentinel:
        label = " / ".join(path)
        gpu.errs.append((_Q_FIELDS.get(joined, joined), label, sentinel, lineno, line))
    if joined == "product name":
        gpu.name = (value, lineno, line)
    elif joined == "serial number" and value not in ("N/A", ""):
        gpu.serial = value
    elif joined == "gpu uuid":
        gpu.uuid = value
    elif joined == "pci.bus id":
        gpu.pci = normalize_pci(value) or gpu.pci
    elif joined == "fb memory usage.used" and (used := int_with_unit(value)) is not None:
        gpu.mem_used = (used, lineno, line)
    elif joined == "fb memory usage.total":
        gpu.mem_total = int_with_unit(value)
    elif joined == "mig mode.current" and value in ("Enabled", "Disabled"):
        gpu.mig_mode = (value, lineno, line)
    elif path[0] == "ecc errors":
        _q_ecc(gpu, path, value, lineno, line)
    elif path[0] == "processes":
        _q_process(state, gpu, path, value, lineno, line)
    elif path[0] in _CLOCK_EVENT_SECTIONS:
        _q_clock_event(gpu, path, value, lineno, line)
    else:
        _q_flag(gpu, path, value, lineno, line)


def _q_line(state: _QueryState, lineno: int, line: str, out: FactEmitter) -> None:
    """Advance the -q reader by one line."""
    if not line.strip() or "NVSMI LOG" in line:
        return
    indent, key, value = _q_split(line)
    header = _Q_GPU_RE.match(line) if indent == 0 else None
    if header:
        state.gpu = Gpu(index=len(state.gpus), pci=normalize_pci(header.group("bus")))
        state.gpus.append(state.gpu)
        state.stack, state.pending_ids = [], {}
        return
    lowered = key.lower()
    if indent == 0 and value is not None:
        _q_top(state, lowered, value, lineno, line, out)
        return
    # A mis-indented key joins the nearest previous section with a smaller indent.
    while state.stack and state.stack[-1][0] >= indent:
        state.stack.pop()
    path = [k for _, k in state.stack] + [lowered]
    state.stack.append((indent, lowered))
    if value is not None:
        _q_field(state, path, value, lineno, line)


def _q_top(
    state: _QueryState, key: str, value: str, lineno: int, line: str, out: FactEmitter
) -> None:
    """Top-level keys before the GPU blocks."""
    # 610+ appends `[Deprecated; ... Use KMD Version instead]`; keep the version only.
    value = value.split(" [", 1)[0].strip()
    target = _Q_TOP_KEYS.get(key)
    if target is not None and target not in state.versions:
        state.versions.add(target)
        label = "KMD" if key == "kmd version" else None
        out.add(target, value, lineno, line, label=label)
    elif key == "attached gpus" and INT_RE.match(value):
        count = bounded_int(value)
        if count is not None:
            state.attached = (count, lineno, line)


_EXCERPT_SECTIONS = frozenset(
    {"ecc errors", "retired pages", "remapped rows", "gpu reset status", *_CLOCK_EVENT_SECTIONS}
)
"""The health sections of a GPU block that a user pastes alone (`nvidia-smi -q -d ECC`,
`-d ROW_REMAPPER`, `-d PAGE_RETIREMENT`, or a piece of a longer dump in an issue)."""
_EXCERPT_TOP = 8
"""Non-blank lines before the section a pasted excerpt may hold (a prompt, a command)."""
_KEY_VALUE_RE = re.compile(r"^[ \t]*[A-Za-z][^:\n]{0,60}?[ \t]*: [^\n]")


def section_excerpt(lines: list[str]) -> bool:
    """Whether lines hold one of `_EXCERPT_SECTIONS` alone on its line, with a `Key : Value`
    line among the three after it (`ECC Errors`, then `Volatile`, then its counters): a GPU
    block's health section pasted without its `GPU 0000...` header."""
    for at, line in enumerate(lines):
        if line.strip().lower() in _EXCERPT_SECTIONS and ":" not in line:
            return any(_KEY_VALUE_RE.match(after) for after in lines[at + 1 : at + 4])
    return False


def _excerpt_start(lines: list[tuple[int, str]]) -> int | None:
    """The line number of the health section a banner-less, header-less excerpt opens with
    (`section_excerpt`), or None (a whole dump, or no such section)."""
    if any("NVSMI LOG" in line or _Q_GPU_RE.match(line) for _, line in lines):
        return None
    shown = [(lineno, line) for lineno, line in lines if line.strip()][:_EXCERPT_TOP]
    if not section_excerpt([line for _, line in shown]):
        return None
    return next(n for n, line in shown if line.strip().lower() in _EXCERPT_SECTIONS)


def parse_query(lines: list[tuple[int, str]], out: FactEmitter) -> None:
    """`nvidia-smi -q`: an indentation tree, 4 spaces a level, one block per GPU. A health
    section pasted alone (`section_excerpt`) is read as the block of one GPU whose address it
    does not show."""
    state = _QueryState()
    started = False
    excerpt_at = _excerpt_start(lines)
    if excerpt_at is not None:
        started = True
        state.gpu = Gpu(index=0)
        state.gpus.append(state.gpu)
    # Most of a dump is sections nothing reads (clocks, power, temperatures): their lines are
    # set aside unparsed, and parsed after all only if an error sentinel shows up there (its
    # label needs the section path). Leaving the section drops them: they could only have
    # been stack entries below it, which leaving pops anyway.
    unread_below: int | None = None
    set_aside: list[tuple[int, str]] = []
    for lineno, line in lines:
        # A pasted tail may lack the banner: the first `GPU 0000...` block header also starts.
        started = started or "NVSMI LOG" in line or bool(_Q_GPU_RE.match(line))
        if not started or (excerpt_at is not None and lineno < excerpt_at):
            continue
        if unread_below is not None and line.strip() and "\t" not in line:
            if len(line) - len(line.lstrip(" ")) <= unread_below:
                unread_below = None
                set_aside.clear()
            else:
                lowered = line.lower()
                if "err" not in lowered and "reset" not in lowered:  # no sentinel possible
                    set_aside.append((lineno, line))
                    continue
        for held_lineno, held in set_aside:
            _q_line(state, held_lineno, held, out)
        set_aside.clear()
        _q_line(state, lineno, line, out)
        stack = state.stack
        if state.gpu is not None and len(stack) == 1 and stack[0][1] not in _Q_READ_SECTIONS:
            unread_below = stack[0][0]
    if state.attached is not None:
        count, lineno, text = state.attached
        out.add("nvidia_smi.gpu_count", count, lineno, text, source="attached")
        if len(state.gpus) < count:
            out.warnings.append(
                f"nvidia-smi -q lists {len(state.gpus)} of {count} attached GPUs: truncated?"
            )
    elif state.gpus:
        out.add("nvidia_smi.gpu_count", len(state.gpus), source="blocks")
    for gpu in state.gpus:
        gpu.processes = [p for p in gpu.processes if p.name or p.pid is not None]
        out.gpu(gpu)


def looks_like_query(lines: list[str]) -> bool:
    """A `-q` block without its banner: `GPU 0000...` at column 0, then `    Product Name`."""
    header = False
    for line in lines:
        if _Q_GPU_RE.match(line):
            header = True
        elif header and line.strip().startswith(("Product Name", "Product Brand")):
            return True
    return False
