"""Kernel logs: dmesg (raw, -T, iso, --decode, -r), journalctl -k, kern.log, /dev/kmsg, pstore.

`split_line` removes whichever prefix the line has and returns the kernel message, the host
(syslog/journal styles) and a timestamp in seconds: epoch seconds for wall-clock styles, seconds
since boot for raw `[ 1234.5]` / kmsg styles. Syslog styles carry no year; they are read as year
`SYSLOG_YEAR` (2000, a leap year) so that lines still order correctly. `dmesg -T` times have no
zone and are read as UTC; localized month names (French, German, Spanish, Italian, Portuguese)
are understood. Runs of 40+ spaces inside a line (a terminal-wrapped copy/paste) are removed.

The collector keeps bounded state: one entry per distinct event (an Xid code on one GPU, an OOM
victim, a device with I/O errors...) with a `count` attribute, at most `MAX_ENTRIES` entries.
Every fact also carries `count` (how many lines reported it), `host` and `timestamp` (seconds, as
above) when known. PCI ids are normalized as the nvidia-smi parser does (`DDDD:BB:DD.F`, upper
case, function `.0` when the driver omits it): `PCI:0000:3b:00` and `00000000:3B:00.0` both read
`0000:3B:00.0`, so facts of both inputs join on `pci`.

Fact keys:

- `kernel.xid`: int Xid code, one per (code, GPU); attrs pci, pid, process (the first ones known),
  message (driver text), meaning, action, bucket, category, severity, name (from
  `patterns/tables/xid.toml`; meaning says so for codes it does not list), caused_by (Xid 45
  "caused by previous Xid N"), nvlink_fatal (bool, NVLink5 Xids 144-150), uuid, serial (from the
  `NVRM: GPU at PCI:...: GPU-<uuid>` / `GPU Board Serial Number` lines).
- `kernel.gpu_off_bus`: True, one per GPU (Xid 79 or the textual "fallen off the bus"); attrs pci.
- `kernel.oom_kill`: str victim command name; attrs pid, anon_rss_kb, total_vm_kb, file_rss_kb,
  shmem_rss_kb, memcg (bool: a cgroup limit, not the whole host), cgroup, constraint,
  memcg_limit_kb (from `memory: usage ..., limit ...`), score (legacy kernels),
  from_summary (True when only the `oom-kill:` summary line survived).
- `kernel.mce`: str summary of a machine check (mce) or APEI/GHES hardware error; attrs source
  (mce|ghes|panic), cpu, bank, severity, section_type.
- `kernel.edac`: str `N CE|UE memory read error ...`; attrs kind (CE|UE), mc, location.
- `kernel.aer`: str `<severity> error[: error names]`; attrs severity (as printed: Corrected,
  Uncorrected (Non-Fatal), Uncorrected (Fatal)), pci (reporting port), type, errors.
- `kernel.pcie_link_down`: str slot; attrs pci (pciehp "Link Down", often right before Xid 79).
- `kernel.fs_error`: str message; attrs device, fs (ext4|ext3|xfs|lustre).
- `kernel.fs_warning`: str message; attrs device, fs (e.g. ext4 "index full").
- `kernel.fs_readonly`: str device; attrs fs.
- `kernel.io_error`: str device (block device, nvme controller, or NFS server); attrs kind
  (I/O, buffer, nvme timeout, nfs not responding, ...), sector, fs (nfs).
- `kernel.segfault`: str process; attrs pid, lib, kind (segfault | general protection fault |
  trap invalid opcode ...), address, error.
- `kernel.nvrm_mismatch`: str `client X, kernel module Y`; attrs client_version, module_version.
- `kernel.nvrm_init_failed`: str message; attrs pci, code (`0x22:0x56:884`).
- `kernel.nvrm_probe_failed`: str message ("probe routine was not called", "No NVIDIA devices
  probed").
- `kernel.hung_task`: str process; attrs pid, seconds.
- `kernel.panic`: str reason after `Kernel panic - not syncing:`.
- `kernel.oops`: str the oops line (NULL dereference, `Oops:`, divide error, kernel BUG).
- `kernel.fatal_signal`: int signal (print-fatal-signals); attrs process, pid.
- `kernel.file_max`: int the `VFS: file-max limit N reached` limit.
- `kernel.unregister_netdevice`: str device still referenced.
- `kernel.sxid`: int NVSwitch SXid; attrs pci, switch, message.
- `kernel.dropped_entries`: int, only when more than `MAX_ENTRIES` distinct events were seen.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, field
from typing import ClassVar

from crashlens.model import Clock, Fact, FactValue, InputKind, Line
from crashlens.parsers.base import LogCollector, LogParser, Split, fact
from crashlens.parsers.dmesg.xid import lookup
from crashlens.text.ids import pci_label

SYSLOG_YEAR = 2000
"""Year given to syslog/journal timestamps that print none (leap year: Feb 29 still parses)."""
MAX_ENTRIES = 2000
"""Distinct events kept per input; more are counted in `kernel.dropped_entries`."""
_MESSAGE_CHARS = 300
_PENDING_LINES = 8
"""How far (in lines) a pending multi-line record may be completed by a later line."""

# --- prefixes -----------------------------------------------------------------------------

_DECODE = re.compile(r"^[a-z]+ *:[a-z]+ *: ")
_KMSG = re.compile(r"^\d{1,3},\d+,(\d+),[^;\n]{0,8};")
_PRIO = re.compile(r"^<\d{1,3}>(?=\[)")
_MONO = re.compile(r"^\[ *(\d+\.\d+)\] ?")
_CTIME = re.compile(r"^\[([^\]\s]+) +([^\]\s]+) +(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})\] ?")
_ISO_DMESG = re.compile(
    r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d),(\d{1,9})([+-]\d\d:?\d\d|Z)? "
)
_SYSLOG = re.compile(
    r"^([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d)(\.\d+)? (\S+) ([^\s:\[]+)(?:\[\d+\])?: ?"
)
_JOURNAL_ISO = re.compile(
    r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?([+-]\d\d:?\d\d|Z)? (\S+) "
    r"([^\s:\[]+)(?:\[\d+\])?: ?"
)
_WRAP_GAP = re.compile(r"(?<=\S) {40,}(?=\S)")

_MONTHS = {
    # English, then the other locales dmesg -T prints in (keys: lower case, dots removed).
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8,
    "sep": 9, "oct": 10, "nov": 11, "dec": 12,
    "janv": 1, "févr": 2, "fevr": 2, "mars": 3, "avr": 4, "mai": 5, "juin": 6, "juil": 7,
    "août": 8, "aout": 8, "sept": 9, "déc": 12,
    "jän": 1, "mär": 3, "mrz": 3, "okt": 10, "dez": 12,
    "ene": 1, "abr": 4, "ago": 8, "dic": 12,
    "gen": 1, "mag": 5, "giu": 6, "lug": 7, "set": 9, "ott": 10,
    "fev": 2, "out": 10,
}  # fmt: skip


def _month(token: str) -> int | None:
    return _MONTHS.get(token.lower().rstrip("."))


def _epoch(year: int, month: int, day: int, hms: tuple[str, str, str]) -> float | None:
    try:
        return float(calendar.timegm((year, month, day, int(hms[0]), int(hms[1]), int(hms[2]))))
    except (ValueError, OverflowError):
        return None


def _zone_seconds(zone: str | None) -> int:
    """Offset east of UTC of `+01:00` / `-0500` / `Z` / None, in seconds."""
    if not zone or zone == "Z":
        return 0
    digits = zone[1:].replace(":", "")
    seconds = int(digits[:2]) * 3600 + int(digits[2:4]) * 60
    return -seconds if zone[0] == "-" else seconds


def _iso_epoch(m: re.Match[str], fraction: str, zone: str | None) -> float | None:
    base = _epoch(int(m[1]), int(m[2]), int(m[3]), (m[4], m[5], m[6]))
    if base is None:
        return None
    return base + float(f"0.{fraction}" if fraction else 0) - _zone_seconds(zone)


def _stamped(text: str, stamp: float | None, clock: Clock, host: str | None = None) -> Split:
    """A split whose clock is set only when the prefix gave a time."""
    return Split(text=text, host=host, timestamp=stamp, clock=None if stamp is None else clock)


def _split_syslog(raw: str) -> Split | None:
    found = _SYSLOG.match(raw)
    if not found:
        return None
    month = _month(found[1])
    stamp = None
    if month is not None:
        stamp = _epoch(SYSLOG_YEAR, month, int(found[2]), (found[3], found[4], found[5]))
        if stamp is not None and found[6]:
            stamp += float(found[6])
    return _stamped(_strip_mono(raw[found.end() :]), stamp, Clock.YEARLESS, host=found[7])


def _split_journal_iso(raw: str) -> Split | None:
    found = _JOURNAL_ISO.match(raw)
    if not found:
        return None
    stamp = _iso_epoch(found, (found[7] or "")[1:], found[8])
    return _stamped(_strip_mono(raw[found.end() :]), stamp, Clock.WALL, host=found[9])


def _strip_mono(text: str) -> str:
    """kern.log keeps printk's `[  34.19]` after `kernel: `: the wall clock is the better time."""
    found = _MONO.match(text)
    return text[found.end() :] if found else text


