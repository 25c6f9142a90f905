"""Deciding the cause from all the evidence, across inputs: the policy lives here.

Every hit carries a weight: how likely its category is the cause given that hit alone. The
evidence of a category is combined with a noisy-OR over distinct rules (many copies of one
line count once), after the adjustments below: the first three encode how failures cascade,
the fourth lets another input's facts say what a symptom means:

1. **A proven cause explains its ambiguous symptoms.** When a category has a root hit, the
   symptoms of *other* categories that list it under `also` (a Bus error can be a memory
   fault) lose weight in proportion to that root's weight.
2. **Knock-on effects are never the headline.** A `knock_on` symptom (NCCL watchdog timeout,
   SIGTERM of healthy ranks, a peer's closed socket) is demoted when another category has
   root evidence, or when it comes from a rank other than the one that failed first.
3. **The first failure outranks the ones after it.** Hits on the rank torchelastic names as
   the first observed failure are boosted; hits from ranks that died later are not.
4. **A fact of another input can explain a symptom, or rule a cause out** (applied first,
   before the three above; `decide/explain.py`). The rules say so as data (`[[explains]]`,
   `[[rules_out]]`): `EROFS` on a path the container mounted read-only counts for
   `permissions`, not a failing disk; `IpcMode: host` makes the container's 64 MiB ShmSize
   irrelevant. An explained symptom counts for the explaining rule's category with the
   explanation's weight; a ruled-out hit is dropped; the report's notes cite both lines.

A run whose inputs show no ending (`decide.unended`) is weighed without the failure lines it
went on from (`unended.gone_past`: its training progress began or went on after them): a
retried allocation or a connect retry followed by an hour of steps did not end it, so it is
neither the first failure nor a likely cause of a log that stops.

Context hits (ShmSize 64 MiB, a low memlock ulimit) only count once a failure is seen, and a
category supported by context alone stays below the verdict threshold. Scores become
confidences by sharing out belief between the candidates; below `VERDICT_THRESHOLD` the
verdict is `unknown` and the report says what to collect next.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from crashlens.decide.explain import apply_explanations
from crashlens.decide.failure import assess
from crashlens.decide.ignored import with_known_reports, without_ignored
from crashlens.decide.stop_order import USER_STOP_EXCEPTIONS
from crashlens.decide.unended import ended_process, gone_past, unended
from crashlens.match.rules import Rule, rule_index
from crashlens.model import (
    Assessment,
    Category,
    Clock,
    Ending,
    Fact,
    Hit,
    InputAnalysis,
    InputKind,
    Role,
    Verdict,
)

VERDICT_THRESHOLD = 0.5
"""Below this confidence the top cause is reported, but the verdict is `unknown`."""
CONTEXT_ONLY_CAP = 0.4
"""A category backed only by context (no failure line of its own) never exceeds this."""
EXPLAINED_AWAY = 0.6
"""How much of a symptom's weight a proven alternative root cause can take away."""
KNOCK_ON_FACTOR = 0.3
"""What a knock-on symptom keeps of its weight once a real cause is in view."""
FIRST_RANK_BOOST = 0.25
"""Share of the remaining doubt removed for a hit on the rank that failed first."""
MIN_REPORTED = 0.05
"""Candidates below this score are not listed."""
ENDED_WELL = frozenset({Ending.COMPLETED, Ending.STOPPED})
"""Endings that are no failure: the verdict is `none` whatever the rules matched."""
NO_ENDING = frozenset({Ending.UNKNOWN, Ending.ONGOING})
"""Endings of inputs that show no ending (`decide.unended`)."""


@dataclass(frozen=True, slots=True)
class WeighedHit:
    """A hit with the weight it carries after the cascade adjustments, and why."""

    hit: Hit
    category: Category
    weight: float
    note: str | None = None
    demotion: str | None = None
    """Set when the hit was judged a knock-on of another failure: why."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One category's combined evidence."""

    category: Category
    score: float
    confidence: float
    hits: tuple[WeighedHit, ...]
    demoted_because: str | None


