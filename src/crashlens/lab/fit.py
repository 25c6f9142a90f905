"""Fitting the classifier: a logistic regression on feature dicts, and its temperatures.

scikit-learn is imported inside `fit` only (training and evaluation; `analyze` never pays for
it). The model this returns carries no rule-library digest: only the shipped model, written by
`train.train_on_corpus`, needs one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from crashlens.decide.classifier import UNCALIBRATED, Calibration, Model

REGULARIZATION = 0.5
"""Inverse L2 strength: the corpus is small, so weights are kept modest."""
MIN_TOKEN_CASES = 2
"""A word must occur in this many training cases to become a feature."""
TEMPERATURES = tuple(round(0.2 * 1.05**i, 4) for i in range(81))
"""Temperatures tried, 0.2 to 10, 5 % apart."""


def _prune(rows: Sequence[dict[str, float]]) -> list[dict[str, float]]:
    counts: dict[str, int] = {}
    for row in rows:
        for name in row:
            if name.startswith("tok:"):
                counts[name] = counts.get(name, 0) + 1
    keep = {name for name, count in counts.items() if count >= MIN_TOKEN_CASES}
    return [{k: v for k, v in row.items() if not k.startswith("tok:") or k in keep} for row in rows]


def fit(
    rows: Sequence[dict[str, float]],
    labels: Sequence[str],
    calibration: Calibration = UNCALIBRATED,
    corpus_digest: str = "",
    version: str = "",
) -> Model:
    """Fit the model on feature dicts and their labels."""
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    vectorizer = DictVectorizer(sparse=True, sort=True)
    matrix = vectorizer.fit_transform(_prune(rows))
    classifier = LogisticRegression(C=REGULARIZATION, max_iter=5000)
    classifier.fit(matrix, list(labels))
    coef = classifier.coef_
    names = vectorizer.get_feature_names_out()
    weights = {
        str(name): tuple(float(coef[c, j]) for c in range(coef.shape[0]))
        for j, name in enumerate(names)
        if any(abs(coef[c, j]) > 1e-6 for c in range(coef.shape[0]))
    }
    return Model(
        classes=tuple(str(c) for c in classifier.classes_),
        weights=weights,
        intercept=tuple(float(v) for v in classifier.intercept_),
        calibration=calibration,
        corpus_digest=corpus_digest,
        rules_digest="",
        version=version,
    )


def _log_loss(logit_rows: Sequence[dict[str, float]], labels: Sequence[str], t: float) -> float:
    loss = 0.0
    for logits, label in zip(logit_rows, labels, strict=True):
        scaled = {c: v / t for c, v in logits.items()}
        top = max(scaled.values())
        total = sum(math.exp(v - top) for v in scaled.values())
        loss -= scaled.get(label, top - 30.0) - top - math.log(total)
    return loss


def best_temperature(
    logit_rows: Sequence[dict[str, float]], labels: Sequence[str], at_least: float = 0.0
) -> float:
    """The temperature (not under `at_least`) that minimizes the negative log-likelihood of
    held-out combined log-scores (`classifier.combined_logits`); with no rows, `at_least` (or
    1.0)."""
    if not logit_rows:
        return at_least or 1.0
    allowed = [t for t in TEMPERATURES if t >= at_least] or [TEMPERATURES[-1]]
    return min(allowed, key=lambda t: (_log_loss(logit_rows, labels, t), t))


def best_temperatures(
    logit_rows: Sequence[dict[str, float]], thin: Sequence[bool], labels: Sequence[str]
) -> tuple[float, float]:
    """Temperatures for direct and for thin rule evidence, each fitted on its own held-out
    rows; thin evidence is never calibrated sharper than direct evidence."""
    direct = [(row, label) for row, t, label in zip(logit_rows, thin, labels, strict=True) if not t]
    weak = [(row, label) for row, t, label in zip(logit_rows, thin, labels, strict=True) if t]
    temperature = best_temperature([r for r, _ in direct], [lb for _, lb in direct])
    thin_temperature = best_temperature(
        [r for r, _ in weak], [lb for _, lb in weak], at_least=temperature
    )
    return temperature, thin_temperature