def _split_kernel_prefix(raw: str) -> Split | None:
    """The prefixes only dmesg-like tools print (no host)."""
    found = _KMSG.match(raw)
    if found:
        return _stamped(raw[found.end() :], int(found[1]) / 1e6, Clock.BOOT)
    prio = _PRIO.match(raw)
    rest = raw[prio.end() :] if prio else raw
    found = _MONO.match(rest)
    if found:
        return _stamped(rest[found.end() :], float(found[1]), Clock.BOOT)
    found = _CTIME.match(raw)
    if found:
        month = _month(found[2])
        stamp = None
        if month is not None:
            stamp = _epoch(int(found[7]), month, int(found[3]), (found[4], found[5], found[6]))
        return _stamped(raw[found.end() :], stamp, Clock.WALL)
    found = _ISO_DMESG.match(raw)
    if found:
        return _stamped(raw[found.end() :], _iso_epoch(found, found[7], found[8]), Clock.WALL)
    return None


def _has_kernel_prefix(raw: str) -> bool:
    """Whether `_split_kernel_prefix` would split `raw` (without building the split)."""
    if _KMSG.match(raw) or _CTIME.match(raw) or _ISO_DMESG.match(raw):
        return True
    prio = _PRIO.match(raw)
    return _MONO.match(raw[prio.end() :] if prio else raw) is not None


def split_kernel_line(raw: str) -> Split:
    """Remove any kernel-log prefix from a cleaned line (see the module docstring)."""
    decoded = _DECODE.match(raw)
    if decoded:
        raw = raw[decoded.end() :]
    split = _split_kernel_prefix(raw)
    if split is None and raw[:1].isalnum():
        split = _split_syslog(raw) or _split_journal_iso(raw)
    if split is None:
        split = Split(text=raw)
    if "     " in split.text:
        text = _WRAP_GAP.sub("", split.text)
        if text != split.text:
            split = Split(text=text, host=split.host, timestamp=split.timestamp, clock=split.clock)
    return split


# --- sniffing -----------------------------------------------------------------------------

