"""Tests for the kernel log parser: every shared dmesg sample, each prefix style, bad input."""

from __future__ import annotations

import calendar
import re

import pytest

from crashlens.model import Fact, FactValue, InputKind
from crashlens.parsers.base import collect_text
from crashlens.parsers.dmesg import (
    MAX_ENTRIES,
    SYSLOG_YEAR,
    KernelLogParser,
    split_kernel_line,
)
from crashlens.text.ids import pci_label

from conftest import SAMPLES, sample_text

PARSER = KernelLogParser()
FOLDER = "dmesg"
ALL_SAMPLES = sorted(p.name for p in (SAMPLES / FOLDER).iterdir() if p.is_file())
OTHER_SAMPLES = sorted(
    f"{p.parent.name}/{p.name}"
    for p in SAMPLES.glob("*/*")
    if p.is_file() and p.parent.name != FOLDER and p.suffix != ".md"
)


def parse(name: str) -> list[Fact]:
    """The facts of one shared sample."""
    _, facts = collect_text(PARSER, sample_text(f"{FOLDER}/{name}"), name)
    return facts


def text_facts(text: str) -> list[Fact]:
    """The facts of an inline kernel log."""
    return collect_text(PARSER, text, "inline")[1]


def pick(facts: list[Fact], key: str, **attrs: FactValue) -> list[Fact]:
    """The facts with this key whose attrs include every given (name, value)."""
    return [
        f
        for f in facts
        if f.key == key and all(f.attr(name) == value for name, value in attrs.items())
    ]


def one(facts: list[Fact], key: str, **attrs: FactValue) -> Fact:
    """Exactly one matching fact."""
    found = pick(facts, key, **attrs)
    assert len(found) == 1, (key, attrs, found)
    return found[0]


def utc(year: int, month: int, day: int, h: int, m: int, s: int) -> float:
    return float(calendar.timegm((year, month, day, h, m, s)))


# --- every sample ------------------------------------------------------------------------------


def test_samples_present() -> None:
    assert len(ALL_SAMPLES) >= 30


@pytest.mark.parametrize("name", ALL_SAMPLES)
def test_every_sample_sniffs_and_parses(name: str) -> None:
    text = sample_text(f"{FOLDER}/{name}")
    assert KernelLogParser.sniff(text[:65536]) >= 0.6
    lines, facts = collect_text(PARSER, text, name)
    assert lines
    for item in facts:
        assert isinstance(item.value, str | int | float | bool)
        assert item.lineno is None or 1 <= item.lineno <= len(lines)
        assert item.key.startswith("kernel.")


@pytest.mark.parametrize("name", OTHER_SAMPLES)
def test_other_kinds_sniff_low(name: str) -> None:
    assert KernelLogParser.sniff(sample_text(name)[:65536]) < 0.3


def test_parser_metadata() -> None:
    assert PARSER.kind is InputKind.DMESG
    assert PARSER.anchors


@pytest.mark.parametrize("anchor", KernelLogParser.anchors)
def test_anchors_are_line_safe(anchor: str) -> None:
    re.compile(anchor)
    assert "\\s" not in anchor and "(?<" not in anchor
    # Negated classes must exclude the newline so buffer engines stay on one line.
    for negated in re.findall(r"\[\^([^\]]*)\]", anchor):
        assert "\\n" in negated, anchor
    # A literal of 4+ characters for the prefilter.
    literals = re.sub(r"\\.|\[[^\]]*\]|[()|?*+{}0-9,]", " ", anchor).split(" ")
    assert max(len(x) for x in literals) >= 4, anchor


# --- NVIDIA -----------------------------------------------------------------------------------


