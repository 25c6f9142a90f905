"""A self-contained HTML report: one file, inline CSS and SVG, no network, no external script.

`render_html(report)` is pure: the verdict, the ranked causes with confidence bars, every
evidence line with its file, line and (when `crashlens.inputs.context` filled it) the lines
around it, remediation as copyable commands (`page.py`), and a timeline chart of the evidence
across files and ranks: which rank failed first, what followed (`timeline.py`).
"""

from __future__ import annotations

from crashlens.render.html.page import render_html

__all__ = ["render_html"]
