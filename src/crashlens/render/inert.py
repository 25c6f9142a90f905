"""Inert output: text taken from an input is shown, never obeyed, by a terminal or a viewer.

Every renderer passes input-derived text (cited lines, paths, file names, notes, summaries
and commands filled from the input) through `visible` before it writes it. A log line can
carry what a terminal executes: OSC sequences (`ESC ]52;` writes the clipboard, `ESC ]8;`
makes a hyperlink, `ESC ]0;` sets the window title) ended by BEL or by `ESC \\`, `ESC c`
(reset), DCS (`ESC P`), the single-byte CSI `\\x9b` and the other C0 and C1 controls. Each
such character is written as its escape (`\\x1b]52;...`), so the sequence is seen for what it
is and does nothing; the printable characters around it are left as they are. The same goes
for Unicode's line and paragraph separators and its bidirectional overrides (they reorder
what a reader sees), and for lone surrogates (a file name that was not UTF-8), which no
UTF-8 output can carry. Tab, and newline where the caller allows several lines, are layout
and stay.

JSON uses it too: `json.dumps` escapes C0 controls, but a consumer's `jq -r` turns `\\u001b`
back into a raw ESC on its terminal, and C1 controls pass JSON unescaped; so the report's
strings carry the visible form. A report is for reading, and nothing in it is meant to be
fed back as the original bytes.

Markdown needs more than that, and has its own helpers here: code spans and fences sized to
what they hold (a backtick in a cited line or a file name cannot close them), table cells
that a pipe or a newline cannot leave, and prose with Markdown's active characters escaped.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from crashlens.model import Action, Assessment, Cause, Evidence, Report

_UNSAFE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
    "\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
"""What a terminal or a viewer may act on: C0 but tab, DEL, C1, separators, bidi controls,
lone surrogates. Newline is in the set; `visible(..., lines=True)` keeps it."""
_UNSAFE_KEEPING_LINES = re.compile(_UNSAFE.pattern.replace("\x0a", "\x0b"))


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape): show the byte
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def visible(text: str, *, lines: bool = False) -> str:
    """`text` with every control character written as its escape (`\\x1b`, `\\x9b`, `\\n`).

    `lines`: keep newlines (a command or a snippet of several lines); otherwise a newline is
    shown as `\\x0a` too, so one field stays on one line."""
    pattern = _UNSAFE_KEEPING_LINES if lines else _UNSAFE
    if pattern.search(text) is None:
        return text
    return pattern.sub(_escape, text)


def maybe_visible(text: str | None) -> str | None:
    """`visible` of an optional field."""
    return None if text is None else visible(text)


def inert_data(value: Any, lines: bool = False) -> Any:
    """JSON-ready data with every string visible: a `jq -r` of any field prints no escape.
    Only a `command` keeps its newlines (a snippet of several lines)."""
    if isinstance(value, str):
        return visible(value, lines=lines)
    if isinstance(value, dict):
        return {key: inert_data(item, key == "command") for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [inert_data(item) for item in value]
    return value


# --- Markdown ----------------------------------------------------------------------------------

_MD_ACTIVE = re.compile(r"([\\`\[\]<|&])")
"""What can open a code span, a link or an image, raw HTML, an entity or a table cell in
running text. Emphasis characters are left alone: at worst they change a word's style."""
_MD_LINE_START = re.compile(r"^()(?:([-+=>#*_~])|(\d+)([.)]))")
"""What would make a line a list item, a heading (or its underline) or a quote."""
_MENTION = re.compile(r"(?<![\w@])@(?=[A-Za-z0-9])")
"""An `@` GitHub would turn into a mention (or a team ping); not one inside `user@host`."""


def md_text(text: str) -> str:
    """Running Markdown text: nothing in it can become a link, an image, HTML or a mention.

    Markdown's active characters are backslash-escaped (they show as themselves); an `@` that
    would start a mention gets a zero-width space after it (GitHub mentions ignore escapes)."""
    text = visible(text).lstrip(" \t")  # four spaces in front would make a code block
    text = _MD_ACTIVE.sub(r"\\\1", text)
    text = _MENTION.sub("@&#8203;", text)
    return _MD_LINE_START.sub(_line_start, text)


