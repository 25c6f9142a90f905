"""The NVIDIA driver's kernel lines: Xids, SXids, a GPU off the bus, version mismatch, failed
init and probe, and the GPU identities (UUID, serial) that NVRM prints at load time.

`NvidiaReader` counts events into the collector's store and remembers which GPU is at which
bus id, so that an Xid can carry its GPU's UUID and serial (`xid_attrs`, at the end).
"""

from __future__ import annotations

import re

from crashlens.model import FactValue, Line
from crashlens.parsers.dmesg.gpu_support import listed_support
from crashlens.parsers.dmesg.store import PENDING_LINES, EventStore, Pending, clipped, to_int
from crashlens.parsers.dmesg.xid import lookup
from crashlens.text.ids import GPU_UUID_CHARS, PCI_ID, PCI_ID_CHARS, pci_label
from crashlens.text.values import bounded_int

MAX_GPUS = 256
"""GPU identities remembered per log (a host has at most a few dozen)."""

_XID = re.compile(rf"NVRM: Xid \((?:PCI:)?({PCI_ID_CHARS})\): (\d+)(?:, (.*))?")
_XID_PROC = re.compile(r"^pid=([^,]*), name=([^,]*)(?:, ?(.*))?$")
_XID_CAUSE = re.compile(r"caused by previous Xid (\d+)")
_NVLINK_FATAL = re.compile(r"\b(Nonfatal|Non-fatal|Fatal)\b")
_SXID = re.compile(rf"(nvidia-nvswitch\d+): SXid \((?:PCI:)?({PCI_ID_CHARS})\): (\d+),? ?(.*)")
_GPU_AT = re.compile(rf"NVRM: GPU at PCI:({PCI_ID_CHARS}): ({GPU_UUID_CHARS})")
_GPU_SERIAL = re.compile(r"NVRM: GPU Board Serial Number: (\S+)")
_GPU_THE = re.compile(rf"NVRM: The NVIDIA GPU ({PCI_ID_CHARS})")
_OFF_BUS_PCI = re.compile(rf"NVRM: GPU (?:at )?(?:PCI:)?({PCI_ID})")
_VERSION = r"([0-9]{1,6}(?:\.[0-9]{1,6}){1,4})"
_MISMATCH = re.compile(
    r"API mismatch: the client(?: '([^'\n]{1,200})')?(?: \(pid ([0-9]{1,10})\))?"
    rf"(?:,? has the version {_VERSION})?"
    rf"(?:,?[ \tNVRM:]*but[ \tNVRM:]*this kernel module has the version {_VERSION})?"
)
"""The driver's mismatch report in both wordings: the older `the client has the version X,
but this kernel module has the version Y`, and the newer one that names the client program
and its pid (`the client 'nvidia-smi' (pid 1234)`), whose versions usually follow on the next
NVRM lines. Versions are bounded so that a hostile line costs linear time."""
_CLIENT_VERSION = re.compile(rf"(?:^|NVRM:)[ \t]*has the version {_VERSION}")
"""The client's version on an NVRM line of its own (the newer wording's second line)."""
_MODULE_VERSION = re.compile(rf"this kernel module has the version {_VERSION}")
_INIT_FAILED = re.compile(
    rf"NVRM: (?:GPU ({PCI_ID_CHARS}): )?(RmInitAdapter failed!?|rm_init_adapter failed)"
    r"(?: ?\(([^)\n]*)\))?"
)
_PROBE = re.compile(
    r"NVRM: (The NVIDIA probe routine (?:was not called|failed)[^.]*|No NVIDIA devices probed)"
)
_GPU_PCI_ID = re.compile(
    rf"NVRM: The NVIDIA GPU ({PCI_ID_CHARS}) \(PCI ID: 10de:([0-9a-fA-F]{{4}})\)"
)
_UNSUPPORTED_BY = re.compile(
    r"not supported by the(?:[ \t]*NVRM:)?[ \t]*(?:NVIDIA[ \t]+)?([0-9]{3,4}(?:\.[0-9]{1,4}){1,2})"
    r"[ \t]+(?:NVIDIA[ \t]+)?(?:Linux[ \t]+)?driver release"
)
"""NVRM's refusal of a GPU, once the lines that follow its `The NVIDIA GPU` line are joined:
`... is not supported by the NVIDIA 580.126.09 driver release` (older branches: `by the
515.65.01 NVIDIA Linux driver release`)."""


