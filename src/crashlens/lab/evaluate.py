"""`crashlens eval corpus/`: how often crashlens is right, measured honestly.

Every case is analyzed once. Rules alone need no training; the classifier and the exit-code
baseline are scored by grouped cross-validation (cases rebuilt from the same public thread
share a fold, so a case never scores a model that saw it or its twin), and the classifier's
calibration (temperatures and verdict threshold) is fitted inside each training fold, on its
own inner folds. Two naive baselines run through the same harness: keyword grep (most keyword
hits wins) and exit-code-only. For the classifier it also gives the accuracy-coverage curve of
the out-of-fold answers and the operating point chosen on them (`selective.py`).

Calibration is measured on what a report prints: the confidence of the leading label against
whether that label is right, whether or not it cleared the threshold.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from crashlens.decide.rerank import rerank
from crashlens.lab.corpus import LABELS, Case
from crashlens.lab.fit import fit
from crashlens.lab.prepare import (
    Prediction,
    Prepared,
    answer,
    calibrate,
    grouped_folds,
    held_out,
    prepare,
)
from crashlens.lab.selective import CurvePoint, Scored, choose_threshold, curve, scored
from crashlens.match.rules import Rule, shipped_rules
from crashlens.model import Verdict

ECE_BINS = 10


# The keyword-grep baseline: the words a person would grep for, per category.
KEYWORDS: dict[str, tuple[str, ...]] = {
    "shm": ("bus error", "/dev/shm", "shared memory", "shm"),
    "gpu_oom": ("cuda out of memory", "outofmemoryerror", "cublas_status_alloc_failed"),
    "host_oom": ("killed process", "oom-kill", "out of memory", "oomkilled", "killed"),
    "hardware": ("xid", "ecc", "fallen off the bus", "hardware error", "mce"),
    "driver": ("driver version", "nvml", "driver/library", "no kernel image", "insufficient"),
    "filesystem": ("no space left on device", "read-only file system", "i/o error", "quota"),
    "permissions": ("permission denied", "operation not permitted", "memlock"),
    "network": ("timeout", "timed out", "connection reset", "connection refused", "nccl error"),
}


def grep_prediction(text: str) -> Prediction:
    """Most keyword hits wins; no hit at all means `none`."""
    lowered = text.lower()
    counts = {c: sum(lowered.count(k) for k in words) for c, words in KEYWORDS.items()}
    total = sum(counts.values())
    if total == 0:
        return Prediction(Verdict.NONE, (Verdict.NONE,), 1.0)
    ranking = tuple(sorted(counts, key=lambda c: (-counts[c], c)))
    return Prediction(Verdict(ranking[0]), (*ranking, Verdict.NONE), counts[ranking[0]] / total)


@dataclass
class Metrics:
    """Every figure `crashlens eval` prints for one method."""

    method: str
    cases: int = 0
    top1: float = 0.0
    top3: float = 0.0
    hard_top1: float = 0.0
    macro_f1: float = 0.0
    ece: float = 0.0
    none_given_cause: float = 0.0
    unknown_share: float = 0.0
    per_label: dict[str, dict[str, float]] = field(default_factory=dict)
    confusion: dict[str, dict[str, int]] = field(default_factory=dict)
    curve: list[CurvePoint] = field(default_factory=list)
    """The accuracy-coverage curve of the out-of-fold answers (methods with a threshold)."""
    threshold: float | None = None
    """The operating point chosen on the out-of-fold answers, as `crashlens train` chooses."""
    fold_thresholds: list[float] = field(default_factory=list)
    """The threshold each training fold chose (and its held-out cases were decided at)."""


def _right(case: Case, label: str) -> bool:
    return case.accepts(label)


def expected_calibration_error(confidences: Sequence[float], correct: Sequence[bool]) -> float:
    """Weighted gap between confidence and accuracy over equal-width confidence bins."""
    total = len(confidences)
    if total == 0:
        return 0.0
    error = 0.0
    for index in range(ECE_BINS):
        low, high = index / ECE_BINS, (index + 1) / ECE_BINS
        members = [
            i for i, c in enumerate(confidences) if low < c <= high or (index == 0 and c == 0.0)
        ]
        if not members:
            continue
        accuracy = sum(correct[i] for i in members) / len(members)
        mean = sum(confidences[i] for i in members) / len(members)
        error += len(members) / total * abs(accuracy - mean)
    return error


def score(method: str, cases: Sequence[Case], predictions: Sequence[Prediction]) -> Metrics:
    """All metrics of one method over all cases."""
    metrics = Metrics(method=method, cases=len(cases))
    if not cases:
        return metrics
    correct = [_right(c, p.verdict) for c, p in zip(cases, predictions, strict=True)]
    metrics.top1 = sum(correct) / len(cases)
    metrics.top3 = sum(
        any(_right(c, label) for label in p.ranking[:3])
        for c, p in zip(cases, predictions, strict=True)
    ) / len(cases)
    hard = [ok for c, ok in zip(cases, correct, strict=True) if c.difficulty == "hard"]
    metrics.hard_top1 = sum(hard) / len(hard) if hard else 0.0
    nones = [p for c, p in zip(cases, predictions, strict=True) if c.label == Verdict.NONE]
    metrics.none_given_cause = (
        sum(p.verdict.names_cause for p in nones) / len(nones) if nones else 0.0
    )
    metrics.unknown_share = sum(p.verdict is Verdict.UNKNOWN for p in predictions) / len(cases)
    leading_right = [
        bool(p.ranking) and _right(c, p.ranking[0]) for c, p in zip(cases, predictions, strict=True)
    ]
    metrics.ece = expected_calibration_error([p.confidence for p in predictions], leading_right)
    f1s = []
    for label in LABELS:
        predicted = [p.verdict == label for p in predictions]
        actual = [c.label == label for c in cases]
        tp = sum(a and p for a, p in zip(actual, predicted, strict=True))
        precision = tp / sum(predicted) if sum(predicted) else 0.0
        recall = tp / sum(actual) if sum(actual) else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        metrics.per_label[label] = {
            "precision": precision,
            "recall": recall,
            "f1": f1,
            "support": float(sum(actual)),
        }
        if sum(actual):
            f1s.append(f1)
    metrics.macro_f1 = sum(f1s) / len(f1s) if f1s else 0.0
    for c, p in zip(cases, predictions, strict=True):
        row = metrics.confusion.setdefault(c.label, {})
        row[p.verdict] = row.get(p.verdict, 0) + 1
    return metrics


@dataclass
class Selective:
    """The classifier's held-out answers as every threshold sees them, and the folds' choice."""

    answers: list[Scored | None]
    fold_thresholds: list[float]


def cross_validate(prepared: Sequence[Prepared]) -> tuple[dict[str, list[Prediction]], Selective]:
    """Out-of-fold predictions of every method, in case order; the classifier's curve data."""
    results: dict[str, list[Prediction | None]] = {
        "rules": [p.rules for p in prepared],
        "rules+classifier": [None] * len(prepared),
        "keyword-grep": [grep_prediction(p.text) for p in prepared],
        "exit-code-only": [None] * len(prepared),
    }
    selective = Selective([None] * len(prepared), [])
    for fold in grouped_folds(prepared):
        inside = set(fold)
        train = [prepared[i] for i in range(len(prepared)) if i not in inside]
        calibration, _ = calibrate(held_out(train, fit))
        selective.fold_thresholds.append(calibration.threshold)
        model = fit([p.features for p in train], [p.case.label for p in train], calibration)
        by_exit = _exit_table(train)
        for index in fold:
            item = prepared[index]
            decided = answer(model, item)
            # The verdict goes through `rerank`, as in `crashlens analyze`: it also turns a
            # winner with no line to cite into `unknown`.
            verdict = (
                rerank(list(item.analyses), item.decision, model).verdict
                if item.decision is not None
                else decided.verdict
            )
            top = decided.ranking[0]
            results["rules+classifier"][index] = Prediction(
                verdict, decided.ranking, decided.confidences[top]
            )
            results["exit-code-only"][index] = by_exit(item.exit_bucket)
            any_threshold = replace(calibration, threshold=0.0)
            selective.answers[index] = scored(item.case, answer(model, item, any_threshold))
    predictions = {name: [p for p in preds if p is not None] for name, preds in results.items()}
    return predictions, selective


