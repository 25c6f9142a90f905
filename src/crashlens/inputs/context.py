"""Neighbouring lines for cited evidence, read back from the inputs after the analysis.

The analysis keeps only the lines it cites (logs are never held in memory), so the few lines
around each citation are fetched afterwards, and only for the formats that show them (HTML):
one more streaming pass over the inputs that hold evidence, stopping after the last line
needed. Stdin cannot be read twice, so its evidence gets no context.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import IO

from crashlens.inputs.discover import Source, iter_inputs
from crashlens.inputs.read import read_head, text_chunks
from crashlens.model import Cause, Evidence, InputStatus, Report
from crashlens.parsers.base import clean_line

RADIUS = 3
"""Lines shown before and after a cited line."""
MAX_CONTEXT_CHARS = 400
"""A context line longer than this is cut (a progress bar redrawn 10,000 times is one line)."""


def _evidence(report: Report) -> Iterable[Evidence]:
    if report.first_failure is not None:
        yield report.first_failure
    for cause in report.causes:
        yield from cause.evidence


def _wanted(report: Report, radius: int) -> dict[str, set[int]]:
    wanted: dict[str, set[int]] = {}
    for item in _evidence(report):
        if item.line is None or item.path == "<stdin>":
            continue
        lines = wanted.setdefault(item.path, set())
        lines.update(range(max(1, item.line - radius), item.line + radius + 1))
    return wanted


def _open_stream(source: Source) -> tuple[IO[bytes], Iterable[bytes]]:
    stream = source.open()
    return stream, text_chunks(stream, read_head(stream))


def _read_lines(source: Source, numbers: set[int]) -> dict[int, str]:
    """The lines `numbers` (1-based, counting `\\n`) of one input, cleaned for display."""
    found: dict[int, str] = {}
    last = max(numbers)
    lineno = 0
    stream, chunks = _open_stream(source)
    try:
        for chunk in chunks:
            pieces = chunk.split(b"\n")
            if chunk.endswith(b"\n"):
                pieces.pop()  # chunks end at a newline, except the input's unterminated tail
            for piece in pieces:
                lineno += 1
                if lineno in numbers:
                    found[lineno] = _display(piece)
                if lineno >= last:
                    return found
    finally:
        stream.close()
    return found


def _display(data: bytes) -> str:
    text = clean_line(data.decode("utf-8", errors="replace"))
    if "\r" in text:
        text = text.rsplit("\r", 1)[-1] or text.replace("\r", " ")
    if len(text) > MAX_CONTEXT_CHARS:
        text = text[:MAX_CONTEXT_CHARS] + "…"
    return text


def read_context(paths: Sequence[str], wanted: dict[str, set[int]]) -> dict[str, dict[int, str]]:
    """For each display path in `wanted`, the wanted lines found in it."""
    found: dict[str, dict[int, str]] = {}
    if not wanted:
        return found
    for item in iter_inputs([p for p in paths if p != "-"]):
        if isinstance(item, InputStatus) or item.path not in wanted:
            continue
        try:
            found[item.path] = _read_lines(item, wanted[item.path])
        except (OSError, EOFError, ValueError):
            continue  # the analysis already reported what was wrong with this input
        if len(found) == len(wanted):
            break
    return found


def add_context(report: Report, paths: Sequence[str], radius: int = RADIUS) -> Report:
    """The report with `context` filled on every evidence line that has a line number."""
    lines = read_context(paths, _wanted(report, radius))
    if not lines:
        return report

    def fill(item: Evidence) -> Evidence:
        if item.line is None or item.path not in lines:
            return item
        got = lines[item.path]
        near = range(max(1, item.line - radius), item.line + radius + 1)
        context = tuple((n, got[n]) for n in near if n != item.line and n in got)
        return dataclasses.replace(item, context=context)

    def cause(item: Cause) -> Cause:
        return dataclasses.replace(item, evidence=tuple(fill(e) for e in item.evidence))

    first = report.first_failure
    return dataclasses.replace(
        report,
        causes=tuple(cause(c) for c in report.causes),
        first_failure=fill(first) if first is not None else None,
    )
