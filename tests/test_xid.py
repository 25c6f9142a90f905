"""Tests for the Xid catalog (patterns/tables/xid.toml via crashlens.parsers.dmesg.xid)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from crashlens.errors import PatternError
from crashlens.match.catalogs import xid_examples
from crashlens.match.rules import Rule, default_pattern_dir, load_rules
from crashlens.model import Category, InputKind, Role
from crashlens.parsers.base import collect_text
from crashlens.parsers.dmesg import KernelLogParser
from crashlens.parsers.dmesg.xid import (
    CATEGORIES,
    SEVERITIES,
    XidInfo,
    catalog,
    load_table,
    lookup,
    table_path,
)
from mechanism_helpers import report_of

FIELD_NOTES_CODES = (
    [13, 31, 43, 45, 46, 48, 62, 63, 64, 74, 79, 92, 94, 95, 109, 110, 119, 120, 136, 140, 143]
    + list(range(144, 151))
    + [154, 155, 156, 158]
)
"""Every code in the field notes' training-relevant Xid table, section (c)."""


def test_table_lives_with_the_rules() -> None:
    assert table_path() == default_pattern_dir() / "tables" / "xid.toml"
    assert table_path().is_file()


@pytest.mark.parametrize("code", FIELD_NOTES_CODES)
def test_every_field_notes_code_is_listed(code: int) -> None:
    info = lookup(code)
    assert info is not None
    assert info.code == code
    assert info.name and info.meaning and info.action
    assert info.category in CATEGORIES and info.severity in SEVERITIES


def test_catalog_lists_every_code_of_nvidias_catalog() -> None:
    # NVIDIA's catalog numbers its codes 1..172 without gaps (unused ones included).
    assert sorted(catalog()) == list(range(1, 173))


@pytest.mark.parametrize(
    ("code", "category", "bucket", "severity"),
    [
        (79, "hardware", "RESTART_BM", "critical"),
        (48, "hardware", "WORKFLOW_XID_48", "critical"),
        (94, "hardware", "RESTART_APP", "error"),
        (95, "hardware", "RESET_GPU", "critical"),
        (63, "hardware", "IGNORE", "warning"),
        (119, "driver", "RESET_GPU", "critical"),
        (13, "application", "RESTART_APP", "error"),
        (31, "application", "RESTART_APP", "error"),
        (43, "noise", "IGNORE", "info"),
        (45, "noise", "WORKFLOW_XID_45", "info"),
        (149, "hardware", "WORKFLOW_NVLINK5_ERR", "error"),
    ],
)
def test_key_codes(code: int, category: str, bucket: str, severity: str) -> None:
    info = lookup(code)
    assert info is not None
    assert (info.category, info.bucket, info.severity) == (category, bucket, severity)


def test_unknown_code() -> None:
    assert lookup(999) is None
    assert lookup(-5) is None


def test_info_is_frozen_and_cached() -> None:
    info = lookup(79)
    assert isinstance(info, XidInfo)
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.code = 1  # type: ignore[misc]
    assert lookup(79) is info


def test_header_names_sources() -> None:
    head = table_path().read_text(encoding="utf-8")[:3000]
    assert "https://docs.nvidia.com/deploy/xid-errors/" in head


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "xid.toml"
    path.write_text(body, encoding="utf-8")
    return path


GOOD = """
[[xid]]
code = 7
name = "n"
meaning = "m"
category = "hardware"
severity = "error"
bucket = "RESET_GPU"
action = "a"
"""


