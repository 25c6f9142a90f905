"""The shipped classifier: a multinomial logistic regression stored as plain JSON, with the
calibration that turns its answer and the rules' into the probabilities a report prints.

Scoring is a sparse dot product in pure Python, so a report never imports scikit-learn (which
costs more than a whole analysis to import) and the model file cannot run code, as a pickle
could. `lab/train.py` fits it; `classifier.json` records the corpus and rule-library digests it
came from, and a test fails when either has changed since.

How a verdict is reached (`final_verdict`), in one place so that the verdict and the printed
confidences cannot disagree:

1. The model's probabilities and the rules' support are multiplied (a product of experts).
2. The product is calibrated by a temperature fitted on held-out folds: one for a leading cause
   with direct rule evidence, a flatter one (never sharper) when that evidence is thin (rules'
   score under `EVIDENCE_FLOOR`: a bare exit -9, a wording no rule knows well). Thin evidence
   thus gets a low probability itself, rather than a high one that the verdict then ignores.
3. The calibrated probabilities are rounded as they are printed, and the verdict is the top
   cause when its printed probability reaches the threshold stored with the model (chosen on
   held-out folds, `lab/selective.py`); below it the verdict is `unknown`.
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
CONFIDENCE_DIGITS = 2
"""Confidences are rounded to whole percents before the verdict is decided on them, so the
number a report prints (`77%` in the terminal, 0.77 in JSON) is the number the threshold was
compared with. A finer figure would claim more than a few hundred labelled cases can tell."""


@dataclass(frozen=True, slots=True)
class Calibration:
    """How the combined evidence becomes probabilities, and where a verdict starts.

    All three are fitted on held-out folds of the corpus by `crashlens train`."""

    temperature: float
    """Divides the combined log-scores when the leading cause has direct rule evidence."""
    thin_temperature: float
    """The same, when the leading cause's rule evidence is thin (>= `temperature`)."""
    threshold: float
    """The calibrated probability the top cause needs to be the verdict."""


UNCALIBRATED = Calibration(temperature=1.0, thin_temperature=1.0, threshold=0.5)
"""What a model fitted without held-out folds carries (tests, inner folds of the fitting)."""


@dataclass(frozen=True, slots=True)
class Model:
    """Weights of a multinomial logistic regression over named sparse features."""

    classes: tuple[str, ...]
    weights: dict[str, tuple[float, ...]]
    """feature name -> one weight per class."""
    intercept: tuple[float, ...]
    calibration: Calibration
    corpus_digest: str
    rules_digest: str
    version: str

    def probabilities(self, features: dict[str, float]) -> dict[str, float]:
        """The model's own class probabilities for one feature dict (before the rules' support
        and the calibration of `final_verdict`)."""
        logits = list(self.intercept)
        for name, value in features.items():
            row = self.weights.get(name)
            if row is None:
                continue
            for index, weight in enumerate(row):
                logits[index] += weight * value
        return _softmax(dict(zip(self.classes, logits, strict=True)), 1.0)

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
            "temperature": round(self.calibration.temperature, 4),
            "thin_temperature": round(self.calibration.thin_temperature, 4),
            "threshold": round(self.calibration.threshold, 4),
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
        calibration=Calibration(
            temperature=float(data["temperature"]),
            thin_temperature=float(data["thin_temperature"]),
            threshold=float(data["threshold"]),
        ),
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


def _softmax(logits: dict[str, float], temperature: float) -> dict[str, float]:
    scaled = {c: v / temperature for c, v in logits.items()}
    top = max(scaled.values())
    exps = {c: math.exp(v - top) for c, v in scaled.items()}
    total = sum(exps.values())
    return {c: e / total for c, e in exps.items()}


EVIDENCE_FLOOR = 0.4
"""Below this rules' score the leading cause's evidence is thin (a bare exit -9 alone scores
0.35): its probability is calibrated with the thin-evidence temperature."""

RULE_FLOOR = 0.15
"""What a category the rules did not support still gets in the product (so the model can
overrule weak rules but never conjure a cause out of nothing)."""


def rule_support(rule_scores: dict[str, float], rules_say_none: bool, label: str) -> float:
    """The rules' expert in the product: their score for `label`, `none` when they saw no
    failure, never below `RULE_FLOOR`."""
    if label == Verdict.NONE:
        return RULE_FLOOR + (1.0 - RULE_FLOOR if rules_say_none else 0.0)
    return RULE_FLOOR + rule_scores.get(label, 0.0)