@dataclass(frozen=True, slots=True)
class Decision:
    """The ranked candidates and the verdict."""

    verdict: Verdict
    candidates: tuple[Candidate, ...]
    failure_seen: bool
    first_failure_rank: int | None
    first_failure: Hit | None
    notes: tuple[str, ...]
    assessment: Assessment | None = None
    """How the run ended (`decide.failure`); None for a decision made without it."""
    passed: frozenset[Hit] = frozenset()
    """Failure lines the run went on from, left out of the weighing (`unended.gone_past`):
    the report never leads with them."""

    @property
    def ended_well(self) -> bool:
        """Whether the run finished or was stopped from outside: then nothing failed."""
        return self.assessment is not None and self.assessment.ending in ENDED_WELL


def noisy_or(weights: Iterable[float]) -> float:
    """Probability that at least one independent piece of evidence is right."""
    doubt = 1.0
    for weight in weights:
        doubt *= 1.0 - weight
    return 1.0 - doubt


def _first_failure_rank(facts: Sequence[Fact]) -> int | None:
    for item in facts:
        if item.key == "launcher.first_failure" and isinstance(item.value, int):
            return item.value
    return None


_USER_STOP_SIGNALS = frozenset({"SIGINT"})
_USER_STOP_EXITS = frozenset({-2, 130})
STRONG_FAILURE = 0.5
"""A failure line at least this decisive counts even when the user also stopped the run."""


def user_stopped(facts: Sequence[Fact]) -> bool:
    """Whether the inputs show the run being stopped on purpose (Ctrl-C, a debugger quit,
    `scancel` by its user): its exit codes and tracebacks are then not a failure."""
    for item in facts:
        value = str(item.value)
        if item.key == "python.exception" and value.startswith(USER_STOP_EXCEPTIONS):
            return True
        if item.key == "launcher.signal" and value in _USER_STOP_SIGNALS:
            return True
        if item.key == "launcher.exit_code" and item.value in _USER_STOP_EXITS:
            return True
        # `scancel` prints "CANCELLED AT <time>" with no reason; the scheduler's own kills say
        # "DUE TO TIME LIMIT / PREEMPTION / NODE FAILURE".
        if item.key == "slurm.cancelled" and (value == "unspecified" or " by " in f" {value} "):
            return True
    return False


def _failure_exit(facts: Sequence[Fact]) -> bool:
    """Whether the facts show something failed: a nonzero exit status, a GPU fault the Xid
    catalog blames on the application, torchelastic's first failure, or an exception that ended
    its process after any finish line."""
    for item in facts:
        if item.key in ("launcher.exit_code", "docker.exit_code") and item.value not in (0, "0"):
            return True
        if item.key == "kernel.xid" and item.attr("category") == "application":
            # the Xid catalog's application errors (13, a graphics engine exception; 31, a GPU
            # memory page fault): the GPU stopped a process's work on its fault, which CUDA
            # then reports to it as a sticky error: something failed, though no category of
            # ours did (a kernel log alone is not `none`)
            return True
    finished = {item.path: item.lineno or 0 for item in facts if item.key == "launcher.completed"}
    return any(
        item.key == "launcher.first_failure"
        or (
            item.key == "python.exception"
            and ended_process(item)
            and (item.lineno or 0) > finished.get(item.path, -1)
        )
        for item in facts
    )


def _roots_by_category(hits: Sequence[Hit]) -> dict[Category, float]:
    strongest: dict[Category, float] = defaultdict(float)
    for hit in hits:
        if hit.role is Role.ROOT:
            strongest[hit.category] = max(strongest[hit.category], hit.weight)
    return strongest


def _weigh(
    hits: Sequence[Hit],
    knock_on: AbstractSet[str],
    first_rank: int | None,
) -> tuple[list[WeighedHit], set[Category]]:
    roots = _roots_by_category(hits)
    strong_roots = {c for c, w in roots.items() if w >= 0.8}
    demoted: set[Category] = set()
    weighed: list[WeighedHit] = []
    for hit in hits:
        weight = hit.weight
        notes: list[str] = []
        demotion = None
        if hit.against:
            note = f"speaks against {hit.category.value}"
            weighed.append(WeighedHit(hit, hit.category, weight, note))
            continue
        if hit.role is Role.SYMPTOM:
            for alternative, _share in hit.also:
                proven = roots.get(alternative, 0.0)
                if proven and alternative is not hit.category:
                    weight *= 1.0 - EXPLAINED_AWAY * proven
                    notes.append(f"also explained by the {alternative.value} evidence")
        if hit.rule_id in knock_on:
            others = strong_roots - {hit.category}
            later_rank = first_rank is not None and hit.rank is not None and hit.rank != first_rank
            if others or later_rank:
                weight *= KNOCK_ON_FACTOR
                demoted.add(hit.category)
                demotion = (
                    f"a knock-on of the {', '.join(sorted(c.value for c in others))} failure"
                    if others
                    else f"seen on rank {hit.rank}, after rank {first_rank} had already failed"
                )
                notes.append(demotion)
        if first_rank is not None and hit.rank == first_rank and hit.role is not Role.CONTEXT:
            weight += (1.0 - weight) * FIRST_RANK_BOOST
            notes.append(f"rank {first_rank} failed first")
        weighed.append(WeighedHit(hit, hit.category, weight, "; ".join(notes) or None, demotion))
        for alternative, share in hit.also:
            if hit.role is not Role.CONTEXT:
                weighed.append(WeighedHit(hit, alternative, share, f"can also mean {hit.category}"))
    return weighed, demoted


