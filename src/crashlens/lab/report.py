"""Rendering `crashlens eval` results as a text table or JSON."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from crashlens.lab.corpus import LABELS
from crashlens.lab.evaluate import Metrics
from crashlens.lab.selective import WRONG_COST
from crashlens.model import Verdict

_ROWS = (
    ("top-1 accuracy", "top1"),
    ("top-3 accuracy", "top3"),
    ("top-1 on hard cases", "hard_top1"),
    ("macro-F1", "macro_f1"),
    ("expected calibration error", "ece"),
    ("none cases given a cause", "none_given_cause"),
    ("verdict unknown", "unknown_share"),
)


def render_eval_text(results: list[Metrics], counts: dict[str, Any]) -> str:
    """A plain-text report: summary table, per-label F1, confusion of the best method."""
    names = [m.method for m in results]
    width = max(len(n) for n in names) + 2
    lines = [f"cases: {results[0].cases}  {counts}", ""]
    lines.append(f"{'':28}" + "".join(f"{n:>{width}}" for n in names))
    for title, attribute in _ROWS:
        values = "".join(f"{getattr(m, attribute):>{width}.3f}" for m in results)
        lines.append(f"{title:28}{values}")
    lines.extend(["", "F1 per label " + " | ".join(names)])
    for label in LABELS:
        cells = "".join(f"{m.per_label[label]['f1']:>{width}.3f}" for m in results)
        support = int(results[0].per_label[label]["support"])
        lines.append(f"  {label:12} (n={support:3}){cells}")
    for metrics in results:
        lines.extend(_selective(metrics))
    for metrics in results[:2]:
        lines.extend(["", f"confusion ({metrics.method}): rows = label, columns = verdict"])
        columns = [*LABELS, Verdict.UNKNOWN]
        lines.append(" " * 14 + "".join(f"{c[:8]:>9}" for c in columns))
        for label in LABELS:
            row = metrics.confusion.get(label, {})
            lines.append(f"  {label:12}" + "".join(f"{row.get(c, 0):>9}" for c in columns))
    return "\n".join(lines) + "\n"


def _selective(metrics: Metrics) -> list[str]:
    """The accuracy-coverage curve and the operating point of a method that has them."""
    if not metrics.curve or metrics.threshold is None:
        return []
    lines = [
        "",
        f"accuracy-coverage ({metrics.method}, out-of-fold): a cause is named when its",
        "calibrated probability reaches the threshold; coverage = failed runs given a cause",
        f"{'threshold':>11}{'coverage':>10}{'accuracy':>10}{'top-1':>8}{'wrong':>7}",
    ]
    for item in metrics.curve:
        mark = "  <- operating point" if item.threshold == metrics.threshold else ""
        lines.append(
            f"{item.threshold:>11.2f}{item.coverage:>10.3f}{item.accuracy:>10.3f}"
            f"{item.top1:>8.3f}{item.wrong:>7}{mark}"
        )
    folds = " ".join(f"{t:.2f}" for t in metrics.fold_thresholds)
    lines.append(
        f"operating point {metrics.threshold:.2f}: chosen on these out-of-fold answers as "
        f"`crashlens train` chooses it (a wrong cause costs {WRONG_COST:g} unknowns); "
        f"the folds chose {folds}"
    )
    return lines


def render_eval_json(results: list[Metrics], counts: dict[str, Any]) -> str:
    """The figures as JSON, for machines."""
    data: dict[str, Any] = {"corpus": counts, "methods": [asdict(m) for m in results]}
    return json.dumps(data, indent=2) + "\n"
