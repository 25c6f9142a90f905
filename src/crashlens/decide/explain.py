"""Policy step 4: a fact of another input explains a symptom, or rules a cause out.

The rules say which facts explain which symptoms (`[[explains]]`) and which facts make other
rules' hits irrelevant (`[[rules_out]]`, see `match/explanations.py`); this step applies them
to the hits of every input before they are weighed, the same way for every rule:

* a ruled-out hit is dropped, unless an explanation holds for it: a ruling-out says what the
  hit does not mean for its own category, an explanation what it does mean (a segfault after
  the training progress says nothing for a driver mismatch, but on a node logging memory
  errors it is the memory);
* an explained hit counts for the explaining rule's category, under that rule (so the cause
  takes that rule's summary and steps), with the explanation's weight; it keeps its line, role,
  rank and time, and loses its `also` (the explanation settled what it means). When several
  explanations hold for one hit, the one with the highest weight wins.

Each explanation and ruling-out used gives the report one note citing both lines: the
symptom's and the fact's. Besides the facts of the inputs, the conditions see the facts that
only two inputs together show (`decide/interfaces.py`: a socket-interface setting a node's
interfaces do not satisfy; `decide/cuda_versions.py`: a CUDA runtime newer than the driver;
`decide/gpu_arch.py`: a CUDA build with no machine code for the GPU).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from crashlens.decide.cuda_versions import runtime_newer_than_driver
from crashlens.decide.gpu_arch import build_lacks_gpu
from crashlens.decide.interfaces import unmatched_interfaces
from crashlens.match.explanations import Explanation, RuleOut
from crashlens.match.rules import Rule
from crashlens.model import Fact, Hit


@dataclass(frozen=True, slots=True)
class Explained:
    """The hits to weigh once explanations and ruling-outs are applied, and what they did."""

    hits: tuple[Hit, ...]
    notes: tuple[str, ...] = ()
    """One sentence per explanation or ruling-out used, citing the symptom and the fact."""
    reasons: dict[Hit, str] = field(default_factory=dict)
    """Why an explained hit now counts where it does (its evidence note)."""


def cite(item: Fact | Hit) -> str:
    """`path:line`, or the path alone when the line is unknown (an XML field)."""
    return f"{item.path}:{item.lineno}" if item.lineno is not None else item.path


def apply_explanations(
    hits: Sequence[Hit], facts: Sequence[Fact], rules: Sequence[Rule]
) -> Explained:
    """The hits with every explanation and ruling-out of `rules` applied (see the module)."""
    explaining = [(rule, item) for rule in rules for item in rule.explains]
    ruling = [(rule, item) for rule in rules for item in rule.rules_out]
    if not explaining and not ruling:
        return Explained(tuple(hits))
    # what two inputs show together (a setting and a node's interfaces) can explain too
    facts = [
        *facts,
        *unmatched_interfaces(facts),
        *runtime_newer_than_driver(facts),
        *build_lacks_gpu(facts),
    ]
    kept: list[Hit] = []
    notes: dict[tuple[str, str, tuple[Fact, ...]], str] = {}
    reasons: dict[Hit, str] = {}
    for hit in hits:
        found = _best_explanation(hit, facts, explaining)
        ruled_out = _ruled_out(hit, facts, ruling) if found is None else None
        if ruled_out is not None:
            rule, ruling_out, grounds = ruled_out
            key = (rule.id, hit.rule_id, grounds)
            notes.setdefault(key, _ruled_out_note(hit, ruling_out, grounds))
            continue
        if found is None:
            kept.append(hit)
            continue
        rule, explanation, grounds = found
        path = explanation.path_of(hit)
        captures = hit.captures
        if path is not None and hit.capture("path") is None:
            captures = (*captures, ("path", path))
        moved = replace(
            hit,
            rule_id=rule.id,
            category=rule.category,
            weight=explanation.weight,
            captures=captures,
            also=(),
        )
        kept.append(moved)
        reasons[moved] = f"explained by {cite(grounds[0])}: {explanation.note}"
        key = (rule.id, hit.rule_id, grounds)
        notes.setdefault(key, _explained_note(hit, rule, explanation, grounds))
    return Explained(tuple(kept), tuple(notes.values()), reasons)


def _ruled_out(
    hit: Hit, facts: Sequence[Fact], ruling: Sequence[tuple[Rule, RuleOut]]
) -> tuple[Rule, RuleOut, tuple[Fact, ...]] | None:
    for rule, item in ruling:
        grounds = item.grounds(hit, facts)
        if grounds is not None:
            return rule, item, grounds
    return None


def _best_explanation(
    hit: Hit, facts: Sequence[Fact], explaining: Sequence[tuple[Rule, Explanation]]
) -> tuple[Rule, Explanation, tuple[Fact, ...]] | None:
    best: tuple[Rule, Explanation, tuple[Fact, ...]] | None = None
    for rule, item in explaining:
        if rule.id == hit.rule_id or (best is not None and item.weight <= best[1].weight):
            continue
        grounds = item.grounds(hit, facts)
        if grounds is not None:
            best = (rule, item, grounds)
    return best


def _facts_text(grounds: tuple[Fact, ...]) -> str:
    return " and ".join(f"{cite(item)} `{item.text.strip()}`" for item in grounds)


def _explained_note(
    hit: Hit, rule: Rule, explanation: Explanation, grounds: tuple[Fact, ...]
) -> str:
    return (
        f"{cite(hit)} ({hit.rule_id}) is explained by {_facts_text(grounds)}: "
        f"{explanation.note} It counts for {rule.category.value} ({rule.id})."
    )


def _ruled_out_note(hit: Hit, ruling: RuleOut, grounds: tuple[Fact, ...]) -> str:
    return f"{cite(hit)} ({hit.rule_id}) is ruled out by {_facts_text(grounds)}: {ruling.note}"