def test_xid_catalog_sample() -> None:
    facts = parse("dmesg_T_nvrm_xid_catalog_REPRO.txt")
    codes = sorted({int(f.value) for f in pick(facts, "kernel.xid")})
    assert codes == [13, 31, 43, 45, 48, 63, 74, 79, 94, 95, 109, 119, 144, 145, 149]
    burst = [f for f in pick(facts, "kernel.xid", pci="0000:CB:00.0") if f.value == 13]
    assert len(burst) == 1 and burst[0].attr("count") == 3
    assert burst[0].attr("pid") is None and burst[0].attr("category") == "application"
    ctx = [f for f in pick(facts, "kernel.xid") if f.value == 109][0]
    assert ctx.attr("pid") == 1797828 and ctx.attr("process") == "pt_main_thread"
    dbe = [f for f in pick(facts, "kernel.xid", pci="0000:19:00.0") if f.value == 48][0]
    assert dbe.attr("category") == "hardware" and dbe.attr("bucket") == "WORKFLOW_XID_48"
    assert "double bit" in str(dbe.attr("message"))
    contained = [f for f in pick(facts, "kernel.xid", pci="0000:19:00.0") if f.value == 94][0]
    # The first line has pid='<unknown>'; the pid comes from the next line of the same Xid.
    assert contained.attr("count") == 2 and contained.attr("process") == "python3.10"
    cleanup = [f for f in pick(facts, "kernel.xid", pci="0000:DC:00.0") if f.value == 45][0]
    assert cleanup.attr("caused_by") == 149 and cleanup.attr("category") == "noise"
    netir = [f for f in pick(facts, "kernel.xid") if f.value == 149][0]
    assert netir.attr("pci") == "0019:01:00.0" and netir.attr("nvlink_fatal") is True
    saw = [f for f in pick(facts, "kernel.xid") if f.value == 144][0]
    assert saw.attr("nvlink_fatal") is False
    off = one(facts, "kernel.gpu_off_bus", pci="0000:02:00.0")
    assert off.value is True and off.lineno == 20
    assert off.attr("timestamp") == utc(2024, 8, 30, 18, 0, 2)


def test_xid79_with_aer_and_crash_dump() -> None:
    facts = parse("dmesg_raw_pcie_aer_surprise_down_xid79_REPRO.txt")
    xid = one(facts, "kernel.xid", pci="0000:02:00.0")
    assert xid.value == 79 and xid.lineno == 13
    assert xid.attr("bucket") == "RESTART_BM" and xid.attr("severity") == "critical"
    assert xid.attr("uuid") == "GPU-00000000-0000-0000-0000-000000000000"
    assert xid.attr("timestamp") == pytest.approx(74889.644138)
    assert "NVRM: Xid (PCI:0000:02:00): 79" in xid.text
    # The Xid and `GPU at 00000000:02:00.0 has fallen off the bus` are one GPU.
    off = one(facts, "kernel.gpu_off_bus")
    assert off.attr("pci") == "0000:02:00.0" and off.attr("count") == 2
    fatal = one(facts, "kernel.aer", severity="Uncorrected (Fatal)")
    assert fatal.attr("pci") == "0000:00:02.0"
    assert fatal.attr("errors") == "Surprise Down Error"
    assert fatal.attr("type") == "Transaction Layer"
    corrected = one(facts, "kernel.aer", severity="Corrected")
    assert corrected.attr("errors") == "Replay Timer Timeout"


def test_syslog_xid79_and_textual_off_bus() -> None:
    facts = parse("kern_log_syslog_pciehp_xid79_REPRO.log")
    xid = one(facts, "kernel.xid")
    assert xid.value == 79 and xid.attr("pci") == "0000:01:00.0"
    assert xid.attr("host") == "gpu-node-03"
    off = one(facts, "kernel.gpu_off_bus")
    assert off.attr("pci") == "0000:01:00.0" and off.attr("count") == 3
    link = one(facts, "kernel.pcie_link_down")
    assert link.value == "0" and link.attr("pci") == "0000:00:01.1"


def test_off_bus_without_xid_number() -> None:
    facts = text_facts(
        "[ 36.021455] NVRM: The NVIDIA GPU 0000:41:00.0\n"
        "[ 36.021455] NVRM: (PCI ID: 10de:2204) installed in this system has\n"
        "[ 36.021455] NVRM: fallen off the bus and is not responding to commands.\n"
    )
    assert not pick(facts, "kernel.xid")
    off = one(facts, "kernel.gpu_off_bus")
    assert off.attr("pci") == "0000:41:00.0" and off.lineno == 3


