"""Where a server's request opens, for the finish signs that sum up one request each.

A `per_request` finish sign (ComfyUI's `Prompt executed in ...`) is printed after a failed
request too, so the failure detector asks whether a failure came within that request
(`decide.stop_order.failed_request`): after the line that opened it (the entry's `opens`,
ComfyUI's `got prompt`) and after the request summed up before it, not at start-up (a custom
node that failed to import, a warning the server went on from).

* `server.request`: str the tool whose request the last such line opened; its line is that
  line. The summary's `launcher.completed` fact carries `since`: the line after which its
  request's failures stand.
"""

from __future__ import annotations

from typing import Any

from crashlens.model import Fact, Line
from crashlens.parsers.base import Anchor, AnchoredCollector
from crashlens.parsers.launcher.finish_signs import OPENS_ANCHOR, request_opened


def on_request_opened(collector: AnchoredCollector, line: Line) -> None:
    sign = request_opened(line.text) or request_opened(line.raw)
    if sign is not None:
        # the last one counts: each request opens after the one before
        collector.singles.pop("server.request", None)
        collector.keep_first("server.request", sign.tool, line)


def request_since(singles: dict[str, Fact], summed_before: Fact | None) -> int:
    """The line after which a request's failures stand: the later of the line that opened it
    and the summary of the request before (0: the log's start)."""
    lines = [0]
    if (opened := singles.get("server.request")) is not None:
        lines.append(opened.lineno or 0)
    if summed_before is not None and summed_before.attr("request") is True:
        lines.append(summed_before.lineno or 0)
    return max(lines)


REQUEST_ANCHORS: tuple[Anchor[Any], ...] = (
    (Anchor(OPENS_ANCHOR, on_request_opened),) if OPENS_ANCHOR else ()
)
"""The lines that open a server's request (`FinishSign.opens`)."""
