"""Renderers: pure functions from a `Report` to text. No analysis happens here."""

from __future__ import annotations

from enum import StrEnum


class Format(StrEnum):
    """Output formats of `crashlens analyze`."""

    TERMINAL = "terminal"
    JSON = "json"
    MARKDOWN = "markdown"
    HTML = "html"
