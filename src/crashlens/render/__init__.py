"""Renderers: pure functions from a `Report` to text. No analysis happens here."""

from __future__ import annotations

from enum import StrEnum

from crashlens.model import Verdict


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
