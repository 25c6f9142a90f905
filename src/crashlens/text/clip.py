"""Text cut to a length for a report line, an ellipsis marking the cut."""

from __future__ import annotations


def shortened(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, its last one an ellipsis when anything was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
