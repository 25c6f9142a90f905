"""The kernel log's collector: one handler per anchor, one counted entry per distinct event.

The fact keys are listed in the package docstring. `ANCHORS` (after the class) is the table:
the scan pattern of each kind of line and the handler it feeds. The NVIDIA driver's lines are
read by `NvidiaReader` (`nvidia.py`), the OOM killer's multi-line report put together by
`OomReader` (`oom.py`); both count into the same `EventStore`.
"""

from __future__ import annotations

import re

from crashlens.model import Fact, Line
from crashlens.parsers.base import Anchor, AnchoredCollector, fact
from crashlens.parsers.dmesg.nvidia import NvidiaReader
from crashlens.parsers.dmesg.oom import OomReader
from crashlens.parsers.dmesg.services import ANCHOR as SERVICE_DEATH
from crashlens.parsers.dmesg.services import ServiceDeaths
from crashlens.parsers.dmesg.store import (
    MAX_ENTRIES,
    PENDING_LINES,
    Entry,
    EventStore,
    Pending,
    clipped,
    to_int,
)
from crashlens.text.ids import KERNEL_PCI_NAME, PCI_ID_CHARS, pci_label
from crashlens.text.values import bounded_int

_MCE_BANK = re.compile(
    r"mce: \[Hardware Error\]: CPU (\d+): Machine Check[^:]*: \S+ Bank (\d+): (\S+)"
)
_MCE_LOGGED = re.compile(r"mce: \[Hardware Error\]: Machine check events logged")
_GHES_SEVERITY = re.compile(r"\{\d+\}\[Hardware Error\]: +event severity: (\w+)")
_GHES_SECTION = re.compile(r"\{\d+\}\[Hardware Error\]: +section_type: (.+)")
_EDAC = re.compile(r"EDAC (?:\w+ )?(MC\d+): (\d+) (CE|UE) (.*?)(?: \(|$)")
_AER_RECEIVED = re.compile(
    rf"(?:({KERNEL_PCI_NAME}): )?AER: (?:Multiple )?"
    r"(Corrected|Uncorrect(?:ed|able) \((?:Non-)?Fatal\)) error received"
)
_AER_BUS = re.compile(
    rf"({KERNEL_PCI_NAME}): PCIe Bus Error: "
    r"severity=([^,]+), type=([^,]+)"
)
# The name ends with a letter and possessive spaces follow it: a lazy name and two ` *`
# sharing a long run of spaces backtracked cubically (a 2 KB line took 17 s).
_AER_DETAIL = re.compile(
    rf"({KERNEL_PCI_NAME}): +\[ ?\d+\] ([A-Za-z](?:[A-Za-z_ ]*?[A-Za-z_])??)"
    r" *+(?:\(First\))? *+$"
)
_LINK_DOWN = re.compile(
    rf"(?<!{PCI_ID_CHARS[:-1]})({PCI_ID_CHARS}): pciehp: Slot\((\S+?)\)(?:-\d+)?: Link Down"
)
_EXT_ERROR = re.compile(r"(EXT[234])-fs error \(device ([^)]+)\)(?::| in) ?(.*)")
_EXT_WARNING = re.compile(r"(EXT[234])-fs warning \(device ([^)]+)\): ?(.*)")
_EXT_IO = re.compile(r"^(\w+):\d+: I/O error (-?\d+) (writing|reading)")
_XFS = re.compile(r"XFS \(([^)]+)\): (.*)")
_XFS_BAD = re.compile(r"[Ee]rror|[Cc]orrupt|[Ss]hutting down|[Ss]hutdown")
_LUSTRE = re.compile(r"LustreError: (.*)")
# a target name is found from its token's start only (`\b` inside a long token rescanned it)
_LUSTRE_TARGET = re.compile(r"(?<![\w-])-*\b([\w-]+-(?:OST|MDT)[0-9a-fA-F]{4})\b")
# Where a line says a filesystem went read-only; `forced readonly` may come anywhere after
# (`_readonly` checks it once per line: `.*forced readonly` in the regex rescanned the rest
# of the line at every device mention, n^2 on a long line).
_READONLY = re.compile(r"(EXT[234]-fs|(?<!\w)\w+) \(([^)]+)\): ")
_READONLY_REMOUNT = "Remounting filesystem read-only"
_BTRFS_READONLY = re.compile(r"BTRFS \w+ \(device ([^()]+)\)")
_FORCED_READONLY = "forced readonly"
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
# the name stops at another `INFO: task` (else each one rescans the rest of a long line)
_HUNG = re.compile(r"INFO: task ((?:(?!INFO: task ).)+):(\d+) blocked for more than (\d+) seconds")
_PANIC = re.compile(r"Kernel panic - not syncing: ?(.*)")
_OOPS = re.compile(
    r"(BUG: unable to handle .*|Oops: [0-9a-f]+ \[#\d+\].*|divide error: [0-9a-f]+ \[#\d+\].*"
    r"|general protection fault: [0-9a-f]+ \[#\d+\].*|kernel BUG at .*)"
)
_FATAL_SIGNAL = re.compile(r"potentially unexpected fatal signal (\d+)")
_COMM = re.compile(r"CPU: (\d+) (?:UID: \d+ )?PID: (\d+) Comm: (\S+)")
_RIP = re.compile(
    r"RIP: [0-9a-f]{4}:(?:\[<[0-9a-f]+>\] +\[<[0-9a-f]+>\] +)?([^ \n]+)(?: +\[([a-z0-9_]+)\])?"
)
"""The instruction the oops stopped at: `RIP: 0010:_nv006968rm+0x2c/0x330 [nvidia]` (kernels
before 4.x: `RIP: 0010:[<addr>]  [<addr>] func+0x1c/0x30 [nvidia]`); no bracket: the kernel's own
code."""
_FILE_MAX = re.compile(r"VFS: file-max limit (\d+) reached")
_NETDEV = re.compile(r"unregister_netdevice: waiting for (\S+) to become free")
_DIGITS = re.compile(r"\d+")