def combined_logits(
    rule_scores: dict[str, float], rules_say_none: bool, probabilities: dict[str, float]
) -> dict[str, float]:
    """Product of experts in log space: the model's probability times the rules' support."""
    return {
        c: math.log(max(p, 1e-12)) + math.log(rule_support(rule_scores, rules_say_none, c))
        for c, p in probabilities.items()
    }


def leader(logits: dict[str, float]) -> str:
    """The label the combined evidence favours (ties broken by name)."""
    return min(logits, key=lambda c: (-logits[c], c))


def thin_evidence(rule_scores: dict[str, float], rules_say_none: bool, label: str) -> bool:
    """Whether the rules' own evidence for `label` is thin (see `EVIDENCE_FLOOR`)."""
    if label == Verdict.NONE:
        return not rules_say_none
    return rule_scores.get(label, 0.0) < EVIDENCE_FLOOR


THIN_CEILING = 0.9
"""The most a cause resting on thin evidence may get: such a cause reads as likely, with what
would confirm it, never near-certain. The corpus now holds many runs with nothing but an
indirect sign (out-of-fold on 2,529 cases: 108 thin leaders held at this ceiling, 107 of them a
bare SIGKILL or shell `Killed`, 106 right), so it alone would support more (Laplace's rule of
succession: 107 / 110 = 0.97). It is not raised to that because the corpus is where people
asked about a bare `Killed` that turned out to be memory; in the field the same sign also comes
from a scheduler's, an operator's or a watchdog's kill, which leave no thread behind."""


def calibrated(logits: dict[str, float], thin: bool, calibration: Calibration) -> dict[str, float]:
    """Probabilities from combined log-scores, at the temperature their evidence calls for;
    a leader on thin evidence is held at `THIN_CEILING`, the rest shared out in proportion."""
    temperature = calibration.thin_temperature if thin else calibration.temperature
    probabilities = _softmax(logits, temperature)
    if not thin:
        return probabilities
    top = leader(logits)
    excess = probabilities[top] - THIN_CEILING
    rest = 1.0 - probabilities[top]
    if excess <= 0.0 or rest <= 0.0:
        return probabilities
    return {
        c: THIN_CEILING if c == top else p + excess * p / rest for c, p in probabilities.items()
    }


@dataclass(frozen=True, slots=True)
class CombinedAnswer:
    """The combined answer: a label or `unknown`, and every label's confidence."""

    verdict: Verdict
    ranking: tuple[str, ...]
    """Every label, most likely first."""
    confidences: dict[str, float]
    """Calibrated probabilities, rounded as printed: the numbers the verdict was decided on."""
    thin: bool
    """Whether the leading label's rule evidence was thin."""


def final_verdict(
    rule_scores: dict[str, float],
    rules_say_none: bool,
    failure_seen: bool,
    probabilities: dict[str, float],
    calibration: Calibration,
) -> CombinedAnswer:
    """Combine rules and model, calibrate, and decide.

    The verdict is the top label when its calibrated probability reaches the threshold, else
    `unknown`. A category may win without a rule of its own when the matched lines' wording
    points to it (the classifier's job: wording no rule has seen); the report then cites the
    lines that carried that weight. `none` is the verdict only when it leads and nothing
    failed: the classifier may recognise a harmless run, but not talk away a failure the rules
    saw; then the likeliest category is the verdict if it reaches the threshold.
    """
    logits = combined_logits(rule_scores, rules_say_none, probabilities)
    order = sorted(logits, key=lambda c: (-logits[c], c))
    thin = thin_evidence(rule_scores, rules_say_none, leader(logits))
    exact = calibrated(logits, thin, calibration)
    confidences = {c: round(p, CONFIDENCE_DIGITS) for c, p in exact.items()}
    ranking = tuple(sorted(order, key=lambda c: -confidences[c]))  # stable: ties keep `order`
    if ranking[0] == Verdict.NONE and not failure_seen:
        return CombinedAnswer(Verdict.NONE, ranking, confidences, thin)
    # A run that failed is never `none`: its verdict is the likeliest cause, if likely enough.
    cause = next((c for c in ranking if c != Verdict.NONE), None)
    sure = cause is not None and confidences[cause] >= calibration.threshold
    verdict = Verdict(cause) if cause is not None and sure else Verdict.UNKNOWN
    return CombinedAnswer(verdict, ranking, confidences, thin)
