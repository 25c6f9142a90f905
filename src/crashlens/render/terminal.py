"""The rich terminal report. Log text is always shown as `Text`, never parsed as markup.

Every line is laid out here to fit the console's width (`render.fit`), so that a terminal of
80 columns never wraps a path, a log line or a command in the middle of a word: a cited line is
shortened around what matched, a shell command is broken between words with a ` \\`
continuation, and a snippet of a file (YAML, Python, config lines) is shown as a block of its
own, never behind the `$` of a command. Causes are headed by a rule line, not boxed: a box's
side borders would be copied along with any command that spans two lines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from crashlens.model import Action, Cause, Evidence, InputState, InputStatus, Report, Verdict
from crashlens.render import likelihood
from crashlens.render.fit import (
    shell_lines,
    shorten,
    shorten_path,
    snippet_lines,
    wrap,
)
from crashlens.render.inert import inert_report

_COLOURS = {Verdict.NONE: "green", Verdict.UNKNOWN: "yellow"}

Focus = Callable[[Evidence], "tuple[int, int] | None"]
"""Where in a cited line its rule matched (start, end), so a shortened line keeps that part;
the command line builds one from the rule library (`crashlens.match.focus`)."""

_NO_FOCUS: Focus = lambda item: None  # noqa: E731
_MIN_WIDTH = 40
"""Below this the layout stops trying: rich folds what does not fit."""
_SNIPPET_NAMES = {"yaml": "YAML", "python": "Python", "conf": "Config file lines"}
"""How a snippet that is not a shell command is labelled (its `lang`)."""
_EVIDENCE_INDENT = 4
_COMMAND_PROMPT = "    $ "
_CONTINUED = " " * 8
_SNIPPET_INDENT = " " * 6


def _where(path: str, line: int | None) -> str:
    return f"{path}:{line}" if line is not None else path


def _line(*parts: str | tuple[str, str]) -> Text:
    """One laid-out line; should it still be too wide (a single word longer than the
    terminal), rich folds it rather than dropping text."""
    text = Text.assemble(*parts)
    text.overflow = "fold"
    return text


def _prose(text: str, width: int, indent: str = "", first: str = "", style: str = "") -> list[Text]:
    """`text` wrapped at spaces, `first` before its first line and `indent` before the rest."""
    lines = wrap(text, width - max(len(first), len(indent)))
    return [
        _line((first if number == 0 else indent), (line, style))
        for number, line in enumerate(lines)
    ]


def _cited(label: str, item: Evidence, width: int, focus: Focus) -> list[Text]:
    """A labelled citation on its own line, then the line it cites, shortened to fit."""
    citation = _where(item.path, item.line)
    if cell_len(label + citation) <= width:
        head = [_line((label, "bold"), (citation, "magenta"))]
    else:  # a long path gets a line of its own
        head = [
            _line((label.rstrip(), "bold")),
            _line("  ", (shorten_path(citation, width - 2), "magenta")),
        ]
    return [*head, _line("  ", shorten(item.text, width - 2, focus(item)))]


def _fields(fields: list[tuple[str, str]], width: int) -> list[Text]:
    """Fields separated by two spaces, as many per line as fit; the rest on indented lines."""
    lines: list[list[tuple[str, str]]] = [[]]
    used = 1
    for text, style in fields:
        if lines[-1] and used + 2 + cell_len(text) > width:
            lines.append([])
            used = 3
        if lines[-1]:
            lines[-1].append(("  ", ""))
            used += 2
        lines[-1].append((text, style))
        used += cell_len(text)
    return [_line(" " if n == 0 else "   ", *parts) for n, parts in enumerate(lines)]


def _evidence(item: Evidence, width: int, focus: Focus) -> list[Text]:
    fields = [
        (shorten_path(_where(item.path, item.line), width - 1), "magenta"),
        (item.role.value, "bold"),
    ]
    if item.rule:
        fields.append((item.rule, "dim"))
    if item.note:
        fields.append((f"({item.note})", "italic"))
    text = shorten(item.text, width - _EVIDENCE_INDENT, focus(item))
    return [*_fields(fields, width), _line(" " * _EVIDENCE_INDENT, text)]


def _command(item: Action, width: int) -> list[Text]:
    """A shell command behind `$`, broken between words; any other snippet as a block."""
    command = item.command or ""
    if item.lang != "shell":
        label = _SNIPPET_NAMES.get(item.lang, item.lang)
        lines = [_line(("    " + label + ":", "dim italic"))]
        rows = snippet_lines(command, width - len(_SNIPPET_INDENT))
        lines.extend(_line(_SNIPPET_INDENT, (row, "cyan")) for row in rows)
        return lines
    rows = shell_lines(command, width - len(_COMMAND_PROMPT), width - len(_CONTINUED))
    return [
        _line((_COMMAND_PROMPT if n == 0 else _CONTINUED), (row, "cyan"))
        for n, row in enumerate(rows)
    ]


def _actions(title: str, items: tuple[Action, ...], width: int) -> list[Text]:
    if not items:
        return []
    parts = [_line((title, "bold"))]
    for number, item in enumerate(items, start=1):
        mark = f" {number}. "
        parts.extend(_prose(item.text, width, indent=" " * len(mark), first=mark))
        if item.command:
            parts.extend(_command(item, width))
    return parts


def _heading(rank: int, cause: Cause, width: int, verdict: Verdict) -> Text:
    style = "red" if rank == 1 else "dim"
    sure = likelihood(cause, verdict)
    title = Text.assemble(
        (f"{rank}. {cause.category.value}", "bold"), f"  {cause.confidence:.0%} {sure}"
    )
    rest = max(3, width - 4 - title.cell_len)
    return Text.assemble(("── ", style), title, (" " + "─" * rest, style))


def _cause(rank: int, cause: Cause, width: int, focus: Focus, verdict: Verdict) -> list[Text]:
    parts = [_heading(rank, cause, width, verdict), *_prose(cause.summary, width)]
    if cause.demoted_because:
        parts.extend(_prose(f"ranked lower: {cause.demoted_because}", width, style="dim italic"))
    if cause.evidence:
        parts.append(_line(("Evidence", "bold")))
        for item in cause.evidence:
            parts.extend(_evidence(item, width, focus))
    parts.extend(_actions("What to do", cause.remediation, width))
    parts.extend(_actions("To confirm", cause.next_checks, width))
    return parts


def _inputs(items: Iterable[InputStatus], width: int) -> list[Text]:
    """The inputs as columns: the path column takes what the others leave."""
    rows = [
        (
            item.path,
            item.kind.value if item.kind else "-",
            item.status.value,
            item.status is InputState.ANALYZED,
            item.reason or "",
        )
        for item in items
    ]
    kind_w = max([len("kind"), *(len(row[1]) for row in rows)])
    status_w = max([len("status"), *(len(row[2]) for row in rows)])
    room = width - 1 - 2 - kind_w - 2 - status_w
    path_w = min(max([len("input"), *(len(row[0]) for row in rows)]), max(room, 12))
    head = f" {'input'.ljust(path_w)}  {'kind'.ljust(kind_w)}  {'status'.ljust(status_w)}"
    # the header's last column is padded only when notes follow it
    note_at = len(head) + 2
    if width - note_at < 20:  # no room for notes beside the columns: under them
        note_at = 3
    beside = any(row[4] for row in rows) and note_at > 3
    title = head + "  note" if beside else head.rstrip()
    lines = [_line(("Inputs", "bold")), _line((title, "bold"))]
    for path, kind, status, analyzed, note in rows:
        shown = shorten_path(path, path_w).ljust(path_w)
        colour = "green" if analyzed else "yellow"
        parts: list[str | tuple[str, str]] = [" ", shown, "  ", kind.ljust(kind_w), "  "]
        parts.append((status.ljust(status_w) if note and beside else status, colour))
        if not note:
            lines.append(_line(*parts))
            continue
        notes = wrap(note, width - note_at)
        if note_at == 3:
            lines.append(_line(*parts))
        else:
            lines.append(_line(*parts, "  ", notes.pop(0)))
        lines.extend(_line(" " * note_at, rest) for rest in notes)
    return lines


def _cited_first(sign: Evidence, report: Report) -> bool:
    """Whether the first-failure line already shows the ending's line."""
    first = report.first_failure
    return first is not None and (first.path, first.line) == (sign.path, sign.line)