def test_xid119_gsp_timeout() -> None:
    facts = parse("dmesg_T_xid119_gsp_timeout.log")
    xid = one(facts, "kernel.xid")
    assert xid.value == 119 and xid.attr("pci") == "0000:9B:00.0"
    assert xid.attr("count") == 5 and xid.lineno == 3
    assert xid.attr("process") == "nvidia-smi" and xid.attr("pid") == 2024380
    assert xid.attr("serial") == "1650124014249"
    assert xid.attr("uuid") == "GPU-509665ad-b600-ac93-3616-d754b23d636d"
    assert xid.attr("timestamp") == utc(2025, 2, 23, 16, 24, 18)
    assert "GSP" in str(xid.attr("meaning"))


def test_xid_48_63_94_iso() -> None:
    facts = parse("dmesg_time_format_iso_xid48_63_94_peermem.log")
    by_code = {int(f.value): f for f in pick(facts, "kernel.xid")}
    assert set(by_code) == {48, 63, 94}
    assert all(f.attr("pci") == "0000:19:00.0" for f in by_code.values())
    assert by_code[94].attr("count") == 9 and by_code[94].attr("pid") == 1248209
    assert by_code[63].attr("severity") == "warning"
    assert by_code[48].attr("timestamp") == pytest.approx(utc(2024, 11, 15, 12, 2, 3) + 0.470068)


def test_xid13_43_and_oom_variants() -> None:
    facts = parse("dmesg_decode_iso_xid13_43_oom_variants.log")
    thirteen = one(facts, "kernel.xid", pci="0000:38:00.0", category="application")
    assert thirteen.value == 13 and thirteen.attr("count") == 16
    forty_three = one(facts, "kernel.xid", category="noise")
    assert forty_three.value == 43 and forty_three.attr("process") == "pt_main_thread"
    httpd = one(facts, "kernel.oom_kill", pid=123)
    assert httpd.value == "httpd" and httpd.attr("count") == 2
    legacy = one(facts, "kernel.oom_kill", pid=456)
    assert legacy.value == "python" and legacy.attr("score") == 50
    # A summary line with no kill line after it still names the victim.
    node = one(facts, "kernel.oom_kill", pid=863987)
    assert node.value == "node" and node.attr("from_summary") is True
    assert node.attr("memcg") is True and "cri-containerd" in str(node.attr("cgroup"))


def test_api_mismatch_multiline() -> None:
    facts = parse("dmesg_raw_nvrm_probe_failed_api_mismatch_REPRO.txt")
    mismatch = one(facts, "kernel.nvrm_mismatch")
    assert mismatch.attr("client_version") == "550.127.05"
    assert mismatch.attr("module_version") == "535.183.01"
    assert mismatch.lineno == 14 and "API mismatch" in mismatch.text
    probe = one(facts, "kernel.nvrm_probe_failed")
    assert "probe routine was not called for 3 device" in str(probe.value)


def test_api_mismatch_one_line_and_unfinished() -> None:
    facts = text_facts(
        "NVRM: API mismatch: the client has the version 304.88, but this kernel module has the "
        "version 304.51.  Please make sure that this kernel module and all NVIDIA driver\n"
    )
    assert one(facts, "kernel.nvrm_mismatch").attr("module_version") == "304.51"
    facts = text_facts("[ 1.0] NVRM: API mismatch: the client has the version 550.1, but")
    only = one(facts, "kernel.nvrm_mismatch")
    assert only.attr("client_version") == "550.1" and only.attr("module_version") is None


def test_rminitadapter_failed() -> None:
    facts = parse("kern_log_rminitadapter_failed_REPRO.log")
    failed = one(facts, "kernel.nvrm_init_failed")
    assert failed.attr("pci") == "0000:01:00.0" and failed.attr("code") == "0x22:0x56:884"
    assert failed.lineno == 2 and failed.value == "RmInitAdapter failed! (0x22:0x56:884)"
    assert failed.attr("host") == "gpu-node-02"


