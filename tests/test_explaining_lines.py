"""A cause only the classifier supports cites the lines that carried its weight, and says how
often such lines meant it in the labelled corpus: "usually" only when it is the likelier
reading, so a report never says a second cause is what its lines usually meant, under a first
cause that contradicts it."""

from __future__ import annotations

import pytest

from crashlens.decide.rerank import how_often
from crashlens.pipeline import AnalyzeOptions, analyze

from conftest import ROOT

CASES = sorted(path.parent for path in (ROOT / "corpus").glob("*/logs"))[::12]
"""Every twelfth corpus case (about 150): reports with causes the classifier alone ranks."""


def test_how_often_follows_the_confidence() -> None:
    assert how_often(0.78) == "usually"
    assert how_often(0.5) == "usually"
    assert how_often(0.12) == "sometimes"


@pytest.mark.parametrize("case", CASES, ids=lambda path: path.name)
def test_only_the_likelier_reading_is_what_lines_usually_meant(case: object) -> None:
    report = analyze([str(case / "logs")], AnalyzeOptions())  # type: ignore[operator]
    for cause in report.causes:
        claims_usual = "usually meant" in cause.summary or any(
            "usually meant" in (item.note or "") for item in cause.evidence
        )
        if claims_usual:
            assert cause.confidence >= 0.5, (cause.category, cause.confidence)
