"""Kernel logs: dmesg (raw, -T, iso, --decode, -r), journalctl -k, kern.log, /dev/kmsg, pstore.

`split_line` removes whichever prefix the line has and returns the kernel message, the host
(syslog/journal styles), a timestamp in seconds and its clock: `boot` (seconds since boot) for
raw `[ 1234.5]` / kmsg styles, `wall` (epoch seconds) for `-T`, iso and journal ISO styles,
`yearless` for syslog styles, which print no year and are read as year `SYSLOG_YEAR` (2000, a
leap year) so that lines still order correctly. The styles are listed in `prefixes.py`.

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
- `kernel.nvrm_mismatch`: str `client X, kernel module Y`; attrs client_version, module_version,
  client_process (the program the newer wording names).
- `kernel.nvrm_init_failed`: str message; attrs pci, code (`0x22:0x56:884`).
- `kernel.nvrm_probe_failed`: str message ("probe routine was not called", "probe routine
  failed for N device(s)", "No NVIDIA devices probed").
- `kernel.nvrm_unsupported_gpu`: str PCI device id of a GPU NVRM refused as "not supported by the
  NVIDIA <version> driver release" (its lines joined); attrs pci, driver_version, listed
  (`supported`, `unsupported` or `unknown`: what tables/versions/gpu_driver_support.toml says of
  that model under that branch, `gpu_support.py`).
- `kernel.hung_task`: str process; attrs pid, seconds.
- `kernel.panic`: str reason after `Kernel panic - not syncing:`.
- `kernel.oops`: str the oops line (NULL dereference, `Oops:`, divide error, kernel BUG); attrs
  process, pid (its `Comm:` line), module (where its `RIP:` line points: `nvidia`, `nvidia_uvm`,
  ..., or `kernel`), function.
- `kernel.fatal_signal`: int signal (print-fatal-signals); attrs process, pid.
- `kernel.file_max`: int the `VFS: file-max limit N reached` limit.
- `kernel.unregister_netdevice`: str device still referenced.
- `kernel.sxid`: int NVSwitch SXid; attrs pci, switch, message.
- `kernel.dropped_entries`: int, only when more than `MAX_ENTRIES` distinct events were seen.
- `launcher.signal` (source `text`), `process.exit_code`: a death a service's own lines print of a
  process it ran, in a journal or syslog (Go's `signal: killed`, `exit status N`, systemd's
  `code=killed, status=9/KILL`); attr service (its syslog identifier). See `services.py`.
- `platform.shutdown`: str the machine shut down from outside (`power key`: systemd-logind's
  `Power key pressed`; `preemption`: a cloud's preemption notice). See `services.py`.
"""

from __future__ import annotations

from typing import ClassVar

from crashlens.model import InputKind
from crashlens.parsers.base import LogCollector, LogParser, Split, patterns_of
from crashlens.parsers.dmesg.collector import ANCHORS, KernelCollector
from crashlens.parsers.dmesg.prefixes import SYSLOG_YEAR, split_kernel_line
from crashlens.parsers.dmesg.sniff import sniff_kernel_log
from crashlens.parsers.dmesg.store import MAX_ENTRIES


class KernelLogParser(LogParser):
    """dmesg in every time format, journalctl -k, kern.log/syslog, /dev/kmsg, pstore dumps."""

    kind = InputKind.DMESG
    name = "kernel log"
    filenames: ClassVar[tuple[str, ...]] = (
        "dmesg*", "kern.log*", "kmsg*", "journal*", "messages*", "syslog*", "*.dmesg",
    )  # fmt: skip
    anchors: ClassVar[tuple[str, ...]] = patterns_of(ANCHORS)

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
        return KernelCollector(path)


__all__ = ["MAX_ENTRIES", "SYSLOG_YEAR", "KernelLogParser", "split_kernel_line"]
