"""A self-contained HTML report: one file, inline CSS and SVG, no network, no external script.

`render_html(report)` is pure: the verdict, the ranked causes with confidence bars, every
evidence line with its file, line and (when `crashlens.inputs.context` filled it) the lines
around it, remediation as copyable commands, and a timeline chart of the evidence across files
and ranks (which rank failed first, what followed). All log text is HTML-escaped; the only
script is an inline copy-button handler, allowed by hash in the page's Content-Security-Policy.
"""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape

from crashlens.model import Action, Cause, Evidence, Report
from crashlens.render import NO_CAUSE_TEXT

_ROLE_ORDER = {"root": 0, "symptom": 1, "context": 2}

_EPOCH_MIN = 100_000_000.0
"""Below this a timestamp counts as seconds since boot (raw dmesg), not wall-clock time."""
_Y2000 = 946_684_800.0
_Y2001 = 978_307_200.0
"""Log formats without a year (syslog, glog) are parsed into the year 2000."""

_CSS = """
:root{--bg:#fff;--fg:#1d2430;--muted:#5b6576;--line:#d9dee7;--card:#f6f8fb;--code:#f0f2f6;
--root:#c62828;--symptom:#ef6c00;--context:#1565c0;--bar:#2e7d32;--mark:#fff3c4;--accent:#6a1b9a}
@media (prefers-color-scheme:dark){:root{--bg:#12161d;--fg:#e3e7ee;--muted:#9aa4b5;
--line:#2c3442;--card:#1a2029;--code:#202734;--mark:#4a3f12;--bar:#66bb6a}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);
font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
main{max-width:1100px;margin:0 auto;padding:24px 20px 48px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 10px;
border-bottom:1px solid var(--line);padding-bottom:4px}h3{font-size:16px;margin:0}
h4{font-size:14px;margin:16px 0 6px;color:var(--muted);text-transform:uppercase;
letter-spacing:.04em}
code,pre{font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.verdict{border-left:6px solid var(--root);background:var(--card);padding:16px 20px;
border-radius:6px}
.verdict.v-none{border-color:var(--bar)}.verdict.v-unknown{border-color:var(--symptom)}
.verdict .label{font-size:26px;font-weight:700;margin:4px 0}
.verdict .label code{font-size:26px;background:none}
.badge{display:inline-block;font-size:12px;padding:1px 8px;border-radius:10px;
background:var(--code);color:var(--muted);margin-left:6px;vertical-align:middle}
.cause{background:var(--card);border:1px solid var(--line);border-radius:6px;
padding:14px 18px;margin:14px 0}
.cause.rank-1{border-color:var(--root)}
.cause header{display:flex;align-items:center;gap:14px;flex-wrap:wrap}
.confidence{display:flex;align-items:center;gap:8px;min-width:260px}
.confidence svg{width:200px;height:10px}
.confidence .track{fill:var(--line)}.confidence .fill{fill:var(--bar)}
.cause.rank-1 .confidence .fill{fill:var(--root)}
.demoted{color:var(--muted);font-style:italic}
.evidence{margin:8px 0 12px;border:1px solid var(--line);border-radius:4px;overflow:hidden}
.evidence .where{background:var(--code);padding:4px 10px;font-size:13px;display:flex;
gap:12px;flex-wrap:wrap}
.role{font-weight:600}.role-root{color:var(--root)}.role-symptom{color:var(--symptom)}
.role-context{color:var(--context)}
.evidence pre{margin:0;padding:6px 0;overflow-x:auto;background:var(--bg)}
.evidence pre span.l{display:block;padding:0 10px;white-space:pre}
.evidence pre span.cited{background:var(--mark);font-weight:600}
.evidence pre span.n{display:inline-block;min-width:5ch;color:var(--muted);
user-select:none;text-align:right;margin-right:12px}
.nocontext{font-size:12px;color:var(--muted);padding:0 10px 4px}
ol.actions{padding-left:22px}ol.actions li{margin:6px 0}
.cmd{position:relative;margin:6px 0}
.cmd pre{background:var(--code);padding:8px 70px 8px 10px;border-radius:4px;margin:0;
overflow-x:auto;white-space:pre}
.cmd button{position:absolute;top:6px;right:6px;font:12px system-ui,sans-serif;
padding:2px 10px;border:1px solid var(--line);border-radius:4px;background:var(--bg);
color:var(--fg);cursor:pointer}
table{border-collapse:collapse;width:100%;font-size:14px}
th,td{border-bottom:1px solid var(--line);padding:5px 8px;text-align:left;vertical-align:top}
th{color:var(--muted);font-weight:600}
td code{white-space:pre-wrap;word-break:break-all}
table.events td:first-child,table.events td:nth-child(3){white-space:nowrap}
table.events td:first-child{font-variant-numeric:tabular-nums}
table.events td:nth-child(3) code{white-space:nowrap;word-break:normal}
.timeline svg{width:100%;height:auto;display:block;background:var(--card);
border:1px solid var(--line);border-radius:6px}
.timeline .lane{fill:var(--fg);font-size:12px}
.timeline .grid{stroke:var(--line);stroke-width:1}
.timeline .tick{fill:var(--muted);font-size:11px}
.timeline .ev-root{fill:var(--root)}.timeline .ev-symptom{fill:var(--symptom)}
.timeline .ev-context{fill:var(--context)}
.timeline .first{fill:none;stroke:var(--accent);stroke-width:2.5}
.timeline .firstline{stroke:var(--accent);stroke-dasharray:4 3}
.timeline .firstlabel{fill:var(--accent);font-size:12px;font-weight:600}
.timeline .untimed{fill:var(--muted);font-size:11px}
.legend{font-size:13px;color:var(--muted);margin:6px 0}
.legend span{margin-right:14px}
.dot{display:inline-block;width:10px;height:10px;border-radius:50%;margin-right:4px;
vertical-align:-1px}
.notes blockquote{margin:8px 0;padding:6px 12px;border-left:4px solid var(--line);
color:var(--muted)}
footer{margin-top:40px;color:var(--muted);font-size:12px}
@media print{.cmd button{display:none}}
"""

