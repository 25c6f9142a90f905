"""The shipped classifier: a multinomial logistic regression stored as plain JSON.

Scoring is a sparse dot product in pure Python, so a report never imports scikit-learn (which
costs more than a whole analysis to import) and the model file cannot run code, as a pickle
could. `train.py` fits it; `classifier.json` records the corpus and rule-library digests it
came from, and a test fails when either has changed since.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from crashlens.model import Verdict

MODEL_FILE = "classifier.json"


@dataclass(frozen=True, slots=True)
class Model:
    """Weights of a multinomial logistic regression over named sparse features."""

    classes: tuple[str, ...]
    weights: dict[str, tuple[float, ...]]
    """feature name -> one weight per class."""
    intercept: tuple[float, ...]
    temperature: float
    corpus_digest: str
    rules_digest: str
    version: str

    def probabilities(self, features: dict[str, float]) -> dict[str, float]:
        """Calibrated class probabilities for one feature dict."""
        logits = list(self.intercept)
        for name, value in features.items():
            row = self.weights.get(name)
            if row is None:
                continue
            for index, weight in enumerate(row):
                logits[index] += weight * value
        scaled = [logit / self.temperature for logit in logits]
        top = max(scaled)
        exps = [math.exp(v - top) for v in scaled]
        total = sum(exps)
        return {c: e / total for c, e in zip(self.classes, exps, strict=True)}

    def support(self, names: Iterable[str], label: str) -> float:
        """How much the features `names` push towards `label` (sum of their weights)."""
        if label not in self.classes:
            return 0.0
        index = self.classes.index(label)
        return sum(self.weights[name][index] for name in names if name in self.weights)

    def to_json(self) -> str:
        """The model as JSON text (stable key order, rounded weights)."""
        data = {
            "version": self.version,
            "corpus_digest": self.corpus_digest,
            "rules_digest": self.rules_digest,
            "classes": list(self.classes),
            "temperature": round(self.temperature, 4),
            "intercept": [round(v, 5) for v in self.intercept],
            "weights": {k: [round(v, 5) for v in row] for k, row in sorted(self.weights.items())},
        }
        return json.dumps(data, indent=0, sort_keys=False) + "\n"


def model_from_json(text: str) -> Model:
    """Read a model written by `Model.to_json`."""
    data = json.loads(text)
    return Model(
        classes=tuple(data["classes"]),
        weights={k: tuple(float(x) for x in row) for k, row in data["weights"].items()},
        intercept=tuple(float(x) for x in data["intercept"]),
        temperature=float(data["temperature"]),
        corpus_digest=str(data["corpus_digest"]),
        rules_digest=str(data["rules_digest"]),
        version=str(data["version"]),
    )


def shipped_model_path() -> Path:
    """Where the shipped model lives inside the package."""
    return Path(str(resources.files("crashlens") / "data" / MODEL_FILE))


@cache
def shipped_model() -> Model | None:
    """The shipped model, or None when the package has none (rules alone then decide)."""
    path = shipped_model_path()
    if not path.is_file():
        return None
    return model_from_json(path.read_text(encoding="utf-8"))


EVIDENCE_FLOOR = 0.4
"""The rules' own score a category needs before it can be the verdict: the classifier may
reorder and sharpen, but a cause backed only by weak signs (a bare exit -9) stays `unknown`."""

RULE_FLOOR = 0.15
"""What a category the rules did not support still gets in the product (so the model can
overrule weak rules but never conjure a cause out of nothing)."""


def combine(
    rule_scores: dict[str, float], rules_say_none: bool, probabilities: dict[str, float]
) -> dict[str, float]:
    """Product of experts: the model's probability times the rules' support, renormalized.

    `rule_scores` are the decision's per-category scores in [0, 1]; `none` is supported by the
    rules when they found no failure.
    """
    support = {c: RULE_FLOOR + rule_scores.get(c, 0.0) for c in probabilities}
    if Verdict.NONE in support:
        support[Verdict.NONE] = RULE_FLOOR + (1.0 - RULE_FLOOR if rules_say_none else 0.0)
    product = {c: probabilities[c] * support[c] for c in probabilities}
    total = sum(product.values()) or 1.0
    return {c: value / total for c, value in product.items()}


@dataclass(frozen=True, slots=True)
class CombinedAnswer:
    """The combined answer: a label or `unknown`, and every label's confidence."""

    verdict: Verdict
    ranking: tuple[str, ...]
    """Labels that can be reported, most likely first: rule-supported categories and `none`."""
    confidences: dict[str, float]


def final_verdict(
    rule_scores: dict[str, float],
    rules_say_none: bool,
    failure_seen: bool,
    probabilities: dict[str, float],
    threshold: float,
    evidence_floor: float = EVIDENCE_FLOOR,
) -> CombinedAnswer:
    """Combine rules and model, and decide.

    A category may win without a rule of its own when the matched lines' wording points to it
    (the classifier's job: wording no rule has seen); the report then cites the lines that
    carried that weight. `none` stands below the threshold only when nothing failed.
    """
    combined = combine(rule_scores, rules_say_none, probabilities)
    ranking = tuple(sorted(combined, key=lambda c: (-combined[c], c)))
    top = ranking[0]
    confidence = combined[top]
    if top == Verdict.NONE:
        # The classifier may recognise a harmless run, but not talk away a failure the rules
        # saw: then the honest answer is `unknown`.
        sure = not failure_seen
    else:
        sure = confidence >= threshold and rule_scores.get(top, 0.0) >= evidence_floor
    return CombinedAnswer(Verdict(top) if sure else Verdict.UNKNOWN, ranking, combined)