class KernelCollector(AnchoredCollector):
    """Turns the anchor lines of one kernel log into facts (bounded state).

    The engine feeds every line that matched an anchor or a rule; each handler checks its own
    regex, so the anchor is only a cheap filter.
    """

    def __init__(self, path: str) -> None:
        super().__init__(path, ANCHORS)
        self.store = EventStore(MAX_ENTRIES)
        self.oom = OomReader(self.store)
        self.nvidia = NvidiaReader(self.store)
        self.services = ServiceDeaths(path)
        self.wants_comm: Pending | None = None
        self.wants_rip: list[tuple[int, Entry]] = []
        """Oops records (and their lines) whose `RIP:` line has not come yet: a `BUG:` line and
        the `Oops:` line after it are one fault, and its RIP line names the code it hit."""
        self.aer: Entry | None = None
        self.ghes: Entry | None = None

    # --- NVIDIA (`NvidiaReader` keeps the GPUs' identities) ---------------------------

    def on_xid(self, line: Line) -> None:
        self.nvidia.read_xid(line)

    def on_gpu_identity(self, line: Line) -> None:
        self.nvidia.read_gpu_identity(line)

    def on_off_bus(self, line: Line) -> None:
        self.nvidia.read_off_bus(line)

    def on_mismatch(self, line: Line) -> None:
        self.nvidia.read_mismatch(line)

    def on_init_failed(self, line: Line) -> None:
        self.nvidia.read_init_failed(line)

    def on_probe(self, line: Line) -> None:
        self.nvidia.read_probe(line)

    def on_refusal(self, line: Line) -> None:
        self.nvidia.read_refusal(line)

    def on_sxid(self, line: Line) -> None:
        self.nvidia.read_sxid(line)

    # --- OOM (`OomReader` puts the report together) -----------------------------------

    def on_oom_summary(self, line: Line) -> None:
        self.oom.read_summary(line)

    def on_memcg_limit(self, line: Line) -> None:
        self.oom.read_memcg_limit(line)

    def on_oom_announce(self, line: Line) -> None:
        self.oom.read_announce(line)

    def on_oom_killed(self, line: Line) -> None:
        self.oom.read_killed(line)

    # --- hardware -----------------------------------------------------------------------

    def on_hardware_error(self, line: Line) -> None:
        text = line.text
        bank = _MCE_BANK.search(text)
        if bank:
            value = f"CPU {bank[1]}: Machine Check Bank {bank[2]}: {bank[3]}"
            self.store.add(
                ("mce", bank[1], bank[2], bank[3]), "kernel.mce", value, line, source="mce",
                cpu=bounded_int(bank[1]), bank=bounded_int(bank[2]),
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
                ("edac", found[1], found[3], location), "kernel.edac", clipped(value), line,
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

    def _aer_entry(self, line: Line, pci: str, severity: str) -> Entry | None:
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
                self.store.add(ident, "kernel.fs_warning", clipped(message), line,
                               device=device, fs=fs)  # fmt: skip
        elif (xfs := _XFS.search(text)) and _XFS_BAD.search(xfs[2]):
            self._fs_error(line, "xfs", xfs[1], xfs[2])
        elif lustre := _LUSTRE.search(text):
            target = _LUSTRE_TARGET.search(lustre[1])
            self._fs_error(line, "lustre", target[1] if target else "lustre", lustre[1])

    def _fs_error(self, line: Line, fs: str, device: str, message: str) -> None:
        ident = ("fs_error", fs, device, _DIGITS.sub("N", message)[:60])
        self.store.add(ident, "kernel.fs_error", clipped(message) or f"{fs} error", line,
                       device=device, fs=fs)  # fmt: skip

    def on_readonly(self, line: Line) -> None:
        text = line.text
        forced = text.rfind(_FORCED_READONLY)  # device mentions before it say it
        found = next((m for m in _BTRFS_READONLY.finditer(text) if m.end() <= forced), None)
        if found:
            fs, device = "btrfs", found[1]
        elif found := next(
            (
                m
                for m in _READONLY.finditer(text)
                if text.startswith(_READONLY_REMOUNT, m.end()) or m.end() <= forced
            ),
            None,
        ):
            fs, device = found[1].lower().removesuffix("-fs"), found[2]
        else:
            return
        self.store.add(("readonly", device), "kernel.fs_readonly", device, line, fs=fs)

    def on_io_error(self, line: Line) -> None:
        text = line.text
        if blk := _BLK_ERROR.search(text):
            device, kind, sector = blk[2], blk[1], to_int(blk[3])
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
            ("segv", process, lib, kind), "kernel.segfault", process, line, pid=to_int(pid),
            lib=lib, kind=kind, address=address, error=error,
        )  # fmt: skip

    def on_hung_task(self, line: Line) -> None:
        found = _HUNG.search(line.text)
        if found:
            self.store.add(
                ("hung", found[1], found[2]), "kernel.hung_task", found[1], line,
                pid=to_int(found[2]), seconds=to_int(found[3]),
            )  # fmt: skip

    def on_panic(self, line: Line) -> None:
        found = _PANIC.search(line.text)
        if not found:
            return
        reason = clipped(found[1]) or "kernel panic"
        self.store.add(("panic", reason), "kernel.panic", reason, line)
        if "hardware error" in reason.lower():
            self.store.add(("mce", "panic"), "kernel.mce", f"Kernel panic: {reason}", line,
                           source="panic", severity="fatal")  # fmt: skip

    def on_oops(self, line: Line) -> None:
        found = _OOPS.search(line.text)
        if found:
            value = clipped(found[1])
            entry = self.store.add(("oops", _DIGITS.sub("N", value)), "kernel.oops", value, line)
            self._want_comm(line, entry)
            if entry is not None:
                self.wants_rip.append((line.lineno, entry))

    def on_rip(self, line: Line) -> None:
        """The oops's instruction pointer: in which module the kernel faulted (the NVIDIA
        driver's `[nvidia]`, `[nvidia_uvm]`..., or the kernel's own code)."""
        found = _RIP.search(line.text)
        pending, self.wants_rip = self.wants_rip, []
        if not found:
            return
        for lineno, entry in pending:
            if line.lineno - lineno <= 3 * PENDING_LINES:
                entry.attrs.setdefault("module", found[2] or "kernel")
                entry.attrs.setdefault("function", clipped(found[1].split("+")[0]))

    def on_fatal_signal(self, line: Line) -> None:
        found = _FATAL_SIGNAL.search(line.text)
        signal = bounded_int(found[1]) if found else None
        if signal is not None:
            entry = self.store.add(("signal", signal, line.lineno), "kernel.fatal_signal",
                                   signal, line)  # fmt: skip
            self._want_comm(line, entry)

    def _want_comm(self, line: Line, entry: Entry | None) -> None:
        if entry is not None and entry.count == 1:
            self.wants_comm = Pending(line, entry=entry)

    def on_comm(self, line: Line) -> None:
        found = _COMM.search(line.text)
        pending, self.wants_comm = self.wants_comm, None
        if not found or pending is None or pending.entry is None:
            return
        if line.lineno - pending.lineno <= 3 * PENDING_LINES:
            pending.entry.attrs.setdefault("process", found[3])
            if (pid := bounded_int(found[2])) is not None:
                pending.entry.attrs.setdefault("pid", pid)

    def on_file_max(self, line: Line) -> None:
        found = _FILE_MAX.search(line.text)
        limit = bounded_int(found[1]) if found else None
        if found and limit is not None:
            self.store.add(("file_max", found[1]), "kernel.file_max", limit, line)

    def on_netdevice(self, line: Line) -> None:
        found = _NETDEV.search(line.text)
        if found:
            self.store.add(("netdev", found[1]), "kernel.unregister_netdevice", found[1], line)

    def on_service_death(self, line: Line) -> None:
        self.services.read(line)

    # --- end ----------------------------------------------------------------------------

    def finish(self) -> list[Fact]:
        """Complete the pending records and turn every distinct event into a fact."""
        self.nvidia.flush()
        self.oom.flush()
        facts: list[Fact] = []
        for entry in self.store.entries.values():
            attrs = dict(entry.attrs)
            if entry.key == "kernel.xid":
                attrs.update(self.nvidia.xid_attrs(int(entry.value), str(attrs.get("pci") or "")))
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
        return facts + list(self.services.facts.values())


