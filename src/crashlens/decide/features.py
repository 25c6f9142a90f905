"""Features of one analysis for the classifier: what the pipeline already knows, as a dict.

Which rules hit and in which role, the rule decision's score per category, and the facts
that carry meaning on their own (exit codes, signals, Xid codes, OOMKilled, tool errors, true
flags). Pure and cheap: no scikit-learn here.

Two feature families were tried and left out because grouped cross-validation showed they
made the classifier worse on this corpus (it learnt the corpus, not the failures): the
normalized words of the matched lines, and the mere presence of each fact key
(`crashlens eval` measured top-1 0.909 with them against 0.915 without, and hard cases
0.784 against 0.811).
"""

from __future__ import annotations

from collections.abc import Sequence

from crashlens.decide.policy import Decision
from crashlens.model import Fact, InputAnalysis

_CATEGORICAL = {
    "launcher.signal": "signal",
    "kernel.xid": "xid",
    "nvidia_smi.error": "smierr",
    "launcher.tool": "tool",
    "slurm.task_failure": "slurmtask",
}
_EXIT_KEYS = ("launcher.exit_code", "docker.exit_code")
_NOT_FEATURES = frozenset({"log.progress", "python.gc_crash"})
"""Flags that carry no cause (most runs print progress); the rules use them, not the model."""


def _fact_features(facts: Sequence[Fact], out: dict[str, float]) -> None:
    for item in facts:
        if isinstance(item.value, bool):
            if item.value and item.key not in _NOT_FEATURES:
                out[f"true:{item.key}"] = 1.0
        elif item.key in _CATEGORICAL:
            out[f"{_CATEGORICAL[item.key]}:{item.value}"] = 1.0
        elif item.key in _EXIT_KEYS and isinstance(item.value, int):
            out[f"exit:{item.value}"] = 1.0


def features(analyses: Sequence[InputAnalysis], decision: Decision) -> dict[str, float]:
    """The feature dict of one case."""
    out: dict[str, float] = {}
    hits = [hit for analysis in analyses for hit in analysis.hits]
    for hit in hits:
        out[f"rule:{hit.rule_id}"] = 1.0
        key = f"role:{hit.category.value}:{hit.role.value}"
        out[key] = max(out.get(key, 0.0), hit.weight)
    for candidate in decision.candidates:
        out[f"score:{candidate.category.value}"] = candidate.score
    if decision.failure_seen:
        out["failure_seen"] = 1.0
    if not decision.verdict.names_cause:
        out[f"verdict:{decision.verdict}"] = 1.0
    facts = [item for analysis in analyses for item in analysis.facts]
    _fact_features(facts, out)
    return out
