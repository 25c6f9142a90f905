"""Each labelled case analyzed once, and the grouped folds both evaluation and training use.

`prepare` runs the pipeline on a case and keeps what every method needs (features, the rules'
decision, the raw text for the keyword baseline, the exit status); `grouped_folds` keeps cases
rebuilt from one public thread in one fold; `fit_calibrated` fits a model with its calibration
(temperatures and verdict threshold) chosen on held-out folds; `answer` is the combined,
calibrated answer for one case, as `crashlens analyze` computes it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from crashlens.decide.classifier import (
    Calibration,
    CombinedAnswer,
    Model,
    combined_logits,
    final_verdict,
    leader,
    thin_evidence,
)
from crashlens.decide.features import features
from crashlens.decide.policy import Decision, decide
from crashlens.lab.corpus import Case
from crashlens.lab.fit import best_temperatures
from crashlens.lab.selective import Scored, choose_threshold, scored
from crashlens.match.rules import Rule
from crashlens.model import Fact, InputAnalysis, Verdict
from crashlens.pipeline import analyze_inputs

FOLDS = 5


@dataclass(frozen=True, slots=True)
class Prediction:
    """One method's answer for one case."""

    verdict: Verdict
    """A label, or `unknown`."""
    ranking: tuple[str, ...]
    """Labels, most likely first (for top-3)."""
    confidence: float
    """Confidence in `verdict` (for calibration)."""


@dataclass(frozen=True, slots=True)
class Prepared:
    """A case analyzed once: what every method needs."""

    case: Case
    features: dict[str, float]
    rules: Prediction
    text: str
    exit_bucket: str | None
    rule_scores: dict[str, float]
    rules_say_none: bool
    analyses: tuple[InputAnalysis, ...] = ()
    decision: Decision | None = None
    """What `rerank` needs, so the classifier's verdict is the one `analyze` would print."""


def rules_prediction(decision: Decision) -> Prediction:
    """What the rules alone answer."""
    ranking = tuple(c.category.value for c in decision.candidates)
    if decision.verdict is Verdict.NONE:
        strongest = max((c.score for c in decision.candidates), default=0.0)
        return Prediction(Verdict.NONE, (Verdict.NONE, *ranking), 1.0 - strongest)
    confidence = decision.candidates[0].confidence if decision.candidates else 0.0
    return Prediction(decision.verdict, (*ranking, Verdict.NONE), confidence)


def _exit_bucket(facts: Sequence[Fact]) -> str | None:
    for item in facts:
        if item.key in ("launcher.exit_code", "docker.exit_code") and isinstance(item.value, int):
            value = item.value
            if value > 128:
                value = -(value - 128)
            if value != 0:
                return str(value)
    for item in facts:
        if item.key == "launcher.signal":
            return str(item.value)
    return None


def case_text(root: Path, limit: int = 4 * 1024 * 1024) -> str:
    """Every file under `root` as text (the first `limit` bytes of each), as keyword grep reads."""
    files = sorted(p for p in root.rglob("*") if p.is_file())
    return "\n".join(p.read_bytes()[:limit].decode("utf-8", errors="replace") for p in files)


def prepare(case: Case, rules: tuple[Rule, ...]) -> Prepared:
    """Analyze one case with the rules and keep what the methods need."""
    analyses = analyze_inputs([str(case.logs)], rules=rules)
    decision = decide(analyses, rules)
    facts = [item for analysis in analyses for item in analysis.facts]
    return Prepared(
        case=case,
        features=features(analyses, decision),
        rules=rules_prediction(decision),
        text=case_text(case.logs),
        exit_bucket=_exit_bucket(facts),
        rule_scores={c.category.value: c.score for c in decision.candidates},
        rules_say_none=decision.verdict is Verdict.NONE,
        analyses=tuple(analyses),
        decision=decision,
    )


def grouped_folds(prepared: Sequence[Prepared], folds: int = FOLDS) -> list[list[int]]:
    """Case indexes per fold; cases sharing a source URL always share a fold (deterministic)."""
    groups: dict[str, list[int]] = {}
    for index, item in enumerate(prepared):
        groups.setdefault(item.case.source or item.case.case_id, []).append(index)
    buckets: list[list[int]] = [[] for _ in range(folds)]
    # Largest groups first, each into the currently smallest fold: balanced and stable.
    for _source, members in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        smallest = min(range(folds), key=lambda f: (len(buckets[f]), f))
        buckets[smallest].extend(members)
    return [sorted(b) for b in buckets]


def ended_well(item: Prepared) -> bool:
    """Whether the failure detector saw the run finish or be stopped: then `rerank` keeps the
    rules' `none` and the classifier's numbers are never printed."""
    return item.decision is not None and item.decision.ended_well


def answer(model: Model, item: Prepared, calibration: Calibration | None = None) -> CombinedAnswer:
    """The combined answer for one prepared case, as `crashlens analyze` decides it (the
    model's own calibration by default)."""
    combined = final_verdict(
        item.rule_scores,
        item.rules_say_none,
        "failure_seen" in item.features,
        model.probabilities(item.features),
        calibration or model.calibration,
    )
    if not ended_well(item):
        return combined
    ranking = (Verdict.NONE.value, *(c for c in combined.ranking if c != Verdict.NONE))
    return replace(combined, verdict=Verdict.NONE, ranking=ranking)


def held_out(
    train: Sequence[Prepared], fitter: Callable[..., Model]
) -> list[tuple[Prepared, Model]]:
    """Every case of `train` with a model fitted without its fold (grouped folds)."""
    pairs: list[tuple[Prepared, Model]] = []
    for fold in grouped_folds(train, folds=4):
        if not fold:
            continue
        inside = set(fold)
        rest = [train[i] for i in range(len(train)) if i not in inside]
        if len({p.case.label for p in rest}) < 2:
            continue
        model = fitter([p.features for p in rest], [p.case.label for p in rest])
        pairs.extend((train[i], model) for i in fold)
    return pairs


def calibrate(pairs: Sequence[tuple[Prepared, Model]]) -> tuple[Calibration, list[Scored]]:
    """Temperatures, then the threshold, fitted on held-out (case, model) pairs; with the
    held-out answers as every threshold sees them."""
    rows, thin, labels = [], [], []
    for item, model in pairs:
        if ended_well(item):
            continue  # its verdict is `none` whatever the numbers: they calibrate nothing
        logits = combined_logits(
            item.rule_scores, item.rules_say_none, model.probabilities(item.features)
        )
        rows.append(logits)
        thin.append(thin_evidence(item.rule_scores, item.rules_say_none, leader(logits)))
        labels.append(item.case.label)
    temperature, thin_temperature = best_temperatures(rows, thin, labels)
    any_threshold = Calibration(temperature, thin_temperature, threshold=0.0)
    items = [scored(item.case, answer(model, item, any_threshold)) for item, model in pairs]
    threshold = choose_threshold(items) if items else 0.5
    return Calibration(temperature, thin_temperature, threshold), items


def fit_calibrated(train: Sequence[Prepared], fitter: Callable[..., Model]) -> Model:
    """Fit on `train`, its calibration chosen on out-of-fold predictions (grouped folds)."""
    calibration, _ = calibrate(held_out(train, fitter))
    return fitter([p.features for p in train], [p.case.label for p in train], calibration)