def _score(hits: Sequence[WeighedHit], failure_seen: bool) -> float:
    best_per_rule: dict[str, float] = {}
    against: dict[str, float] = {}
    for item in hits:
        if item.hit.role is Role.CONTEXT and not failure_seen:
            continue
        key = item.hit.rule_id
        table = against if item.hit.against else best_per_rule
        table[key] = max(table.get(key, 0.0), item.weight)
    score = noisy_or(best_per_rule.values())
    for weight in against.values():
        score *= 1.0 - weight
    # A failure line for this category: its own, or an ambiguous symptom that names it as an
    # alternative (a Bus error for filesystem), so disk evidence can explain a Bus error.
    failure_line = any(item.hit.role is not Role.CONTEXT for item in hits)
    return score if failure_line else min(score, CONTEXT_ONLY_CAP)


SHARPNESS = 3.0
"""How strongly a clearly stronger explanation takes belief from weaker rivals."""


def _confidences(scores: dict[Category, float]) -> dict[Category, float]:
    """Each score times its share of belief: competing strong explanations lower each other."""
    total = sum(score**SHARPNESS for score in scores.values())
    return {c: s * (s**SHARPNESS / total) for c, s in scores.items()} if total else {}


def decide(analyses: Sequence[InputAnalysis], rules: Sequence[Rule]) -> Decision:
    """Rank the categories from every input's hits and facts, once the failure detector
    (`decide.failure`) has said how the run ended: a death sign means a failure is seen
    whatever the rules matched; a finish or an outside stop means no failure at all."""
    analyses = with_known_reports(analyses)  # reports known by their traceback's files
    assessment = assess(analyses, rules)
    index = rule_index(rules)
    knock_on, failure_rules = index.knock_on, index.failure
    facts = [item for analysis in analyses for item in analysis.facts]
    # what the process reported and went on from (a finalizer's exception) shows no failure
    hits = without_ignored([hit for analysis in analyses for hit in analysis.hits], facts)
    passed: frozenset[Hit] = frozenset()
    if assessment.ending in NO_ENDING:  # what the run went on from did not end it
        passed = frozenset(gone_past(hits, facts, failure_rules))
        hits = [hit for hit in hits if hit not in passed]
    first_rank = _first_failure_rank(facts)
    strong = any(
        hit.rule_id in failure_rules
        and hit.weight >= STRONG_FAILURE
        and hit.rule_id not in knock_on
        for hit in hits
    )
    weak = any(hit.rule_id in failure_rules for hit in hits) or _failure_exit(facts)
    died = assessment.ending is Ending.DIED
    # A log that stops with no ending, or a container still running and silent: a hang or a
    # silent kill is possible, so `none` is not earned (`decide.unended`).
    silent = unended(assessment)
    failure_seen = strong or (weak and not user_stopped(facts)) or died or silent
    explained = apply_explanations(hits, facts, rules)
    weighed, demoted = _weigh(explained.hits, knock_on, first_rank)
    weighed = [_with_reason(item, explained.reasons) for item in weighed]
    by_category: dict[Category, list[WeighedHit]] = defaultdict(list)
    for item in weighed:
        by_category[item.category].append(item)
    # A category is a candidate only through hits of its own; `also` support alone (a Bus
    # error's faint hint of hardware) adjusts scores but never lists a cause by itself.
    scores = {
        c: _score(items, failure_seen)
        for c, items in by_category.items()
        if any(item.hit.category is c for item in items)
    }
    scores = {c: s for c, s in scores.items() if s >= MIN_REPORTED}
    confidences = _confidences(scores)
    notes: list[str] = list(explained.notes)
    candidates = []
    for category in sorted(scores, key=lambda c: (-scores[c], c.value)):
        items = sorted(by_category[category], key=_evidence_order)
        reason = None
        if category in demoted:
            reason = next((i.demotion for i in items if i.demotion is not None), None)
        candidates.append(
            Candidate(
                category=category,
                score=scores[category],
                confidence=round(confidences[category], 3),
                hits=tuple(items),
                demoted_because=reason,
            )
        )
    for candidate in candidates[1:]:
        if candidate.demoted_because:
            name = candidate.category.value
            notes.append(f"The {name} symptoms are treated as {candidate.demoted_because}.")
    kinds = {analysis.status.path: analysis.status.kind for analysis in analyses}
    first_failure = earliest_failure(hits, first_rank, failure_rules, knock_on, kinds)
    if assessment.ending in ENDED_WELL:
        # Whatever alarming lines it printed (the assessment says why they are harmless).
        verdict, candidates, first_failure = Verdict.NONE, [], None
    elif not failure_seen and not any(c.score >= VERDICT_THRESHOLD for c in candidates):
        verdict = Verdict.NONE
        candidates = []
    elif candidates and candidates[0].confidence >= VERDICT_THRESHOLD:
        verdict = Verdict.of(candidates[0].category)
    else:
        verdict = Verdict.UNKNOWN
    return Decision(
        verdict=verdict,
        candidates=tuple(candidates),
        failure_seen=failure_seen,
        first_failure_rank=first_rank,
        first_failure=first_failure,
        notes=tuple(notes),
        assessment=assessment,
        passed=passed,
    )


