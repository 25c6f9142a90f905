"""The timeline of an HTML report: the cited lines on one time axis, one lane per rank or file.

Only presentation happens here. Which clock a time is on comes from the parser
(`Evidence.clock`), and the year a yearless time belongs to from the analysis
(`Report.yearless_year`): times since boot are drawn only when no line has a date, and a
yearless time is drawn in that year when the report knows it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from crashlens.model import Clock, Evidence, Report
from crashlens.render.html.text import esc, short, short_where, time_label, where
from crashlens.text.times import utc_datetime

WIDTH = 960
LEFT = 190
"""Room for the lane labels."""
TOP = 34
LANE_HEIGHT = 30
UNTIMED_BAND = 110
"""Room on the right for lines without a time (20 when there are none)."""

_YEARLESS_NOTE = "Times without a year (syslog, glog) are shown in the year of the others."
_BOOT_NOTE = "Kernel times counted from boot cannot be aligned with wall-clock times."
_LEGEND = (
    '<p class="legend"><span><i class="dot" style="background:var(--root)"></i>root</span>'
    '<span><i class="dot" style="background:var(--symptom)"></i>symptom</span>'
    '<span><i class="dot" style="background:var(--context)"></i>context</span>'
    "<span>ringed: the first failure</span></p>"
)


@dataclass(frozen=True, slots=True)
class _Event:
    item: Evidence
    category: str
    time: float | None
    clock: Clock | None
    lane: str
    first: bool


@dataclass(frozen=True, slots=True)
class _Chart:
    """Where things go: the plot's right edge and each lane's height on the page."""

    plot_right: float
    lane_y: dict[str, float]

    @property
    def bottom(self) -> int:
        return TOP + LANE_HEIGHT * len(self.lane_y)


def _lane(item: Evidence) -> str:
    if item.rank is not None:
        return f"rank {item.rank}" + (f" · {item.host}" if item.host else "")
    if item.host:
        return item.host
    return os.path.basename(item.path.split("!")[-1]) or item.path


def _lane_key(label: str) -> tuple[int, int, str]:
    if label.startswith("rank "):
        number = label[5:].split(" ", 1)[0]
        return (0, int(number) if number.isdigit() else 0, label)
    return (1, 0, label)


def _in_year(timestamp: float, year: int) -> float:
    moment = utc_datetime(timestamp)
    if moment is None:
        return timestamp
    try:
        return moment.replace(year=year).timestamp()
    except ValueError:  # 29 February of a year-less log, shown in a common year
        return timestamp


def _cited(report: Report) -> list[tuple[Evidence, str]]:
    """The first failure and every cause's evidence, with the category each stands for."""
    items: list[tuple[Evidence, str]] = []
    if report.first_failure is not None:
        top = report.causes[0].category.value if report.causes else ""
        items.append((report.first_failure, top))
    for cause in report.causes:
        items.extend((item, cause.category.value) for item in cause.evidence)
    return items


def _events(report: Report) -> tuple[list[_Event], list[str]]:
    items = _cited(report)
    clocks = {item.clock or Clock.WALL for item, _ in items if item.timestamp is not None}
    dated = bool(clocks & {Clock.WALL, Clock.YEARLESS})
    year = report.yearless_year if {Clock.WALL, Clock.YEARLESS} <= clocks else None
    notes: list[str] = []
    if year is not None:
        notes.append(_YEARLESS_NOTE)
    if dated and Clock.BOOT in clocks:
        notes.append(_BOOT_NOTE)
    first = report.first_failure
    seen: dict[tuple[str, int | None, str], _Event] = {}
    for item, category in items:
        key = (item.path, item.line, item.text)
        is_first = first is not None and key == (first.path, first.line, first.text)
        time, clock = item.timestamp, item.clock or Clock.WALL
        if time is not None and clock is Clock.BOOT and dated:
            time = None  # a boot time cannot sit on a wall-clock axis
        elif time is not None and clock is Clock.YEARLESS and year is not None:
            time, clock = _in_year(time, year), Clock.WALL
        if key in seen:
            if is_first and not seen[key].first:
                old = seen[key]
                seen[key] = _Event(old.item, old.category, old.time, old.clock, old.lane, True)
            continue
        seen[key] = _Event(item, category, time, clock, _lane(item), is_first)
    return list(seen.values()), notes


def _span(seconds: float) -> str:
    seconds = abs(seconds)
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds // 60:.0f}m{seconds % 60:02.0f}s"
    return f"{seconds // 3600:.0f}h{(seconds % 3600) // 60:02.0f}m"


def _lanes(chart: _Chart) -> list[str]:
    return [
        f'<line class="grid" x1="{LEFT}" x2="{WIDTH - 10}" y1="{y:.1f}" y2="{y:.1f}"/>'
        f'<text class="lane" x="{LEFT - 10}" y="{y + 4:.1f}" text-anchor="end">'
        f"{esc(short(lane, 26))}</text>"
        for lane, y in chart.lane_y.items()
    ]


def _time_axis(chart: _Chart, timed: list[_Event]) -> tuple[list[str], dict[int, float]]:
    """Ticks from the earliest time, the clock time of that start, and each event's x."""
    start_event = min(timed, key=lambda e: e.time or 0.0)
    start = start_event.time or 0.0
    end = max(event.time or 0.0 for event in timed)
    span = end - start or 1.0
    width = chart.plot_right - LEFT - 30
    axis_y = chart.bottom + 14
    svg = []
    for step in range(5):
        x = LEFT + 10 + width * step / 4
        offset = span * step / 4 if end > start else 0.0
        label = f"+{_span(offset)}" if step else "0"
        svg.append(
            f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP - 6}" '
            f'y2="{axis_y - 10}" stroke-dasharray="2 4"/>'
            f'<text class="tick" x="{x:.1f}" y="{axis_y + 4}" text-anchor="middle">'
            f"{esc(label)}</text>"
        )
        if end <= start:
            break
    svg.append(
        f'<text class="tick" x="{LEFT - 10}" y="{axis_y + 4}" text-anchor="end">'
        f"{esc(time_label(start, start_event.clock))}</text>"
    )
    x_of = {id(e): LEFT + 10 + width * ((e.time or 0.0) - start) / span for e in timed}
    return svg, x_of