_SNIFF_HEADER = re.compile(
    r"^(?:-- (?:Logs begin at |Journal begins at |Boot [0-9a-f]{32} --|No entries --)"
    r"|(?:Panic|Oops|Emergency|Shutdown|Unknown)#\d+ Part\d+)",
    re.MULTILINE,
)
_SNIFF_KERNEL = re.compile(
    r"Call Trace:|Modules linked in:|\[Hardware Error\]|EXT[234]-fs |XFS \(|Killed process \d"
    r"|invoked oom-killer|out of memory: Kill|oom-kill:constraint=|INFO: task .+ blocked for"
    r"|unregister_netdevice: |BUG: unable to handle|Kernel panic - not syncing|NVRM: "
    r"|Oops: \d|divide error: \d|\]: segfault at |Tainted: |RIP: [0-9a-f]{4}:|EDAC MC"
    r"|pcieport [0-9a-f]{4}:|VFS: |blk_update_request|Buffer I/O error|nvidia-peermem "
)
_SNIFF_LAUNCHER = re.compile(
    r"Traceback \(most recent call last\)|torch\.distributed|\[rank\d+\]|srun: |slurmstepd"
    r"|NCCL (?:INFO|WARN)|ChildFailedError|deepspeed|accelerate launch|torchrun"
    r"|NVIDIA-SMI|\"Id\": |Filesystem +(?:1K-blocks|Size|Inodes)"
)
_SNIFF_LINES = 60
"""Lines the sniffer classifies: enough to judge the share of kernel-prefixed lines."""


def sniff_kernel_log(head: str) -> float:
    """Score that `head` is a kernel log (see `KernelLogParser.sniff`)."""
    if _SNIFF_HEADER.search(head[:4096]):
        return 0.95
    lines = [line.rstrip("\r") for line in head.split("\n")[:_SNIFF_LINES] if line.strip()]
    if not lines:
        return 0.0
    strong = syslog = kernel_ident = 0
    for line in lines:
        decoded = _DECODE.match(line)
        body = line[decoded.end() :] if decoded else line
        if _has_kernel_prefix(body):
            strong += 1
        elif _SYSLOG.match(body) or _JOURNAL_ISO.match(body):
            syslog += 1
            kernel_ident += " kernel: " in body
    total = len(lines)
    if strong / total >= 0.5:
        return 0.75 + 0.2 * strong / total
    if syslog / total >= 0.5:
        return 0.7 + 0.25 * kernel_ident / syslog
    if (strong + syslog) / total >= 0.3:
        return 0.6
    # Kernel words are counted only here: a log with kernel prefixes never needs them.
    words = sum(1 for line in lines if _SNIFF_KERNEL.search(line))
    return _sniff_bodies(head, words, total)


def _sniff_bodies(head: str, words: int, total: int) -> float:
    """Unprefixed text: kernel message bodies (node-problem-detector) or something else."""
    if not words:
        return 0.0
    if _SNIFF_LAUNCHER.search(head) and words < total / 2:
        return 0.2
    return 0.6 + 0.3 * min(1.0, words / max(3.0, total * 0.3))


# --- events -------------------------------------------------------------------------------

