"""The shipped classifier: a multinomial logistic regression stored as plain JSON.

Scoring is a sparse dot product in pure Python, so a report never imports scikit-learn (which
costs more than a whole analysis to import) and the model file cannot run code, as a pickle
could. `train.py` fits it; `classifier.json` records the corpus and rule-library digests it
came from, and a test fails when either has changed since.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

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