def _line_start(match: re.Match[str]) -> str:
    indent, mark, number, closing = match.groups()
    return f"{indent}\\{mark}" if mark else f"{indent}{number}\\{closing}"


def _longest_run(text: str, char: str) -> int:
    longest = run = 0
    for found in text:
        run = run + 1 if found == char else 0
        longest = max(longest, run)
    return longest


def md_code(text: str) -> str:
    """An inline code span that holds `text` whatever it contains, on one line.

    The delimiter is one backtick longer than the longest run inside; a space pads content that
    starts or ends with a backtick or a space (CommonMark strips one from each side)."""
    text = visible(text)
    if not text:
        return ""  # CommonMark has no empty code span: "``" would show as two backticks
    fence = "`" * (_longest_run(text, "`") + 1)
    if text.startswith(("`", " ")) or text.endswith(("`", " ")):
        text = f" {text} "
    return f"{fence}{text}{fence}"


def md_cell_code(text: str) -> str:
    """A code span inside a table cell: a pipe is escaped too (GFM splits cells first)."""
    return md_code(text).replace("|", "\\|")


def md_cell(text: str) -> str:
    """Running text inside a table cell (pipes escaped, one line)."""
    return md_text(text)


def md_fence(text: str, lang: str = "text") -> str:
    """A fenced code block that holds `text` (several lines) whatever it contains."""
    text = visible(text, lines=True)
    fence = "`" * max(3, _longest_run(text, "`") + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


# --- rich markup -------------------------------------------------------------------------------


def rich_text(text: str) -> str:
    """Text for a rich string that is parsed as markup: visible, and no tag can open."""
    from rich.markup import escape

    return escape(visible(text))


# --- a whole report ----------------------------------------------------------------------------


def inert_report(report: Report) -> Report:
    """The report with every string visible (commands and snippets keep their lines): for a
    renderer that lays text out after it is made safe (the terminal measures widths)."""
    return dataclasses.replace(
        report,
        causes=tuple(_cause(c) for c in report.causes),
        inputs=tuple(
            dataclasses.replace(i, path=visible(i.path), reason=maybe_visible(i.reason))
            for i in report.inputs
        ),
        next_checks=tuple(_action(a) for a in report.next_checks),
        first_failure=_maybe_evidence(report.first_failure),
        lead=_maybe_evidence(report.lead),
        notes=tuple(visible(n) for n in report.notes),
        assessment=_assessment(report.assessment) if report.assessment is not None else None,
    )


def _evidence(item: Evidence) -> Evidence:
    return dataclasses.replace(
        item,
        path=visible(item.path),
        text=visible(item.text),
        rule=maybe_visible(item.rule),
        note=maybe_visible(item.note),
        host=maybe_visible(item.host),
        context=tuple((number, visible(text)) for number, text in item.context),
    )


def _maybe_evidence(item: Evidence | None) -> Evidence | None:
    return None if item is None else _evidence(item)


def _action(item: Action) -> Action:
    command = None if item.command is None else visible(item.command, lines=True)
    return dataclasses.replace(item, text=visible(item.text), command=command)


def _cause(cause: Cause) -> Cause:
    return dataclasses.replace(
        cause,
        summary=visible(cause.summary),
        evidence=tuple(_evidence(e) for e in cause.evidence),
        remediation=tuple(_action(a) for a in cause.remediation),
        next_checks=tuple(_action(a) for a in cause.next_checks),
        demoted_because=maybe_visible(cause.demoted_because),
    )


def _assessment(item: Assessment) -> Assessment:
    return dataclasses.replace(
        item,
        sign=_maybe_evidence(item.sign),
        reason=visible(item.reason),
        harmless=tuple(visible(h) for h in item.harmless),
    )
