"""The HTML report: structure, escaping of log text, self-containment, the timeline."""

from __future__ import annotations

import re
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

from typer.testing import CliRunner

from crashlens.cli import app
from crashlens.model import (
    Action,
    Category,
    Cause,
    Clock,
    Evidence,
    InputKind,
    InputState,
    InputStatus,
    Report,
    Role,
    Verdict,
)
from crashlens.render.html import render_html

RUNNER = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "llamafactory-shm-bus-error"
JOB = Path(__file__).resolve().parent / "data" / "redaction" / "job"
EVIL = '<script>alert("x")</script><img src="https://evil.example/x.png"> & "quotes" \'apos\''


class _Collector(HTMLParser):
    """Every start tag with its attributes; fails on unbalanced tags."""

    VOID = {"meta", "link", "br", "img", "input", "hr", "rect", "circle", "line"}

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.stack: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID:
            return
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-3:]}"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(page: str) -> _Collector:
    collector = _Collector()
    collector.feed(page)
    collector.close()
    assert not collector.stack, f"unclosed: {collector.stack}"
    return collector


def _evidence(**kw: object) -> Evidence:
    base: dict[str, object] = {
        "path": "logs/train.log",
        "line": 10,
        "text": "RuntimeError: DataLoader worker is killed by signal: Bus error.",
        "rule": "shm-dataloader-bus-error",
        "role": Role.SYMPTOM,
    }
    base.update(kw)
    return Evidence(**base)  # type: ignore[arg-type]


def _report() -> Report:
    first = _evidence(
        rank=3, host="node-a", timestamp=1_700_000_000.0, note="rank 3 failed first", text=EVIL
    )
    later = _evidence(
        path="logs/train.log",
        line=40,
        text="[rank0] Watchdog caught collective operation timeout",
        rule="network-nccl-watchdog-timeout",
        rank=0,
        host="node-b",
        timestamp=1_700_001_800.0,
        context=((39, "before <b>bold</b>"), (41, "after & more")),
    )
    dmesg = _evidence(
        path="dmesg.txt",
        line=7,
        text="NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
        rule="hardware-xid-79-fallen-off-bus",
        role=Role.ROOT,
        timestamp=1_700_000_010.0,
    )
    untimed = _evidence(path="docker.json", line=None, text="ShmSize = 67108864", role=Role.CONTEXT)
    cause = Cause(
        category=Category.HARDWARE,
        confidence=0.82,
        summary=f"GPU fell off the bus {EVIL}",
        evidence=(dmesg, first, later, untimed),
        remediation=(
            Action("Drain the node", "scontrol update nodename=<node> state=drain reason='xid 79'"),
            Action("Just text, no command"),
        ),
        next_checks=(Action("Check the GPU", "nvidia-smi -q -d ECC"),),
    )
    second = Cause(
        category=Category.NETWORK,
        confidence=0.2,
        summary="NCCL timeouts",
        evidence=(later,),
        remediation=(),
        next_checks=(),
        demoted_because="the timeouts are a knock-on of the Xid",
    )
    return Report(
        verdict=Verdict.HARDWARE,
        causes=(cause, second),
        inputs=(
            InputStatus("logs/train.log", InputKind.LAUNCHER, InputState.ANALYZED),
            InputStatus(
                "core.bin", None, InputState.SKIPPED, reason="binary data (an ELF core dump)"
            ),
        ),
        failure_seen=True,
        first_failure=first,
        notes=(f"note with {EVIL}",),
        crashlens_version="9.9.9",
    )


def test_structure_and_key_elements() -> None:
    page = render_html(_report())
    parsed = _parse(page)
    ids = {attrs.get("id") for _, attrs in parsed.tags}
    assert {"verdict", "verdict-value", "timeline", "timeline-chart", "causes", "inputs"} <= ids
    assert {"cause-1", "cause-2"} <= ids
    assert page.startswith("<!DOCTYPE html>")
    assert "<title>crashlens: hardware</title>" in page
    # confidence bars: one per cause, width = confidence
    assert re.search(r'<rect class="fill" width="82\.0"', page)
    assert re.search(r'<rect class="fill" width="20\.0"', page)
    # evidence with file and line, the cited line marked, context around it
    assert "logs/train.log:40" in page and "dmesg.txt:7" in page
    assert '<span class="n">39</span>before &lt;b&gt;bold&lt;/b&gt;' in page
    assert '<span class="l cited"><span class="n">40</span>' in page
    # copyable commands
    assert page.count('class="copy"') == 2
    assert "scontrol update nodename=&lt;node&gt; state=drain reason=&#x27;xid 79&#x27;" in page
    assert "Ranked lower: the timeouts are a knock-on of the Xid." in page
    assert "binary data (an ELF core dump)" in page


def test_confidence_words_are_the_terminals() -> None:
    """The HTML says likely / near-certain / possible / unlikely as the terminal and
    Markdown do (`render.likelihood`): nothing under an `unknown` verdict reads as sure."""
    page = render_html(_report())
    assert "82% confidence, likely" in page
    assert '<strong class="pct">82%</strong> <span class="sure">likely</span>' in page
    assert '<strong class="pct">20%</strong> <span class="sure">possible</span>' in page
    sure = replace(_report(), causes=(replace(_report().causes[0], confidence=0.97),))
    assert '<span class="sure">near-certain</span>' in render_html(sure)
    unknown = replace(_report(), verdict=Verdict.UNKNOWN)
    page = render_html(unknown)
    assert "likely</span>" not in page.replace("unlikely</span>", "")
    assert '<strong class="pct">82%</strong> <span class="sure">possible</span>' in page