def test_sxid() -> None:
    facts = text_facts(
        "[ 9.1] nvidia-nvswitch3: SXid (PCI:0000:86:00.0): 12028, Non-fatal, Link 44 egress "
        "non-posted PRIV error (First)\n"
    )
    sxid = one(facts, "kernel.sxid")
    assert sxid.value == 12028 and sxid.attr("switch") == "nvidia-nvswitch3"


# --- OOM -----------------------------------------------------------------------------------


def test_global_oom_full_report() -> None:
    facts = parse("dmesg_raw_global_oom_killer_full_report_REPRO.txt")
    kill = one(facts, "kernel.oom_kill")
    assert kill.value == "python" and kill.attr("pid") == 918273
    assert kill.attr("anon_rss_kb") == 987605012 and kill.attr("total_vm_kb") == 1012345676
    assert kill.attr("memcg") is False and kill.attr("constraint") == "CONSTRAINT_NONE"
    assert kill.attr("cgroup") == "/user.slice/user-1000.slice/session-12.scope"
    assert kill.lineno == 62


def test_memcg_oom_docker_kern_log() -> None:
    facts = parse("kern_log_memcg_oom_docker_cgroupv2_REPRO.log")
    kill = one(facts, "kernel.oom_kill")
    assert kill.value == "python" and kill.attr("pid") == 1204455
    assert kill.attr("memcg") is True and kill.attr("constraint") == "CONSTRAINT_MEMCG"
    assert str(kill.attr("cgroup")).startswith("/system.slice/docker-3f9c1e2d7a4b")
    assert kill.attr("memcg_limit_kb") == 67108864 and kill.attr("anon_rss_kb") == 66889164
    assert kill.attr("host") == "gpu-node-07"


@pytest.mark.parametrize(
    "name",
    [
        "journalctl_k_default_boot_separators_REPRO.log",
        "journalctl_k_short_iso_precise_REPRO.log",
        "journalctl_k_short_precise_REPRO.log",
    ],
)
def test_memcg_oom_journal_styles(name: str) -> None:
    kill = one(parse(name), "kernel.oom_kill")
    assert kill.value == "python" and kill.attr("pid") == 1204455
    assert kill.attr("memcg") is True and kill.attr("anon_rss_kb") == 66889164
    assert kill.attr("host") == "gpu-node-07"


def test_boot_separators_keep_xid() -> None:
    facts = parse("journalctl_k_default_boot_separators_REPRO.log")
    xid = one(facts, "kernel.xid")
    assert xid.value == 95 and xid.attr("pci") == "0000:4C:00.0"
    kill = one(facts, "kernel.oom_kill")
    assert kill.attr("cgroup") == "/system.slice/docker-3f9c1e2d7a4b.scope"


def test_legacy_oom_kill_process_score() -> None:
    facts = parse("dmesg_legacy_kernel_oom_kill_process_score_REPRO.txt")
    first = one(facts, "kernel.oom_kill", pid=25635)
    assert first.attr("score") == 974 and first.attr("anon_rss_kb") == 23902876
    assert first.lineno == 1 and first.attr("count") == 1
    second = one(facts, "kernel.oom_kill", pid=9666)
    assert second.attr("anon_rss_kb") == 23892380 and second.lineno == 3


def test_terminal_wrapped_oom() -> None:
    facts = parse("dmesg_oom_lines_terminal_wrapped_REPRO.txt")
    kill = one(facts, "kernel.oom_kill")
    assert kill.value == "python3" and kill.attr("pid") == 25315
    # `total-vm:53312244<150 spaces>kB` was rejoined.
    assert kill.attr("total_vm_kb") == 53312244 and kill.attr("anon_rss_kb") == 31451456
    assert kill.attr("constraint") == "CONSTRAINT_NONE" and kill.attr("cgroup") == "/user.slice"


