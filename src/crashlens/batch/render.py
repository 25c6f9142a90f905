"""Showing a scan: the live progress bar, and the summary in the terminal and as Markdown.

Renderers read only the summary dictionary (what summary.json holds): no analysis here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crashlens.batch.row import JobRow
from crashlens.render.inert import md_cell, md_cell_code, md_code, rich_text, visible

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress as RichBar
    from rich.progress import TaskID

SHOWN_FINGERPRINTS = 10
SHOWN_HOTSPOTS = 15
SHOWN_PERIODS = 40
SIGNATURE_CHARS = 110


def _mb(value: float) -> str:
    return f"{value / 1e6:,.1f} MB" if value < 1e9 else f"{value / 1e9:,.2f} GB"


def _short(text: str | None, limit: int = SIGNATURE_CHARS) -> str:
    if not text:
        return ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _date(stamp: str | None) -> str:
    return stamp[:10] if stamp else "-"


def _day(stamp: str | None) -> str:
    return stamp[:16].replace("T", " ") if stamp else "-"


def headline(summary: dict[str, Any]) -> str:
    """One line: how many jobs, how many failed, how fast."""
    jobs = summary["jobs"]
    analyzed = summary.get("analyzed", {})
    parts = [
        f"{jobs['scanned']:,} jobs ({_mb(summary['bytes'])})",
        f"{jobs['failed']:,} failed",
        f"{jobs['healthy']:,} healthy",
    ]
    if jobs["unreadable"]:
        parts.append(f"{jobs['unreadable']:,} unreadable")
    if jobs["from_cache"]:
        parts.append(f"{jobs['from_cache']:,} unchanged (cached)")
    speed = ""
    if analyzed.get("seconds") is not None:
        rate = analyzed.get("mb_per_s")
        speed = f" in {analyzed['seconds']:.1f} s" + (f" ({rate:,.0f} MB/s)" if rate else "")
    text = "Scanned " + ", ".join(parts) + speed
    if summary.get("interrupted"):
        at_least = "at least " if summary.get("listing_cut_short") else ""
        text += f"; INTERRUPTED: {at_least}{summary.get('jobs_not_scanned', 0):,} jobs not scanned"
    return text


def render_terminal(summary: dict[str, Any], console: Console) -> None:
    """Print the summary with rich tables."""
    from rich.table import Table

    console.print(f"[bold]{headline(summary)}[/bold]")
    verdicts = summary["by_verdict"]
    if verdicts:
        table = Table(title="Jobs by verdict", title_justify="left", show_edge=False)
        table.add_column("verdict")
        table.add_column("jobs", justify="right")
        for verdict, count in verdicts.items():
            table.add_row(rich_text(verdict), f"{count:,}")
        console.print(table)
    top = summary["fingerprints"]["top"][:SHOWN_FINGERPRINTS]
    if top:
        table = Table(
            title=f"Top failures ({summary['fingerprints']['distinct']:,} distinct fingerprints)",
            title_justify="left",
            show_edge=False,
        )
        table.add_column("jobs", justify="right")
        table.add_column("verdict")
        table.add_column("seen (first → last)")
        table.add_column("failure (fingerprint, examples)", ratio=1)
        for item in top:
            seen = f"{_date(item['first_seen'])} → {_date(item['last_seen'])}"
            table.add_row(
                f"{item['count']:,}",
                rich_text(item["verdict"]),
                rich_text(seen),
                f"{rich_text(_short(item['signature']))}\n[dim]{rich_text(item['fingerprint'])}"
                f"  e.g. {rich_text(', '.join(item['examples'][:2]))}[/dim]",
            )
        console.print(table)
    for kind, title in (("hosts", "Hosts to drain"), ("gpus", "GPUs to drain")):
        items = summary["hotspots"][kind][:SHOWN_HOTSPOTS]
        if not items:
            continue
        table = Table(
            title=f"{title} (hardware faults in >= {summary['hotspots']['min_jobs']} jobs)",
            title_justify="left",
            show_edge=False,
        )
        for name in ("jobs", kind[:-1], "last seen", "verdicts", "examples"):
            table.add_column(name, justify="right" if name == "jobs" else "left")
        for item in items:
            table.add_row(
                str(item["jobs"]),
                rich_text(item["id"]),
                rich_text(_day(item["last_seen"])),
                rich_text(", ".join(f"{k} {v}" for k, v in item["verdicts"].items())),
                rich_text(", ".join(item["examples"][:2])),
            )
        console.print(table)
    if not summary["hotspots"]["hosts"] and not summary["hotspots"]["gpus"]:
        console.print("No host or GPU is implicated in hardware faults in more than one job.")
    buckets = summary["timeline"]["buckets"]
    if buckets:
        peak = max(b["failed"] for b in buckets)
        console.print(f"[bold]Failures per {summary['timeline']['unit']}[/bold]")
        for bucket in buckets[-SHOWN_PERIODS:]:
            bar = "█" * max(1, round(30 * bucket["failed"] / peak))
            period = rich_text(f"{bucket['period']:<16}")
            console.print(f"  {period} {bucket['failed']:>6,} {bar}")
    unreadable = summary["unreadable"]["examples"]
    if unreadable:
        console.print("[bold]Could not be analyzed[/bold] (e.g.)")
        for line in unreadable:
            console.print(f"  {visible(line)}", markup=False, highlight=False)
    outputs = summary.get("outputs") or []
    if outputs:
        console.print("[dim]Written: " + rich_text(", ".join(outputs)) + "[/dim]")


def _cell(text: str) -> str:
    return md_cell(text)


def render_markdown(summary: dict[str, Any]) -> str:
    """The summary as GitHub-flavoured Markdown."""
    lines = ["# crashlens scan", "", headline(summary) + ".", ""]
    if summary.get("root"):
        lines += [f"Root: {md_code(summary['root'])}", ""]
    lines += ["## Jobs by verdict", "", "| verdict | jobs |", "|---|---:|"]
    lines += [f"| {_cell(verdict)} | {count} |" for verdict, count in summary["by_verdict"].items()]
    lines += ["", "## Top failures", ""]
    top = summary["fingerprints"]["top"]
    if top:
        lines += [
            "| jobs | verdict | first seen | last seen | fingerprint | failure | examples |",
            "|---:|---|---|---|---|---|---|",
        ]
        for item in top:
            lines.append(
                f"| {item['count']} | {_cell(item['verdict'])} | "
                f"{_cell(_day(item['first_seen']))} | "
                f"{_cell(_day(item['last_seen']))} | {md_cell_code(item['fingerprint'])} | "
                f"{_cell(_short(item['signature'], 200))} | "
                f"{_cell(', '.join(item['examples']))} |"
            )
    else:
        lines.append("No failed job.")
    lines += ["", "## Hotspots (drain list)", ""]
    for kind in ("hosts", "gpus"):
        items = summary["hotspots"][kind]
        lines.append(f"### {kind.capitalize()}")
        lines.append("")
        if not items:
            lines += [f"No {kind[:-1]} implicated in hardware faults in several jobs.", ""]
            continue
        lines += ["| jobs | id | first seen | last seen | verdicts | examples |",
                  "|---:|---|---|---|---|---|"]  # fmt: skip
        for item in items:
            verdicts = ", ".join(f"{k} {v}" for k, v in item["verdicts"].items())
            lines.append(
                f"| {item['jobs']} | {md_cell_code(item['id'])} | "
                f"{_cell(_day(item['first_seen']))} | "
                f"{_cell(_day(item['last_seen']))} | {_cell(verdicts)} | "
                f"{_cell(', '.join(item['examples']))} |"
            )
        lines.append("")
    buckets = summary["timeline"]["buckets"]
    if buckets:
        lines += [f"## Failures per {summary['timeline']['unit']}", "",
                  "| period | failed | by verdict |", "|---|---:|---|"]  # fmt: skip
        for bucket in buckets:
            verdicts = ", ".join(f"{k} {v}" for k, v in sorted(bucket["by_verdict"].items()))
            lines.append(f"| {_cell(bucket['period'])} | {bucket['failed']} | {_cell(verdicts)} |")
        lines.append("")
    unreadable = summary["unreadable"]
    if unreadable["examples"]:
        lines += ["## Could not be analyzed", ""]
        lines += [
            f"- {_cell(reason)}: {count}" for reason, count in unreadable["by_reason"].items()
        ]
        lines += [f"- e.g. {_cell(line)}" for line in unreadable["examples"]]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


class RichProgress:
    """A rich progress bar on stderr: bytes done, jobs done / total, jobs/s and ETA."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._bar: RichBar | None = None
        self._task: TaskID | None = None
        self._jobs = 0
        self._done = 0
        self._cached = 0
        self._start = 0.0

    def start(self, jobs: int, total_bytes: int, cached: int) -> None:
        import time

        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        self._jobs, self._cached, self._start = jobs, cached, time.monotonic()
        self._bar = Progress(
            TextColumn("[bold]scan[/bold]"),
            BarColumn(),
            TextColumn("{task.fields[jobs]}"),
            DownloadColumn(),
            TransferSpeedColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
        )
        self._bar.start()
        self._task = self._bar.add_task(
            # 0: not known yet (the listing streams); rich shows a bar without an end.
            "scan",
            total=total_bytes or None,
            jobs=self._jobs_text(),
            rate="0.0 jobs/s",
        )

    def _jobs_text(self) -> str:
        if not self._jobs:
            return f"{self._done:,} jobs"
        return f"{self._cached + self._done:,}/{self._jobs:,} jobs"

    def advance(self, row: JobRow) -> None:
        import time

        if self._bar is None or self._task is None:
            return
        self._done += 1
        elapsed = max(time.monotonic() - self._start, 1e-6)
        self._bar.update(
            self._task,
            advance=row.bytes,
            jobs=self._jobs_text(),
            rate=f"{self._done / elapsed:,.1f} jobs/s",
        )

    def finish(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