class NvidiaReader:
    """NVIDIA events of one kernel log, and the identities of its GPUs."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.gpus: dict[str, dict[str, str]] = {}
        """bus id -> {"uuid": ..., "serial": ...}"""
        self.last_gpu: str | None = None
        """The GPU the last identity line named (a serial line names none)."""
        self.mismatch: Pending | None = None
        self.refused: Pending | None = None
        """A `The NVIDIA GPU ... (PCI ID: ...)` line waiting for its driver version."""

    def read_xid(self, line: Line) -> None:
        found = _XID.search(line.text)
        if not found:
            return
        pci, code, rest = pci_label(found[1]), bounded_int(found[2]), found[3] or ""
        if code is None:
            return  # an absurd Xid number: the line is left unparsed
        pid = process = None
        proc = _XID_PROC.match(rest)
        if proc:
            pid = to_int(proc[1].strip("'"))
            process = proc[2].strip() if proc[2].strip() not in ("", "<unknown>") else None
            rest = proc[3] or ""
        cause = _XID_CAUSE.search(rest)
        fatal = _NVLINK_FATAL.search(rest) if 144 <= code <= 150 else None
        self.store.add(
            ("xid", code, pci), "kernel.xid", code, line, pci=pci, pid=pid, process=process,
            message=clipped(rest) or None, caused_by=bounded_int(cause[1]) if cause else None,
            nvlink_fatal=(fatal[1] == "Fatal") if fatal else None,
        )  # fmt: skip
        if code == 79:
            self.store.add(("off_bus", pci), "kernel.gpu_off_bus", True, line, pci=pci)

    def read_gpu_identity(self, line: Line) -> None:
        found = _GPU_AT.search(line.text)
        if found:
            pci = pci_label(found[1])
            if pci in self.gpus or len(self.gpus) < MAX_GPUS:
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
        named = _GPU_PCI_ID.search(line.text)
        if named:
            fields = {"pci": pci_label(named[1]), "device": named[2].lower(), "text": line.text}
            self.refused = Pending(line, fields)
            self.read_refusal(line)

    def read_refusal(self, line: Line) -> None:
        """The driver version that ends NVRM's refusal of a GPU (the same line or the next
        ones): a `kernel.nvrm_unsupported_gpu` fact with what the support table says."""
        pending = self.refused
        if pending is None or line.lineno - pending.lineno > PENDING_LINES:
            return
        if line.lineno != pending.lineno:
            pending.fields["text"] += " " + line.text
        found = _UNSUPPORTED_BY.search(pending.fields["text"])
        if not found:
            return
        self.refused = None
        device, version = pending.fields["device"], found[1]
        self.store.add(
            ("unsupported", pending.fields["pci"]), "kernel.nvrm_unsupported_gpu", device,
            pending.line, pci=pending.fields["pci"], driver_version=version,
            listed=listed_support(device, version),
        )  # fmt: skip

    def read_off_bus(self, line: Line) -> None:
        if "NVRM: Xid" in line.text or "fallen off the bus" not in line.text:
            return
        found = _OFF_BUS_PCI.search(line.text)
        pci = pci_label(found[1]) if found else (self.last_gpu or "")
        self.store.add(("off_bus", pci), "kernel.gpu_off_bus", True, line, pci=pci or None)

    def read_mismatch(self, line: Line) -> None:
        found = _MISMATCH.search(line.text)
        if found:
            self.flush()
            fields = {"client": found[3] or "", "process": found[1] or "", "pid": found[2] or ""}
            self.mismatch = Pending(line, fields)
            if found[4]:
                self._finish_mismatch(found[4])
            return
        pending = self.mismatch
        if pending is None or line.lineno - pending.lineno > PENDING_LINES:
            return
        client = _CLIENT_VERSION.search(line.text)
        if client and not pending.fields["client"]:
            pending.fields["client"] = client[1]
        module = _MODULE_VERSION.search(line.text)
        if module:
            self._finish_mismatch(module[1])

    def _finish_mismatch(self, module: str | None) -> None:
        pending, self.mismatch = self.mismatch, None
        if pending is None:
            return
        client = pending.fields["client"] or None
        process = pending.fields.get("process") or None
        value = f"client {client or 'unknown'}, kernel module {module or 'unknown'}"
        where = pending.line
        self.store.add(
            ("mismatch", client, module), "kernel.nvrm_mismatch", value, where,
            client_version=client, module_version=module, client_process=process,
        )  # fmt: skip

    def flush(self) -> None:
        """At the end of the log: a mismatch whose module version never came still counts."""
        if self.mismatch is not None:
            self._finish_mismatch(None)

    def read_init_failed(self, line: Line) -> None:
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

    def read_probe(self, line: Line) -> None:
        found = _PROBE.search(line.text)
        if found:
            self.store.add(("probe",), "kernel.nvrm_probe_failed", found[1].strip(), line)

    def read_sxid(self, line: Line) -> None:
        found = _SXID.search(line.text)
        code = bounded_int(found[3]) if found else None
        if found and code is not None:
            pci = pci_label(found[2])
            self.store.add(
                ("sxid", code, pci), "kernel.sxid", code, line, pci=pci,
                switch=found[1], message=clipped(found[4]) or None,
            )  # fmt: skip

    def xid_attrs(self, code: int, pci: str) -> dict[str, FactValue | None]:
        """The catalog's reading of an Xid, and the identity of the GPU at `pci`."""
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
