"""The final ranking: the rules' decision, re-weighed by the classifier when one is shipped.

The rules decide which lines matter and how a cascade unfolds (decide.py); the classifier,
trained on the labelled corpus, knows how often each combination of evidence and wording
really meant each cause. `classifier.final_verdict` combines both into calibrated
confidences and decides the verdict on them, at the threshold stored with the model. A category
the classifier favours without a rule of its own cites the matched lines whose rules carried
that weight, so every cause still points at lines in the inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from crashlens.decide.classifier import Model, final_verdict
from crashlens.decide.features import features
from crashlens.decide.policy import MIN_REPORTED, Candidate, Decision, WeighedHit
from crashlens.model import Category, InputAnalysis, Verdict

EXPLAINING_LINES = 3
"""Lines cited for a category that only the classifier supports."""


def how_often(confidence: float) -> str:
    """How often lines like these meant a cause, as its confidence says: a category the
    classifier ranks below another was not what such lines usually meant, and the report
    must not say it was above a higher cause that contradicts it."""
    return "usually" if confidence >= 0.5 else "sometimes"


def rerank(analyses: Sequence[InputAnalysis], decision: Decision, model: Model) -> Decision:
    """The decision with the classifier's confidences, order and verdict (a run that ended
    well keeps its `none`: the classifier may not talk a failure into it)."""
    if decision.ended_well:
        return decision
    answer = final_verdict(
        {c.category.value: c.score for c in decision.candidates},
        decision.verdict is Verdict.NONE,
        decision.failure_seen,
        model.probabilities(features(analyses, decision)),
        model.calibration,
    )
    if answer.verdict is Verdict.NONE:
        return replace(decision, verdict=Verdict.NONE, candidates=())
    by_category = {c.category.value: c for c in decision.candidates}
    ranked: list[Candidate] = []
    for label in answer.ranking:
        confidence = answer.confidences[label]
        existing = by_category.get(label)
        demoted = existing is not None and existing.demoted_because is not None
        if label == Verdict.NONE or (confidence < MIN_REPORTED and not demoted):
            continue
        if existing is not None:
            ranked.append(replace(existing, confidence=round(confidence, 3)))
            continue
        explained = _explaining_hits(analyses, model, Category(label), confidence)
        if explained:
            ranked.append(
                Candidate(
                    category=Category(label),
                    score=0.0,
                    confidence=round(confidence, 3),
                    hits=explained,
                    demoted_because=None,
                )
            )
    verdict = answer.verdict
    if verdict.names_cause and (not ranked or Verdict.of(ranked[0].category) is not verdict):
        verdict = Verdict.UNKNOWN  # the winner has nothing to cite: say so rather than guess
    return replace(decision, verdict=verdict, candidates=tuple(ranked))


def _explaining_hits(
    analyses: Sequence[InputAnalysis], model: Model, category: Category, confidence: float
) -> tuple[WeighedHit, ...]:
    scored = []
    for analysis in analyses:
        for hit in analysis.hits:
            support = model.support([f"rule:{hit.rule_id}"], category.value)
            if support > 0:
                scored.append((support, hit))
    scored.sort(key=lambda item: (-item[0], item[1].path, item[1].lineno or 0))
    note = f"in the labelled corpus, this line {how_often(confidence)} meant {category.value}"
    return tuple(
        WeighedHit(hit=hit, category=category, weight=min(support, 1.0), note=note)
        for support, hit in scored[:EXPLAINING_LINES]
    )
