"""A Markdown report that reads well pasted into a GitHub issue."""

from __future__ import annotations

from crashlens.model import Action, Cause, Evidence, Report, Verdict
from crashlens.render import likelihood, no_cause_text
from crashlens.render.inert import md_cell, md_cell_code, md_code, md_fence, md_text

_FENCE_LANGS = {"shell": "text", "yaml": "yaml", "python": "python", "conf": "ini"}
"""The fence's info string for a step's `lang` (a shell command stays plain text)."""


def _where(item: Evidence) -> str:
    return f"{item.path}:{item.line}" if item.line is not None else item.path


def _actions(title: str, items: tuple[Action, ...]) -> list[str]:
    if not items:
        return []
    lines = [f"**{title}**", ""]
    for number, item in enumerate(items, start=1):
        lines.append(f"{number}. {md_text(item.text)}")
        if item.command:
            fence = _FENCE_LANGS.get(item.lang, "text")
            lines.extend(["", _indent(md_fence(item.command, fence)), ""])
    lines.append("")
    return lines


def _indent(text: str) -> str:
    return "\n".join("   " + line for line in text.splitlines())


def _cause(rank: int, cause: Cause, verdict: Verdict) -> list[str]:
    sure = likelihood(cause, verdict)
    lines = [
        f"### {rank}. `{cause.category.value}` ({cause.confidence:.0%}, {sure})",
        "",
        md_text(cause.summary),
        "",
    ]
    if cause.demoted_because:
        lines.extend([f"_Ranked lower: {md_text(cause.demoted_because)}._", ""])
    if cause.evidence:
        lines.extend(["**Evidence**", "", "| where | role | line | rule |", "|---|---|---|---|"])
        for item in cause.evidence:
            note = f" ({md_cell(item.note)})" if item.note else ""
            lines.append(
                f"| {md_cell_code(_where(item))} | {item.role.value}{note} "
                f"| {md_cell_code(item.text[:300])} | {md_cell_code(item.rule or '')} |"
            )
        lines.append("")
    lines.extend(_actions("What to do", cause.remediation))
    lines.extend(_actions("To confirm", cause.next_checks))
    return lines


def _cited_first(sign: Evidence, report: Report) -> bool:
    """Whether the first-failure line already shows the ending's line."""
    first = report.first_failure
    return first is not None and (first.path, first.line) == (sign.path, sign.line)


def _ending(report: Report) -> list[str]:
    assessed = report.assessment
    if assessed is None:
        return []
    lines = [f"**Ending:** `{assessed.ending}`: {md_text(assessed.reason)}", ""]
    sign = assessed.sign
    if sign is not None and not _cited_first(sign, report):
        lines.extend([f"**Shown by:** {md_code(_where(sign))}", "", md_fence(sign.text), ""])
    if assessed.harmless:
        lines.extend(["**Judged harmless:**", ""])
        lines.extend(f"- {md_text(item)}" for item in assessed.harmless)
        lines.append("")
    return lines


def render_markdown(report: Report) -> str:
    """The report as GitHub-flavoured Markdown."""
    headline = no_cause_text(report)
    if headline is None and report.causes:
        top = report.causes[0]
        sure = likelihood(top, report.verdict)
        headline = (
            f"**{top.category.value}** ({top.confidence:.0%}, {sure}): {md_text(top.summary)}"
        )
    lines = ["## crashlens report", "", f"**Verdict:** `{report.verdict}`", "", headline or "", ""]
    lines.extend(_ending(report))
    if report.first_failure:
        first = report.first_failure
        lines.extend([f"**First failure:** {md_code(_where(first))}", "", md_fence(first.text), ""])
    for note in report.notes:
        lines.extend([f"> {md_text(note)}", ""])
    for rank, cause in enumerate(report.causes, start=1):
        lines.extend(_cause(rank, cause, report.verdict))
    lines.extend(_actions("What to collect next", report.next_checks))
    lines.extend(["### Inputs", "", "| input | kind | status | note |", "|---|---|---|---|"])
    for item in report.inputs:
        kind = item.kind.value if item.kind else "-"
        lines.append(
            f"| {md_cell_code(item.path)} | {kind} | {item.status} | {md_cell(item.reason or '')} |"
        )
    lines.extend(["", f"<sub>crashlens {report.crashlens_version}</sub>", ""])
    return "\n".join(lines)
