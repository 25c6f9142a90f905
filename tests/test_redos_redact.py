"""ReDoS: the redactor's regexes cost linear time on hostile lines, as the redactor runs them.

The same adversarial lines and growth check as tests/test_redos.py (built from each pattern:
the text that reaches each unbounded repeat, then a long run of what it accepts, without the
closing part), applied to every compiled regex of `crashlens.redact`: each replacement row as
`Redactor` applies it to a line (`pattern.sub` with the row's replace function), the other
patterns by `search`, the gates as the pure-Python backend searches the folded text, and the
whole `Redactor.text()` on the lines built for each row (gates, rows and learned names).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest

import crashlens.redact.patterns
import crashlens.redact.redactor
import crashlens.redact.replacements
from crashlens.redact import Redactor
from crashlens.redact.gates import Gates, fold
from crashlens.redact.replacements import REPLACEMENTS, Replacement
from test_redos import attacks, super_linear

# Timing checks: coverage's line tracer multiplies their matching time (96 s against 18 s for
# the hyperscan scan's check) and adds noise to the growth ratios they measure; the code they
# drive is measured by the rest of the suite.
pytestmark = pytest.mark.no_cover


def _module_regexes() -> list[tuple[str, re.Pattern[str]]]:
    """Every compiled `str` regex the redaction modules hold at their top level."""
    found: dict[tuple[str, int], tuple[str, re.Pattern[str]]] = {}
    for module in (
        crashlens.redact.patterns,
        crashlens.redact.replacements,
        crashlens.redact.redactor,
    ):
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                where = f"{module.__name__}.{name}"
                found.setdefault((value.pattern, value.flags), (where, value))
    return list(found.values())


REGEXES = _module_regexes()


def test_every_redaction_regex_is_collected() -> None:
    names = {where.rsplit(".", 1)[1] for where, _ in REGEXES}
    assert {"KEY_VALUE", "IPV6_RUN", "BUCKET_ACCOUNT", "PLACEHOLDER", "_HOSTLIST"} <= names
    assert {row.pattern.pattern for row in REPLACEMENTS} <= {p.pattern for _, p in REGEXES}


ANCHORED = frozenset(
    {"PSEUDO_START", "WORD", "NOT_SECRET_NAMES", "PLACEHOLDER", "NOT_HOST", "_QUOTE", "_HOSTLIST"}
)
"""Regexes the redactor only ever matches at the start of a value (`match`, `fullmatch`):
checked that way (a `search` of them would try every start of a hostile value)."""


KNOWN_SUPER_LINEAR: dict[str, str] = {}
"""Found by this check and not fixed yet (no rewrite found that keeps every match the same):
each is reachable only on a line its gate proposes, and stays marked until it is fixed."""


def _marked(where: str, pattern: re.Pattern[str]) -> Any:
    reason = KNOWN_SUPER_LINEAR.get(where.rsplit(".", 1)[1])
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(where, pattern, id=where, marks=marks)


@pytest.mark.parametrize(("where", "pattern"), [_marked(w, p) for w, p in REGEXES])
def test_redaction_regexes_run_in_linear_time(where: str, pattern: re.Pattern[str]) -> None:
    run = pattern.match if where.rsplit(".", 1)[1] in ANCHORED else pattern.search
    problem = super_linear(run, attacks(pattern.pattern, pattern.flags))
    assert problem is None, f"{where}: {problem}"


def _row(index: int, row: Replacement) -> Any:
    name = next((w for w, p in REGEXES if p is row.pattern), "")
    reason = KNOWN_SUPER_LINEAR.get(name.rsplit(".", 1)[1])
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(row, id=f"{index}-{row.kind}", marks=marks)


ROWS = [_row(index, row) for index, row in enumerate(REPLACEMENTS)]


def _row_on_a_line(row: Replacement) -> Callable[[str], object]:
    """The row as `Redactor` applies it: substituted over one line, its replace function
    writing pseudonyms (a fresh Redactor each time: nothing learned carries over)."""

    def run(line: str) -> object:
        return row.pattern.sub(partial(row.replace, Redactor()), line)

    return run


@pytest.mark.parametrize("row", ROWS)
def test_each_row_substitutes_in_linear_time(row: Replacement) -> None:
    problem = super_linear(_row_on_a_line(row), attacks(row.pattern.pattern, row.pattern.flags))
    assert problem is None, f"{row.pattern.pattern[:80]!r}: {problem}"


@pytest.mark.parametrize("row", ROWS)
def test_the_redactor_is_linear_on_each_rows_hostile_lines(row: Replacement) -> None:
    """The whole of `Redactor.text()` (gates, every row, learned names) on the lines built
    for this row: what one row costs must not hide behind another."""
    shapes = attacks(row.pattern.pattern, row.pattern.flags, limit=16)  # the row's own test
    problem = super_linear(lambda line: Redactor().text(line), shapes)  # takes every shape
    assert problem is None, f"{row.pattern.pattern[:80]!r}: {problem}"


def test_the_python_gates_are_linear() -> None:
    """The gates searched with `re` over the folded text (where Hyperscan has no wheel).

    Each gate is timed on its own, as the backend searches it: timed with all the others,
    their linear cost at 2 KiB hid most of one gate's quadratic growth (a gate whose time
    grew 13 times from 8 to 32 KiB passed on some runs and failed on others)."""
    failed = []
    for row in REPLACEMENTS:
        if not isinstance(row.gate, bytes):
            continue
        gates = Gates([row.gate], backend="python")
        shapes = attacks(row.gate.decode("latin-1"), re.MULTILINE)
        problem = super_linear(lambda line, gates=gates: gates.lines(fold(line), line), shapes)
        if problem:
            failed.append(f"{row.gate[:80]!r}: {problem}")
    assert not failed, "super-linear gates:\n" + "\n".join(failed)