K = KernelCollector  # short, so that most rows fit on one line
# Line-safe (see `Anchor`), each with a literal of 4+ characters; the handlers re-check with
# the precise regexes above, so an anchor only has to catch every line its handler wants.
ANCHORS: tuple[Anchor[KernelCollector], ...] = (
    Anchor(r"NVRM: Xid \(", K.on_xid),
    Anchor(r"NVRM: (?:GPU at PCI:|GPU Board Serial Number: |The NVIDIA GPU )", K.on_gpu_identity),
    Anchor(r"fallen off the bus", K.on_off_bus),
    Anchor(
        r"API mismatch: the client|NVRM:[ \t]*has the version|this kernel module has the version",
        K.on_mismatch,
    ),
    Anchor(r"RmInitAdapter failed|rm_init_adapter failed", K.on_init_failed),
    Anchor(
        r"NVRM: The NVIDIA probe routine (?:was not called|failed)|NVRM: No NVIDIA devices probed",
        K.on_probe,
    ),
    Anchor(r"not supported by the|driver release", K.on_refusal),
    Anchor(r"nvidia-nvswitch[0-9]+: SXid \(", K.on_sxid),
    Anchor(r"oom-kill:constraint=", K.on_oom_summary),
    Anchor(r"memory: usage [0-9]+kB, limit [0-9]+kB", K.on_memcg_limit),
    Anchor(r"[Oo]ut of memory[^\n]{0,40}: Kill process [0-9]+", K.on_oom_announce),
    Anchor(r"Killed process [0-9]+", K.on_oom_killed),
    Anchor(r"\[Hardware Error\]: ", K.on_hardware_error),
    Anchor(r"EDAC [^\n]{0,40}MC[0-9]+: [0-9]+ [CU]E ", K.on_edac),
    Anchor(
        r"AER: [^\n]*error received|PCIe Bus Error: severity="
        r"|\] (?:Surprise Down|Completion Timeout|Malformed TLP|Poisoned TLP|Receiver Overflow"
        r"|Unsupported Request|Data Link Protocol|Flow Control Protocol|Unexpected Completion"
        r"|Completer Abort|ECRC|ACS Violation|Uncorrectable Internal|Receiver Error|Bad TLP"
        r"|Bad DLLP|Replay Timer Timeout|REPLAY_NUM Rollover|Corrected Internal"
        r"|Header Log Overflow|Undefined|MC Blocked TLP|AtomicOp Egress Blocked|TLP Prefix)",
        K.on_aer,
    ),
    Anchor(r"pciehp: Slot\([^)\n]*\)[^\n]{0,8}: Link Down", K.on_link_down),
    Anchor(r"EXT[234]-fs (?:error|warning) \(|XFS \([^)\n]*\): |LustreError: ", K.on_filesystem),
    Anchor(r"Remounting filesystem read-only|forced readonly", K.on_readonly),
    Anchor(
        r" error, dev [a-zA-Z0-9]|Buffer I/O error on dev|nvme[0-9]+: I/O [^\n]{0,40}timeout"
        r"|nfs: server [^ \n]+ not responding",
        K.on_io_error,
    ),
    Anchor(r"\]: segfault at |traps: [^\n]*\[[0-9]+\] ", K.on_segfault),
    Anchor(r"INFO: task [^\n]* blocked for more than", K.on_hung_task),
    Anchor(r"Kernel panic - not syncing", K.on_panic),
    Anchor(
        r"BUG: unable to handle|Oops: [0-9a-f]+ \[#|divide error: [0-9a-f]+ \[#"
        r"|general protection fault: [0-9a-f]+ \[#|kernel BUG at ",
        K.on_oops,
    ),
    Anchor(r"RIP: [0-9a-f]{4}:", K.on_rip),
    Anchor(r"potentially unexpected fatal signal", K.on_fatal_signal),
    Anchor(r"CPU: [0-9]+ (?:UID: [0-9]+ )?PID: [0-9]+ Comm: ", K.on_comm),
    Anchor(r"VFS: file-max limit [0-9]+ reached", K.on_file_max),
    Anchor(r"unregister_netdevice: waiting for", K.on_netdevice),
    # a service's own line in a journal: the death of a process it ran (`services.py`)
    Anchor(SERVICE_DEATH, K.on_service_death),
)
del K
