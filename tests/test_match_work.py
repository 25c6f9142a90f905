"""Work per matching line: a rule with all its hits kept costs nothing more, and nothing changes.

The engine keeps the earliest `MAX_HITS_PER_RULE` hits of each rule; a later line a rule's scan
pattern proposes is then skipped for that rule (not confirmed, not decoded for it alone).
These tests pin what that must not change: the hits kept are exactly the earliest ones each
rule confirms, on both backends, and the facts of lines that also feed the parser are kept.
"""

from __future__ import annotations

import functools
from collections.abc import Set as AbstractSet
from pathlib import Path

import pytest

from crashlens.match import scan
from crashlens.match.engine import MAX_HITS_PER_RULE
from crashlens.match.site import library
from crashlens.model import InputAnalysis
from crashlens.parsers.base import clean_line
from crashlens.pipeline import AnalyzeOptions, analyze_inputs

LINES = (
    "[rank{r}]:[E ProcessGroupNCCL.cpp:475] [Rank {r}] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum={s}, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600012 ms",
    "RuntimeError: DataLoader worker (pid {s}) is killed by signal: Bus error. It is possible "
    "that dataloader's workers are out of shared memory.",
    "[rank{r}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {s}.00 MiB.",
    "step {s} loss 1.234 lr 3e-4",
)