def test_log_text_is_escaped_everywhere() -> None:
    page = render_html(_report())
    assert "<script>alert" not in page
    assert '<img src="https://evil' not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    parsed = _parse(page)
    assert not [t for t, _ in parsed.tags if t == "img"]
    assert [t for t, _ in parsed.tags if t == "script"] == ["script"]  # only the inline one


def test_self_contained_no_network() -> None:
    page = render_html(_report())
    parsed = _parse(page)
    for tag, attrs in parsed.tags:
        for name in ("src", "href", "action", "data", "poster", "srcset", "xlink:href"):
            value = attrs.get(name) or ""
            assert not re.match(r"\s*(https?:|//|ftp:)", value, re.I), (tag, name, value)
        if tag == "script":
            assert "src" not in attrs
        if tag == "link":
            assert attrs.get("rel") == "icon" and attrs.get("href") == "data:,"
    assert "@import" not in page and "url(" not in page
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*https?://""", page, re.I)
    csp = next(
        a["content"] for t, a in parsed.tags if a.get("http-equiv") == "Content-Security-Policy"
    )
    assert csp is not None and "default-src 'none'" in csp and "script-src 'sha256-" in csp


def test_timeline_orders_ranks_and_marks_the_first_failure() -> None:
    page = render_html(_report())
    chart = page[
        page.index('<svg id="timeline-chart"') : page.index("</svg>", page.index("timeline-chart"))
    ]
    lanes = re.findall(r'<text class="lane"[^>]*>([^<]*)</text>', chart)
    assert lanes[:2] == ["rank 0 · node-b", "rank 3 · node-a"]
    assert chart.count('<g class="event"') == 4
    assert chart.count('data-first="true"') == 1
    assert "first failure" in chart and "no timestamp" in chart
    assert "+30m00s" in chart  # the span of the run, from the first event
    # the event table lists events in time order, the untimed last
    table = page[page.index('<table class="events">') :]
    order = re.findall(r"<td>(\d{4}-\d\d-\d\d [\d:.]+|—)</td>", table)
    assert order[-1] == "—" and order[:-1] == sorted(order[:-1])


def test_year_less_times_are_aligned_with_dated_ones() -> None:
    dated = _evidence(timestamp=1_749_565_985.0, clock=Clock.WALL)  # 2025-06-10 14:33:05
    yearless = _evidence(  # Jun 10 14:03:51, in the parsers' placeholder year
        path="kern.log", line=1, timestamp=960_645_831.0, clock=Clock.YEARLESS
    )
    cause = Cause(Category.SHM, 0.7, "s", (dated, yearless), (), ())
    report = Report(Verdict.SHM, (cause,), (), first_failure=yearless, yearless_year=2025)
    page = render_html(report)
    assert "2025-06-10 14:03:51" in page and "2000-" not in page
    assert "shown in the year of the others" in page
    # without a year from the analysis, the time is shown as logged: no year
    page = render_html(replace(report, yearless_year=None))
    assert "06-10 14:03:51 (year not logged)" in page and "2025-06-10 14:03:51" not in page


def test_boot_times_are_drawn_only_when_nothing_is_dated() -> None:
    boot = _evidence(path="dmesg.txt", line=3, timestamp=1234.5, clock=Clock.BOOT)
    dated = _evidence(timestamp=1_749_565_985.0, clock=Clock.WALL)
    alone = render_html(Report(Verdict.SHM, (Cause(Category.SHM, 0.7, "s", (boot,), (), ()),), ()))
    assert "1234.500 s after boot" in alone and "cannot be aligned" not in alone
    both = Cause(Category.SHM, 0.7, "s", (boot, dated), (), ())
    page = render_html(Report(Verdict.SHM, (both,), ()))
    assert "cannot be aligned with wall-clock times" in page
    start = page.index('<table class="events">')
    table = page[start : page.index("</table>", start)]
    assert "after boot" not in table and "<td>—</td>" in table  # listed untimed, off the axis


def test_empty_and_none_reports_render() -> None:
    page = render_html(Report(verdict=Verdict.NONE, causes=(), inputs=()))
    _parse(page)
    assert "No failure found" in page and 'id="timeline"' not in page


def test_cli_html_output_with_context(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = RUNNER.invoke(app, ["analyze", str(EXAMPLE), "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    _parse(page)
    assert 'id="verdict-value">shm<' in page
    assert "--shm-size" in page
    # neighbouring lines were read back from the inputs
    assert re.search(r'<span class="l"><span class="n">\d+</span>', page)
    assert 'class="badge">redacted<' in page


def test_cli_html_of_an_archive_member_gets_context(tmp_path: Path) -> None:
    import tarfile

    archive = tmp_path / "job.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for path in sorted(JOB.iterdir()):
            tar.add(path, arcname=f"job/{path.name}")
    result = RUNNER.invoke(app, ["analyze", str(archive), "-f", "html"])
    assert result.exit_code == 0, result.output
    assert "job.tar.gz!job/train.log:" in result.stdout
    assert re.search(r'<span class="l"><span class="n">\d+</span>', result.stdout)