def test_localized_dmesg_t_oom() -> None:
    facts = parse("dmesg_T_localized_fr_oom_REPRO.txt")
    kill = one(facts, "kernel.oom_kill")
    assert kill.value == "python" and kill.attr("anon_rss_kb") == 30012344
    assert kill.attr("timestamp") == utc(2025, 11, 28, 7, 26, 44)


def test_npd_memcg_oom_body() -> None:
    kill = one(parse("npd_kmsg_body_oom_kill.txt"), "kernel.oom_kill")
    assert kill.value == "heapster" and kill.attr("memcg") is True
    assert kill.attr("score") == 1035 and kill.attr("shmem_rss_kb") == 12345
    assert kill.lineno == 1


# --- hardware, storage, processes ------------------------------------------------------------


def test_mce_ghes_edac() -> None:
    facts = parse("dmesg_raw_mce_ghes_edac_hardware_error_REPRO.txt")
    bank = one(facts, "kernel.mce", cpu=24)
    assert bank.attr("bank") == 13 and "cc00008000010091" in str(bank.value)
    ghes = one(facts, "kernel.mce", source="ghes")
    assert ghes.attr("severity") == "fatal" and ghes.attr("section_type") == "memory error"
    edac = one(facts, "kernel.edac")
    assert edac.attr("kind") == "CE" and edac.attr("mc") == "MC2"
    assert "CPU_SrcID#1_MC#0_Chan#1_DIMM#0" in str(edac.value)
    assert one(facts, "kernel.panic").value == "Fatal hardware error!"
    assert one(facts, "kernel.mce", source="panic").attr("severity") == "fatal"


def test_npd_hardware_error_body() -> None:
    ghes = one(parse("npd_kmsg_body_hardware_error.txt"), "kernel.mce")
    assert ghes.attr("severity") == "fatal" and ghes.lineno == 2


def test_ext4_xfs_nvme_nfs() -> None:
    facts = parse("dmesg_raw_ext4_xfs_nvme_nfs_errors_REPRO.txt")
    ext4 = pick(facts, "kernel.fs_error", fs="ext4")
    assert {f.attr("device") for f in ext4} == {"nvme1n1p1"}
    assert "Detected aborted journal" in str(ext4[0].value) and ext4[0].lineno == 6
    readonly = one(facts, "kernel.fs_readonly")
    assert readonly.value == "nvme1n1p1" and readonly.attr("fs") == "ext4"
    xfs = pick(facts, "kernel.fs_error", fs="xfs", device="md0")
    assert any("Shutting down filesystem" in str(f.value) for f in xfs)
    assert not any("Please unmount" in str(f.value) for f in xfs)
    devices = {(f.value, f.attr("kind")) for f in pick(facts, "kernel.io_error")}
    assert ("nvme1", "nvme timeout") in devices
    assert ("nvme1n1", "I/O") in devices
    assert ("nvme1n1p1", "buffer") in devices
    nfs = one(facts, "kernel.io_error", fs="nfs")
    assert nfs.value == "fileserver01" and nfs.attr("kind") == "nfs not responding"
    index_full = pick(facts, "kernel.fs_warning", device="sda2")
    assert any("index full" in str(f.value) for f in index_full)


def test_npd_readonly_body() -> None:
    readonly = one(parse("npd_kmsg_body_readonly_filesystem.txt"), "kernel.fs_readonly")
    assert readonly.value == "sda1" and readonly.attr("fs") == "ext4"


def test_segfaults_and_traps() -> None:
    facts = parse("dmesg_raw_segfault_traps_fatal_signal_REPRO.txt")
    nccl = one(facts, "kernel.segfault", lib="libnccl.so.2")
    assert nccl.value == "pt_main_thread" and nccl.attr("pid") == 2536443
    libc = one(facts, "kernel.segfault", lib="libc.so.6")
    assert libc.value == "python" and libc.attr("address") == "0"
    gpf = one(facts, "kernel.segfault", kind="general protection fault")
    assert gpf.value == "pt_autograd_0" and gpf.attr("lib") == "libtorch_cuda.so"
    opcode = one(facts, "kernel.segfault", kind="trap invalid opcode")
    assert opcode.attr("lib") == "_C.cpython-310-x86_64-linux-gnu.so"
    signal = one(facts, "kernel.fatal_signal")
    assert signal.value == 7 and signal.attr("process") == "pt_data_worker"
    assert signal.attr("pid") == 2573311


