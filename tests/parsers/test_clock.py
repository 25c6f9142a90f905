"""Every timestamp style the log parsers read gives its value and the clock it counts.

Each case is a real line of a shared sample; the expected value is computed here from the
printed fields with `datetime`, not with the parsers' own helpers.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from crashlens.model import Clock
from crashlens.parsers.base import LogParser
from crashlens.parsers.dmesg import SYSLOG_YEAR, KernelLogParser
from crashlens.parsers.launcher import GLOG_YEAR, LauncherParser

from conftest import SAMPLES, sample_text

LAUNCHER = LauncherParser()
KERNEL = KernelLogParser()


def _utc(year: int, month: int, day: int, hh: int, mm: int, ss: int, us: int = 0) -> float:
    return datetime(year, month, day, hh, mm, ss, us, tzinfo=UTC).timestamp()


CASES = [
    # (parser, sample, 1-based line, clock, seconds)
    (
        LAUNCHER,
        "launcher/deepspeed_launcher_single_node_return_code_-9_REPRO.log",
        1,  # [2025-03-14 10:01:58,711] [INFO] ...
        Clock.WALL,
        _utc(2025, 3, 14, 10, 1, 58, 711000),
    ),
    (
        LAUNCHER,
        "launcher/torchrun_glog_prefix_sigkill_host_oom_progress_cr_REPRO.log",
        1,  # W0314 09:12:40.118000 140213 site-packages/torch/distributed/run.py:793]
        Clock.YEARLESS,
        _utc(GLOG_YEAR, 3, 14, 9, 12, 40, 118000),
    ),
    (
        LAUNCHER,
        "launcher/torchrun_nccl_watchdog_timeout_sigabrt_REPRO.log",
        1,  # [rank3]:[E314 12:40:11.274431018 ProcessGroupNCCL.cpp:616]
        Clock.YEARLESS,
        _utc(GLOG_YEAR, 3, 14, 12, 40, 11) + 0.274431018,
    ),
    (
        KERNEL,
        "dmesg/dev_kmsg_raw_records.log",
        1,  # 6,3964,206764307,-;  (microseconds since boot)
        Clock.BOOT,
        206.764307,
    ),
    (
        KERNEL,
        "dmesg/dmesg_raw_mce_ghes_edac_hardware_error_REPRO.txt",
        1,  # [1209871.204512]
        Clock.BOOT,
        1209871.204512,
    ),
    (
        KERNEL,
        "dmesg/pstore_dmesg_raw_prefix_oops.txt",
        1,  # <6>[  201.650687]
        Clock.BOOT,
        201.650687,
    ),
    (
        KERNEL,
        "dmesg/dmesg_T_xid119_gsp_timeout.log",
        1,  # [Sun Feb 23 16:24:18 2025]
        Clock.WALL,
        _utc(2025, 2, 23, 16, 24, 18),
    ),
    (
        KERNEL,
        "dmesg/dmesg_T_localized_fr_oom_REPRO.txt",
        1,  # [ven. nov. 28 07:26:44 2025]
        Clock.WALL,
        _utc(2025, 11, 28, 7, 26, 44),
    ),
    (
        KERNEL,
        "dmesg/dmesg_time_format_iso_xid48_63_94_peermem.log",
        1,  # 2024-11-15T05:39:15,491363+00:00
        Clock.WALL,
        _utc(2024, 11, 15, 5, 39, 15, 491363),
    ),
    (
        KERNEL,
        "dmesg/dmesg_decode_iso_vfs_file_max.log",
        1,  # kern  :warn  : 2025-01-21T04:41:44,285060+00:00
        Clock.WALL,
        _utc(2025, 1, 21, 4, 41, 44, 285060),
    ),
    (
        KERNEL,
        "dmesg/journalctl_k_short_iso.log",
        1,  # 2025-01-17T17:10:43+0000 host kernel:
        Clock.WALL,
        _utc(2025, 1, 17, 17, 10, 43),
    ),
    (
        KERNEL,
        "dmesg/kern_log_syslog_pciehp_xid79_REPRO.log",
        1,  # Sep 23 18:37:03 gpu-node-03 kernel: [   34.193735]  (the wall time wins)
        Clock.YEARLESS,
        _utc(SYSLOG_YEAR, 9, 23, 18, 37, 3),
    ),
    (
        KERNEL,
        "dmesg/journalctl_k_short_precise_REPRO.log",
        1,  # Mar 14 11:47:51.118207 gpu-node-07 kernel:
        Clock.YEARLESS,
        _utc(SYSLOG_YEAR, 3, 14, 11, 47, 51, 118207),
    ),
]


@pytest.mark.parametrize(
    ("parser", "name", "lineno", "clock", "seconds"),
    CASES,
    ids=[f"{case[3]}-{case[1].split('/')[1]}" for case in CASES],
)
def test_sample_line_has_its_clock(
    parser: LogParser, name: str, lineno: int, clock: Clock, seconds: float
) -> None:
    raw = sample_text(name).split("\n")[lineno - 1]
    line = parser.make_line(name, lineno, raw)
    assert line.clock is clock
    assert line.timestamp == pytest.approx(seconds, abs=1e-6)


@pytest.mark.parametrize(
    ("parser", "raw"),
    [
        (LAUNCHER, "Traceback (most recent call last):"),
        (LAUNCHER, "[rank3]: RuntimeError: CUDA error"),
        # glog-shaped but month 13: not a timestamp, so neither a time nor a clock
        (LAUNCHER, "E1325 20:57:27.620000 2606 api.py:869] boom"),
        (KERNEL, "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."),
        # a syslog line whose month is no month: the host is kept, the time is not
        (KERNEL, "Foo 23 18:37:03 gpu-node-03 kernel: NVRM: Xid (PCI:0000:3b:00): 79"),
    ],
)
def test_no_time_means_no_clock(parser: LogParser, raw: str) -> None:
    line = parser.make_line("x.log", 1, raw)
    assert line.timestamp is None
    assert line.clock is None


def test_yearless_times_still_order_the_lines_of_one_file() -> None:
    name = "dmesg/kern_log_memcg_oom_docker_cgroupv2_REPRO.log"
    lines = [
        KERNEL.make_line(name, n, raw) for n, raw in enumerate(sample_text(name).split("\n"), 1)
    ]
    stamped = [line for line in lines if line.timestamp is not None]
    assert len(stamped) > 50
    assert {line.clock for line in stamped} == {Clock.YEARLESS}
    times = [line.timestamp for line in stamped if line.timestamp is not None]
    assert times == sorted(times)


@pytest.mark.parametrize(
    ("parser", "folder"), [(KERNEL, "dmesg"), (LAUNCHER, "launcher")], ids=["dmesg", "launcher"]
)
def test_a_time_always_comes_with_its_clock(parser: LogParser, folder: str) -> None:
    """On every line of every sample; and a kernel log is printed in one clock throughout."""
    for path in sorted((SAMPLES / folder).iterdir()):
        lines = [
            parser.make_line(path.name, n, raw)
            for n, raw in enumerate(sample_text(f"{folder}/{path.name}").split("\n"), 1)
        ]
        assert all((line.timestamp is None) == (line.clock is None) for line in lines), path
        if folder == "dmesg":
            assert len({line.clock for line in lines if line.clock}) <= 1, path
