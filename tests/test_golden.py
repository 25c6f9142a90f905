"""Golden files: the JSON, Markdown and terminal output of a few real reports, byte for byte.

Each case is analyzed with the rules alone (a classifier retrain moves confidences, which is
not a change of format) and rendered by the three text renderers; the output must equal
`tests/data/golden/<case>.<ext>`. A change to a renderer, a report field or a rule's wording
shows here as a diff to review. After an intended change, refresh and read the diff:

    python -m pytest tests/test_golden.py --update-goldens
    git diff tests/data/golden/
"""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from crashlens.match.focus import evidence_focus
from crashlens.match.rules import shipped_rules
from crashlens.model import Report
from crashlens.pipeline import AnalyzeOptions, analyze
from crashlens.render.json import render_json
from crashlens.render.markdown import render_markdown
from crashlens.render.terminal import render_terminal

from conftest import ROOT

GOLDEN = Path(__file__).resolve().parent / "data" / "golden"
VERSION = "0.0.0+golden"
"""Stands for `crashlens_version`, so a release does not change every golden file."""

CASES = {
    # several kinds at once (launcher, docker inspect, df) and filled placeholders
    "shm-llamafactory": "examples/llamafactory-shm-bus-error",
    # a knock-on symptom demoted, a note, three inputs
    "hardware-knock-on": "corpus/hardware-hoth-nccl-timeout-all-ranks-gpu-unknown-error/logs",
    # no cause with enough evidence: what to collect next
    "unknown-killed": "corpus/host_oom-chatglm-webui-16g-ram-killed-loading-shards/logs",
    # no failure at all
    "none-scancel": "corpus/none-c-slurm-job-cancelled-by-uid-scancel-mid-training/logs",
}


def _terminal(report: Report) -> str:
    stream = io.StringIO()
    console = Console(file=stream, width=100, force_terminal=False, color_system=None)
    render_terminal(report, console, evidence_focus(shipped_rules()))  # as the CLI does
    return stream.getvalue()


RENDERERS: dict[str, Callable[[Report], str]] = {
    "json": render_json,
    "md": render_markdown,
    "txt": _terminal,
}


@pytest.fixture(scope="module")
def reports() -> dict[str, Report]:
    # Paths in a report are as given: relative to the repository root, as a user would type.
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        found = {
            name: analyze([path], AnalyzeOptions(use_model=False)) for name, path in CASES.items()
        }
    return {name: dataclasses.replace(r, crashlens_version=VERSION) for name, r in found.items()}


@pytest.mark.parametrize("ext", sorted(RENDERERS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_rendered_report_matches_its_golden_file(
    case: str, ext: str, reports: dict[str, Report], request: pytest.FixtureRequest
) -> None:
    rendered = RENDERERS[ext](reports[case])
    golden = GOLDEN / f"{case}.{ext}"
    if request.config.getoption("--update-goldens"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(rendered, encoding="utf-8")
    assert golden.exists(), f"no golden file {golden.name}: run with --update-goldens"
    assert rendered == golden.read_text(encoding="utf-8"), (
        f"{golden.name} differs from the output; if the change is intended, run "
        "`python -m pytest tests/test_golden.py --update-goldens` and review `git diff`"
    )


def test_goldens_cover_what_a_report_can_say(reports: dict[str, Report]) -> None:
    # The cases are chosen to exercise every part of a report at least once; keep it so.
    verdicts = {r.verdict.value for r in reports.values()}
    assert {"shm", "hardware", "unknown", "none"} <= verdicts
    assert any(c.demoted_because for r in reports.values() for c in r.causes)
    assert any(r.notes for r in reports.values())
    assert any(r.next_checks for r in reports.values())
    assert any(r.first_failure for r in reports.values())
    assert any(len(r.inputs) >= 3 for r in reports.values())


def test_golden_files_are_the_cases_and_nothing_else() -> None:
    expected = {f"{case}.{ext}" for case in CASES for ext in RENDERERS}
    assert {p.name for p in GOLDEN.iterdir()} == expected


def test_json_golden_carries_no_real_version() -> None:
    for path in GOLDEN.glob("*.json"):
        assert json.loads(path.read_text(encoding="utf-8"))["crashlens_version"] == VERSION
