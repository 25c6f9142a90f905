"""The HTML page around the timeline: verdict, causes with their evidence and commands, inputs.

One self-contained file: inline CSS, no network, no external script. All log text is
HTML-escaped; the only script is an inline copy-button handler, allowed by hash in the page's
Content-Security-Policy.
"""

from __future__ import annotations

import base64
import hashlib

from crashlens.model import Action, Cause, Evidence, Report, Verdict
from crashlens.render import likelihood, no_cause_text
from crashlens.render.html.text import esc, short, time_label, where
from crashlens.render.html.timeline import render_timeline

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
.cmd.snippet pre{padding-top:22px}
.cmd.snippet::before{content:attr(data-lang);position:absolute;top:4px;left:10px;
font:11px system-ui,sans-serif;color:var(--muted);text-transform:uppercase}
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


def _confidence_bar(confidence: float, sure: str) -> str:
    """The bar, the percent and the word the terminal and Markdown print beside it
    (`render.likelihood`: likely, near-certain, possible, unlikely)."""
    percent = max(0.0, min(1.0, confidence)) * 100
    return (
        f'<div class="confidence" title="confidence {percent:.0f}%, {esc(sure)}">'
        f'<svg viewBox="0 0 100 10" preserveAspectRatio="none" role="img" '
        f'aria-label="confidence {percent:.0f}%, {esc(sure)}">'
        f'<rect class="track" width="100" height="10" rx="3"/>'
        f'<rect class="fill" width="{percent:.1f}" height="10" rx="3"/></svg>'
        f'<strong class="pct">{percent:.0f}%</strong> <span class="sure">{esc(sure)}</span></div>'
    )


def _evidence(item: Evidence) -> str:
    facts = [
        f'<code class="loc">{esc(where(item))}</code>',
        f'<span class="role role-{esc(item.role.value)}">{esc(item.role.value)}</span>',
    ]
    if item.rule:
        facts.append(f'<span class="rule">rule <code>{esc(item.rule)}</code></span>')
    if item.rank is not None:
        facts.append(f'<span class="rank">rank {item.rank}</span>')
    if item.host:
        facts.append(f'<span class="host">host {esc(item.host)}</span>')
    if item.timestamp is not None:
        facts.append(f'<span class="time">{esc(time_label(item.timestamp, item.clock))}</span>')
    if item.note:
        facts.append(f'<em class="note">{esc(item.note)}</em>')
    rows = []
    lines = [*item.context, (item.line, item.text)] if item.line is not None else []
    if lines:
        for number, text in sorted(lines, key=lambda pair: pair[0] or 0):
            css = "l cited" if number == item.line else "l"
            rows.append(f'<span class="{css}"><span class="n">{number}</span>{esc(text)}</span>')
    else:
        rows.append(f'<span class="l cited">{esc(item.text)}</span>')
    missing = ""
    if item.line is not None and not item.context:
        missing = '<div class="nocontext">surrounding lines not available</div>'
    return (
        f'<div class="evidence" data-role="{esc(item.role.value)}">'
        f'<div class="where">{" ".join(facts)}</div>'
        f"<pre>{''.join(rows)}</pre>{missing}</div>"
    )


def _actions(title: str, items: tuple[Action, ...], css: str) -> str:
    if not items:
        return ""
    out = [f"<h4>{esc(title)}</h4>", f'<ol class="actions {css}">']
    for item in items:
        out.append(f"<li><span>{esc(item.text)}</span>")
        if item.command and item.lang != "shell":  # a file's lines, labelled with their language
            out.append(
                f'<div class="cmd snippet" data-lang="{esc(item.lang)}">'
                f'<pre><code class="language-{esc(item.lang)}">{esc(item.command)}</code></pre>'
                '<button type="button" class="copy" aria-label="Copy snippet">Copy</button></div>'
            )
        elif item.command:
            out.append(
                f'<div class="cmd"><pre><code>{esc(item.command)}</code></pre>'
                '<button type="button" class="copy" aria-label="Copy command">Copy</button></div>'
            )
        out.append("</li>")
    out.append("</ol>")
    return "".join(out)