def test_segfault_decode_iso_counted() -> None:
    facts = parse("dmesg_decode_iso_segfault_libnccl.log")
    seg = one(facts, "kernel.segfault")
    assert seg.value == "pt_main_thread" and seg.attr("count") == 2
    assert seg.attr("timestamp") == pytest.approx(utc(2025, 1, 21, 4, 41, 44) + 0.28506)


def test_hung_task_body() -> None:
    hung = one(parse("npd_kmsg_body_docker_hung.txt"), "kernel.hung_task")
    assert hung.value == "docker" and hung.attr("pid") == 20744 and hung.attr("seconds") == 120


def test_oopses_and_panics() -> None:
    divide = one(parse("npd_kmsg_body_divide_zero.txt"), "kernel.oops")
    assert str(divide.value).startswith("divide error") and divide.attr("process") == "docker"
    null = parse("npd_kmsg_body_null_pointer.txt")
    assert any("NULL pointer" in str(f.value) for f in pick(null, "kernel.oops"))
    pstore = parse("pstore_dmesg_raw_prefix_oops.txt")
    assert one(pstore, "kernel.oops", process="bash").value == "Oops: 0002 [#1] SMP"
    panic = one(parse("pstore_dmesg_kernel_panic_part1.txt"), "kernel.panic")
    assert panic.value == "Test panic triggered by crash_test module" and panic.lineno == 154


def test_misc_bodies() -> None:
    assert one(parse("dmesg_decode_iso_vfs_file_max.log"), "kernel.file_max").value == 1000000
    netdev = one(parse("npd_kmsg_body_unregister_netdevice.txt"), "kernel.unregister_netdevice")
    assert netdev.value == "lo"


@pytest.mark.parametrize(
    "name",
    [
        "dev_kmsg_raw_records.log",
        "journalctl_default_logs_begin_header_azhpc.log",
        "journalctl_k_short_iso.log",
        "dmesg_decode_iso_peermem_truncated_last_line.log",
    ],
)
def test_quiet_logs_have_no_failure_facts(name: str) -> None:
    assert parse(name) == []


