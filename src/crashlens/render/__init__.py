"""Renderers: pure functions from a `Report` to text. No analysis happens here."""

from __future__ import annotations

from enum import StrEnum

from crashlens.model import Cause, Ending, Report, Verdict


class Format(StrEnum):
    """Output formats of `crashlens analyze`."""

    TERMINAL = "terminal"
    JSON = "json"
    MARKDOWN = "markdown"
    HTML = "html"


NO_CAUSE_TEXT: dict[Verdict, str] = {
    Verdict.NONE: "No failure found in these inputs.",
    Verdict.UNKNOWN: "A failure is visible, but no cause has enough evidence.",
}
"""The headline of a report whose verdict names no cause (the others lead with their summary)."""
UNENDED_TEXT = (
    "The inputs do not show how the run ended (its log simply stops): a failure is possible, "
    "and no cause has enough evidence."
)
"""The headline of an `unknown` verdict on a run whose log stops with no ending in view
(`decide.unended`): no failure is visible, but nothing shows the run went well either."""


def no_cause_text(report: Report) -> str | None:
    """The headline of a report whose verdict names no cause, or None when it names one."""
    assessed = report.assessment
    if (
        report.verdict is Verdict.UNKNOWN
        and not report.causes  # no failure line in view either: only the missing ending
        and assessed is not None
        and assessed.ending is Ending.UNKNOWN
        and assessed.sign is not None  # the run's log (or container) is in view, and stops
    ):
        return UNENDED_TEXT
    return NO_CAUSE_TEXT.get(report.verdict)


NEAR_CERTAIN = 0.95
"""From this confidence up, the verdict's cause reads "near-certain"; below it, "likely" (a
cause right nine times in ten, as a bare SIGKILL is host_oom in the corpus, is likely)."""
POSSIBLE = 0.2
"""A cause the verdict does not name reads "possible" from this confidence up, else "unlikely"."""


def likelihood(cause: Cause, verdict: Verdict) -> str:
    """The word beside a cause's confidence. Only the cause the verdict names (its confidence
    reached the threshold the verdict was decided on) reads "likely" or "near-certain"; any
    other reads "possible" or "unlikely", so nothing under an `unknown` verdict reads as sure."""
    if Verdict.of(cause.category) is not verdict:
        return "possible" if cause.confidence >= POSSIBLE else "unlikely"
    return "near-certain" if cause.confidence >= NEAR_CERTAIN else "likely"