_SCRIPT = """
document.querySelectorAll("button.copy").forEach(function (button) {
  button.addEventListener("click", function () {
    var code = button.parentElement.querySelector("code");
    var done = function () {
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = "Copy"; }, 1500);
    };
    var select = function () {
      var range = document.createRange();
      range.selectNodeContents(code);
      var selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      try { if (document.execCommand("copy")) { done(); } } catch (e) { /* selected */ }
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(code.textContent).then(done, select);
    } else {
      select();
    }
  });
});
"""
_SCRIPT_HASH = base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()
_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    f"script-src 'sha256-{_SCRIPT_HASH}'; base-uri 'none'; form-action 'none'"
)


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _where(item: Evidence) -> str:
    return f"{item.path}:{item.line}" if item.line is not None else item.path


def _confidence_bar(confidence: float) -> str:
    percent = max(0.0, min(1.0, confidence)) * 100
    return (
        f'<div class="confidence" title="confidence {percent:.0f}%">'
        f'<svg viewBox="0 0 100 10" preserveAspectRatio="none" role="img" '
        f'aria-label="confidence {percent:.0f}%">'
        f'<rect class="track" width="100" height="10" rx="3"/>'
        f'<rect class="fill" width="{percent:.1f}" height="10" rx="3"/></svg>'
        f'<strong class="pct">{percent:.0f}%</strong></div>'
    )


def _evidence(item: Evidence) -> str:
    facts = [
        f'<code class="loc">{_e(_where(item))}</code>',
        f'<span class="role role-{_e(item.role.value)}">{_e(item.role.value)}</span>',
    ]
    if item.rule:
        facts.append(f'<span class="rule">rule <code>{_e(item.rule)}</code></span>')
    if item.rank is not None:
        facts.append(f'<span class="rank">rank {item.rank}</span>')
    if item.host:
        facts.append(f'<span class="host">host {_e(item.host)}</span>')
    if item.timestamp is not None:
        facts.append(f'<span class="time">{_e(_clock(item.timestamp))}</span>')
    if item.note:
        facts.append(f'<em class="note">{_e(item.note)}</em>')
    rows = []
    lines = [*item.context, (item.line, item.text)] if item.line is not None else []
    if lines:
        for number, text in sorted(lines, key=lambda pair: pair[0] or 0):
            css = "l cited" if number == item.line else "l"
            rows.append(f'<span class="{css}"><span class="n">{number}</span>{_e(text)}</span>')
    else:
        rows.append(f'<span class="l cited">{_e(item.text)}</span>')
    missing = ""
    if item.line is not None and not item.context:
        missing = '<div class="nocontext">surrounding lines not available</div>'
    return (
        f'<div class="evidence" data-role="{_e(item.role.value)}">'
        f'<div class="where">{" ".join(facts)}</div>'
        f"<pre>{''.join(rows)}</pre>{missing}</div>"
    )


