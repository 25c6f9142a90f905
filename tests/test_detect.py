"""How a kind is chosen: junk falls back to plain text, `--kind` wins, a named kind is tried first.

That every sample is detected as the kind its folder names is checked in `test_registry.py`."""

from __future__ import annotations

import pytest

from crashlens.inputs.detect import detect, scores
from crashlens.model import InputKind
from crashlens.parsers import PARSERS
from crashlens.parsers.base import safe_sniff


@pytest.mark.parametrize("head", ["", "abc", "\x00\x01\x02", "{", "[ 12.3", "Filesystem"])
def test_sniffers_stay_in_range_on_junk(head: str) -> None:
    for parser in PARSERS:
        # The raw sniffer, not safe_sniff: junk must neither raise nor need clamping.
        assert 0.0 <= parser.sniff(head) <= 1.0, parser.kind
    # A name no glob matches adds no bonus: the ranking is the content score itself.
    for parser, score, named in scores(head, "x"):
        assert not named and score == safe_sniff(parser, head)


def test_junk_is_plain_text() -> None:
    assert detect("hello world\nthis is a note\n", "notes.txt").kind is InputKind.OTHER


def test_forced_kind_wins() -> None:
    assert detect("hello\n", "x", InputKind.DMESG).kind is InputKind.DMESG


def test_a_named_parser_that_disagrees_is_not_sniffed_again(monkeypatch) -> None:
    from crashlens.parsers.dmesg import KernelLogParser

    calls: list[int] = []
    real = KernelLogParser.sniff

    def counting(head: str) -> float:
        calls.append(len(head))
        return real(head)

    monkeypatch.setattr(KernelLogParser, "sniff", staticmethod(counting))
    launcher = "[rank0]:Traceback (most recent call last):\n" + "torchrun step\n" * 2000
    found = detect(launcher[:16384], "dmesg.txt")
    assert found.kind is InputKind.LAUNCHER
    assert calls == [4096, 16384]  # the quick try, the whole head; never a third time