_XID = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f:.]+)\): (\d+)(?:, (.*))?")
_XID_PROC = re.compile(r"^pid=([^,]*), name=([^,]*)(?:, ?(.*))?$")
_XID_CAUSE = re.compile(r"caused by previous Xid (\d+)")
_NVLINK_FATAL = re.compile(r"\b(Nonfatal|Non-fatal|Fatal)\b")
_SXID = re.compile(r"(nvidia-nvswitch\d+): SXid \((?:PCI:)?([0-9A-Fa-f:.]+)\): (\d+),? ?(.*)")
_GPU_AT = re.compile(r"NVRM: GPU at PCI:([0-9A-Fa-f:.]+): (GPU-[0-9a-fA-F-]+)")
_GPU_SERIAL = re.compile(r"NVRM: GPU Board Serial Number: (\S+)")
_GPU_THE = re.compile(r"NVRM: The NVIDIA GPU ([0-9A-Fa-f:.]+)")
_OFF_BUS_PCI = re.compile(
    r"NVRM: GPU (?:at )?(?:PCI:)?([0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)"
)
_MISMATCH = re.compile(
    r"API mismatch: the client has the version (\d+(?:\.\d+)+)"
    r"(?:, but[ \tNVRM:]*this kernel module has the version (\d+(?:\.\d+)+))?"
)
_MODULE_VERSION = re.compile(r"this kernel module has the version (\d+(?:\.\d+)+)")
_INIT_FAILED = re.compile(
    r"NVRM: (?:GPU ([0-9A-Fa-f:.]+): )?(RmInitAdapter failed!?|rm_init_adapter failed)"
    r"(?: ?\(([^)\n]*)\))?"
)
_PROBE = re.compile(
    r"NVRM: (The NVIDIA probe routine was not called[^.]*|No NVIDIA devices probed)"
)
_OOM_SUMMARY = re.compile(r"oom-kill:(.*)")
_OOM_ANNOUNCE = re.compile(
    r"(Memory cgroup out of memory|Out of memory[^:]*): Kill process (\d+) \((.*?)\)"
    r"(?: score (\d+))?"
)
_OOM_KILLED = re.compile(
    r"(?:(Memory cgroup out of memory|Out of memory[^:]*): )?Killed process (\d+),? "
    r"(?:UID \d+, )?\((.*?)\)(.*)"
)
_OOM_SIZES = re.compile(r"(total-vm|anon-rss|file-rss|shmem-rss):[ \t]*(\d+)[ \t]*kB")
_MEMCG_LIMIT = re.compile(r"^memory: usage (\d+)kB, limit (\d+)kB")
_MCE_BANK = re.compile(
    r"mce: \[Hardware Error\]: CPU (\d+): Machine Check[^:]*: \S+ Bank (\d+): (\S+)"
)
_MCE_LOGGED = re.compile(r"mce: \[Hardware Error\]: Machine check events logged")
_GHES_SEVERITY = re.compile(r"\{\d+\}\[Hardware Error\]: +event severity: (\w+)")
_GHES_SECTION = re.compile(r"\{\d+\}\[Hardware Error\]: +section_type: (.+)")
_EDAC = re.compile(r"EDAC (?:\w+ )?(MC\d+): (\d+) (CE|UE) (.*?)(?: \(|$)")
_AER_RECEIVED = re.compile(
    r"(?:([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]): )?AER: (?:Multiple )?"
    r"(Corrected|Uncorrect(?:ed|able) \((?:Non-)?Fatal\)) error received"
)
_AER_BUS = re.compile(
    r"([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]): PCIe Bus Error: "
    r"severity=([^,]+), type=([^,]+)"
)
_AER_DETAIL = re.compile(
    r"([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]): +\[ ?\d+\] ([A-Za-z][A-Za-z_ ]*?)"
    r" *(?:\(First\))? *$"
)
_LINK_DOWN = re.compile(r"([0-9A-Fa-f:.]+): pciehp: Slot\((\S+?)\)(?:-\d+)?: Link Down")
_EXT_ERROR = re.compile(r"(EXT[234])-fs error \(device ([^)]+)\)(?::| in) ?(.*)")
_EXT_WARNING = re.compile(r"(EXT[234])-fs warning \(device ([^)]+)\): ?(.*)")
_EXT_IO = re.compile(r"^(\w+):\d+: I/O error (-?\d+) (writing|reading)")
_XFS = re.compile(r"XFS \(([^)]+)\): (.*)")
_XFS_BAD = re.compile(r"[Ee]rror|[Cc]orrupt|[Ss]hutting down|[Ss]hutdown")
_LUSTRE = re.compile(r"LustreError: (.*)")
_LUSTRE_TARGET = re.compile(r"\b([\w-]+-(?:OST|MDT)[0-9a-fA-F]{4})\b")
_READONLY = re.compile(
    r"(EXT[234]-fs|\w+) \(([^)]+)\): (?:Remounting filesystem read-only|.*forced readonly)"
)
_BTRFS_READONLY = re.compile(r"BTRFS \w+ \(device ([^)]+)\).*forced readonly")
_BLK_ERROR = re.compile(
    r"(I/O|critical medium|critical target|critical space allocation|critical nexus|timeout) "
    r"error, dev ([\w.-]+)(?:, sector (\d+))?"
)
_BUFFER_ERROR = re.compile(r"Buffer I/O error on dev(?:ice)? ([\w.-]+)")
_NVME_TIMEOUT = re.compile(
    r"nvme (nvme\d+): I/O (?:tag )?\d+ (?:\([0-9a-f]+\) )?(?:QID \d+ )?timeout"
)
_NFS = re.compile(r"nfs: server (\S+) not responding")
_SEGFAULT = re.compile(
    r"^(.+?)\[(\d+)\]: segfault at (\S+) ip \S+ sp \S+ error (\S+)(?: in ([^\[\s]+)\[)?"
)
_TRAP = re.compile(
    r"traps: (.+?)\[(\d+)\] (.+?) ip:?\S+ sp:?\S+ error:? ?(\S+)(?: in ([^\[\s]+)\[)?"
)
_HUNG = re.compile(r"INFO: task (.+):(\d+) blocked for more than (\d+) seconds")
_PANIC = re.compile(r"Kernel panic - not syncing: ?(.*)")
_OOPS = re.compile(
    r"(BUG: unable to handle .*|Oops: [0-9a-f]+ \[#\d+\].*|divide error: [0-9a-f]+ \[#\d+\].*"
    r"|general protection fault: [0-9a-f]+ \[#\d+\].*|kernel BUG at .*)"
)
_FATAL_SIGNAL = re.compile(r"potentially unexpected fatal signal (\d+)")
_COMM = re.compile(r"CPU: (\d+) (?:UID: \d+ )?PID: (\d+) Comm: (\S+)")
_FILE_MAX = re.compile(r"VFS: file-max limit (\d+) reached")
_NETDEV = re.compile(r"unregister_netdevice: waiting for (\S+) to become free")
_DIGITS = re.compile(r"\d+")


@dataclass(slots=True)
class _Entry:
    """One distinct event, counted; becomes one Fact."""

    key: str
    value: FactValue
    lineno: int
    text: str
    attrs: dict[str, FactValue | None]
    count: int = 1


@dataclass(slots=True)
class _Pending:
    """A record whose end is on a later line (OOM summary, API mismatch, fatal signal...)."""

    line: Line
    fields: dict[str, str] = field(default_factory=dict)
    entry: _Entry | None = None

    @property
    def lineno(self) -> int:
        """Where the record started."""
        return self.line.lineno


