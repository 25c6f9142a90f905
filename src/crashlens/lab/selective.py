"""Selective prediction: where a report stops naming a cause and says `unknown` instead.

A report may decline to name a cause. For a threshold on the calibrated probability of the
leading cause, the accuracy-coverage curve gives the share of failed runs that get a cause
(coverage) and how often that cause is right (accuracy). The operating point is the threshold
where a report is worth the most: a right cause counts 1, an `unknown` 0 and a wrong cause
`-WRONG_COST`; for calibrated probabilities that is `DECISION_THRESHOLD`, and held-out answers
move it only by a gain clear of their noise (their curve is flat near it). It is chosen on held-out
predictions only: `crashlens train` chooses it on its inner grouped folds and stores it with
the model; `crashlens eval` chooses it inside every training fold and prints the curve of the
out-of-fold predictions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from crashlens.decide.classifier import CombinedAnswer
from crashlens.lab.corpus import Case
from crashlens.model import Verdict

THRESHOLDS = tuple(round(0.5 + 0.05 * i, 2) for i in range(10))
"""The thresholds tried: never under 0.5, so a cause shown at or above the threshold is the
likeliest one (and never sits under an `unknown` verdict)."""
WRONG_COST = 3.0
"""What a wrong cause costs, in `unknown`s: the reader acts on it (a memory limit raised, a
hardware ticket filed, a healthy run's teardown noise chased) and comes back, where an
`unknown` costs one round of collecting what the report asks for. For calibrated probabilities
the best threshold is then near 3/4: a cause is named when it is right three times in four.
At 2 the corpus's healthy runs got a cause four times as often as with the rules alone."""


@dataclass(frozen=True, slots=True)
class Scored:
    """One held-out answer, as every threshold would see it."""

    cause: str | None
    """The cause the verdict names when sure enough; None when the verdict is `none`."""
    confidence: float
    """The printed (calibrated, rounded) probability of `cause`."""
    right: bool
    """Whether `cause` (or `none`) is right."""
    failed: bool
    """Whether the case's label is a failure (not `none`)."""


@dataclass(frozen=True, slots=True)
class CurvePoint:
    """The accuracy-coverage curve at one threshold."""

    threshold: float
    coverage: float
    """Failed runs given a cause, as a share of failed runs."""
    accuracy: float
    """Right causes, as a share of the failed runs given a cause."""
    top1: float
    """Right verdicts (a cause, or `none`), as a share of every case."""
    wrong: int
    """Cases given a wrong cause (failed or not)."""
    utility: float


def scored(case: Case, answer: CombinedAnswer) -> Scored:
    """An answer decided at threshold 0 (a cause, or `none`), scored against `case`."""
    failed = case.label != Verdict.NONE
    if not answer.verdict.names_cause:
        return Scored(None, answer.confidences.get(Verdict.NONE, 0.0), case.accepts("none"), failed)
    cause = answer.verdict.value
    return Scored(cause, answer.confidences[cause], case.accepts(cause), failed)


def verdict_at(item: Scored, threshold: float) -> str:
    """The verdict at `threshold`: the cause when sure enough, else `unknown`; or `none`."""
    if item.cause is None:
        return Verdict.NONE
    return item.cause if item.confidence >= threshold else Verdict.UNKNOWN


def point(items: Sequence[Scored], threshold: float) -> CurvePoint:
    """The curve at one threshold."""
    named = [item for item in items if item.cause is not None and item.confidence >= threshold]
    named_failed = [item for item in named if item.failed]
    failed = sum(item.failed for item in items)
    right_named = sum(item.right for item in named)
    right_none = sum(item.right for item in items if item.cause is None)
    wrong = len(named) - right_named
    return CurvePoint(
        threshold=threshold,
        coverage=len(named_failed) / failed if failed else 0.0,
        accuracy=sum(i.right for i in named_failed) / len(named_failed) if named_failed else 0.0,
        top1=(right_named + right_none) / len(items) if items else 0.0,
        wrong=wrong,
        utility=right_named + right_none - WRONG_COST * wrong,
    )


def curve(items: Sequence[Scored]) -> list[CurvePoint]:
    """The curve at every threshold tried."""
    return [point(items, threshold) for threshold in THRESHOLDS]


DECISION_THRESHOLD = round(WRONG_COST / (1 + WRONG_COST), 2)
"""Where naming a cause starts to be worth it for a calibrated probability p: a right cause
counts 1 and a wrong one -WRONG_COST, so p - WRONG_COST * (1 - p) >= 0 (0.75, one of
`THRESHOLDS`)."""
NOISE_Z = 2.0
"""How many standard errors of the paired utility difference another threshold must gain over
DECISION_THRESHOLD to be chosen instead. The curve is flat around it: on the corpus of
2026-12-05 the utilities of 0.60 to 0.80 were within a few answers of each other over 1,791,
and a fixed margin (0.5 % of the answers) let the plain argmax move between 0.65 and 0.80 from
one fold or retrain to the next. The noise is the answers whose verdict the two thresholds
disagree on: a gain made of a handful of them is chance, a gain of forty in a thousand is not.
Calibrated probabilities put the best threshold at DECISION_THRESHOLD; held-out answers move it
only when they clearly say so (about one-sided 98 % at 2 standard errors)."""


def _utility(item: Scored, threshold: float) -> float:
    """What one answer is worth at `threshold` (as `point` counts it)."""
    if item.cause is None:
        return 1.0 if item.right else 0.0
    if item.confidence < threshold:
        return 0.0
    return 1.0 if item.right else -WRONG_COST


def clear_gain(items: Sequence[Scored], threshold: float, over: float) -> bool:
    """Whether `threshold` is worth more than `over` on `items` by more than NOISE_Z standard
    errors of the summed paired difference (each answer scored at both thresholds)."""
    differences = [_utility(item, threshold) - _utility(item, over) for item in items]
    count = len(differences)
    gain = sum(differences)
    if count < 2 or gain <= 0:
        return False
    mean = gain / count
    variance = sum((d - mean) ** 2 for d in differences) / (count - 1)
    return gain > NOISE_Z * math.sqrt(count * variance)


def choose_threshold(items: Sequence[Scored]) -> float:
    """DECISION_THRESHOLD, unless a threshold of higher utility on held-out answers (the
    lowest of equals) clears it by more than the noise of the answers they disagree on."""
    points = curve(items)
    best = max(p.utility for p in points)
    chosen = next(p for p in points if p.utility == best)
    if chosen.threshold != DECISION_THRESHOLD and clear_gain(
        items, chosen.threshold, DECISION_THRESHOLD
    ):
        return chosen.threshold
    return DECISION_THRESHOLD
