"""The parser registry's invariants: what adding an input kind must keep true.

One parser per `InputKind`, no filename glob claimed twice, a sample folder per kind named by
the kind, every sample detected as its folder's kind, and the derived lists (log kinds,
detection order) following the parsers instead of being kept by hand.
"""

from __future__ import annotations

import sys
from collections import Counter
from fnmatch import fnmatch
from pathlib import Path

import pytest

from crashlens.inputs.detect import FILENAME_BONUS, detect
from crashlens.inputs.read import sniff_text
from crashlens.match import rules
from crashlens.model import InputKind
from crashlens.parsers import LOG_KINDS, PARSERS, collect_parsers, get_parser
from crashlens.parsers.base import DocumentParser, LogParser, safe_sniff

from conftest import ROOT, SAMPLES

SAMPLE_FILES = sorted(p for p in SAMPLES.glob("*/*") if p.is_file())
KINDS = sorted(InputKind, key=lambda k: k.value)


def _head(path: Path) -> str:
    return sniff_text(path.read_bytes()[: 64 * 1024])


def _sample_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def test_each_kind_has_exactly_one_parser() -> None:
    kinds = Counter(parser.kind for parser in PARSERS)
    assert [kind for kind, count in kinds.items() if count > 1] == []
    assert set(kinds) == set(InputKind)


@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_get_parser_returns_the_parser_of_that_kind(kind: InputKind) -> None:
    parser = get_parser(kind)
    assert parser.kind is kind
    assert parser.name.strip(), "a parser needs a human label for reports"


def test_no_filename_glob_is_claimed_twice() -> None:
    claims = Counter(glob for parser in PARSERS for glob in parser.filenames)
    assert [glob for glob, count in claims.items() if count > 1] == []


@pytest.mark.parametrize("parser", PARSERS, ids=lambda p: p.kind.value)
def test_filename_globs_are_lower_case(parser) -> None:
    # Detection matches globs against the lower-cased base name: an upper-case glob never hits.
    assert [glob for glob in parser.filenames if glob != glob.lower()] == []


def test_log_kinds_are_the_kinds_of_the_log_parsers() -> None:
    logs = {parser.kind for parser in PARSERS if isinstance(parser, LogParser)}
    assert logs == LOG_KINDS
    assert rules.LOG_KINDS is LOG_KINDS
    assert all(isinstance(parser, DocumentParser | LogParser) for parser in PARSERS)


def test_detection_order_is_documents_then_logs_then_plain_text() -> None:
    shapes = [isinstance(parser, LogParser) for parser in PARSERS]
    assert shapes == sorted(shapes)
    assert PARSERS[-1].kind is InputKind.OTHER


def test_sample_folders_are_named_by_kind() -> None:
    folders = {p.name for p in SAMPLES.iterdir() if p.is_dir()}
    assert folders == {kind.value for kind in InputKind}


@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_every_kind_has_a_sample(kind: InputKind) -> None:
    assert any(p.is_file() for p in (SAMPLES / kind.value).iterdir())


@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_every_kind_is_described_in_the_formats_doc(kind: InputKind) -> None:
    # docs/formats.md opens with one table row per kind: `| `<kind>` | `parsers/...` | ...`
    rows = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8").splitlines()
    assert any(row.startswith(f"| `{kind.value}` |") for row in rows)


def test_every_sample_has_its_provenance_in_sources() -> None:
    listed = (SAMPLES / "SOURCES.md").read_text(encoding="utf-8")
    assert [_sample_id(p) for p in SAMPLE_FILES if f"`{_sample_id(p)}`" not in listed] == []


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=_sample_id)
def test_sample_is_detected_as_its_folder_kind(path: Path) -> None:
    kind = InputKind(path.parent.name)
    # A neutral name: detection must work from the content alone.
    assert detect(_head(path), "input.txt").kind is kind
    # And the file's own name must not lead it astray.
    assert detect(_head(path), path.name).kind is kind


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=_sample_id)
def test_document_parsers_never_share_a_sample(path: Path) -> None:
    # Why the order among document parsers cannot decide a detection: on any sample, at
    # most one of them sees its format (each reads one strict layout).
    head = _head(path)
    seen = [p.kind for p in PARSERS if isinstance(p, DocumentParser) and safe_sniff(p, head) > 0]
    assert len(seen) <= 1, seen


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=_sample_id)
def test_a_glob_match_never_outweighs_the_content(path: Path) -> None:
    # The filename bonus confirms a kind: a sample's own name never lifts another kind's
    # parser above the content score of the right one.
    head, kind = _head(path), InputKind(path.parent.name)
    own = safe_sniff(get_parser(kind), head)
    for parser in PARSERS:
        if parser.kind is not kind and any(fnmatch(path.name.lower(), g) for g in parser.filenames):
            assert safe_sniff(parser, head) + FILENAME_BONUS < own or own >= 1.0, parser.kind


def test_a_new_parser_module_is_registered_without_editing_a_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A throwaway package with one parser module, the way a new input kind is added.
    package = tmp_path / "fakeparsers"
    (package / "nested").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "nested" / "__init__.py").write_text("")
    (package / "nested" / "memo.py").write_text(
        "from crashlens.model import InputKind\n"
        "from crashlens.parsers.base import DocumentParser, DocumentResult\n"
        "from crashlens.parsers.df import DfParser  # imported, not declared here\n"
        "class MemoParser(DocumentParser):\n"
        "    kind = InputKind.DF\n"
        "    name = 'memo'\n"
        "    @staticmethod\n"
        "    def sniff(head: str) -> float:\n"
        "        return 0.0\n"
        "    def parse(self, text: str, path: str) -> DocumentResult:\n"
        "        return DocumentResult(facts=())\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "fakeparsers", raising=False)
    import fakeparsers  # type: ignore[import-not-found]

    found = collect_parsers(fakeparsers)
    assert [(type(p).__name__, p.kind) for p in found] == [("MemoParser", InputKind.DF)]
    for name in [n for n in sys.modules if n.startswith("fakeparsers")]:
        monkeypatch.delitem(sys.modules, name)
