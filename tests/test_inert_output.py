"""Inert output: nothing an input carries is obeyed by a terminal, a Markdown viewer or a browser.

A hostile job folder (escape sequences, controls, backticks, pipes, HTML, image links and
@mentions in its log lines and in its file names) is analyzed and rendered in every format,
and scanned with `crashlens scan`; the Markdown is parsed with a real CommonMark parser
(markdown-it-py, tables on, raw HTML allowed as GitHub allows some) to show that nothing
breaks out of its code span, fence or table cell.
"""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token
from rich.console import Console
from typer.testing import CliRunner

from crashlens.batch.render import render_markdown as render_scan_markdown
from crashlens.batch.render import render_terminal as render_scan_terminal
from crashlens.cli import app
from crashlens.model import Report
from crashlens.pipeline import analyze
from crashlens.render.html import render_html
from crashlens.render.inert import md_cell_code, md_code, md_fence, md_text, visible
from crashlens.render.json import render_json
from crashlens.render.markdown import render_markdown
from crashlens.render.terminal import render_terminal

SEQUENCES = {
    "clipboard": "\x1b]52;c;ZWNobyBwd25lZA==\x07",
    "clipboard-st": "\x1b]52;c;ZWNobyBwd25lZA==\x1b\\",
    "hyperlink": "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\",
    "title": "\x1b]0;pwned\x1b\\",
    "title-bel": "\x1b]2;pwned\x07",
    "reset": "\x1bc",
    "dcs": "\x1bP1$qm\x1b\\",
    "csi-8bit": "\x9b31mred",
    "osc-8bit": "\x9d0;title\x9c",
    "c0": "\x01\x07\x08\x0b\x0c\x0e\x1f\x7f",
    "c1": "\x80\x85\x8d\x90\x9f",
    "bidi": "\u202egnp.exe\u2066x\u2069",
    "separators": "a\u2028b\u2029c",
}
MARKDOWN_HOSTILE = (
    "`![x](http://evil.example/p.png)` ``` <img src=x onerror=alert(1)> "
    "<script>alert(1)</script> @octocat [a](http://evil.example/) | x | y"
)
HOSTILE = "".join(SEQUENCES.values()) + " " + MARKDOWN_HOSTILE

RAW = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
"""What must not reach a terminal or a file (tab and newline are layout)."""
RICH_SGR = re.compile(r"\x1b\[[0-9;]*m")
"""Colours rich itself writes on a terminal."""


def assert_inert(text: str) -> None:
    found = RAW.search(text)
    assert found is None, (
        f"raw {found.group(0)!r} in ...{text[max(0, found.start() - 40) : found.end() + 40]!r}"
    )


def _hostile_job(folder: Path, undecodable_name: bool = True) -> Path:
    folder.mkdir(parents=True)
    log = [
        "[rank0]: Traceback (most recent call last):",
        f"[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered {HOSTILE}",
        f"[rank1]: torch.distributed.DistBackendError: NCCL error {HOSTILE}",
        f"Bus error (core dumped) {HOSTILE}",
        "ERROR: Unexpected bus error encountered in worker. This might be caused by "
        f"insufficient shared memory (shm). {HOSTILE}",
    ]
    name = "train \x1b]0;T\x07 `x` |y| \u202e \x9b.log"
    (folder / name).write_text("\n".join(log) + "\n", encoding="utf-8")
    dmesg = "[12345.678] NVRM: Xid (PCI:0000:3b:00): 79, pid=123, GPU has fallen off the bus. "
    dmesg += HOSTILE + "\n"
    (folder / "dmesg.txt").write_text(dmesg, encoding="utf-8")
    if not undecodable_name:
        return folder
    # a file name that is not UTF-8 at all: its bytes come back as lone surrogates
    os.mkdir(os.fsencode(folder / "nodes"))
    with open(os.fsencode(folder) + b"/nodes/\x9b\xff`@team.log", "wb") as stream:
        stream.write(f"Bus error (core dumped) {HOSTILE}\n".encode())
    return folder


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    folder = _hostile_job(tmp_path_factory.mktemp("hostile") / "job `|` \x1b]8;;x\x07")
    report = analyze([str(folder)])
    assert report.causes, "the hostile job must still be diagnosed"
    return report


