"""Features of one analysis for the classifier: what the pipeline already knows, as a dict.

Which rules hit and in which role, the rule decision's score per category, facts from the
structured inputs (exit codes, signals, Xid codes, OOMKilled, tool errors) and the normalized
words of the lines that matched. Pure and cheap: no scikit-learn here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from crashlens.decide import Decision
from crashlens.model import Fact, InputAnalysis

_MASKS = (
    re.compile(r"0x[0-9a-fA-F]+"),
    re.compile(r"(?:/[\w.+-]+){2,}"),
    re.compile(r"\b[0-9a-f]{8,}\b"),
    re.compile(r"[0-9]+"),
)
_WORD = re.compile(r"[a-z_][a-z_]{2,30}")
_STOP = frozenset(
    {"the", "and", "for", "with", "this", "that", "was", "are", "not", "you", "from", "your"}
)
_CATEGORICAL = {
    "launcher.signal": "signal",
    "kernel.xid": "xid",
    "nvidia_smi.error": "smierr",
    "launcher.tool": "tool",
    "slurm.task_failure": "slurmtask",
}
_EXIT_KEYS = ("launcher.exit_code", "docker.exit_code")
MAX_TOKENS = 400
"""Distinct words taken per case: the lines that matched, not whole logs."""


def words(text: str) -> set[str]:
    """Lower-case words of a line with numbers, hex, hashes and paths masked out."""
    lowered = text.lower()
    for mask in _MASKS:
        lowered = mask.sub(" ", lowered)
    return {w for w in _WORD.findall(lowered) if w not in _STOP}


def _fact_features(facts: Sequence[Fact], out: dict[str, float]) -> None:
    for item in facts:
        out[f"has:{item.key}"] = 1.0
        if isinstance(item.value, bool):
            if item.value:
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
    if decision.verdict in ("none", "unknown"):
        out[f"verdict:{decision.verdict}"] = 1.0
    facts = [item for analysis in analyses for item in analysis.facts]
    _fact_features(facts, out)
    texts = [hit.text for hit in hits]
    texts.extend(str(f.value) for f in facts if f.key == "python.exception")
    vocabulary: set[str] = set()
    for text in texts:
        vocabulary |= words(text)
        if len(vocabulary) >= MAX_TOKENS:
            break
    for word in sorted(vocabulary)[:MAX_TOKENS]:
        out[f"tok:{word}"] = 1.0
    return out