def _actions(title: str, items: tuple[Action, ...], css: str) -> str:
    if not items:
        return ""
    out = [f"<h4>{_e(title)}</h4>", f'<ol class="actions {css}">']
    for item in items:
        out.append(f"<li><span>{_e(item.text)}</span>")
        if item.command:
            out.append(
                f'<div class="cmd"><pre><code>{_e(item.command)}</code></pre>'
                '<button type="button" class="copy" aria-label="Copy command">Copy</button></div>'
            )
        out.append("</li>")
    out.append("</ol>")
    return "".join(out)


def _cause(rank: int, cause: Cause) -> str:
    parts = [
        f'<article class="cause rank-{rank}" id="cause-{rank}" '
        f'data-category="{_e(cause.category.value)}">',
        "<header>",
        f"<h3>{rank}. <code>{_e(cause.category.value)}</code></h3>",
        _confidence_bar(cause.confidence),
        "</header>",
        f'<p class="summary">{_e(cause.summary)}</p>',
    ]
    if cause.demoted_because:
        parts.append(f'<p class="demoted">Ranked lower: {_e(cause.demoted_because)}.</p>')
    if cause.evidence:
        parts.append("<h4>Evidence</h4>")
        parts.extend(_evidence(item) for item in cause.evidence)
    parts.append(_actions("What to do", cause.remediation, "remediation"))
    parts.append(_actions("To confirm", cause.next_checks, "checks"))
    parts.append("</article>")
    return "".join(parts)


# --- timeline -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Event:
    item: Evidence
    category: str
    time: float | None
    lane: str
    first: bool


