"""The shipped classifier: fresh with respect to the corpus and rules, safe and fast to load."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from crashlens.decide.classifier import model_from_json, shipped_model, shipped_model_path
from crashlens.lab.corpus import LABELS, corpus_digest
from crashlens.lab.train import rules_digest
from crashlens.model import Category, Verdict

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def test_shipped_model_is_fresh() -> None:
    model = shipped_model()
    assert model is not None, "no shipped model: run `crashlens train corpus/`"
    assert model.corpus_digest == corpus_digest(CORPUS), (
        "the corpus changed since the model was trained: run `crashlens train corpus/`"
    )
    assert model.rules_digest == rules_digest(), (
        "the rule library changed since the model was trained: run `crashlens train corpus/`"
    )


def test_model_is_plain_json_with_every_label() -> None:
    data = json.loads(shipped_model_path().read_text())
    assert set(data) == {
        "version",
        "corpus_digest",
        "rules_digest",
        "classes",
        "temperature",
        "thin_temperature",
        "threshold",
        "intercept",
        "weights",
    }
    assert set(data["classes"]) == set(LABELS)
    model = model_from_json(shipped_model_path().read_text())
    probabilities = model.probabilities({"rule:shm-dataloader-bus-error": 1.0})
    assert abs(sum(probabilities.values()) - 1.0) < 1e-9


def test_scoring_does_not_import_scikit_learn() -> None:
    code = (
        "import sys; from crashlens.pipeline import analyze; "
        "analyze(['examples/llamafactory-shm-bus-error']); "
        "print('sklearn' in sys.modules or 'scipy' in sys.modules)"
    )
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    )
    assert done.stdout.strip() == "False"


def test_verdict_is_every_category_then_unknown_and_none() -> None:
    assert [v.value for v in Verdict] == [*(c.value for c in Category), "unknown", "none"]
    assert all(Verdict.of(c).category is c for c in Category)
    assert Verdict.UNKNOWN.category is None and not Verdict.NONE.names_cause
    assert [label.value for label in LABELS] == [*(c.value for c in Category), "none"]