def _untimed_band(chart: _Chart, untimed: list[_Event]) -> tuple[list[str], dict[int, float]]:
    """A band on the right for lines without a time, dots spread along each lane."""
    band = chart.plot_right + 10
    svg = [
        f'<text class="untimed" x="{band + (WIDTH - band) / 2:.1f}" y="{TOP - 12}" '
        f'text-anchor="middle">no timestamp</text>'
        f'<line class="grid" x1="{band - 5}" x2="{band - 5}" y1="{TOP - 6}" '
        f'y2="{chart.bottom}"/>'
    ]
    per_lane: dict[str, int] = {}
    x_of: dict[int, float] = {}
    for event in untimed:
        slot = per_lane.get(event.lane, 0)
        per_lane[event.lane] = slot + 1
        x_of[id(event)] = band + 12 + (slot * 14) % max(14, WIDTH - band - 24)
    return svg, x_of


def _dot(chart: _Chart, event: _Event, x: float) -> str:
    y = chart.lane_y[event.lane]
    item = event.item
    tip = [
        f"{where(item)} ({item.role.value}, {item.rule or 'no rule'})",
        time_label(event.time, event.clock) if event.time is not None else "no timestamp",
        short(item.text, 300),
    ]
    if event.first:
        tip.insert(0, "FIRST FAILURE")
    radius = 7 if event.first else 5
    first_attr = ' data-first="true"' if event.first else ""
    parts = [
        f'<g class="event" data-lane="{esc(event.lane)}" data-role="{esc(item.role.value)}"'
        f"{first_attr}>"
        f"<title>{esc(chr(10).join(tip))}</title>"
        f'<circle class="ev-{esc(item.role.value)}" cx="{x:.1f}" cy="{y:.1f}" r="{radius}"/>'
    ]
    if event.first:
        ahead = x < chart.plot_right - 120  # room for the label to the right of the dot
        parts.append(
            f'<circle class="first" cx="{x:.1f}" cy="{y:.1f}" r="{radius + 4}"/>'
            f'<line class="firstline" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP - 10}" '
            f'y2="{chart.bottom}"/>'
            f'<text class="firstlabel" x="{x + 6 if ahead else x - 6:.1f}" '
            f'y="{TOP - 14}" text-anchor="{"start" if ahead else "end"}">'
            "first failure</text>"
        )
    parts.append("</g>")
    return "".join(parts)


def _chart_svg(events: list[_Event]) -> str:
    lanes = sorted({event.lane for event in events}, key=_lane_key)
    timed = [event for event in events if event.time is not None]
    untimed = [event for event in events if event.time is None]
    chart = _Chart(
        plot_right=WIDTH - (UNTIMED_BAND if untimed else 20),
        lane_y={lane: TOP + LANE_HEIGHT * i + LANE_HEIGHT / 2 for i, lane in enumerate(lanes)},
    )
    height = chart.bottom + 36
    svg = [
        f'<svg id="timeline-chart" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="Timeline of the evidence across files and ranks">',
        *_lanes(chart),
    ]
    x_of: dict[int, float] = {}
    if timed:
        drawn, placed = _time_axis(chart, timed)
        svg.extend(drawn)
        x_of.update(placed)
    if untimed:
        drawn, placed = _untimed_band(chart, untimed)
        svg.extend(drawn)
        x_of.update(placed)
    taken_by_lane: dict[str, list[float]] = {}
    for event in events:
        x = x_of[id(event)]
        taken = taken_by_lane.setdefault(event.lane, [])
        while any(abs(x - other) < 6 for other in taken):
            x += 7  # same moment on one lane: nudge so every dot stays visible
        taken.append(x)
        svg.append(_dot(chart, event, x))
    svg.append("</svg>")
    return "".join(svg)


def _table(events: list[_Event]) -> str:
    """The events in time order, untimed last: the chart's content as text."""
    rows = []
    for event in sorted(
        events, key=lambda e: (e.time is None, e.time or 0.0, e.item.path, e.item.line or 0)
    ):
        item = event.item
        when = time_label(event.time, event.clock) if event.time is not None else "—"
        mark = ' class="first"' if event.first else ""
        rows.append(
            f"<tr{mark}><td>{esc(when)}</td><td>{esc(event.lane)}</td>"
            f'<td title="{esc(where(item))}"><code>{esc(short_where(item))}</code></td>'
            f'<td class="role role-{esc(item.role.value)}">{esc(item.role.value)}</td>'
            f"<td><code>{esc(short(item.text, 200))}</code></td></tr>"
        )
    return (
        '<table class="events"><thead><tr><th>time</th><th>rank / host / file</th>'
        "<th>where</th><th>role</th><th>line</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def render_timeline(report: Report) -> str:
    """The timeline section (chart, notes, event table); empty when nothing is cited."""
    events, notes = _events(report)
    if not events:
        return ""
    note_html = "".join(f'<p class="legend">{esc(note)}</p>' for note in notes)
    return (
        '<section class="timeline" id="timeline"><h2>Timeline</h2>'
        f"{_LEGEND}{_chart_svg(events)}{note_html}{_table(events)}</section>"
    )