def _clock(timestamp: float) -> str:
    if timestamp < _EPOCH_MIN:
        return f"{timestamp:.3f} s after boot"
    moment = datetime.fromtimestamp(timestamp, tz=UTC)
    yearless = _Y2000 <= timestamp < _Y2001  # the log gave no year
    text = moment.strftime("%m-%d %H:%M:%S" if yearless else "%Y-%m-%d %H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond // 1000:03d}"
    return f"{text} (year not logged)" if yearless else text


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


def _year_fix(times: list[float]) -> int | None:
    """The year to show year-less times in (parsed into 2000), from the dated ones."""
    dated = sorted(t for t in times if t >= _Y2001)
    if not dated or not any(_Y2000 <= t < _Y2001 for t in times):
        return None
    return datetime.fromtimestamp(dated[len(dated) // 2], tz=UTC).year


def _in_year(timestamp: float, year: int) -> float:
    moment = datetime.fromtimestamp(timestamp, tz=UTC)
    try:
        return moment.replace(year=year).timestamp()
    except ValueError:  # 29 February of a year-less log, shown in a common year
        return timestamp


def _events(report: Report) -> tuple[list[_Event], list[str]]:
    seen: dict[tuple[str, int | None, str], _Event] = {}
    notes: list[str] = []
    first = report.first_failure
    items: list[tuple[Evidence, str]] = []
    if first is not None:
        items.append((first, report.causes[0].category.value if report.causes else ""))
    for cause in report.causes:
        items.extend((item, cause.category.value) for item in cause.evidence)
    raw = [i.timestamp for i, _ in items if i.timestamp is not None]
    wall = [t for t in raw if t >= _EPOCH_MIN]
    boot_only = not wall
    shift = _year_fix(wall)
    if shift is not None:
        notes.append("Times without a year (syslog, glog) are shown in the year of the others.")
    if wall and any(t < _EPOCH_MIN for t in raw):
        notes.append("Kernel times counted from boot cannot be aligned with wall-clock times.")
    for item, category in items:
        key = (item.path, item.line, item.text)
        is_first = first is not None and key == (first.path, first.line, first.text)
        time = item.timestamp
        if time is not None:
            if time < _EPOCH_MIN and not boot_only:
                time = None
            elif shift is not None and _Y2000 <= time < _Y2001:
                time = _in_year(time, shift)
        if key in seen:
            if is_first and not seen[key].first:
                old = seen[key]
                seen[key] = _Event(old.item, old.category, old.time, old.lane, True)
            continue
        seen[key] = _Event(item, category, time, _lane(item), is_first)
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


def _timeline(report: Report) -> str:
    events, notes = _events(report)
    if not events:
        return ""
    lanes = sorted({event.lane for event in events}, key=_lane_key)
    timed = [event for event in events if event.time is not None]
    untimed = [event for event in events if event.time is None]
    width, left, right_band, top, lane_h = 960, 190, 110 if untimed else 20, 34, 30
    plot_right = width - right_band
    height = top + lane_h * len(lanes) + 36
    svg = [
        f'<svg id="timeline-chart" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="Timeline of the evidence across files and ranks">'
    ]
    lane_y = {lane: top + lane_h * index + lane_h / 2 for index, lane in enumerate(lanes)}
    for lane, y in lane_y.items():
        svg.append(
            f'<line class="grid" x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="lane" x="{left - 10}" y="{y + 4:.1f}" text-anchor="end">'
            f"{_e(_short(lane, 26))}</text>"
        )
    start = min((event.time for event in timed if event.time is not None), default=0.0)
    end = max((event.time for event in timed if event.time is not None), default=0.0)
    span = end - start or 1.0
    x_of: dict[int, float] = {}
    if timed:
        axis_y = top + lane_h * len(lanes) + 14
        for step in range(5):
            x = left + 10 + (plot_right - left - 30) * step / 4
            offset = span * step / 4 if end > start else 0.0
            label = f"+{_span(offset)}" if step else "0"
            anchor = "middle"
            svg.append(
                f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{top - 6}" '
                f'y2="{axis_y - 10}" stroke-dasharray="2 4"/>'
                f'<text class="tick" x="{x:.1f}" y="{axis_y + 4}" text-anchor="{anchor}">'
                f"{_e(label)}</text>"
            )
            if end <= start:
                break
        svg.append(
            f'<text class="tick" x="{left - 10}" y="{axis_y + 4}" text-anchor="end">'
            f"{_e(_clock(start))}</text>"
        )
        for index, event in enumerate(events):
            if event.time is not None:
                x_of[index] = left + 10 + (plot_right - left - 30) * (event.time - start) / span
    if untimed:
        band = plot_right + 10
        svg.append(
            f'<text class="untimed" x="{band + (width - band) / 2:.1f}" y="{top - 12}" '
            f'text-anchor="middle">no timestamp</text>'
            f'<line class="grid" x1="{band - 5}" x2="{band - 5}" y1="{top - 6}" '
            f'y2="{top + lane_h * len(lanes)}"/>'
        )
        per_lane: dict[str, int] = {}
        for index, event in enumerate(events):
            if event.time is None:
                slot = per_lane.get(event.lane, 0)
                per_lane[event.lane] = slot + 1
                x_of[index] = band + 12 + (slot * 14) % max(14, width - band - 24)
    placed: dict[str, list[float]] = {}
    for index, event in enumerate(events):
        x = x_of[index]
        taken = placed.setdefault(event.lane, [])
        while any(abs(x - other) < 6 for other in taken):
            x += 7  # same moment on one lane: nudge so every dot stays visible
        taken.append(x)
        y = lane_y[event.lane]
        item = event.item
        tip = [
            f"{_where(item)} ({item.role.value}, {item.rule or 'no rule'})",
            _clock(event.time) if event.time is not None else "no timestamp",
            _short(item.text, 300),
        ]
        if event.first:
            tip.insert(0, "FIRST FAILURE")
        radius = 7 if event.first else 5
        first_attr = ' data-first="true"' if event.first else ""
        svg.append(
            f'<g class="event" data-lane="{_e(event.lane)}" data-role="{_e(item.role.value)}"'
            f"{first_attr}>"
            f"<title>{_e(chr(10).join(tip))}</title>"
            f'<circle class="ev-{_e(item.role.value)}" cx="{x:.1f}" cy="{y:.1f}" r="{radius}"/>'
        )
        if event.first:
            svg.append(
                f'<circle class="first" cx="{x:.1f}" cy="{y:.1f}" r="{radius + 4}"/>'
                f'<line class="firstline" x1="{x:.1f}" x2="{x:.1f}" y1="{top - 10}" '
                f'y2="{top + lane_h * len(lanes)}"/>'
                f'<text class="firstlabel" x="{x + 6 if x < plot_right - 120 else x - 6:.1f}" '
                f'y="{top - 14}" text-anchor="{"start" if x < plot_right - 120 else "end"}">'
                "first failure</text>"
            )
        svg.append("</g>")
    svg.append("</svg>")
    rows = []
    order = sorted(
        range(len(events)),
        key=lambda i: (
            events[i].time is None,
            events[i].time or 0.0,
            events[i].item.path,
            events[i].item.line or 0,
        ),
    )
    for index in order:
        event = events[index]
        item = event.item
        when = _clock(event.time) if event.time is not None else "—"
        mark = ' class="first"' if event.first else ""
        rows.append(
            f"<tr{mark}><td>{_e(when)}</td><td>{_e(event.lane)}</td>"
            f'<td title="{_e(_where(item))}"><code>{_e(_short_where(item))}</code></td>'
            f'<td class="role role-{_e(item.role.value)}">{_e(item.role.value)}</td>'
            f"<td><code>{_e(_short(item.text, 200))}</code></td></tr>"
        )
    legend = (
        '<p class="legend"><span><i class="dot" style="background:var(--root)"></i>root</span>'
        '<span><i class="dot" style="background:var(--symptom)"></i>symptom</span>'
        '<span><i class="dot" style="background:var(--context)"></i>context</span>'
        "<span>ringed: the first failure</span></p>"
    )
    note_html = "".join(f'<p class="legend">{_e(note)}</p>' for note in notes)
    return (
        '<section class="timeline" id="timeline"><h2>Timeline</h2>'
        f"{legend}{''.join(svg)}{note_html}"
        '<table class="events"><thead><tr><th>time</th><th>rank / host / file</th>'
        "<th>where</th><th>role</th><th>line</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></section>"
    )


def _short_where(item: Evidence) -> str:
    name = os.path.basename(item.path.split("!")[-1]) or item.path
    return f"{name}:{item.line}" if item.line is not None else name


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- page -------------------------------------------------------------------------------------


def render_html(report: Report, *, redacted: bool = False) -> str:
    """The report as one self-contained HTML page."""
    headline = NO_CAUSE_TEXT.get(report.verdict)
    if headline is None and report.causes:
        top = report.causes[0]
        headline = top.summary
    verdict_class = "cause" if report.verdict.names_cause else report.verdict.value
    badges = '<span class="badge">redacted</span>' if redacted else ""
    body = [
        f'<header class="verdict v-{_e(verdict_class)}" id="verdict">',
        f"<h1>crashlens report{badges}</h1>",
        f'<p class="label">Verdict: <code id="verdict-value">{_e(report.verdict)}</code>',
    ]
    if report.causes and report.verdict.names_cause:
        body.append(f'<span class="badge">{report.causes[0].confidence:.0%} confidence</span>')
    body.append("</p>")
    body.append(f'<p class="headline">{_e(headline or "")}</p>')
    if report.first_failure:
        first = report.first_failure
        who = f" (rank {first.rank})" if first.rank is not None else ""
        body.append(
            f'<p class="first-failure">First failure{_e(who)}: '
            f"<code>{_e(_where(first))}</code><br><code>{_e(_short(first.text, 400))}</code></p>"
        )
    body.append("</header>")
    body.append(_timeline(report))
    if report.notes:
        body.append('<section class="notes" id="notes"><h2>Reasoning</h2>')
        body.extend(f"<blockquote>{_e(note)}</blockquote>" for note in report.notes)
        body.append("</section>")
    if report.causes:
        body.append('<section id="causes"><h2>Causes</h2>')
        body.extend(_cause(rank, cause) for rank, cause in enumerate(report.causes, start=1))
        body.append("</section>")
    if report.next_checks:
        body.append('<section id="next-checks"><h2>What to collect next</h2>')
        body.append(_actions("Commands", report.next_checks, "checks"))
        body.append("</section>")
    body.append('<section id="inputs"><h2>Inputs</h2><table><thead><tr><th>input</th>')
    body.append("<th>kind</th><th>status</th><th>note</th></tr></thead><tbody>")
    for item in report.inputs:
        kind = item.kind.value if item.kind else "-"
        body.append(
            f"<tr><td><code>{_e(item.path)}</code></td><td>{_e(kind)}</td>"
            f'<td class="status-{_e(item.status)}">{_e(item.status)}</td>'
            f"<td>{_e(item.reason or '')}</td></tr>"
        )
    body.append("</tbody></table></section>")
    note = " Personal and secret values are replaced by pseudonyms." if redacted else ""
    body.append(
        f"<footer>crashlens {_e(report.crashlens_version)} · report schema "
        f"{report.schema_version}.{_e(note)}</footer>"
    )
    title = f"crashlens: {report.verdict}"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(_CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        '<link rel="icon" href="data:,">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>"
        f"<body><main>{''.join(body)}</main><script>{_SCRIPT}</script></body></html>\n"
    )
