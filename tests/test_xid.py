"""Tests for the Xid catalog (patterns/tables/xid.toml via crashlens.parsers.dmesg.xid)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from crashlens.errors import PatternError
from crashlens.match.rules import default_pattern_dir
from crashlens.parsers.dmesg.xid import (
    CATEGORIES,
    SEVERITIES,
    XidInfo,
    catalog,
    load_table,
    lookup,
    table_path,
)

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


def test_catalog_has_no_extra_codes() -> None:
    assert sorted(catalog()) == sorted(FIELD_NOTES_CODES)


@pytest.mark.parametrize(
    ("code", "category", "bucket", "severity"),
    [
        (79, "hardware", "RESTART_BM", "critical"),
        (48, "hardware", "WORKFLOW_XID_48", "critical"),
        (94, "hardware", "RESTART_APP", "error"),
        (95, "hardware", "RESET_GPU", "critical"),
        (63, "hardware", "IGNORE", "warning"),
        (119, "hardware", "RESET_GPU", "critical"),
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
    assert lookup(1) is None
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
