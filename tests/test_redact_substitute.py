"""The rows' shortened substitutions (`redact.substitute`) give what `pattern.sub` gives.

A row marked `Start` is searched only at a line's start, one marked `Before` stops when its
look-ahead's pattern is nowhere further on: each must call the replace function on the same
matches and return the same line as `sub`, on every line of the samples and corpus (what the
rows see in practice) and on lines built to sit at the edges (several matches, a look-ahead
text with no host before it, characters `^` and `\\s` treat differently).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from crashlens.redact import patterns as p
from crashlens.redact.replacements import REPLACEMENTS, Replacement
from crashlens.redact.substitute import Before, Start, substitute

ROOT = Path(__file__).resolve().parents[1]
SHAPED = [row for row in REPLACEMENTS if row.shape is not None]


def _lines() -> list[str]:
    lines: set[str] = set()
    for folder in (ROOT / "tests" / "data" / "samples", ROOT / "corpus"):
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.suffix not in (".gz", ".zst", ".zip"):
                text = path.read_bytes().decode("utf-8", "surrogateescape")
                lines.update(text.split("\n"))
    return sorted(lines)


LINES = _lines()

EDGES = [
    "",
    "node-1:12:34 [0] NCCL INFO a node-2:56:78 [1] b node-3:9:10 [2]",
    "gpu-a:1:2 [3]gpu-b:4:5 [6]",
    ":1:2 [3] no host before it, then x:1:2 [3]",
    "node-1:12:34 [0] NCCL INFO trailing :5:6 [7]",
    "\t\x0bnode-7:1:2 [0] tab and vertical tab first",
    "Dec  2 04:50:00 trn-h100-031 kernel: [ 12.5] NVRM: Xid 79",
    "2026-12-02T04:50:00.123+00:00 trn-h100-031 systemd[1]: started",
    "  worker-3: Traceback (most recent call last):",
    "x worker-3: not at the start",
    "-rw-r--r-- 1 alice alice 4096 Dec  2 04:50 file",
    "node-1 slots=8",
    "   node-2   slots = 8",
    "gpu-a17 slots=8 max_slots=8",
    "0, NVIDIA H100, GPU-00000000-1111-2222-3333-444444444444, 1321021012345, 80",
    "\u2028node-9:1:2 [0] a line separator is no newline",
]


def _replace(calls: list[tuple[int, int, str]]) -> Callable[[re.Match[str]], str]:
    """A replace function that records each match it is given and writes something new."""

    def replace(match: re.Match[str]) -> str:
        calls.append((match.start(), match.end(), match.group(0)))
        return f"<{len(calls)}:{match.group(0)[::-1]}>"

    return replace


@pytest.mark.parametrize("row", SHAPED, ids=lambda row: row.pattern.pattern[:40])
def test_a_shaped_row_substitutes_as_sub_does_on_every_line(row: Replacement) -> None:
    fast = substitute(row.pattern, row.shape)
    matched = 0
    for line in [*EDGES, *LINES]:
        expected_calls: list[tuple[int, int, str]] = []
        calls: list[tuple[int, int, str]] = []
        expected = row.pattern.sub(_replace(expected_calls), line)
        assert fast(_replace(calls), line) == expected, line
        assert calls == expected_calls, line
        matched += bool(calls)
    assert matched >= 3  # the lines reach the fast path's matches, not only its misses


@pytest.mark.parametrize("row", SHAPED, ids=lambda row: row.pattern.pattern[:40])
def test_a_shaped_row_is_what_its_shape_says(row: Replacement) -> None:
    """The premises: a `Start` pattern opens with `^` outside any alternation under
    MULTILINE; a `Before` pattern ends with a look-ahead of exactly its `before` pattern;
    a `Before` pattern cannot match an empty string (its loop never steps past an empty match;
    a `Start` pattern's one match may be empty: `sub` finds no second at a line's start)."""
    pattern = row.pattern
    parsed = re._parser.parse(pattern.pattern, pattern.flags)  # type: ignore[attr-defined]
    if isinstance(row.shape, Start):
        assert pattern.flags & re.MULTILINE
        assert str(parsed[0][0]) == "AT" and str(parsed[0][1]) == "AT_BEGINNING"
    else:
        assert isinstance(row.shape, Before)
        assert parsed.getwidth()[0] > 0
        assert pattern.pattern.endswith(f"(?={row.shape.before.pattern})")
        # the look-ahead is the last item at the top level, not inside an alternation
        assert str(parsed[-1][0]) == "ASSERT" and parsed[-1][1][0] == 1


def test_the_shapes_cover_the_rows_that_cost_most_on_launcher_and_kernel_logs() -> None:
    shaped = {row.pattern for row in SHAPED}
    assert {p.NCCL_HOST, p.SYSLOG_HOST, p.PREFIX_HOST} <= shaped


def test_an_unshaped_row_is_plain_sub() -> None:
    assert substitute(p.IPV4, None) == p.IPV4.sub
