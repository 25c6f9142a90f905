"""The nvidia-smi health catalog (patterns/tables/nvidia_smi_health.toml), the facts the -q and
-q -x readers emit for its fields, and the rules that turn bad states into evidence."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from crashlens.library import tables_dir
from crashlens.match.catalogs import Catalog, CatalogEntry, load_catalog, referenced_entries
from crashlens.match.rules import Rule, default_pattern_dir, load_rules
from crashlens.model import Fact, InputKind
from crashlens.parsers.nvidia_smi import NvidiaSmiParser

from conftest import SAMPLES, sample_text

TABLE: Catalog = load_catalog(tables_dir() / "nvidia_smi_health.toml")
BY_ID = {entry.id: entry for entry in TABLE.entries}
RULES = load_rules(default_pattern_dir())
SMI_RULES = [rule for rule in RULES if InputKind.NVIDIA_SMI in rule.inputs]
PARSER = NvidiaSmiParser()
HEALTH_RULES = {
    "hardware-nvidia-smi-ecc-uncorrected",
    "hardware-nvidia-smi-remap-pending",
    "hardware-nvidia-smi-remapping-failure",
    "hardware-nvidia-smi-reset-required",
    "hardware-nvidia-smi-clocks-slowdown",
    "hardware-nvidia-smi-corrected-errors",
    "hardware-thermal",
    "driver-nvidia-smi-fabric-in-progress",
    "hardware-nvidia-smi-err-field",
}
FACT_ONLY: set[str] = set()
"""Entries whose bad state no line shows by itself (none today: even the error sentinels are
matched on -q lines that name a non-power field)."""


def _catalog_spec(rule: Rule) -> object:
    with open(rule.source, "rb") as handle:
        return tomllib.load(handle).get("match", {}).get("catalog")


def _referencing(entry: CatalogEntry) -> list[Rule]:
    return [
        rule
        for rule in RULES
        if (spec := _catalog_spec(rule)) is not None
        and entry in referenced_entries(spec, rule.source)
    ]


def _parse(text: str, name: str = "nvidia-smi.txt") -> list[Fact]:
    return PARSER.parse(text, name).facts


def _hits(text: str, name: str = "nvidia-smi.txt") -> set[str]:
    """The rules an nvidia-smi input triggers, by its lines and by its parsed facts."""
    hit = {rule.id for rule in SMI_RULES for fact in _parse(text, name) if rule.match_fact(fact)}
    for line in text.splitlines():
        hit |= {rule.id for rule in SMI_RULES if rule.match_line(line) is not None}
    return hit


def _values(facts: list[Fact], key: str) -> list[object]:
    return [fact.value for fact in facts if fact.key == key]


# --- the table ---------------------------------------------------------------------------------


def test_table_lists_the_health_fields() -> None:
    assert len(TABLE.entries) == 28
    assert {entry.category for entry in TABLE.entries} == {"hardware", "driver", "noise"}
    noise = {entry.id.split("/")[-1] for entry in TABLE.entries if entry.category == "noise"}
    assert noise == {
        "SW Power Cap",
        "Idle",
        "Applications Clocks Setting",
        "Sync Boost",
        "Display Clock Setting",
    }
    for entry in TABLE.entries:
        if entry.role.value in ("root", "symptom") and entry.id not in FACT_ONLY:
            assert "bad:" in entry.meaning, entry.id  # the values that mean trouble


@pytest.mark.parametrize("entry", TABLE.entries, ids=[e.id for e in TABLE.entries])
def test_every_state_is_hit_by_the_one_rule_that_references_it(entry: CatalogEntry) -> None:
    (rule,) = _referencing(entry)
    assert rule.match_line(entry.example) is not None, entry.example
    if entry.category == "noise":  # shown as harmless, never evidence of a failure
        assert not rule.failure and rule.weight <= 0.05
    else:
        assert rule.category.value == entry.category


@pytest.mark.parametrize("entry", TABLE.entries, ids=[e.id for e in TABLE.entries])
def test_healthy_values_of_a_field_hit_no_rule(entry: CatalogEntry) -> None:
    healthy = {"Not Active", "No", "0", "N/A", "None", "Completed"}
    for value in healthy:
        line = re.sub(r"(:[ \t]*|>)[^:<>]+?([ \t]*$|</)", rf"\g<1>{value}\g<2>", entry.example)
        assert not any(rule.match_line(line) for rule in SMI_RULES), line


# --- real dumps: healthy as shipped, in trouble once a field is changed --------------------------

QUERY_SAMPLES = sorted(p.name for p in (SAMPLES / "nvidia_smi").glob("q*_*"))


@pytest.mark.parametrize("name", QUERY_SAMPLES)
def test_real_healthy_dumps_raise_no_health_evidence(name: str) -> None:
    text = sample_text(f"nvidia_smi/{name}")
    assert not _hits(text, name) & HEALTH_RULES


def _q535() -> str:
    return sample_text("nvidia_smi/q_535.154.05_8xh100.txt")


def _q590() -> str:
    return sample_text("nvidia_smi/q_590.48.01_h100_mig.txt")


def _set(text: str, label: str, old: str, new: str) -> str:
    """Change the first `label : old` line of a dump to `new` (keeping its alignment)."""
    pattern = re.compile(rf"^([ \t]*{re.escape(label)}[ \t]*: ){re.escape(old)}[ \t]*$", re.M)
    changed, count = pattern.subn(lambda m: m.group(1) + new, text, count=1)
    assert count == 1, label
    return changed


@pytest.mark.parametrize(
    ("label", "old", "new", "key", "value", "rule"),
    [
        ("Remapping Failure Occurred", "No", "Yes", "gpu.remapping_failure", True,
         "hardware-nvidia-smi-remapping-failure"),
        ("Uncorrectable Error", "0", "3", "gpu.remapped_rows_uncorrectable", 3,
         "hardware-nvidia-smi-ecc-uncorrected"),
        ("Correctable Error", "0", "7", "gpu.remapped_rows_correctable", 7,
         "hardware-nvidia-smi-corrected-errors"),
        ("Reset Required", "No", "Yes", "gpu.reset_required", True,
         "hardware-nvidia-smi-reset-required"),
        ("Drain and Reset Recommended", "N/A", "Yes", "gpu.drain_and_reset_recommended", True,
         "hardware-nvidia-smi-reset-required"),
        ("HW Slowdown", "Not Active", "Active", "gpu.clocks_event", "hw_slowdown",
         "hardware-nvidia-smi-clocks-slowdown"),
        ("HW Thermal Slowdown", "Not Active", "Active", "gpu.clocks_event",
         "hw_thermal_slowdown", "hardware-thermal"),
        ("SW Thermal Slowdown", "Not Active", "Active", "gpu.clocks_event",
         "sw_thermal_slowdown", "hardware-nvidia-smi-clocks-slowdown"),
        ("State", "N/A", "In Progress", "gpu.fabric_state", "In Progress",
         "driver-nvidia-smi-fabric-in-progress"),
    ],
)  # fmt: skip
def test_query_535_bad_states(
    label: str, old: str, new: str, key: str, value: object, rule: str
) -> None:
    text = _set(_q535(), label, old, new)
    assert value in _values(_parse(text), key)
    assert rule in _hits(text)


@pytest.mark.parametrize(
    ("label", "old", "new", "key", "value", "rule"),
    [
        ("GPU Recovery Action", "None", "Reboot", "gpu.recovery_action", "Reboot",
         "hardware-nvidia-smi-reset-required"),
        ("Unrepairable Memory", "No", "Yes", "gpu.unrepairable_memory", True,
         "hardware-nvidia-smi-remapping-failure"),
        ("SRAM Threshold Exceeded", "No", "Yes", "gpu.sram_threshold_exceeded", True,
         "hardware-nvidia-smi-remapping-failure"),
        ("TPC Repair Pending", "No", "Yes", "gpu.tpc_repair_pending", True,
         "hardware-nvidia-smi-remap-pending"),
        ("DRAM Uncorrectable", "0", "2", "gpu.ecc_uncorrected", 2,
         "hardware-nvidia-smi-ecc-uncorrected"),
        ("SRAM Uncorrectable Parity", "0", "1", "gpu.ecc_uncorrected", 1,
         "hardware-nvidia-smi-ecc-uncorrected"),
        ("DRAM Correctable", "0", "40", "gpu.ecc_corrected", 40,
         "hardware-nvidia-smi-corrected-errors"),
        ("HW Power Brake Slowdown", "Not Active", "Active", "gpu.clocks_event",
         "hw_power_brake_slowdown", "hardware-nvidia-smi-clocks-slowdown"),
        ("State", "Completed", "In Progress", "gpu.fabric_state", "In Progress",
         "driver-nvidia-smi-fabric-in-progress"),
    ],
)  # fmt: skip
def test_query_590_bad_states(
    label: str, old: str, new: str, key: str, value: object, rule: str
) -> None:
    text = _set(_q590(), label, old, new)
    assert value in _values(_parse(text), key)
    assert rule in _hits(text)


def test_query_590_healthy_facts() -> None:
    facts = _parse(_q590())
    assert _values(facts, "gpu.recovery_action") == ["None"]
    assert _values(facts, "gpu.fabric_state") == ["Completed"]
    assert _values(facts, "gpu.fabric_status") == ["Success"]
    assert _values(facts, "gpu.unrepairable_memory") == [False]
    assert _values(facts, "gpu.sram_threshold_exceeded") == [False]
    assert sorted(_values(facts, "gpu.ecc_corrected")) == [0, 0]
    assert not _values(facts, "gpu.clocks_event")  # every reason Not Active


def test_old_drivers_throttle_reasons_and_single_bit_counts() -> None:
    text = sample_text("nvidia_smi/q_460.32.03_8xa100.txt")
    assert _values(_parse(text), "gpu.clocks_event")[:1] == ["idle"]  # Idle is Active there
    text = _set(text, "HW Power Brake Slowdown", "Not Active", "Active")
    assert "hw_power_brake_slowdown" in _values(_parse(text), "gpu.clocks_event")
    assert "hardware-nvidia-smi-clocks-slowdown" in _hits(text)
    old_ecc = (
        "GPU 00000000:3B:00.0\n    Product Name                          : Tesla V100\n"
        "    ECC Errors\n        Volatile\n            Single Bit\n"
        "                Total                     : 12\n            Double Bit\n"
        "                Total                     : 0\n"
        "    Retired Pages\n        Single Bit ECC                    : 2\n"
    )
    facts = _parse(old_ecc)
    assert _values(facts, "gpu.ecc_corrected") == [12]
    assert _values(facts, "gpu.ecc_uncorrected") == [0]
    assert _values(facts, "gpu.retired_pages_sbe") == [2]


def _xml(name: str, **changes: tuple[str, str]) -> str:
    text = sample_text(f"nvidia_smi/{name}")
    for tag, (old, new) in changes.items():
        before = f"<{tag}>{old}</{tag}>"
        assert before in text, tag
        text = text.replace(before, f"<{tag}>{new}</{tag}>", 1)
    return text


def test_xml_a100_bad_states() -> None:
    text = _xml(
        "qx_a100-sxm4-v12.xml",
        clocks_event_reason_hw_slowdown=("Not Active", "Active"),
        drain_and_reset_recommended=("No", "Yes"),
        dram_correctable=("0", "5"),
        dram_uncorrectable=("0", "1"),
    )
    facts = _parse(text, "q.xml")
    assert _values(facts, "gpu.clocks_event") == ["hw_slowdown"]
    assert _values(facts, "gpu.drain_and_reset_recommended") == [True]
    assert 5 in _values(facts, "gpu.ecc_corrected")
    assert 1 in _values(facts, "gpu.ecc_uncorrected")
    hits = _hits(text, "q.xml")
    assert {
        "hardware-nvidia-smi-clocks-slowdown",
        "hardware-nvidia-smi-reset-required",
        "hardware-nvidia-smi-corrected-errors",
        "hardware-nvidia-smi-ecc-uncorrected",
    } <= hits


def test_xml_t4_old_throttle_tags_and_retired_pages() -> None:
    text = _xml(
        "qx_tesla-t4.xml",
        clocks_throttle_reason_sw_thermal_slowdown=("Not Active", "Active"),
        pending_retirement=("No", "Yes"),
    )
    facts = _parse(text, "q.xml")
    assert _values(facts, "gpu.clocks_event") == ["sw_thermal_slowdown"]
    assert _values(facts, "gpu.retired_pages_sbe") == [0]
    assert _values(facts, "gpu.retired_pages_pending") == [True]
    assert {"hardware-nvidia-smi-clocks-slowdown", "hardware-nvidia-smi-remap-pending"} <= _hits(
        text, "q.xml"
    )


def test_xml_recovery_action_and_fabric() -> None:
    text = _xml("qx_rtx-3080-v13.xml", gpu_recovery_action=("None", "Reset"))
    assert _values(_parse(text, "q.xml"), "gpu.recovery_action") == ["Reset"]
    assert "hardware-nvidia-smi-reset-required" in _hits(text, "q.xml")
    text = _xml("qx_a100-sxm4-v12.xml", state=("N/A", "In Progress"))
    assert _values(_parse(text, "q.xml"), "gpu.fabric_state") == ["In Progress"]


def test_error_sentinels_come_from_the_parsed_dump() -> None:
    text = _set(_q535(), "Fan Speed", "38 %", "ERR!")
    (err,) = [fact for fact in _parse(text) if fact.key == "gpu.err_field"]
    assert err.value == "fan.speed"
    assert "hardware-nvidia-smi-err-field" in _hits(text)


def test_samples_folder_is_what_the_tests_read() -> None:
    assert Path(SAMPLES / "nvidia_smi" / "q_590.48.01_h100_mig.txt").is_file()
