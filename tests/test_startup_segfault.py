"""A native crash before any training progress weighs for driver (`driver-sigsegv-exit`, 0.45):
the crashes after progress are ruled out by the rule itself, so what it still counts crashed
where libraries load and initialise. Logs of their own, decided by the rules alone."""

from __future__ import annotations

from pathlib import Path

from crashlens.decide.policy import decide
from crashlens.match.rules import shipped_rules
from crashlens.pipeline import analyze_inputs

START_UP = (
    "Loading config configs/wireframe.yaml\n"
    "Building model: backbone=stacked_hourglass, heads=3\n"
    "Moving model to cuda:0\n"
    "./train.sh: line 7: 20411 Segmentation fault      (core dumped) python train.py\n"
)


def _driver_score(tmp_path: Path, text: str) -> float:
    (tmp_path / "train.log").write_text(text, encoding="utf-8")
    rules = shipped_rules()
    decision = decide(analyze_inputs([str(tmp_path)], rules=rules), rules)
    return next((c.score for c in decision.candidates if c.category.value == "driver"), 0.0)


def test_a_segfault_at_start_up_leads_with_driver(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text(START_UP, encoding="utf-8")
    rules = shipped_rules()
    decision = decide(analyze_inputs([str(tmp_path)], rules=rules), rules)
    assert decision.candidates[0].category.value == "driver"
    assert decision.candidates[0].score >= 0.4


def test_it_stays_a_symptom_below_a_verdict_of_its_own(tmp_path: Path) -> None:
    assert _driver_score(tmp_path, START_UP) < 0.5