class _Store:
    """Distinct events in first-seen order, at most `limit`."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.entries: dict[tuple[object, ...], _Entry] = {}
        self.dropped = 0

    def add(
        self, ident: tuple[object, ...], key: str, value: FactValue, line: Line,
        **attrs: FactValue | None,
    ) -> _Entry | None:  # fmt: skip
        """Record one event; a repeat bumps the count and fills attrs still unknown."""
        found = self.entries.get(ident)
        if found is not None:
            found.count += 1
            for name, item in attrs.items():
                if found.attrs.get(name) is None and item is not None:
                    found.attrs[name] = item
            return found
        if len(self.entries) >= self.limit:
            self.dropped += 1
            return None
        base: dict[str, FactValue | None] = {"host": line.host, "timestamp": line.timestamp}
        entry = _Entry(key, value, line.lineno, line.raw, {**base, **attrs})
        self.entries[ident] = entry
        return entry


def _message(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _MESSAGE_CHARS else text[: _MESSAGE_CHARS - 3] + "..."


def _int(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


class _KernelCollector(LogCollector):
    """Turns the anchor lines of one kernel log into facts (bounded state)."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.store = _Store(MAX_ENTRIES)
        self.gpus: dict[str, dict[str, str]] = {}
        self.last_gpu: str | None = None
        self.mismatch: _Pending | None = None
        self.summary: _Pending | None = None
        self.announce: _Pending | None = None
        self.memcg_limit: _Pending | None = None
        self.wants_comm: _Pending | None = None
        self.aer: _Entry | None = None
        self.ghes: _Entry | None = None

    # The engine feeds every line that matched an anchor or a rule; each handler checks its
    # own regex, so the anchor index is only a cheap filter.
    def feed(self, line: Line, anchors: frozenset[int]) -> None:
        for index in sorted(anchors):
            if 0 <= index < len(_HANDLERS):
                _HANDLERS[index](self, line)

    # --- NVIDIA -----------------------------------------------------------------------------

    def on_xid(self, line: Line) -> None:
        found = _XID.search(line.text)
        if not found:
            return
        pci, code, rest = pci_label(found[1]), int(found[2]), found[3] or ""
        pid = process = None
        proc = _XID_PROC.match(rest)
        if proc:
            pid = _int(proc[1].strip("'"))
            process = proc[2].strip() if proc[2].strip() not in ("", "<unknown>") else None
            rest = proc[3] or ""
        cause = _XID_CAUSE.search(rest)
        fatal = _NVLINK_FATAL.search(rest) if 144 <= code <= 150 else None
        self.store.add(
            ("xid", code, pci), "kernel.xid", code, line, pci=pci, pid=pid, process=process,
            message=_message(rest) or None, caused_by=int(cause[1]) if cause else None,
            nvlink_fatal=(fatal[1] == "Fatal") if fatal else None,
        )  # fmt: skip
        if code == 79:
            self.store.add(("off_bus", pci), "kernel.gpu_off_bus", True, line, pci=pci)

    def on_gpu_identity(self, line: Line) -> None:
        found = _GPU_AT.search(line.text)
        if found:
            pci = pci_label(found[1])
            if pci in self.gpus or len(self.gpus) < 256:
                self.gpus.setdefault(pci, {})["uuid"] = found[2]
            self.last_gpu = pci
            return
        serial = _GPU_SERIAL.search(line.text)
        if serial and self.last_gpu in self.gpus:
            self.gpus[self.last_gpu]["serial"] = serial[1]
            return
        the = _GPU_THE.search(line.text)
        if the:
            self.last_gpu = pci_label(the[1])

    def on_off_bus(self, line: Line) -> None:
        if "NVRM: Xid" in line.text or "fallen off the bus" not in line.text:
            return
        found = _OFF_BUS_PCI.search(line.text)
        pci = pci_label(found[1]) if found else (self.last_gpu or "")
        self.store.add(("off_bus", pci), "kernel.gpu_off_bus", True, line, pci=pci or None)

    def on_mismatch(self, line: Line) -> None:
        found = _MISMATCH.search(line.text)
        if found:
            self._flush_mismatch()
            self.mismatch = _Pending(line, {"client": found[1]})
            if found[2]:
                self._finish_mismatch(found[2])
            return
        module = _MODULE_VERSION.search(line.text)
        if module and self.mismatch and line.lineno - self.mismatch.lineno <= _PENDING_LINES:
            self._finish_mismatch(module[1])

    def _finish_mismatch(self, module: str | None) -> None:
        pending, self.mismatch = self.mismatch, None
        if pending is None:
            return
        client = pending.fields["client"]
        value = f"client {client}, kernel module {module or 'unknown'}"
        where = pending.line
        self.store.add(
            ("mismatch", client, module), "kernel.nvrm_mismatch", value, where,
            client_version=client, module_version=module,
        )  # fmt: skip

    def _flush_mismatch(self) -> None:
        if self.mismatch is not None:
            self._finish_mismatch(None)

    def on_init_failed(self, line: Line) -> None:
        found = _INIT_FAILED.search(line.text)
        if not found:
            return
        pci = pci_label(found[1]) if found[1] else ""
        value = f"{found[2]} ({found[3]})" if found[3] else found[2]
        entry = self.store.add(
            ("init", pci), "kernel.nvrm_init_failed", value, line,
            pci=pci or None, code=found[3],
        )  # fmt: skip
        # `RmInitAdapter failed! (code)` is the line to show; it may follow rm_init_adapter.
        if entry is not None and found[2].startswith("RmInit") and entry.lineno != line.lineno:
            entry.value, entry.lineno, entry.text = value, line.lineno, line.raw

    def on_probe(self, line: Line) -> None:
        found = _PROBE.search(line.text)
        if found:
            self.store.add(("probe",), "kernel.nvrm_probe_failed", found[1].strip(), line)

    def on_sxid(self, line: Line) -> None:
        found = _SXID.search(line.text)
        if found:
            pci = pci_label(found[2])
            self.store.add(
                ("sxid", int(found[3]), pci), "kernel.sxid", int(found[3]), line, pci=pci,
                switch=found[1], message=_message(found[4]) or None,
            )  # fmt: skip

    # --- OOM ----------------------------------------------------------------------------

    def on_oom_summary(self, line: Line) -> None:
        found = _OOM_SUMMARY.search(line.text)
        if not found:
            return
        self._flush_summary()
        fields: dict[str, str] = {}
        for item in found[1].split(","):
            name, _, value = item.partition("=")
            if name in ("constraint", "oom_memcg", "task_memcg", "task", "pid") and value:
                fields[name] = value.strip()
        self.summary = _Pending(line, fields)

    def on_memcg_limit(self, line: Line) -> None:
        found = _MEMCG_LIMIT.search(line.text)
        if found:
            self.memcg_limit = _Pending(line, {"limit": found[2]})

    def on_oom_announce(self, line: Line) -> None:
        found = _OOM_ANNOUNCE.search(line.text)
        if not found:
            return
        self._flush_announce()
        fields = {"pid": found[2], "name": found[3], "score": found[4] or ""}
        if found[1].startswith("Memory cgroup"):
            fields["memcg"] = "1"
        self.announce = _Pending(line, fields)

    def on_oom_killed(self, line: Line) -> None:
        found = _OOM_KILLED.search(line.text)
        if not found:
            return
        pid, name = found[2], found[3]
        sizes = {key: int(value) for key, value in _OOM_SIZES.findall(found[4])}
        announce = self.announce
        where, memcg, score = line, bool(found[1] and found[1].startswith("Memory cgroup")), None
        if announce is not None and announce.fields["pid"] == pid:
            self.announce = None
            where = announce.line
            memcg = memcg or "memcg" in announce.fields
            score = _int(announce.fields["score"])
        else:
            self._flush_announce()
        summary = self._take_summary(line.lineno, pid, name)
        self._add_kill(where, pid, name, memcg, summary, sizes, score)

    def _take_summary(self, lineno: int, pid: str, name: str) -> dict[str, str]:
        """The `oom-kill:` summary printed just before this kill, if it names the same task."""
        summary = self.summary
        if summary is None or lineno - summary.lineno > _PENDING_LINES:
            self._flush_summary()
            return {}
        fields = summary.fields
        same = (
            "pid" not in fields
            or fields["pid"] == pid
            or name.startswith(fields.get("task", "\0"))
            or fields.get("task", "\0").startswith(name)
        )
        if not same:
            self._flush_summary()
            return {}
        self.summary = None
        return fields

    def _add_kill(
        self, where: Line, pid: str, name: str, memcg: bool, summary: dict[str, str],
        sizes: dict[str, int], score: int | None, from_summary: bool | None = None,
    ) -> None:  # fmt: skip
        constraint = summary.get("constraint")
        memcg = memcg or constraint == "CONSTRAINT_MEMCG" or "oom_memcg" in summary
        limit = None
        if self.memcg_limit is not None and where.lineno - self.memcg_limit.lineno < 200:
            limit = _int(self.memcg_limit.fields["limit"]) if memcg else None
            self.memcg_limit = None
        self.store.add(
            ("oom", pid, name), "kernel.oom_kill", name, where, pid=_int(pid),
            anon_rss_kb=sizes.get("anon-rss"), total_vm_kb=sizes.get("total-vm"),
            file_rss_kb=sizes.get("file-rss"), shmem_rss_kb=sizes.get("shmem-rss"),
            memcg=memcg, cgroup=summary.get("task_memcg") or summary.get("oom_memcg"),
            constraint=constraint, memcg_limit_kb=limit, score=score, from_summary=from_summary,
        )  # fmt: skip

    def _flush_summary(self) -> None:
        """A summary no kill line completed still names the victim: keep it."""
        summary, self.summary = self.summary, None
        if summary is None or "task" not in summary.fields or "pid" not in summary.fields:
            return
        where = summary.line
        fields = summary.fields
        self._add_kill(where, fields["pid"], fields["task"], False, fields, {}, None, True)

    def _flush_announce(self) -> None:
        announce, self.announce = self.announce, None
        if announce is None:
            return
        where = announce.line
        fields = announce.fields
        self._add_kill(
            where, fields["pid"], fields["name"], "memcg" in fields, {}, {}, _int(fields["score"])
        )

    # --- hardware -----------------------------------------------------------------------

    def on_hardware_error(self, line: Line) -> None:
        text = line.text
        bank = _MCE_BANK.search(text)
        if bank:
            value = f"CPU {bank[1]}: Machine Check Bank {bank[2]}: {bank[3]}"
            self.store.add(
                ("mce", bank[1], bank[2], bank[3]), "kernel.mce", value, line, source="mce",
                cpu=int(bank[1]), bank=int(bank[2]),
            )  # fmt: skip
        elif _MCE_LOGGED.search(text):
            self.store.add(("mce", "logged"), "kernel.mce", "Machine check events logged", line,
                           source="mce")  # fmt: skip
        elif severity := _GHES_SEVERITY.search(text):
            value = f"APEI hardware error, severity {severity[1]}"
            self.ghes = self.store.add(
                ("ghes", severity[1]), "kernel.mce", value, line, source="ghes",
                severity=severity[1],
            )  # fmt: skip
        elif (section := _GHES_SECTION.search(text)) and self.ghes is not None:
            self.ghes.attrs.setdefault("section_type", section[1].strip())

    def on_edac(self, line: Line) -> None:
        found = _EDAC.search(line.text)
        if found:
            location = found[4].removeprefix("memory read error ").strip() or None
            value = f"{found[2]} {found[3]} {found[4]}".strip()
            self.store.add(
                ("edac", found[1], found[3], location), "kernel.edac", _message(value), line,
                kind=found[3], mc=found[1], location=location,
            )  # fmt: skip

    def on_aer(self, line: Line) -> None:
        text = line.text
        if received := _AER_RECEIVED.search(text):
            pci = pci_label(received[1]) if received[1] else ""
            self.aer = self._aer_entry(line, pci, received[2])
        elif bus := _AER_BUS.search(text):
            pci, severity = pci_label(bus[1]), bus[2].strip()
            recent = self.aer
            if (
                recent is None
                or recent.attrs.get("pci") != pci
                or recent.attrs.get("severity") != severity
            ):
                recent = self._aer_entry(line, pci, severity)
            if recent is not None:
                recent.attrs.setdefault("type", bus[3].strip())
            self.aer = recent
        elif detail := _AER_DETAIL.search(text):
            self._aer_detail(pci_label(detail[1]), detail[2].strip())

    def _aer_detail(self, pci: str, name: str) -> None:
        """`[ 5] Surprise Down Error` under the report: the names of the errors."""
        if self.aer is None or self.aer.attrs.get("pci") != pci:
            return
        names = str(self.aer.attrs.get("errors") or "")
        if name not in names.split(", ") and names.count(",") < 8:
            self.aer.attrs["errors"] = f"{names}, {name}" if names else name

    def _aer_entry(self, line: Line, pci: str, severity: str) -> _Entry | None:
        return self.store.add(
            ("aer", pci, severity), "kernel.aer", f"{severity} error", line,
            severity=severity, pci=pci or None,
        )  # fmt: skip

    def on_link_down(self, line: Line) -> None:
        found = _LINK_DOWN.search(line.text)
        if found:
            pci = pci_label(found[1])
            self.store.add(("link_down", pci), "kernel.pcie_link_down", found[2], line, pci=pci)

    # --- storage ------------------------------------------------------------------------

    def on_filesystem(self, line: Line) -> None:
        text = line.text
        if ext := _EXT_ERROR.search(text):
            self._fs_error(line, ext[1].lower(), ext[2], ext[3])
        elif warn := _EXT_WARNING.search(text):
            fs, device, message = warn[1].lower(), warn[2], warn[3]
            io = _EXT_IO.search(message)
            if io:
                self.store.add(("io", device, io[1]), "kernel.io_error", device, line,
                               kind=io[1], fs=fs)  # fmt: skip
            else:
                ident = ("fs_warning", fs, device, _DIGITS.sub("N", message)[:60])
                self.store.add(ident, "kernel.fs_warning", _message(message), line,
                               device=device, fs=fs)  # fmt: skip
        elif (xfs := _XFS.search(text)) and _XFS_BAD.search(xfs[2]):
            self._fs_error(line, "xfs", xfs[1], xfs[2])
        elif lustre := _LUSTRE.search(text):
            target = _LUSTRE_TARGET.search(lustre[1])
            self._fs_error(line, "lustre", target[1] if target else "lustre", lustre[1])

    def _fs_error(self, line: Line, fs: str, device: str, message: str) -> None:
        ident = ("fs_error", fs, device, _DIGITS.sub("N", message)[:60])
        self.store.add(ident, "kernel.fs_error", _message(message) or f"{fs} error", line,
                       device=device, fs=fs)  # fmt: skip

    def on_readonly(self, line: Line) -> None:
        found = _BTRFS_READONLY.search(line.text)
        if found:
            fs, device = "btrfs", found[1]
        elif found := _READONLY.search(line.text):
            fs, device = found[1].lower().removesuffix("-fs"), found[2]
        else:
            return
        self.store.add(("readonly", device), "kernel.fs_readonly", device, line, fs=fs)

    def on_io_error(self, line: Line) -> None:
        text = line.text
        if blk := _BLK_ERROR.search(text):
            device, kind, sector = blk[2], blk[1], _int(blk[3])
        elif buffer := _BUFFER_ERROR.search(text):
            device, kind, sector = buffer[1], "buffer", None
        elif nvme := _NVME_TIMEOUT.search(text):
            device, kind, sector = nvme[1], "nvme timeout", None
        elif nfs := _NFS.search(text):
            self.store.add(("io", nfs[1], "nfs"), "kernel.io_error", nfs[1], line,
                           kind="nfs not responding", fs="nfs")  # fmt: skip
            return
        else:
            return
        self.store.add(("io", device, kind), "kernel.io_error", device, line, kind=kind,
                       sector=sector)  # fmt: skip

    # --- processes ----------------------------------------------------------------------

    def on_segfault(self, line: Line) -> None:
        text = line.text
        if seg := _SEGFAULT.search(text):
            process, pid, kind, lib = seg[1].strip(), seg[2], "segfault", seg[5]
            address, error = seg[3], seg[4]
        elif trap := _TRAP.search(text):
            process, pid, kind, lib = trap[1].strip(), trap[2], trap[3].strip(), trap[5]
            address, error = None, trap[4]
        else:
            return
        self.store.add(
            ("segv", process, lib, kind), "kernel.segfault", process, line, pid=_int(pid),
            lib=lib, kind=kind, address=address, error=error,
        )  # fmt: skip

    def on_hung_task(self, line: Line) -> None:
        found = _HUNG.search(line.text)
        if found:
            self.store.add(
                ("hung", found[1], found[2]), "kernel.hung_task", found[1], line,
                pid=_int(found[2]), seconds=_int(found[3]),
            )  # fmt: skip

    def on_panic(self, line: Line) -> None:
        found = _PANIC.search(line.text)
        if not found:
            return
        reason = _message(found[1]) or "kernel panic"
        self.store.add(("panic", reason), "kernel.panic", reason, line)
        if "hardware error" in reason.lower():
            self.store.add(("mce", "panic"), "kernel.mce", f"Kernel panic: {reason}", line,
                           source="panic", severity="fatal")  # fmt: skip

    def on_oops(self, line: Line) -> None:
        found = _OOPS.search(line.text)
        if found:
            value = _message(found[1])
            entry = self.store.add(("oops", _DIGITS.sub("N", value)), "kernel.oops", value, line)
            self._want_comm(line, entry)

    def on_fatal_signal(self, line: Line) -> None:
        found = _FATAL_SIGNAL.search(line.text)
        if found:
            signal = int(found[1])
            entry = self.store.add(("signal", signal, line.lineno), "kernel.fatal_signal",
                                   signal, line)  # fmt: skip
            self._want_comm(line, entry)

    def _want_comm(self, line: Line, entry: _Entry | None) -> None:
        if entry is not None and entry.count == 1:
            self.wants_comm = _Pending(line, entry=entry)

    def on_comm(self, line: Line) -> None:
        found = _COMM.search(line.text)
        pending, self.wants_comm = self.wants_comm, None
        if not found or pending is None or pending.entry is None:
            return
        if line.lineno - pending.lineno <= 3 * _PENDING_LINES:
            pending.entry.attrs.setdefault("process", found[3])
            pending.entry.attrs.setdefault("pid", int(found[2]))

    def on_file_max(self, line: Line) -> None:
        found = _FILE_MAX.search(line.text)
        if found:
            self.store.add(("file_max", found[1]), "kernel.file_max", int(found[1]), line)

    def on_netdevice(self, line: Line) -> None:
        found = _NETDEV.search(line.text)
        if found:
            self.store.add(("netdev", found[1]), "kernel.unregister_netdevice", found[1], line)

    # --- end ----------------------------------------------------------------------------

    def finish(self) -> list[Fact]:
        self._flush_mismatch()
        self._flush_announce()
        self._flush_summary()
        facts: list[Fact] = []
        for entry in self.store.entries.values():
            attrs = dict(entry.attrs)
            if entry.key == "kernel.xid":
                attrs.update(self._xid_attrs(int(entry.value), str(attrs.get("pci") or "")))
            facts.append(
                fact(
                    entry.key,
                    entry.value,
                    self.path,
                    entry.lineno,
                    entry.text,
                    **attrs,
                    count=entry.count,
                )  # fmt: skip
            )
        if self.store.dropped:
            facts.append(fact("kernel.dropped_entries", self.store.dropped, self.path))
        return facts

    def _xid_attrs(self, code: int, pci: str) -> dict[str, FactValue | None]:
        info = lookup(code)
        gpu = self.gpus.get(pci, {})
        attrs: dict[str, FactValue | None] = {"uuid": gpu.get("uuid"), "serial": gpu.get("serial")}
        if info is None:
            attrs["meaning"] = f"Xid {code} is not in crashlens's catalog"
            return attrs
        attrs.update(
            name=info.name, meaning=info.meaning, action=info.action,
            bucket=info.bucket or None, category=info.category, severity=info.severity,
        )  # fmt: skip
        return attrs


