"""Without Hyperscan, polars searches the gates line by line (`redact.gates._lines_by_polars`):
it proposes the lines `re` over the whole text proposes, on the samples, the corpus and lines
that put Latin-1 spaces and letters where the gates' classes and `\\s` look."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.redact import Redactor
from crashlens.redact import gates as module
from crashlens.redact.gates import Gates, fold
from crashlens.redact.redactor import _LINE_ROWS

ROOT = Path(__file__).resolve().parents[1]
GATES = [row.gate for row in _LINE_ROWS]
EDGES = "\n".join(
    [
        "password\xa0= hunter2xyz token\x85: abcdefgh machine\xa0db login carol",
        "host\u00e9=node-1 hostname\xa0=\xa0node-2 --host\tn-3 hôst=x-4",
        "1234567890123,\xa0GPU-00000000 ,\u20091234567890123",
        "é@corp.example.com ü://carol@host-1 wandb\x85login abc",
        "trn-h100-031:123:456 [0] x \xe9node-2:8080 [n-3]:80 ÿ-4:443",
        "-u carol:pw\n\t-u carol:pw --user=carol:pw",
        "",
        "subscription\xa0id = 0",
    ]
)


def _texts() -> list[str]:
    paths = [
        path
        for folder in (ROOT / "tests" / "data" / "samples", ROOT / "corpus")
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.suffix not in (".gz", ".zst", ".zip")
    ]
    return [EDGES, *(path.read_bytes().decode("utf-8", "surrogateescape") for path in paths)]


def test_a_short_text_goes_to_re() -> None:
    gates = Gates(GATES, backend="python")
    text = "MASTER_ADDR=trn-h100-031 password=hunter2xyz\n" * 10
    assert gates.lines(fold(text), text) and gates._by_line is None  # polars never asked


def test_polars_takes_every_gate() -> None:
    by_polars, by_re = Gates(GATES, backend="python")._line_gates()
    assert len(by_polars) == sum(isinstance(gate, bytes) for gate in GATES) and not by_re


def test_polars_proposes_the_lines_re_proposes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "_POLARS_FROM", 0)
    by_line = Gates(GATES, backend="python")
    monkeypatch.setattr(module, "_polars_pattern", lambda gate: None)
    by_text = Gates(GATES, backend="python")
    assert by_text._line_gates()[0] == []
    texts = _texts()
    differ = 0
    for text in texts:
        folded = fold(text)
        found, expected = by_line.lines(folded, text), by_text.lines(folded, text)
        for start in found.keys() | expected.keys():
            # `re` may also propose a line for a match that runs on from the line before,
            # and miss one that such a match covers: the row finds nothing on those alone
            rows = found.get(start, 0) ^ expected.get(start, 0)
            line = text[start:].split("\n", 1)[0]
            for row in (index for index in range(rows.bit_length()) if rows >> index & 1):
                assert _LINE_ROWS[row].pattern.search(line) is None, (row, line[:200])
                differ += 1
    assert len(texts) > 500 and differ < 10


def test_a_gate_polars_refuses_is_left_to_re(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "_POLARS_FROM", 0)
    refused = GATES[0]
    real = module._polars_pattern
    monkeypatch.setattr(
        module, "_polars_pattern", lambda gate: None if gate == refused else real(gate)
    )
    gates = Gates(GATES, backend="python")
    assert [row for row, _ in gates._line_gates()[1]] == [0]
    text = "see https://carol@example.com/x and token=abcdefghij"
    assert gates.lines(fold(text), text) == Gates(GATES, backend="python").lines(fold(text), text)
    assert Redactor(backend="python").text(text) == Redactor().text(text)


@pytest.mark.parametrize("block", [1, 7, 64, 4096])
def test_a_long_text_goes_to_polars_in_blocks_of_lines(
    block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(module, "_POLARS_FROM", 0)
    texts = [EDGES, EDGES + "\n", "\n" + EDGES, "\n\n", "no newline at all " * 40]
    whole = Gates(GATES, backend="python")
    expected = [whole.lines(fold(text), text) for text in texts]
    monkeypatch.setattr(module, "_POLARS_BLOCK", block)
    assert [whole.lines(fold(text), text) for text in texts] == expected