# --- prefixes and timestamps -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "text", "host", "stamp"),
    [
        ("[ 1234.567890] NVRM: Xid x", "NVRM: Xid x", None, 1234.56789),
        ("[3017506.733819] Out of memory", "Out of memory", None, 3017506.733819),
        ("<6>[   13.826897] RAPL PMU: x", "RAPL PMU: x", None, 13.826897),
        ("6,3964,206764307,-;nvidia-nvswitch2: open", "nvidia-nvswitch2: open", None, 206.764307),
        ("[Mon Mar 14 09:31:04 2025] msg", "msg", None, utc(2025, 3, 14, 9, 31, 4)),
        ("[Sun Mar  2 09:31:04 2025] msg", "msg", None, utc(2025, 3, 2, 9, 31, 4)),
        ("[ven. nov. 28 07:26:44 2025] msg", "msg", None, utc(2025, 11, 28, 7, 26, 44)),
        ("[Fr Dez 26 07:26:44 2025] msg", "msg", None, utc(2025, 12, 26, 7, 26, 44)),
        (
            "2025-03-14T09:31:04,123456+00:00 nvme nvme1: I/O 4 QID 1 timeout",
            "nvme nvme1: I/O 4 QID 1 timeout",
            None,
            utc(2025, 3, 14, 9, 31, 4) + 0.123456,
        ),
        (
            "2025-03-14T10:31:04,500000+01:00 msg",
            "msg",
            None,
            utc(2025, 3, 14, 9, 31, 4) + 0.5,
        ),
        (
            "kern  :warn  : 2025-01-21T04:41:44,285060+00:00 VFS: x",
            "VFS: x",
            None,
            utc(2025, 1, 21, 4, 41, 44) + 0.28506,
        ),
        ("kern  :err   : [ 5.5] msg", "msg", None, 5.5),
        (
            "Mar 14 09:31:04 gpu-node-07 kernel: python invoked oom-killer",
            "python invoked oom-killer",
            "gpu-node-07",
            utc(SYSLOG_YEAR, 3, 14, 9, 31, 4),
        ),
        (
            "Mar 14 11:47:51.118207 gpu-node-07 kernel: msg",
            "msg",
            "gpu-node-07",
            utc(SYSLOG_YEAR, 3, 14, 11, 47, 51) + 0.118207,
        ),
        (
            "Sep 23 18:37:03 gpu-node-03 kernel: [   34.193735] pcieport x",
            "pcieport x",
            "gpu-node-03",
            utc(SYSLOG_YEAR, 9, 23, 18, 37, 3),
        ),
        (
            "Sep 23 18:37:09 gpu-node-03 python[4113]: RuntimeError: CUDA error",
            "RuntimeError: CUDA error",
            "gpu-node-03",
            utc(SYSLOG_YEAR, 9, 23, 18, 37, 9),
        ),
        (
            "2025-01-17T17:10:43+0000 exp03.job-svc kernel: IPv6: ADDRCONF",
            "IPv6: ADDRCONF",
            "exp03.job-svc",
            utc(2025, 1, 17, 17, 10, 43),
        ),
        (
            "2025-03-14T11:47:51.118207+0000 gpu-node-07 kernel: msg",
            "msg",
            "gpu-node-07",
            utc(2025, 3, 14, 11, 47, 51) + 0.118207,
        ),
        (
            "2025-03-14T11:47:51.118207-05:00 gpu-node-07 kernel: msg",
            "msg",
            "gpu-node-07",
            utc(2025, 3, 14, 16, 47, 51) + 0.118207,
        ),
        ("-- Boot 6b1f0c2d9e8a4f7b8c3d2e1f0a9b8c7d --", None, None, None),
        ("EXT4-fs (sda1): Remounting filesystem read-only", None, None, None),
        ("               NVRM: this kernel module", None, None, None),
    ],
)
def test_split_line_styles(
    raw: str, text: str | None, host: str | None, stamp: float | None
) -> None:
    split = PARSER.split_line(raw)
    assert split.text == (raw if text is None else text)
    assert split.host == host
    if stamp is None:
        assert split.timestamp is None
    else:
        assert split.timestamp == pytest.approx(stamp)
    assert split.rank is None


def test_unknown_locale_month_keeps_message() -> None:
    split = split_kernel_line("[xx. qqq. 28 07:26:44 2025] msg")
    assert split.text == "msg" and split.timestamp is None


def test_syslog_feb_29_parses() -> None:
    split = split_kernel_line("Feb 29 00:00:01 h kernel: x")
    assert split.timestamp == utc(SYSLOG_YEAR, 2, 29, 0, 0, 1)


def test_wrap_gap_removed_only_when_long() -> None:
    assert split_kernel_line("[1.0] a" + " " * 60 + "b").text == "ab"
    assert split_kernel_line("[1.0] a" + " " * 10 + "b").text == "a" + " " * 10 + "b"


def test_make_line_cleans_ansi_and_crlf() -> None:
    line = PARSER.make_line("k.log", 3, "\x1b[31m[ 5.0] NVRM: x\x1b[0m\r\n")
    assert line.text == "NVRM: x" and line.timestamp == 5.0 and line.lineno == 3


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("PCI:0000:3b:00", "0000:3B:00.0"),
        ("00000000:3B:00.0", "0000:3B:00.0"),
        ("0018:01:00", "0018:01:00.0"),
        ("00008ED0:01:00.1", "8ED0:01:00.1"),
        ("nothing", "nothing"),
    ],
)
def test_pci_label(raw: str, expected: str) -> None:
    assert pci_label(raw) == expected