def _markdown_parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": True}).enable("table")


def _walk(tokens: list[Token]) -> list[Token]:
    flat: list[Token] = []
    for token in tokens:
        flat.append(token)
        if token.children:
            flat.extend(_walk(token.children))
    return flat


MENTION = re.compile(r"(?<![\w@])@[A-Za-z0-9]")


def assert_markdown_contained(text: str) -> list[Token]:
    """Parsed as CommonMark + tables: no HTML, image, link or mention came from the input,
    and every table row has as many cells as its header."""
    tokens = _walk(_markdown_parser().parse(text))
    ours = {"<sub>", "</sub>"}  # the footer's own tags
    html = [t.content for t in tokens if t.type.startswith("html_") and t.content not in ours]
    assert not html, html
    kinds = {token.type for token in tokens}
    assert not kinds & {"image", "link_open"}, kinds
    for token in tokens:
        if token.type == "text":
            assert MENTION.search(token.content) is None, token.content
    cells: list[int] = []
    for token in tokens:
        if token.type == "tr_open":
            cells.append(0)
        elif token.type in ("th_open", "td_open"):
            cells[-1] += 1
        elif token.type == "thead_open":
            cells = []
        elif token.type == "table_close":
            assert len(set(cells)) <= 1, f"a row left its table: {cells}"
            cells = []
    return tokens


def test_every_format_is_inert(hostile_report: Report) -> None:
    as_json = render_json(hostile_report)
    outputs = {
        "json": as_json,
        "markdown": render_markdown(hostile_report),
        "html": render_html(hostile_report),
    }
    plain = io.StringIO()
    render_terminal(hostile_report, Console(file=plain, width=100, color_system=None))
    outputs["terminal"] = plain.getvalue()
    styled = io.StringIO()
    render_terminal(hostile_report, Console(file=styled, width=100, force_terminal=True))
    outputs["terminal (colour)"] = RICH_SGR.sub("", styled.getvalue())
    for name, text in outputs.items():
        assert_inert(text)
        text.encode("utf-8")  # no lone surrogate either
        # the sequences are shown, not dropped: a reader sees what the input tried
        shown = text.replace("\\\\", "\\") if name == "json" else text  # JSON doubles \\
        assert "\\x1b]0;T\\x07" in shown, name
        assert "\\x9b" in shown, name


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def test_json_strings_are_inert_for_jq_r(hostile_report: Report) -> None:
    """`jq -r` turns JSON escapes back into raw characters: the strings themselves are safe."""
    found = _strings(json.loads(render_json(hostile_report)))
    assert any("\\x1b" in value for value in found)
    for value in found:
        assert_inert(value)


def test_markdown_nothing_breaks_out(hostile_report: Report) -> None:
    text = render_markdown(hostile_report)
    tokens = assert_markdown_contained(text)
    spans = [t.content for t in tokens if t.type == "code_inline"]
    # the file name with a backtick and pipes is one whole code span
    assert any("train \\x1b]0;T\\x07 `x` " in span for span in spans), spans
    fences = [t.content for t in tokens if t.type == "fence"]
    assert any(MARKDOWN_HOSTILE.split("|")[0] in fence for fence in fences)


def test_the_cli_writes_inert_output(tmp_path: Path) -> None:
    folder = _hostile_job(tmp_path / "job")
    runner = CliRunner()
    for fmt in ("terminal", "json", "markdown", "html"):
        result = runner.invoke(app, ["analyze", str(folder), "--format", fmt])
        assert result.exit_code == 0, result.output
        assert_inert(RICH_SGR.sub("", result.stdout))