def _with_reason(item: WeighedHit, reasons: dict[Hit, str]) -> WeighedHit:
    """The weighed hit with why an explanation moved it, ahead of its other notes."""
    reason = reasons.get(item.hit)
    if reason is None or item.category is not item.hit.category:
        return item
    note = f"{reason}; {item.note}" if item.note else reason
    return WeighedHit(item.hit, item.category, item.weight, note, item.demotion)


def _evidence_order(item: WeighedHit) -> tuple[int, float, str, int]:
    role_order = {Role.ROOT: 0, Role.SYMPTOM: 1, Role.CONTEXT: 2}[item.hit.role]
    own = 0 if item.hit.category is item.category else 3
    return (own + role_order, -item.weight, item.hit.path, item.hit.lineno or 0)


_NARRATIVE: dict[InputKind | None, int] = {
    InputKind.LAUNCHER: 0,
    InputKind.TORCHELASTIC_ERROR: 1,
    InputKind.OTHER: 2,
    InputKind.DMESG: 3,
}
"""Inputs that tell the story of the run, in the order a person would read them."""


def earliest_failure(
    hits: Sequence[Hit],
    first_rank: int | None,
    failure_rules: AbstractSet[str],
    knock_on: AbstractSet[str],
    kinds: dict[str, InputKind | None],
) -> Hit | None:
    """The first failure line among `hits` (the pipeline also asks it of one cause's hits)."""
    failures = [h for h in hits if h.rule_id in failure_rules and h.role is not Role.CONTEXT]
    if not failures:
        return None
    # A knock-on line (a watchdog timeout, a SIGTERM) is never the first failure while a line
    # that is not one exists: the timeout fires long after the GPU fell off the bus.
    causal = [h for h in failures if h.rule_id not in knock_on]
    failures = causal or failures
    if first_rank is not None:
        on_rank = [h for h in failures if h.rank == first_rank]
        if on_rank:
            failures = on_rank
    # Only wall-clock times compare across inputs (raw dmesg counts seconds since boot, glog
    # and syslog print no year, many launcher lines carry no time), so the story is read in
    # line order: within the input whose first failure line is timed earliest when every
    # input's is on the wall clock, or else the first input that failed.
    by_path: dict[str, list[Hit]] = defaultdict(list)
    for hit in failures:
        by_path[hit.path].append(hit)
    firsts = [min(group, key=lambda h: h.lineno or 0) for group in by_path.values()]
    timed = [h for h in firsts if h.timestamp is not None and h.clock is Clock.WALL]
    if len(timed) == len(firsts) and timed:
        return min(timed, key=lambda h: (h.timestamp or 0.0, h.path))
    return min(firsts, key=lambda h: (_NARRATIVE.get(kinds.get(h.path), 9), h.path))