# --- sniffing ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "head",
    [
        "-- Logs begin at Sat 2021-05-29 10:50:24 UTC, end at Sat 2021-05-29 17:47:12 UTC. --\n",
        "Oops#1 Part1\n<4>[  1.0] x\n",
        "[    0.000000] Linux version 6.8.0\n[    0.000001] Command line: BOOT_IMAGE=\n",
    ],
)
def test_sniff_certain_styles(head: str) -> None:
    assert KernelLogParser.sniff(head) >= 0.9


@pytest.mark.parametrize(
    "head",
    [
        "",
        "\n\n   \n",
        "hello world\nthis is text\n",
        'Traceback (most recent call last):\n  File "x.py", line 1\nRuntimeError: CUDA error\n',
        "[rank3]: Killed process 12 (python)\n[rank3]: Traceback (most recent call last):\n"
        "[rank3]: x\n[rank3]: y\n",
        '{"Id": "abc", "State": {"OOMKilled": true}}',
        "\x00\x01\x02\xff\xfe garbage \x00",
    ],
)
def test_sniff_low(head: str) -> None:
    assert KernelLogParser.sniff(head) < 0.3


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n",
        "\x00\x01\x02\xff\xfe garbage \x00\n\x1b[31m",
        "NVRM: Xid (PCI:zz): notanumber, pid=\n",
        "NVRM: Xid (PCI:0000:01:00): 79",
        "Out of memory: Killed process 1 (",
        "oom-kill:constraint=,,,=,task=\nKilled process x\n",
        "[ 1.0] NVRM: this kernel module has the version 1.2\n",
        "[ 5.0] pcieport 0000:00:02.0:    [ 5] Surprise Down Error\n",
        "[ 9.1] {1}[Hardware Error]:   section_type: memory error\n",
        "[ 1.0] CPU: 3 PID: 4 Comm: x\n",
        "[99999999999999999999.5] x\n[Mon Foo 99 99:99:99 2025] y\n",
    ],
)
def test_bad_input_does_not_raise(text: str) -> None:
    lines, facts = collect_text(PARSER, text, "bad")
    assert isinstance(lines, list) and isinstance(facts, list)


def test_truncated_xid_line_still_counts() -> None:
    facts = text_facts("[74889.644138] NVRM: Xid (PCI:0000:02:00): 79")
    xid = one(facts, "kernel.xid")
    assert xid.value == 79 and xid.attr("message") is None
    assert one(facts, "kernel.gpu_off_bus").attr("pci") == "0000:02:00.0"


def test_truncated_last_line_sample() -> None:
    text = sample_text(f"{FOLDER}/dmesg_decode_iso_peermem_truncated_last_line.log")
    lines, _ = collect_text(PARSER, text, "x")
    assert lines[-1].text == "test"


def test_unknown_xid_code_is_kept() -> None:
    xid = one(text_facts("[1.0] NVRM: Xid (PCI:0000:01:00): 999, pid=1, name=x, y\n"), "kernel.xid")
    assert xid.value == 999 and "not in" in str(xid.attr("meaning"))
    assert xid.attr("category") is None


def test_state_is_bounded() -> None:
    many = "".join(
        f"[{i}.0] NVRM: Xid (PCI:0000:{i % 256:02x}:{i // 256 % 32:02x}): {i % 200 + 1}, x\n"
        for i in range(MAX_ENTRIES * 2)
    )
    facts = text_facts(many)
    assert len(facts) <= MAX_ENTRIES + 1
    assert int(one(facts, "kernel.dropped_entries").value) > 0


def test_repeats_collapse_into_one_fact() -> None:
    facts = text_facts("[1.0] NVRM: Xid (PCI:0000:01:00): 45, pid=1, name=x, Ch 1\n" * 5000)
    assert one(facts, "kernel.xid").attr("count") == 5000


def test_prefix_test_agrees_with_the_splitter_on_every_sample_line() -> None:
    from crashlens.parsers.dmesg.prefixes import has_kernel_prefix, split_kernel_prefix

    for path in sorted((SAMPLES / "dmesg").iterdir()):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            assert has_kernel_prefix(line) == (split_kernel_prefix(line) is not None), line
