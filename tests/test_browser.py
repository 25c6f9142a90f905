"""The HTML report in a real headless browser: Debian's Chromium driven by Playwright.

The page must load from a file with no console error and no network request at all, show its
key parts (verdict, causes with confidence bars, evidence with context, copyable commands, the
timeline chart), and a full-page screenshot is kept in tests/artifacts/ for a person to look at.
Skipped when Playwright or Chromium is missing here; .ci/run installs both so CI runs it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from crashlens.cli import app

ROOT = Path(__file__).resolve().parents[1]
JOB = Path(__file__).resolve().parent / "data" / "redaction" / "job"
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM = os.environ.get("CRASHLENS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]

REQUIRED = os.environ.get("CRASHLENS_REQUIRE_BROWSER") == "1"
"""Set by .ci/run, which installs both: there a missing browser is a failure, not a skip."""

try:
    from playwright import sync_api
except ImportError:
    if REQUIRED:
        raise
    pytest.skip("playwright is not installed", allow_module_level=True)
if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
    if REQUIRED:
        pytest.fail(f"no Chromium at {CHROMIUM}", pytrace=False)
    pytest.skip(f"no Chromium at {CHROMIUM}", allow_module_level=True)


@pytest.fixture(scope="module")
def report_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("html") / "report.html"
    # relative input paths, as a user would type them
    cwd = Path.cwd()
    os.chdir(ROOT)
    try:
        result = CliRunner().invoke(
            app, ["analyze", str(JOB.relative_to(ROOT)), "--format", "html", "-o", str(out)]
        )
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0, result.output
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copyfile(out, ARTIFACTS / "report.html")
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield launched
        finally:
            launched.close()


def test_page_loads_offline_with_no_errors_and_key_parts(browser: Any, report_file: Path) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    console_errors: list[str] = []
    page_errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: page_errors.append(str(error)))
    page.on("request", lambda request: requests.append(request.url))
    url = report_file.as_uri()
    page.goto(url, wait_until="load")
    page.wait_for_timeout(300)

    assert page.title() == "crashlens: shm"
    assert page.locator("#verdict-value").inner_text() == "shm"
    causes = page.locator("article.cause")
    assert causes.count() >= 1
    assert causes.first.get_attribute("data-category") == "shm"
    assert page.locator("article.cause .confidence svg rect.fill").count() == causes.count()
    # evidence: file and line, the cited line marked, its neighbours shown
    evidence = page.locator("#cause-1 .evidence")
    assert evidence.count() >= 3
    assert "train.log:" in evidence.first.locator(".where").inner_text()
    assert page.locator("#cause-1 .evidence pre span.cited").count() >= 3
    assert page.locator("#cause-1 .evidence pre span.l:not(.cited)").count() >= 6
    # the timeline: a chart with every cited line, the first failure ringed, ranks as lanes
    chart = page.locator("svg#timeline-chart")
    assert chart.is_visible()
    box = chart.bounding_box()
    assert box is not None and box["width"] > 600 and box["height"] > 100
    assert page.locator("svg#timeline-chart g.event").count() >= 5
    assert page.locator('svg#timeline-chart g.event[data-first="true"]').count() == 1
    lanes = page.locator("svg#timeline-chart text.lane").all_text_contents()
    assert any(lane.startswith("rank ") for lane in lanes)
    assert page.locator("table.events tbody tr").count() >= 5
    # remediation: a command with a working copy button
    button = page.locator("#cause-1 .cmd button.copy").first
    command = page.locator("#cause-1 .cmd code").first.inner_text()
    assert "--shm-size" in page.locator("#cause-1").inner_text()
    button.click()
    page.wait_for_timeout(200)
    selected = page.evaluate("window.getSelection().toString()")
    assert button.inner_text() == "Copied" or selected.strip() == command.strip()
    # redacted by default: no planted host survives
    html = page.content()
    assert "gpu-node-17" not in html and "host-1" in html

    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
    page.locator("#timeline").screenshot(path=str(ARTIFACTS / "timeline.png"))
    context.close()

    assert not console_errors, console_errors
    assert not page_errors, page_errors
    assert requests == [url], f"the page made network requests: {requests}"
    assert (ARTIFACTS / "report.png").stat().st_size > 10_000


def test_no_javascript_still_shows_everything(browser: Any, report_file: Path) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(report_file.as_uri())
    assert page.locator("#verdict-value").inner_text() == "shm"
    assert page.locator("svg#timeline-chart g.event").count() >= 5
    context.close()
