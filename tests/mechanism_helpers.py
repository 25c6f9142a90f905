"""Scenarios of the batch mechanism tests: a folder of logs written for the test, and the
verdict and rule `crashlens analyze` must reach on it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crashlens.library import tables_dir
from crashlens.match.catalogs import load_catalog
from crashlens.match.rules import Rule, shipped_rules
from crashlens.model import Ending, Report
from crashlens.pipeline import analyze, analyze_inputs, build_report


@dataclass(frozen=True)
class Scenario:
    name: str
    files: dict[str, str]
    verdict: str
    rule: str


def write_folder(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    """A folder under `tmp_path` holding `files` (name -> text)."""
    folder = tmp_path / name
    folder.mkdir()
    for file_name, text in files.items():
        (folder / file_name).write_text(text, encoding="utf-8")
    return folder


def assert_scenario_verdict(tmp_path: Path, scenario: Scenario) -> None:
    """The scenario's verdict is reached, and its rule is among the top cause's evidence."""
    report = analyze([str(write_folder(tmp_path, scenario.name, scenario.files))])
    assert str(report.verdict) == scenario.verdict, [
        (c.category, c.confidence) for c in report.causes
    ]
    assert scenario.rule in {item.rule for item in report.causes[0].evidence}


def report_of(folder: Path, files: dict[str, str]) -> Report:
    """The report on `folder` after writing `files` (name -> text) into it."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    rules = shipped_rules()
    return build_report(analyze_inputs([str(folder)], rules=rules), rules)


def log_report(folder: Path, text: str) -> Report:
    """The report on `folder` holding one launcher log, `train.log`, with `text`."""
    return report_of(folder, {"train.log": text})


def assert_leads(report: Report, category: str) -> None:
    """`category` is the report's first cause (the causes and their confidences on failure)."""
    assert report.causes, "no cause"
    assert report.causes[0].category.value == category, [
        (c.category.value, round(c.confidence, 2)) for c in report.causes
    ]


def ending_of(report: Report) -> Ending | None:
    """How the report judged the run to end (None: no assessment)."""
    return report.assessment.ending if report.assessment is not None else None


def rules_hitting(line: str, rules: Iterable[Rule] | None = None) -> list[str]:
    """The ids of the rules (the shipped library unless given) whose patterns hit `line`."""
    return [
        rule.id
        for rule in (shipped_rules() if rules is None else rules)
        if rule.match_line(line) is not None
    ]


def assert_each_entry_recognised_once(table: str, shipped_coverage: dict[str, Any]) -> None:
    """Every entry of `patterns/tables/<table>.toml` is covered, and its example is hit by
    exactly one rule of the library (no message counted twice, none missed)."""
    catalog = load_catalog(tables_dir() / f"{table}.toml")
    row = shipped_coverage[catalog.name]
    assert row.covered == row.entries == len(catalog.entries)
    rules = shipped_rules()
    for entry in catalog.entries:
        hits = rules_hitting(entry.example, rules)
        assert len(hits) == 1, (entry.id, hits)