def _log(tmp_path: Path, count: int) -> Path:
    path = tmp_path / "train.log"
    lines = [LINES[i % len(LINES)].format(r=i // len(LINES) % 8, s=i) for i in range(count)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _analysis(path: Path, backend: str) -> InputAnalysis:
    [analysis] = analyze_inputs([str(path)], AnalyzeOptions(backend=backend), library())
    return analysis


@pytest.mark.parametrize("backend", ["python", "hyperscan"])
def test_the_hits_kept_are_the_earliest_each_rule_confirms(tmp_path: Path, backend: str) -> None:
    if backend == "hyperscan":
        pytest.importorskip("hyperscan")
    path = _log(tmp_path, 4000)
    analysis = _analysis(path, backend)
    rules = {rule.id: rule for rule in library()}
    lines = path.read_text(encoding="utf-8").splitlines()
    kept: dict[str, list[int]] = {}
    for hit in analysis.hits:
        assert hit.lineno is not None
        kept.setdefault(hit.rule_id, []).append(hit.lineno)
    assert kept, "the log must hit rules"
    assert max(len(found) for found in kept.values()) == MAX_HITS_PER_RULE
    for rule_id, found in kept.items():
        rule = rules[rule_id]
        confirmed = [
            number
            for number, line in enumerate(lines, 1)
            if rule.match_line(clean_line(line)) is not None
        ]
        assert found == confirmed[:MAX_HITS_PER_RULE], rule_id


def test_parser_facts_keep_coming_after_the_rules_are_full(tmp_path: Path) -> None:
    """Every rank's watchdog timeout is a fact, though its rule stopped at 20 hits."""
    analysis = _analysis(_log(tmp_path, 4000), "auto")
    timeouts = [f for f in analysis.facts if f.key == "nccl.timeout"]
    assert {f.attr("rank") for f in timeouts} == set(range(8))
    assert len(timeouts) == 200  # the collector's own bound (MAX_EXCEPTIONS), not the rules'


def test_a_chunk_is_searched_in_pieces_cut_at_newlines() -> None:
    chunk = b"".join(b"line %d \x1b[31mred\x1b[0m\n" % i for i in range(1000)) + b"x" * 300
    pieces = list(scan._pieces([chunk], size=256))
    assert b"".join(pieces) == scan.strip_ansi(chunk)
    assert all(piece.endswith(b"\n") and len(piece) <= 256 for piece in pieces[:-1])
    assert pieces[-1].endswith(b"x" * 300)  # a line longer than a piece is one piece


def test_pieces_change_no_candidate_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Line numbers and patterns are the same whether a chunk is searched whole or in pieces,
    and a pattern ignored after its first line holds no more matches."""
    backend = scan.make_backend([scan.ScanPattern("Bus error"), scan.ScanPattern("[Ss]tep")])
    text = b"".join(
        b"step %d\n" % i + (b"Bus error %d\n" % i if i % 7 == 0 else b"") for i in range(5000)
    )
    half = text.index(b"\n", len(text) // 2) + 1
    chunks = [text[:half], text[half:]]  # as text_chunks cuts them: at newlines
    whole = list(scan.scan_chunks(chunks, backend))
    monkeypatch.setattr(scan, "_pieces", functools.partial(scan._pieces, size=300))
    assert list(scan.scan_chunks(chunks, backend)) == whole
    ignored: set[int] = set()
    found = []
    for candidate in scan.scan_chunks(chunks, backend, ignored):
        found.append(candidate)
        ignored.add(1)  # the progress pattern: settled on its first line
    assert found[0] == whole[0] == scan.Candidate(1, b"step 0", frozenset({1}))
    bus_errors = [c for c in whole if 0 in c.patterns]
    assert [c.lineno for c in found[1:]] == [c.lineno for c in bus_errors]
    assert all(c.patterns == frozenset({0}) for c in found[1:])


def test_a_search_rebuilt_without_ignored_patterns_finds_the_same_lines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past `NARROW_AFTER` dropped matches the search runs without the ignored patterns; the
    others keep their indices, and the lines found are those the full search finds."""
    pytest.importorskip("hyperscan")
    patterns = [scan.ScanPattern("[Ss]tep"), scan.ScanPattern("Bus error")]
    text = b"".join(
        b"step %d\n" % i + (b"Bus error %d\n" % i if i % 7 == 0 else b"") for i in range(20000)
    )
    chunks = [text]  # one chunk, searched in pieces of 300 bytes below
    monkeypatch.setattr(scan, "_pieces", functools.partial(scan._pieces, size=300))

    def run(narrow_after: int) -> tuple[list[scan.Candidate], list[frozenset[int]]]:
        monkeypatch.setattr(scan, "NARROW_AFTER", narrow_after)
        backend = scan.HyperscanBackend(patterns)
        narrowed: list[frozenset[int]] = []
        without = backend.without

        def spy(ignored: AbstractSet[int]) -> scan.Backend:
            narrowed.append(frozenset(ignored))
            return without(ignored)

        monkeypatch.setattr(backend, "without", spy)
        ignored: set[int] = set()
        found = []
        for candidate in scan.scan_chunks(chunks, backend, ignored):
            found.append(candidate)
            ignored.add(0)  # the progress pattern: settled on its first line
        return found, narrowed

    full, never = run(10**12)
    narrow, once = run(50)
    assert never == [] and once == [frozenset({0})]
    assert narrow == full
    assert all(c.patterns == frozenset({1}) for c in narrow[1:]) and len(narrow) > 2000


@pytest.mark.parametrize("backend", ["python", "hyperscan"])
def test_a_folded_wording_past_ascii_is_found_by_its_literal_as_hyperscan_finds_it(
    backend: str,
) -> None:
    """A case-insensitive pattern with a German or CJK wording is prefiltered by its literals
    (folded in ASCII only, as Hyperscan's caseless mode folds), not run over the whole buffer:
    on lines of launcher events that cost 0.3 s a MiB. Both backends propose the same lines."""
    if backend == "hyperscan":
        pytest.importorskip("hyperscan")
    patterns = [
        scan.ScanPattern(r"[0-9]+ (?:Getötet|已杀死)", ignore_case=True),
        scan.ScanPattern(r"(?i)Speicherzugriffsfehler|段错误"),
        scan.ScanPattern(r"(?i)ÜBERLAUF"),  # lowered by the literal finder: stays whole
    ]
    searcher = scan.make_backend(patterns, backend)
    if isinstance(searcher, scan.PythonBackend):
        assert searcher._whole == [2]
    lines = [
        "12 Getötet",
        "12 GETöTET",
        "12 GETÖTET",  # Ö is not folded: neither backend proposes it
        "7 已杀死",
        "SPEICHERZUGRIFFSFEHLER (Speicherabzug geschrieben)",
        "段错误 (核心已转储)",
        "ÜBERLAUF",
        "nothing here",
    ]
    data = ("\n".join(lines) + "\n").encode("utf-8")
    found = [(c.lineno, sorted(c.patterns)) for c in scan.scan_chunks([data], searcher)]
    assert found == [(1, [0]), (2, [0]), (4, [0]), (5, [1]), (6, [1]), (7, [2])]


def test_a_narrowed_search_knows_which_patterns_need_prefilter_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pattern Hyperscan refuses (a backreference) is compiled in prefilter mode; the search
    rebuilt without ignored patterns is told so, and so is a database loaded from the disk
    cache: neither checks the expressions one compile at a time again (6 s for the library)."""
    pytest.importorskip("hyperscan")
    monkeypatch.setenv("CRASHLENS_CACHE_DIR", str(tmp_path))
    patterns = [
        scan.ScanPattern("[Ss]tep [0-9]+"),
        scan.ScanPattern(r"(ab)\1 again"),
        scan.ScanPattern("Bus error"),
    ]
    text = b"step 3\nabab again\nBus error\nabxy again\n"
    full = scan.HyperscanBackend(patterns)
    assert full._prefiltered == frozenset({1})  # noqa: SLF001
    checked: list[bytes] = []
    compiles = scan._compiles

    def counted(hyperscan: object, expression: bytes, flags: int) -> bool:
        checked.append(expression)
        return compiles(hyperscan, expression, flags)

    monkeypatch.setattr(scan, "_compiles", counted)
    narrowed = full.without({0})
    assert checked == []
    # the refused pattern's prefilter reports a superset (the line re-check makes it exact)
    found = {index for index, _ in narrowed.ends(text)}
    assert found == {1, 2}
    again = scan.HyperscanBackend(patterns)  # from the disk cache
    assert again._prefiltered == frozenset({1})  # noqa: SLF001
    again.without({2})
    assert checked == []
