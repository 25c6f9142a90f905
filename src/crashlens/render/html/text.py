"""Small text helpers both parts of the HTML page use: escaping, locations, times."""

from __future__ import annotations

import os
from html import escape

from crashlens.model import Clock, Evidence
from crashlens.render.inert import visible
from crashlens.text.clip import shortened
from crashlens.text.times import utc_datetime


def esc(text: object) -> str:
    """HTML-escape anything, quotes included (safe in text and in attribute values), its
    control characters shown as escapes (`render.inert`): a page saved as text or viewed in a
    terminal runs nothing."""
    return escape(visible(str(text), lines=True), quote=True)


def where(item: Evidence) -> str:
    """`path:line`, or the path alone for a fact of a structured input."""
    return f"{item.path}:{item.line}" if item.line is not None else item.path


def short_where(item: Evidence) -> str:
    """`file:line` with the folders (and the archive) left out."""
    name = os.path.basename(item.path.split("!")[-1]) or item.path
    return f"{name}:{item.line}" if item.line is not None else name


def short(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, an ellipsis marking the cut."""
    return shortened(text, limit)


def time_label(timestamp: float, clock: Clock | None) -> str:
    """A time as a person reads it, by its clock (a time without one is wall-clock)."""
    if clock is Clock.BOOT:
        return f"{timestamp:.3f} s after boot"
    moment = utc_datetime(timestamp)
    if moment is None:
        return f"{timestamp:.0f} s since 1970 (out of the calendar's range)"
    yearless = clock is Clock.YEARLESS  # the log printed no year: show none
    text = moment.strftime("%m-%d %H:%M:%S" if yearless else "%Y-%m-%d %H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond // 1000:03d}"
    return f"{text} (year not logged)" if yearless else text