def test_detect_lists_found_files_inertly(tmp_path: Path) -> None:
    folder = _hostile_job(tmp_path / "job")
    result = CliRunner().invoke(app, ["detect", str(folder)])
    assert result.exit_code == 0, result.output
    assert_inert(result.stdout)
    assert "\\x1b]0;T\\x07" in result.stdout


def _scan_root(tmp_path: Path) -> Path:
    root = tmp_path / "archive"
    # names that are not UTF-8 crash `scan` (tests/test_fuzz_regressions.py): not here
    _hostile_job(root / "job-\x1b]52;c;QQ==\x07 `|` @team", undecodable_name=False)
    _hostile_job(root / "job-2", undecodable_name=False)
    return root


def test_scan_summaries_are_inert(tmp_path: Path) -> None:
    root = _scan_root(tmp_path)
    out = tmp_path / "out"
    runner = CliRunner()
    result = runner.invoke(app, ["scan", str(root), "-o", str(out), "-j", "1"])
    assert result.exit_code == 0, result.output
    assert_inert(RICH_SGR.sub("", result.stdout))
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    for value in _strings(summary):  # what `jq -r` would print
        assert_inert(value)
    as_json = runner.invoke(app, ["scan", str(root), "-o", str(out), "--summary", "json"])
    for value in _strings(json.loads(as_json.stdout)):
        assert_inert(value)
    markdown = render_scan_markdown(summary)
    assert_inert(markdown)
    assert_markdown_contained(markdown)
    assert_inert((out / "summary.md").read_text(encoding="utf-8"))
    styled = io.StringIO()
    render_scan_terminal(summary, Console(file=styled, width=120, force_terminal=True))
    assert_inert(RICH_SGR.sub("", styled.getvalue()))


# --- the Markdown helpers, on any text ---------------------------------------------------------

any_text = st.text(
    st.characters(codec="utf-8") | st.sampled_from(list("`|\\<>[]()!@*_#&\n\r\t \x1b\x9b\u202e")),
    max_size=40,
)


@settings(max_examples=300, derandomize=True, database=None)
@given(any_text)
def test_a_code_span_holds_any_text(text: str) -> None:
    tokens = _walk(_markdown_parser().parse(f"before {md_code(text)} after"))
    spans = [t.content for t in tokens if t.type == "code_inline"]
    assert spans == ([visible(text)] if text else [])  # an empty span is written as nothing


@settings(max_examples=300, derandomize=True, database=None)
@given(any_text)
def test_a_table_cell_holds_any_text(text: str) -> None:
    table = f"| a | b |\n|---|---|\n| {md_cell_code(text)} | {md_text(text)} |\n"
    tokens = assert_markdown_contained(table)
    assert sum(t.type == "td_open" for t in tokens) == 2
    assert sum(t.type == "code_inline" for t in tokens) == (1 if text else 0)


@settings(max_examples=300, derandomize=True, database=None)
@given(any_text)
def test_running_text_shows_itself(text: str) -> None:
    tokens = assert_markdown_contained(md_text(text))
    shown = "".join(t.content for t in tokens if t.type in ("text", "code_inline") and t.content)
    kinds = {t.type for t in tokens} - {"inline", "text", "paragraph_open", "paragraph_close"}
    assert kinds <= {"em_open", "em_close", "strong_open", "strong_close"}, kinds

    def plain(value: str) -> str:  # emphasis may style a word: its delimiters go
        return value.replace("\u200b", "").replace("*", "").replace("_", "").strip()

    assert plain(shown) == plain(visible(text))


@settings(max_examples=300, derandomize=True, database=None)
@given(any_text)
def test_a_fence_holds_any_text(text: str) -> None:
    tokens = _markdown_parser().parse(md_fence(text) + "\nafter\n")
    assert tokens[0].type == "fence"
    assert tokens[0].content == visible(text, lines=True) + "\n"
