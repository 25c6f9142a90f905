"""`analyze()`: the one place where the pipeline stages are wired together.

discover inputs -> per input: detect, scan, parse (engine) -> decide across inputs (rules)
-> re-rank with the shipped classifier (rank) -> build the report (evidence, remediation,
next checks). Pure apart from reading the inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import IO

from crashlens import __version__
from crashlens.decide.accelerator import accelerator_of, nvidia_only
from crashlens.decide.classifier import Model, shipped_model
from crashlens.decide.policy import Candidate, Decision, WeighedHit, decide, earliest_failure
from crashlens.decide.remedy import (
    SOURCE_CHECKS,
    actions,
    base_context,
    checks_for,
    hit_context,
    sources_of,
    summary,
    without_repeated_checks,
)
from crashlens.decide.rerank import how_often, rerank
from crashlens.decide.when import failure_time
from crashlens.inputs.discover import Source, iter_inputs
from crashlens.match.engine import analyze_source
from crashlens.match.rules import Rule, Step, rule_index, shipped_rules
from crashlens.model import (
    Action,
    Assessment,
    Cause,
    Ending,
    Evidence,
    Fact,
    Hit,
    InputAnalysis,
    InputKind,
    InputStatus,
    Report,
    Role,
    Verdict,
)

MAX_EVIDENCE = 8
"""Evidence lines shown per cause; the strongest first."""
MAX_PER_RULE = 2
"""The same rule is cited at most this many times in one cause."""


@dataclass(frozen=True, slots=True)
class AnalyzeOptions:
    """What `analyze` was asked to do."""

    forced_kinds: tuple[tuple[str, InputKind], ...] = ()
    """(path, kind) pairs: `--kind` overrides detection for these inputs."""
    backend: str = "auto"
    """Scan backend: auto, hyperscan or python."""
    use_model: bool = True
    """Re-weigh the rules' decision with the shipped classifier (when the package has one)."""


def analyze(
    paths: Sequence[str],
    options: AnalyzeOptions | None = None,
    rules: tuple[Rule, ...] | None = None,
    stdin: IO[bytes] | None = None,
) -> Report:
    """Analyze every input under `paths` and decide the cause of the failure."""
    library = rules if rules is not None else shipped_rules()
    use_model = options.use_model if options is not None else True
    model = shipped_model() if use_model else None
    return build_report(analyze_inputs(paths, options, library, stdin), library, model)


def analyze_inputs(
    paths: Sequence[str],
    options: AnalyzeOptions | None = None,
    rules: tuple[Rule, ...] | None = None,
    stdin: IO[bytes] | None = None,
) -> list[InputAnalysis]:
    """Every input under `paths`, analyzed on its own (hits and facts), or skipped."""
    options = options or AnalyzeOptions()
    library = rules if rules is not None else shipped_rules()
    forced = dict(options.forced_kinds)
    analyses: list[InputAnalysis] = []
    for item in iter_inputs(list(paths), stdin):
        if isinstance(item, InputStatus):
            analyses.append(InputAnalysis(status=item))
            continue
        analyses.append(_analyze_one(item, library, forced, options.backend))
    return analyses


def _analyze_one(
    source: Source, rules: tuple[Rule, ...], forced: dict[str, InputKind], backend: str
) -> InputAnalysis:
    kind = forced.get(source.path) or forced.get("*")
    return analyze_source(source, rules, kind, backend)


def build_report(
    analyses: Sequence[InputAnalysis],
    rules: tuple[Rule, ...],
    model: Model | None = None,
    year_hint: float | None = None,
) -> Report:
    """Decide across inputs (rules, then the classifier if given) and build the report.

    `year_hint` (epoch seconds, e.g. the newest input's mtime) gives yearless times a year
    when no line of the inputs is dated."""
    decision = decide(analyses, rules)  # how the run ended first, then why
    if model is not None:
        decision = rerank(analyses, decision, model)
    assessment = decision.assessment
    facts = [item for analysis in analyses for item in analysis.facts]
    hits = [hit for analysis in analyses for hit in analysis.hits]
    decision = replace(decision, first_failure=_belonging(decision, analyses, rules))
    top = decision.candidates[0].category if decision.candidates else None
    when = failure_time(decision.first_failure, hits, facts, top, year_hint)
    by_id = rule_index(rules).by_id
    accelerator = accelerator_of(hits)
    causes = tuple(_cause(c, by_id, facts, accelerator) for c in decision.candidates)
    checks: tuple[Action, ...] = ()
    if decision.verdict is Verdict.UNKNOWN:
        top = decision.candidates[0].category if decision.candidates else None
        # where the launchers and platforms that ran it keep what the logs lack, before the
        # generic list
        launched = [a for name in sources_of(analyses) for a in SOURCE_CHECKS.get(name, ())]
        lead = checks_for(top, accelerator) if top is not None else ()
        checks = tuple(_dedupe([*lead, *launched, *checks_for(None, accelerator)]))
    causes, checks = without_repeated_checks(causes, checks)
    return Report(
        verdict=decision.verdict,
        causes=causes,
        inputs=tuple(analysis.status for analysis in analyses),
        next_checks=checks,
        failure_seen=decision.failure_seen,
        first_failure=_first_failure_evidence(decision, assessment),
        lead=_lead(analyses, decision),
        first_failure_rank=decision.first_failure_rank,
        first_failure_at=when.at,
        yearless_year=when.yearless_year,
        notes=decision.notes,
        assessment=assessment,
        crashlens_version=__version__,
    )


def _dedupe(items: list[Action]) -> list[Action]:
    seen: set[str] = set()
    kept = []
    for item in items:
        key = item.command or item.text
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept


