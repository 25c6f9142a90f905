"""The two scan backends find exactly the same hits, line numbers and facts on every sample."""

from __future__ import annotations

import io
import itertools
import re
from pathlib import Path

import pytest

from crashlens.inputs.discover import Source
from crashlens.match.engine import analyze_source
from crashlens.match.rules import shipped_rules
from crashlens.match.scan import (
    PythonBackend,
    ScanPattern,
    hyperscan_available,
    scan_chunks,
)
from crashlens.match.scan_forms import scan_form
from crashlens.model import InputKind
from crashlens.parsers import PARSERS
from crashlens.parsers.base import LogParser

from conftest import SAMPLES

ALL_SAMPLES = sorted(p for p in SAMPLES.rglob("*") if p.is_file() and p.name != "SOURCES.md")


def _source(path_bytes: bytes, name: str) -> Source:
    return Source(
        path=name, open=lambda: io.BytesIO(path_bytes), size_bytes=len(path_bytes), name=name
    )


def _summary(backend: str, data: bytes, name: str) -> tuple[object, ...]:
    analysis = analyze_source(_source(data, name), shipped_rules(), prefer_backend=backend)
    hits = sorted((h.rule_id, h.lineno, h.text, h.captures) for h in analysis.hits)
    facts = sorted((f.key, str(f.value), f.lineno) for f in analysis.facts)
    return analysis.status, tuple(hits), tuple(facts)


@pytest.mark.skipif(not hyperscan_available(), reason="hyperscan has no wheel on this platform")
@pytest.mark.parametrize("path", ALL_SAMPLES, ids=lambda p: p.name)
def test_backends_agree_on_every_sample(path) -> None:
    data = path.read_bytes()
    assert _summary("python", data, path.name) == _summary("hyperscan", data, path.name)


def test_python_backend_on_small_chunks_gives_line_numbers() -> None:
    backend = PythonBackend([ScanPattern("Bus error"), ScanPattern("(?i)killed")])
    chunks = [b"a\nBus error here\n", b"x\ny KILLED\nBus error and killed\n"]
    found = [(c.lineno, c.line, sorted(c.patterns)) for c in scan_chunks(chunks, backend)]
    assert found == [
        (2, b"Bus error here", [0]),
        (4, b"y KILLED", [1]),
        (5, b"Bus error and killed", [0, 1]),
    ]


def test_ansi_codes_do_not_hide_a_match() -> None:
    backend = PythonBackend([ScanPattern("Bus error")])
    found = list(scan_chunks([b"\x1b[31mBus \x1b[0merror\n"], backend))
    assert [c.line for c in found] == [b"Bus error"]


@pytest.mark.skipif(not hyperscan_available(), reason="hyperscan has no wheel on this platform")
def test_hyperscan_prefilters_a_pattern_it_cannot_compile() -> None:
    from crashlens.match.scan import HyperscanBackend

    backend = HyperscanBackend([ScanPattern(r"(ab)\1 x"), ScanPattern("xyz")])
    found = [(c.lineno, sorted(c.patterns)) for c in scan_chunks([b"abab x\nq\nxyz\n"], backend)]
    assert found == [(1, [0]), (3, [1])]


@pytest.mark.skipif(not hyperscan_available(), reason="hyperscan has no wheel on this platform")
def test_compiled_database_is_cached_between_runs(tmp_path, monkeypatch) -> None:
    from crashlens.match.scan import HyperscanBackend

    monkeypatch.setenv("CRASHLENS_CACHE_DIR", str(tmp_path))
    patterns = [ScanPattern("Bus error"), ScanPattern("(?i)killed")]
    first = HyperscanBackend(patterns)
    assert len(list(tmp_path.glob("hyperscan-*.db"))) == 1
    second = HyperscanBackend(patterns)  # loaded from the cache file
    data = [b"a\nBus error\nKILLED\n"]
    assert [c.lineno for c in scan_chunks(data, first)] == [2, 3]
    assert [c.lineno for c in scan_chunks(data, second)] == [2, 3]
    (next(tmp_path.glob("hyperscan-*.db"))).write_bytes(b"garbage")
    third = HyperscanBackend(patterns)  # a corrupt cache file is ignored and rewritten
    assert [c.lineno for c in scan_chunks(data, third)] == [2, 3]