# Anchor regexes (line-safe: `[ \t]` not `\s`, negated classes exclude `\n`, no lookbehind; each
# has a literal of 4+ characters) and the handler each one feeds, in the same order.
_ANCHOR_TABLE: tuple[tuple[str, str], ...] = (
    (r"NVRM: Xid \(", "on_xid"),
    (r"NVRM: (?:GPU at PCI:|GPU Board Serial Number: |The NVIDIA GPU )", "on_gpu_identity"),
    (r"fallen off the bus", "on_off_bus"),
    (r"API mismatch: the client has the version|this kernel module has the version", "on_mismatch"),
    (r"RmInitAdapter failed|rm_init_adapter failed", "on_init_failed"),
    (r"NVRM: The NVIDIA probe routine was not called|NVRM: No NVIDIA devices probed", "on_probe"),
    (r"nvidia-nvswitch[0-9]+: SXid \(", "on_sxid"),
    (r"oom-kill:constraint=", "on_oom_summary"),
    (r"memory: usage [0-9]+kB, limit [0-9]+kB", "on_memcg_limit"),
    (r"[Oo]ut of memory[^\n]{0,40}: Kill process [0-9]+", "on_oom_announce"),
    (r"Killed process [0-9]+", "on_oom_killed"),
    (r"\[Hardware Error\]: ", "on_hardware_error"),
    (r"EDAC [^\n]{0,40}MC[0-9]+: [0-9]+ [CU]E ", "on_edac"),
    (
        r"AER: [^\n]*error received|PCIe Bus Error: severity="
        r"|\] (?:Surprise Down|Completion Timeout|Malformed TLP|Poisoned TLP|Receiver Overflow"
        r"|Unsupported Request|Data Link Protocol|Flow Control Protocol|Unexpected Completion"
        r"|Completer Abort|ECRC|ACS Violation|Uncorrectable Internal|Receiver Error|Bad TLP"
        r"|Bad DLLP|Replay Timer Timeout|REPLAY_NUM Rollover|Corrected Internal"
        r"|Header Log Overflow|Undefined|MC Blocked TLP|AtomicOp Egress Blocked|TLP Prefix)",
        "on_aer",
    ),
    (r"pciehp: Slot\([^)\n]*\)[^\n]{0,8}: Link Down", "on_link_down"),
    (r"EXT[234]-fs (?:error|warning) \(|XFS \([^)\n]*\): |LustreError: ", "on_filesystem"),
    (r"Remounting filesystem read-only|forced readonly", "on_readonly"),
    (
        r" error, dev [a-zA-Z0-9]|Buffer I/O error on dev|nvme[0-9]+: I/O [^\n]{0,40}timeout"
        r"|nfs: server [^ \n]+ not responding",
        "on_io_error",
    ),
    (r"\]: segfault at |traps: [^\n]*\[[0-9]+\] ", "on_segfault"),
    (r"INFO: task [^\n]* blocked for more than", "on_hung_task"),
    (r"Kernel panic - not syncing", "on_panic"),
    (
        r"BUG: unable to handle|Oops: [0-9a-f]+ \[#|divide error: [0-9a-f]+ \[#"
        r"|general protection fault: [0-9a-f]+ \[#|kernel BUG at ",
        "on_oops",
    ),
    (r"potentially unexpected fatal signal", "on_fatal_signal"),
    (r"CPU: [0-9]+ (?:UID: [0-9]+ )?PID: [0-9]+ Comm: ", "on_comm"),
    (r"VFS: file-max limit [0-9]+ reached", "on_file_max"),
    (r"unregister_netdevice: waiting for", "on_netdevice"),
)
_HANDLERS = tuple(getattr(_KernelCollector, name) for _, name in _ANCHOR_TABLE)


class KernelLogParser(LogParser):
    """dmesg in every time format, journalctl -k, kern.log/syslog, /dev/kmsg, pstore dumps."""

    kind = InputKind.DMESG
    name = "kernel log"
    filenames: ClassVar[tuple[str, ...]] = (
        "dmesg*", "kern.log*", "kmsg*", "journal*", "messages*", "syslog*", "*.dmesg",
    )  # fmt: skip
    anchors: ClassVar[tuple[str, ...]] = tuple(pattern for pattern, _ in _ANCHOR_TABLE)

    @staticmethod
    def sniff(head: str) -> float:
        """High for any kernel-log prefix style or kernel message bodies; low otherwise."""
        try:
            return sniff_kernel_log(head)
        except Exception:  # a sniffer must never raise
            return 0.0

    def split_line(self, raw: str) -> Split:
        return split_kernel_line(raw)

    def collector(self, path: str) -> LogCollector:
        return _KernelCollector(path)
