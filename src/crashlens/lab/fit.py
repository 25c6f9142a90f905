"""Fitting the classifier: a logistic regression on feature dicts, and its temperature.

scikit-learn is imported inside `fit` only (training and evaluation; `analyze` never pays for
it). The model this returns carries no rule-library digest: only the shipped model, written by
`train.train_on_corpus`, needs one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from crashlens.decide.classifier import Model

REGULARIZATION = 0.5
"""Inverse L2 strength: the corpus is small, so weights are kept modest."""
MIN_TOKEN_CASES = 2
"""A word must occur in this many training cases to become a feature."""
TEMPERATURES = tuple(round(0.2 + 0.05 * i, 2) for i in range(57))


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
    temperature: float = 1.0,
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
        temperature=temperature,
        corpus_digest=corpus_digest,
        rules_digest="",
        version=version,
    )


def best_temperature(logit_rows: Sequence[dict[str, float]], labels: Sequence[str]) -> float:
    """The temperature that minimizes the negative log-likelihood of held-out predictions.

    `logit_rows` are probabilities at temperature 1; rescaling their logs by 1/T is the same
    as rescaling the logits, since softmax is shift-invariant.
    """
    best, best_loss = 1.0, math.inf
    for temperature in TEMPERATURES:
        loss = 0.0
        for probabilities, label in zip(logit_rows, labels, strict=True):
            scaled = {c: math.log(max(p, 1e-12)) / temperature for c, p in probabilities.items()}
            top = max(scaled.values())
            total = sum(math.exp(v - top) for v in scaled.values())
            loss -= scaled.get(label, -30.0) - top - math.log(total)
        if loss < best_loss:
            best, best_loss = temperature, loss
    return best
