"""Scenarios of the batch mechanism tests: a folder of logs written for the test, and the
verdict and rule `crashlens analyze` must reach on it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from crashlens.match.rules import shipped_rules
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
