"""The rich terminal report. Log text is always shown as `Text`, never parsed as markup."""

from __future__ import annotations

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from crashlens.model import Action, Cause, Evidence, InputState, Report, Verdict

_COLOURS = {Verdict.NONE: "green", Verdict.UNKNOWN: "yellow"}


def _where(path: str, line: int | None) -> str:
    return f"{path}:{line}" if line is not None else path


def _actions(title: str, items: tuple[Action, ...]) -> list[RenderableType]:
    if not items:
        return []
    parts: list[RenderableType] = [Text(title, style="bold")]
    for number, item in enumerate(items, start=1):
        parts.append(Text(f" {number}. {item.text}"))
        if item.command:
            parts.append(Text(f"    $ {item.command}", style="cyan"))
    return parts


def _cause(rank: int, cause: Cause) -> RenderableType:
    title = Text.assemble((f"{rank}. {cause.category.value}", "bold"), f"  {cause.confidence:.0%}")
    parts: list[RenderableType] = [Text(cause.summary)]
    if cause.demoted_because:
        parts.append(Text(f"ranked lower: {cause.demoted_because}", style="dim italic"))
    if cause.evidence:
        parts.append(Text("Evidence", style="bold"))
        for item in cause.evidence:
            note = f"  ({item.note})" if item.note else ""
            parts.append(
                Text.assemble(
                    " ",
                    (_where(item.path, item.line), "magenta"),
                    (f"  {item.role.value}", "bold"),
                    (f"  {item.rule or ''}", "dim"),
                    (note, "italic"),
                )
            )
            parts.append(Text(f"    {item.text[:400]}", overflow="fold"))
    parts.extend(_actions("What to do", cause.remediation))
    parts.extend(_actions("To confirm", cause.next_checks))
    style = "red" if rank == 1 else "dim"
    return Panel(Group(*parts), title=title, title_align="left", border_style=style)


def _cited_first(sign: Evidence, report: Report) -> bool:
    """Whether the first-failure line already shows the ending's line."""
    first = report.first_failure
    return first is not None and (first.path, first.line) == (sign.path, sign.line)


def _ending(report: Report, console: Console) -> None:
    """How the run ended, the line that shows it, and what was judged harmless."""
    assessed = report.assessment
    if assessed is None:
        return
    console.print(Text.assemble(("Ending: ", "bold"), assessed.ending.value, "  ", assessed.reason))
    sign = assessed.sign
    if sign is not None and not _cited_first(sign, report):
        console.print(
            Text.assemble(
                ("Shown by: ", "bold"),
                (_where(sign.path, sign.line), "magenta"),
                "  ",
                sign.text[:300],
            )
        )
    for item in assessed.harmless:
        console.print(Text(f"Judged harmless: {item}", style="dim"))


def render_terminal(report: Report, console: Console) -> None:
    """Print the report to a rich console."""
    colour = _COLOURS.get(report.verdict, "red")
    console.print(Text.assemble(("Verdict: ", "bold"), (report.verdict.value, f"bold {colour}")))
    if report.assessment is not None:
        _ending(report, console)
    if report.first_failure:
        first = report.first_failure
        console.print(
            Text.assemble(
                ("First failure: ", "bold"),
                (_where(first.path, first.line), "magenta"),
                "  ",
                first.text[:300],
            )
        )
    for note in report.notes:
        console.print(Text(note, style="italic"))
    for rank, cause in enumerate(report.causes, start=1):
        console.print(_cause(rank, cause))
    for part in _actions("What to collect next", report.next_checks):
        console.print(part)
    table = Table(title="Inputs", title_justify="left", box=None, header_style="bold")
    for column in ("input", "kind", "status", "note"):
        table.add_column(column, overflow="fold")
    for item in report.inputs:
        table.add_row(
            Text(item.path),
            item.kind.value if item.kind else "-",
            Text(
                item.status.value, style="green" if item.status is InputState.ANALYZED else "yellow"
            ),
            Text(item.reason or ""),
        )
    console.print(table)