def _cause(rank: int, cause: Cause, verdict: Verdict) -> str:
    parts = [
        f'<article class="cause rank-{rank}" id="cause-{rank}" '
        f'data-category="{esc(cause.category.value)}">',
        "<header>",
        f"<h3>{rank}. <code>{esc(cause.category.value)}</code></h3>",
        _confidence_bar(cause.confidence, likelihood(cause, verdict)),
        "</header>",
        f'<p class="summary">{esc(cause.summary)}</p>',
    ]
    if cause.demoted_because:
        parts.append(f'<p class="demoted">Ranked lower: {esc(cause.demoted_because)}.</p>')
    if cause.evidence:
        parts.append("<h4>Evidence</h4>")
        parts.extend(_evidence(item) for item in cause.evidence)
    parts.append(_actions("What to do", cause.remediation, "remediation"))
    parts.append(_actions("To confirm", cause.next_checks, "checks"))
    parts.append("</article>")
    return "".join(parts)


def _cited_first(sign: Evidence, report: Report) -> bool:
    """Whether the first-failure line already shows the ending's line."""
    first = report.first_failure
    return first is not None and (first.path, first.line) == (sign.path, sign.line)


def _ending(report: Report) -> list[str]:
    """How the run ended, the line that shows it, and what was judged harmless."""
    assessed = report.assessment
    if assessed is None:
        return []
    parts = [
        f'<p class="ending" id="ending">Ending: <code>{esc(assessed.ending)}</code> '
        f"{esc(assessed.reason)}"
    ]
    sign = assessed.sign
    if sign is not None and not _cited_first(sign, report):
        parts.append(
            f"<br>Shown by: <code>{esc(where(sign))}</code><br>"
            f"<code>{esc(short(sign.text, 400))}</code>"
        )
    parts.append("</p>")
    if assessed.harmless:
        parts.append('<ul class="harmless">')
        parts.extend(f"<li>Judged harmless: {esc(item)}</li>" for item in assessed.harmless)
        parts.append("</ul>")
    return parts


def render_html(report: Report, *, redacted: bool = False) -> str:
    """The report as one self-contained HTML page."""
    headline = no_cause_text(report)
    if headline is None and report.causes:
        top = report.causes[0]
        headline = top.summary
    verdict_class = "cause" if report.verdict.names_cause else report.verdict.value
    badges = '<span class="badge">redacted</span>' if redacted else ""
    body = [
        f'<header class="verdict v-{esc(verdict_class)}" id="verdict">',
        f"<h1>crashlens report{badges}</h1>",
        f'<p class="label">Verdict: <code id="verdict-value">{esc(report.verdict)}</code>',
    ]
    if report.causes and report.verdict.names_cause:
        top = report.causes[0]
        sure = likelihood(top, report.verdict)
        body.append(f'<span class="badge">{top.confidence:.0%} confidence, {esc(sure)}</span>')
    body.append("</p>")
    body.append(f'<p class="headline">{esc(headline or "")}</p>')
    if report.first_failure:
        first = report.first_failure
        who = f" (rank {first.rank})" if first.rank is not None else ""
        body.append(
            f'<p class="first-failure">First failure{esc(who)}: '
            f"<code>{esc(where(first))}</code><br><code>{esc(short(first.text, 400))}</code></p>"
        )
    body.extend(_ending(report))
    body.append("</header>")
    body.append(render_timeline(report))
    if report.notes:
        body.append('<section class="notes" id="notes"><h2>Reasoning</h2>')
        body.extend(f"<blockquote>{esc(note)}</blockquote>" for note in report.notes)
        body.append("</section>")
    if report.causes:
        body.append('<section id="causes"><h2>Causes</h2>')
        body.extend(
            _cause(rank, cause, report.verdict) for rank, cause in enumerate(report.causes, start=1)
        )
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
            f"<tr><td><code>{esc(item.path)}</code></td><td>{esc(kind)}</td>"
            f'<td class="status-{esc(item.status)}">{esc(item.status)}</td>'
            f"<td>{esc(item.reason or '')}</td></tr>"
        )
    body.append("</tbody></table></section>")
    note = " Personal and secret values are replaced by pseudonyms." if redacted else ""
    body.append(
        f"<footer>crashlens {esc(report.crashlens_version)} · report schema "
        f"{report.schema_version}.{esc(note)}</footer>"
    )
    title = f"crashlens: {report.verdict}"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(_CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        '<link rel="icon" href="data:,">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head>"
        f"<body><main>{''.join(body)}</main><script>{_SCRIPT}</script></body></html>\n"
    )