def _exit_table(train: Sequence[Prepared]) -> Callable[[str | None], Prediction]:
    table: dict[str | None, Counter[str]] = {}
    for item in train:
        table.setdefault(item.exit_bucket, Counter())[item.case.label] += 1

    def predict(bucket: str | None) -> Prediction:
        counts = table.get(bucket)
        if not counts:
            verdict = Verdict.NONE if bucket is None else Verdict.UNKNOWN
            return Prediction(verdict, (Verdict.NONE,), 0.0)
        ranking = tuple(label for label, _ in counts.most_common())
        return Prediction(Verdict(ranking[0]), ranking, counts[ranking[0]] / sum(counts.values()))

    return predict


def evaluate(cases: Sequence[Case], rules: tuple[Rule, ...] | None = None) -> list[Metrics]:
    """Prepare every case and score every method."""
    library = rules if rules is not None else shipped_rules()
    prepared = [prepare(case, library) for case in cases]
    predictions, selective = cross_validate(prepared)
    results = [score(name, cases, preds) for name, preds in predictions.items()]
    answers = [item for item in selective.answers if item is not None]
    classifier = next(m for m in results if m.method == "rules+classifier")
    classifier.curve = curve(answers)
    classifier.threshold = choose_threshold(answers) if answers else None
    classifier.fold_thresholds = selective.fold_thresholds
    return results


def corpus_counts(cases: Sequence[Case]) -> dict[str, dict[str, int]]:
    """Case counts per label and per difficulty."""
    return {
        "label": dict(sorted(Counter(c.label for c in cases).items())),
        "difficulty": dict(sorted(Counter(c.difficulty for c in cases).items())),
    }