def _belonging(
    decision: Decision, analyses: Sequence[InputAnalysis], rules: tuple[Rule, ...]
) -> Hit | None:
    """The first failure line that belongs to the failure: of the leading cause's lines when
    it has any, so a warning the run went on from (a connect retry an hour before a Bus
    error) never leads the report."""
    first = decision.first_failure
    if first is None or not decision.candidates:
        return first
    top = decision.candidates[0].category
    if first.category is top:
        return first
    index = rule_index(rules)
    own = [h for a in analyses for h in a.hits if h.category is top and h not in decision.passed]
    kinds = {a.status.path: a.status.kind for a in analyses}
    found = earliest_failure(own, decision.first_failure_rank, index.failure, index.knock_on, kinds)
    return found or first


def _first_failure_evidence(decision: Decision, assessment: Assessment | None) -> Evidence | None:
    hit = decision.first_failure
    if hit is None:
        # No rule matched a failure line: the line that shows the death stands for it.
        if assessment is not None and assessment.ending is Ending.DIED:
            return assessment.sign
        return None
    note = f"rank {hit.rank}" if hit.rank is not None else None
    return hit.cited(note)


def _lead(analyses: Sequence[InputAnalysis], decision: Decision) -> Evidence | None:
    """The line the report leads with: the verdict's category's best line, cited under the
    rule that gives it that category (a symptom another file explained cites the explaining
    rule, not the rule it first hit)."""
    if decision.verdict is Verdict.NONE:
        return None
    category = decision.candidates[0].category if decision.candidates else None
    # The leading candidate's hits come first: an explained hit is there under its new rule.
    weighed = [item.hit for item in decision.candidates[0].hits] if decision.candidates else []
    hits = [*weighed, *(h for a in analyses for h in a.hits if h not in decision.passed)]
    own = [h for h in hits if h.category is category and h.role is not Role.CONTEXT]
    first = decision.first_failure
    if not own and first is not None:
        own = [h for h in hits if h.rule_id == first.rule_id]
    if not own:
        return None
    best = min(own, key=lambda h: (h.role is not Role.ROOT, -h.weight, h.rule_id))
    same = [h for h in own if h.rule_id == best.rule_id]
    earliest = min(same, key=lambda h: (h.timestamp is None, h.timestamp or 0.0, h.lineno or 0))
    return earliest.cited(None)


def _line_of(hit: Hit) -> tuple[str, int | None, str]:
    """The input line a hit stands on (two rules may read the same line)."""
    return (hit.path, hit.lineno, hit.text)


def _select_evidence(items: Sequence[WeighedHit]) -> list[WeighedHit]:
    chosen: list[WeighedHit] = []
    per_rule: dict[str, int] = {}
    seen_lines: set[tuple[str, int | None, str]] = set()
    for item in items:
        hit = item.hit
        key = _line_of(hit)
        if key in seen_lines or per_rule.get(hit.rule_id, 0) >= MAX_PER_RULE:
            continue
        seen_lines.add(key)
        per_rule[hit.rule_id] = per_rule.get(hit.rule_id, 0) + 1
        chosen.append(item)
        if len(chosen) >= MAX_EVIDENCE:
            break
    return chosen


def _cause(
    candidate: Candidate, rules: dict[str, Rule], facts: list[Fact], accelerator: str | None
) -> Cause:
    own = [item for item in candidate.hits if item.hit.category is candidate.category]
    chosen = _select_evidence(candidate.hits)
    ctx = base_context(facts)
    ctx.update(hit_context((item.hit for item in own), facts))
    lead = max(own, key=lambda item: (item.hit.role is Role.ROOT, item.weight), default=None)
    lead_rule = rules.get(lead.hit.rule_id) if lead else None
    steps: list[Step] = []
    checks: list[Step] = []
    done: set[str] = set()
    read: set[tuple[str, int | None, str]] = set()
    for item in sorted(own, key=lambda i: (i.hit.role is not Role.ROOT, -i.weight)):
        rule = rules.get(item.hit.rule_id)
        line = _line_of(item.hit)
        if rule is None:
            continue
        if rule.id in done:
            read.add(line)
            continue
        if line in read:
            # a stronger rule of this cause read the same line (a traceback's frame told it
            # what the bare errno line means): its steps speak for the line, and the weaker
            # reading's advice would contradict them
            continue
        done.add(rule.id)
        read.add(line)
        steps.extend(rule.remediation)
        checks.extend(rule.next_checks)
    if accelerator is not None:
        # a rule's steps are written for the GPUs most runs have: on another family, the
        # ones that run NVIDIA's tools are dropped (its own generic checks come below)
        steps = [step for step in steps if not nvidia_only(step.command)]
        checks = [step for step in checks if not nvidia_only(step.command)]
    # the category's generic checks, unless the leading rule's mechanism is one they do not fit
    fits = lead_rule is None or lead_rule.generic_checks
    generic = (
        [Step(a.text, a.command, a.lang) for a in checks_for(candidate.category, accelerator)]
        if fits
        else []
    )
    remediation = actions(steps, ctx)
    next_checks = actions([*checks, *generic], ctx, limit=5)
    name = candidate.category.value
    text = (
        summary(lead_rule, ctx)
        if lead_rule
        else f"No {name} rule matched, but in the labelled corpus these lines "
        f"{how_often(candidate.confidence)} meant {name}; confirm with the checks below."
    )
    evidence = tuple(item.hit.cited(item.note) for item in chosen)
    return Cause(
        category=candidate.category,
        confidence=candidate.confidence,
        summary=text,
        evidence=evidence,
        remediation=tuple(remediation),
        next_checks=tuple(next_checks),
        demoted_because=candidate.demoted_because,
    )