def test_load_table_reads_minimal_entry(tmp_path: Path) -> None:
    table = load_table(_write(tmp_path, GOOD))
    assert table[7].investigatory == "" and table[7].bucket == "RESET_GPU"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("not toml [[[", "cannot read"),
        ("xid = 3", r"expected \[\[xid\]\]"),
        (GOOD.replace('action = "a"', ""), "missing field 'action'"),
        (GOOD.replace('category = "hardware"', 'category = "gpu"'), "category"),
        (GOOD.replace('severity = "error"', 'severity = "bad"'), "severity"),
        (GOOD.replace("code = 7", 'code = "7"'), "positive integer"),
        (GOOD.replace('name = "n"', "name = 3"), "name must be a string"),
        (GOOD + GOOD, "listed twice"),
    ],
)
def test_load_table_rejects_bad_entries(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(PatternError, match=message):
        load_table(_write(tmp_path, body))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(PatternError):
        load_table(tmp_path / "absent.toml")


# --- the catalog drives the rules ----------------------------------------------------------

RULES = load_rules(default_pattern_dir())
EXAMPLES = xid_examples(table_path())
GENERIC = (
    "hardware-xid-other-hardware",
    "hardware-xid-hardware-warning",
    "hardware-xid-application-fault",
    "hardware-xid-informational",
    "driver-xid-driver-fault",
    "driver-xid-driver-warning",
)
"""The rules that select kernel.xid facts by the catalog's category and severity."""


def _rules_hitting(code: int) -> list[Rule]:
    """The rules a kernel log holding only the code's example line triggers (lines and facts)."""
    line = EXAMPLES[code]
    _, facts = collect_text(KernelLogParser(), line, "dmesg.txt")
    xids = [item for item in facts if item.key == "kernel.xid"]
    assert [item.value for item in xids] == [code]
    return [
        rule
        for rule in RULES
        if InputKind.DMESG in rule.inputs
        and (rule.match_line(line) is not None or any(rule.match_fact(x) for x in xids))
    ]


@pytest.mark.parametrize("code", range(1, 173))
def test_every_code_reaches_exactly_the_rule_its_reading_calls_for(code: int) -> None:
    info = lookup(code)
    assert info is not None
    hits = _rules_hitting(code)
    assert len(hits) == 1, f"Xid {code}: {[rule.id for rule in hits]}"  # one line, one rule
    rule = hits[0]
    wanted = Category.DRIVER if info.category == "driver" else Category.HARDWARE
    assert rule.category is wanted
    if rule.id not in GENERIC:
        return  # a rule of its own (79, 48, NVLink5...) sets its own role and weight
    if info.category == "hardware" and info.severity in ("critical", "error"):
        assert rule.role is Role.ROOT
    elif info.category == "driver" and info.severity == "error":
        assert rule.role is Role.SYMPTOM
    else:  # degradation, information, the job's own fault: never the cause by itself
        assert rule.role is Role.CONTEXT


def test_generic_rules_leave_out_exactly_the_codes_with_a_rule_of_their_own() -> None:
    generic = [rule for rule in RULES if rule.id in GENERIC]
    assert len(generic) == len(GENERIC)
    own = {
        code
        for code, line in EXAMPLES.items()
        for rule in RULES
        if rule.id not in GENERIC and "-xid-" in rule.id and rule.match_line(line)
    }
    for rule in generic:
        (condition,) = rule.facts
        assert condition.op == "not_in"
        assert set(condition.value) == own, rule.id  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("code", "category", "severity", "bucket", "investigatory"),
    [
        (8, "application", "error", "RESTART_APP", "CONTACT_SUPPORT"),
        (32, "application", "error", "RESTART_APP", "CHECK_APP/CUDA"),
        (38, "driver", "error", "IGNORE", "CONTACT_SUPPORT"),
        (54, "hardware", "critical", "CHECK_MECHANICALS", "CONTACT_SUPPORT"),
        (78, "driver", "error", "UPDATE_SWFW", "UPDATE_SWFW"),
        (80, "hardware", "error", "RESTART_APP", "CHECK_APP/CUDA"),
        (106, "noise", "info", "IGNORE", "IGNORE"),
        (137, "application", "error", "IGNORE", "XID_137_FLOW"),
        (159, "driver", "error", "CHECK_UVM", "SYMPATHETIC_REPORT_SOLO"),
        (171, "hardware", "critical", "", ""),
    ],
)
def test_codes_beyond_the_field_notes(
    code: int, category: str, severity: str, bucket: str, investigatory: str
) -> None:
    info = lookup(code)
    assert info is not None
    assert (info.category, info.severity) == (category, severity)
    assert (info.bucket, info.investigatory) == (bucket, investigatory)


def test_codes_the_catalog_calls_unused_say_so() -> None:
    unused = [info for info in catalog().values() if info.name == "Unused"]
    assert len(unused) >= 15
    assert all(info.category == "noise" and "unused" in info.meaning for info in unused)
    legacy = [info for info in catalog().values() if info.meaning.startswith("Legacy code")]
    assert legacy and all("unused by current drivers" in info.meaning for info in legacy)


def test_a_hardware_xid_in_a_real_kernel_log_names_its_meaning() -> None:
    text = (
        "[Fri Aug 30 13:20:07 2024] NVRM: GPU at PCI:0000:3b:00: GPU-509665ad-b600-ac93-3616\n"
        "[Fri Aug 30 13:20:07 2024] NVRM: Xid (PCI:0000:3b:00): 167, pid='<unknown>', "
        "name=<unknown>, PCIE_FATAL_TIMEOUT\n"
    )
    _, facts = collect_text(KernelLogParser(), text, "dmesg.txt")
    (xid,) = [item for item in facts if item.key == "kernel.xid"]
    assert xid.attr("category") == "hardware" and xid.attr("severity") == "critical"
    assert xid.attr("name") == "PCIe fatal timeout"
    (rule,) = [rule for rule in RULES if rule.match_fact(xid)]
    assert rule.id == "hardware-xid-other-hardware"


def test_an_application_xid_alone_is_a_failure_of_no_category_of_ours(tmp_path: Path) -> None:
    # a kernel log is no record of the run's end, and one holding nothing but a noise Xid says
    # nothing failed; a GPU memory page fault (31) stopped a process's work: not `none`
    page_fault = report_of(
        tmp_path / "fault",
        {
            "dmesg.txt": "[Mon May  6 10:00:00 2024] NVRM: Xid (PCI:0000:3b:00): 31, pid=4242,"
            " name=python, Ch 00000008, intr 10000000. MMU Fault: ENGINE GRAPHICS"
            " GPCCLIENT_T1_0 faulted @ 0x7f_12340000. Fault is of type FAULT_PDE"
            " ACCESS_TYPE_VIRT_READ\n"
        },
    )
    assert str(page_fault.verdict) == "unknown"
    cleanup = report_of(
        tmp_path / "cleanup",
        {
            "dmesg.txt": "[Mon May  6 10:00:00 2024] NVRM: Xid (PCI:0000:3b:00): 45, pid=4242,"
            " name=python, Ch 00000010\n"
        },
    )
    assert str(cleanup.verdict) == "none"
