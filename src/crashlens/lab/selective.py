"""Selective prediction: where a report stops naming a cause and says `unknown` instead.

A report may decline to name a cause. For a threshold on the calibrated probability of the
leading cause, the accuracy-coverage curve gives the share of failed runs that get a cause
(coverage) and how often that cause is right (accuracy). The operating point is the threshold
where a report is worth the most: a right cause counts 1, an `unknown` 0 and a wrong cause
`-WRONG_COST`; for calibrated probabilities that is `DECISION_THRESHOLD`, and held-out answers
move it only by a clear margin (their curve is flat near it). It is chosen on held-out
predictions only: `crashlens train` chooses it on its inner grouped folds and stores it with
the model; `crashlens eval` chooses it inside every training fold and prints the curve of the
out-of-fold predictions.
"""

from __future__ import annotations

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
MARGIN = 0.005
"""How much more utility, as a share of the held-out answers, another threshold must show to be
chosen over DECISION_THRESHOLD. The curve is flat around it: on the corpus of 2026-12-04 the
utilities of 0.60 to 0.80 were within 6 of each other over 1,513 answers, and the plain argmax
moved between 0.65 and 0.80 from one retrain to the next. Calibrated probabilities put the best
threshold at DECISION_THRESHOLD; held-out answers move it only when they clearly say so."""


def choose_threshold(items: Sequence[Scored]) -> float:
    """DECISION_THRESHOLD, unless a threshold of clearly higher utility on held-out answers
    (by more than MARGIN of them; the lowest of equals) shows the probabilities off."""
    points = curve(items)
    best = max(p.utility for p in points)
    chosen = next(p for p in points if p.utility == best)
    default = next(p for p in points if p.threshold == DECISION_THRESHOLD)
    if chosen.utility - default.utility > MARGIN * len(items):
        return chosen.threshold
    return default.threshold