def _ending(report: Report, console: Console) -> None:
    """How the run ended, the line that shows it, and what was judged harmless."""
    assessed = report.assessment
    if assessed is None:
        return
    width = max(console.width, _MIN_WIDTH)
    _print(console, _labelled("Ending: ", f"{assessed.ending.value} — {assessed.reason}", width))
    sign = assessed.sign
    if sign is not None and not _cited_first(sign, report):
        _print(console, _cited("Shown by: ", sign, width, _NO_FOCUS))
    for item in assessed.harmless:
        _print(console, _labelled("Judged harmless: ", item, width, style="dim"))


def _labelled(label: str, text: str, width: int, style: str = "") -> list[Text]:
    """`label` in bold, then `text` wrapped here, not by rich (a path in it is shortened
    whole, never cut mid-token), its later lines indented under the text's start."""
    lines = wrap(text, width - len(label))
    head = _line((label, f"bold {style}".strip()), (lines[0], style))
    return [head, *(_line(" " * len(label), (rest, style)) for rest in lines[1:])]


def _print(console: Console, lines: Iterable[Text]) -> None:
    for line in lines:
        console.print(line)


def render_terminal(report: Report, console: Console, focus: Focus | None = None) -> None:
    """Print the report to a rich console, every line fitted to its width.

    `focus` says where each cited line's rule matched; without it a long line keeps its start.
    """
    report = inert_report(report)  # every string from the input shown, not obeyed
    width = max(console.width, _MIN_WIDTH)
    see = focus or _NO_FOCUS
    colour = _COLOURS.get(report.verdict, "red")
    console.print(Text.assemble(("Verdict: ", "bold"), (report.verdict.value, f"bold {colour}")))
    if report.assessment is not None:
        _ending(report, console)
    if report.first_failure:
        _print(console, _cited("First failure: ", report.first_failure, width, see))
    for note in report.notes:
        _print(console, _prose(note, width, style="italic"))
    for rank, cause in enumerate(report.causes, start=1):
        _print(console, _cause(rank, cause, width, see, report.verdict))
    _print(console, _actions("What to collect next", report.next_checks, width))
    _print(console, _inputs(report.inputs, width))