@pytest.mark.skipif(not hyperscan_available(), reason="hyperscan has no wheel on this platform")
@pytest.mark.parametrize("kind", [InputKind.LAUNCHER, InputKind.DMESG])
def test_the_rule_library_compiles_at_once_with_no_pattern_tried_alone(
    kind: InputKind, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The patterns Hyperscan rejects (lookarounds, backreferences) are known from their
    text and compiled in prefilter mode from the start: a fresh cache costs one compile of
    the whole set, not a failed one and then each of ~1,100 patterns alone (2.6 s)."""
    from crashlens.match import scan

    monkeypatch.setenv("CRASHLENS_CACHE_DIR", str(tmp_path))

    def tried_alone(*_: object) -> bool:
        raise AssertionError("the whole set failed to compile: a pattern was tried alone")

    monkeypatch.setattr(scan, "_compiles", tried_alone)
    patterns = [
        ScanPattern(regex, rule.ignore_case)
        for rule in shipped_rules()
        if kind in rule.inputs
        for regex in rule.patterns
    ]
    backend = scan.HyperscanBackend(patterns)
    assert backend._prefiltered  # the library holds lookarounds: some are prefiltered
    lookahead = next(i for i, p in enumerate(patterns) if "(?!" in p.regex)
    assert lookahead in backend._prefiltered


@pytest.mark.parametrize(
    ("text", "rejected"),
    [
        (r"error:? ?(?!2\b)[0-9]+", True),
        (r"(?<=rank)[0-9]", True),
        (r"(?<!x)y", True),
        (r"(?>ab)c", True),
        (r"(a)\1", True),
        (r"(?P<n>a)(?P=n)", True),
        (r"(?(1)a|b)", True),
        (r"\\(?=x)", True),  # an escaped backslash, then a real lookahead
        (r"\(?=x", False),  # an escaped parenthesis: a literal `(?=`
        (r"\(?(?:2 vs|10 vs)", False),  # `\(?` optional literal parenthesis, then a group
        (r"(?P<name>x)(?:y)(?i:z)", False),
        (r"C:\\1", False),  # a literal backslash and 1
    ],
)
def test_constructs_hyperscan_rejects_are_known_from_the_text(text: str, rejected: bool) -> None:
    from crashlens.match.scan import _UNSUPPORTED

    assert bool(_UNSUPPORTED.search(text.encode())) is rejected


@pytest.mark.parametrize(
    ("form", "loosened"),
    [
        (r"a[^\n]{0,300}?b", r"a[^\n]{0,}?b"),
        (r"a.{0,80}b", r"a.{0,}b"),
        (r"[^ \t\n]{1,300}\.cu", r"[^ \t\n]{1,}\.cu"),
        (r"[^\]\n]{0,60}z", r"[^\]\n]{0,}z"),
        (r"a[^\n]{0,39}b", r"a[^\n]{0,39}b"),  # short bounds cost little: kept
        (r"[^a]{0,300}", r"[^a]{0,300}"),  # the class holds the newline: kept
        (r"a\.{0,80}", r"a\.{0,80}"),  # an escaped dot is a literal
        (r"(?:ab){0,100}", r"(?:ab){0,100}"),
        (r"(?s)a.{0,80}b", r"(?s)a.{0,80}b"),  # a dot that matches newlines
    ],
)
def test_long_bounded_repeats_open_for_hyperscan_only_within_a_line(
    form: str, loosened: str
) -> None:
    from crashlens.match.scan import _loosened

    assert _loosened(form) == loosened


@pytest.mark.parametrize(
    ("regex", "expected"),
    [
        (r"^\[[0-9]+\]:[ \t]*$", r"\[[0-9]+\]:"),
        (
            r"^[ \t]*(?:={20,}|-{20,}|\*{20,})[ \t]*$",
            r"[ \t]*(?:={20}(?:[^=\n]|$)|-{20}(?:[^\-\n]|$)|\*{20}(?:[^\*\n]|$))",
        ),
        (r"Killed (process)(?: \(core dumped\))?", r"Killed (process)"),
        (r"x[ab]+", r"x[ab]"),
        (r"a{2,5}", r"a{2}(?:[^a\n]|$)"),  # a run found by its end: one match per run
        (r"x[0-9]{3,}", r"x[0-9]{3}"),  # after a fixed start the run cannot slide
        (r"x(?:={20,})", r"x(?:={20})"),
        (r"foo\\*", "foo"),
        # a capture at the end: one match per line, not one per digit
        (r"Timeout\(ms\)=(?P<ms>[0-9]+)", r"Timeout\(ms\)=(?P<ms>[0-9])"),
        # a class holding `)` or `|` inside the final group opens and splits nothing
        (r"x(?:[)|]+|y)", r"x(?:[)|]|y)"),
        # kept whole: lazy repeats, escaped quantifier characters, lookarounds, cut escapes
        (r"foo.*?", r"foo.*?"),
        (r"a\*", r"a\*"),
        (r"abc(?=x)?", r"abc(?=x)?"),
        (r"\x1b*", r"\x1b*"),
        (r"[^\]]*", r"[^\]]*"),
    ],
)
def test_scan_form_cuts_repeats_off_the_tail(regex: str, expected: str) -> None:
    assert scan_form(regex) == expected


def _every_scan_pattern() -> list[tuple[str, bool]]:
    patterns = [(p, rule.ignore_case) for rule in shipped_rules() for p in rule.patterns]
    for parser in PARSERS:
        if isinstance(parser, LogParser):
            patterns.extend((anchor, False) for anchor in parser.anchors)
    return patterns


def test_scan_form_finds_every_line_the_full_pattern_finds() -> None:
    """The buffer scan may propose more lines than a pattern matches, never fewer."""
    lines = [
        line
        for path in ALL_SAMPLES
        for line in path.read_bytes().decode("utf-8", "replace").splitlines()
    ]
    lines += [example for rule in shipped_rules() for example in rule.examples_match]
    for regex, ignore_case in _every_scan_pattern():
        flags = re.IGNORECASE if ignore_case else 0
        full, cut = re.compile(regex, flags), re.compile(scan_form(regex), flags)
        missed = [line for line in lines if full.search(line) and not cut.search(line)]
        assert not missed, (regex, missed[:3])


@pytest.mark.parametrize("chunk_lines", [1, 2, 3, 7, 50])
def test_line_numbers_are_exact_across_chunks_of_any_size(chunk_lines: int) -> None:
    lines = [b"Bus error" if n % 5 == 0 or n == 1 else b"fine %d" % n for n in range(1, 41)]
    lines.append(b"")  # blank lines count as lines too
    lines.append(b"Bus error at the end")
    chunks = [
        b"".join(line + b"\n" for line in lines[i : i + chunk_lines])
        for i in range(0, len(lines), chunk_lines)
    ]
    found = [c.lineno for c in scan_chunks(chunks, PythonBackend([ScanPattern("Bus error")]))]
    assert found == [n for n, line in enumerate(lines, start=1) if b"Bus error" in line]


@pytest.mark.parametrize(
    "regex",
    [
        r"a{2,}",
        r"ba{2,4}",
        r"[ab]{3,}",
        r"(?:a{2,}|b{3,})c*",
        r"x?(?:a{2,}|ba+)",
        r"\-{2,}",
        r"ab+",
        r"(?P<run>a{2,}|[b|]+)c*",
        r"x(?:[)a]+|b)",
    ],
)
def test_scan_form_is_a_superset_on_every_short_line(regex: str) -> None:
    full, cut = re.compile(regex), re.compile(scan_form(regex), re.MULTILINE)
    for size in range(7):
        for letters in itertools.product("abcx-|)", repeat=size):
            line = "".join(letters)
            if full.search(line):
                assert cut.search(line), (regex, scan_form(regex), line)


def test_scan_forms_are_cached_on_disk_and_a_damaged_entry_is_worked_out_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from crashlens.match import scan_forms as forms_module

    monkeypatch.setenv("CRASHLENS_CACHE_DIR", str(tmp_path))
    regexes = [f"^step {n} loss [0-9]+$" for n in range(40)]
    monkeypatch.setattr(forms_module, "_FORMS", {})
    first = forms_module.scan_forms(regexes)
    assert first == [f"step {n} loss [0-9]" for n in range(40)]
    [entry] = tmp_path.glob("scanforms-*.json")
    monkeypatch.setattr(forms_module, "_FORMS", {})
    assert forms_module.scan_forms(regexes) == first  # read back from the cache
    entry.write_text('["not", "enough"]')
    monkeypatch.setattr(forms_module, "_FORMS", {})
    assert forms_module.scan_forms(regexes) == first  # refused, worked out again
