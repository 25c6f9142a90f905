"""Every shared sample is detected as its kind by content; junk falls back to plain text."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.inputs.detect import detect, scores
from crashlens.inputs.read import sniff_text
from crashlens.model import InputKind
from crashlens.parsers import PARSERS

from conftest import SAMPLES


def expected_kind(path: Path) -> InputKind:
    folder, name = path.parent.name, path.name
    if folder == "launcher":
        return InputKind.TORCHELASTIC_ERROR if name.endswith(".json") else InputKind.LAUNCHER
    if folder == "dmesg":
        return InputKind.DMESG
    if folder == "nvidia-smi":
        return InputKind.NVIDIA_SMI
    if folder == "docker-inspect":
        return InputKind.DOCKER_COMPOSE if name.endswith(".yml") else InputKind.DOCKER_INSPECT
    if name.startswith("ipcs"):
        return InputKind.IPCS
    if name.startswith("ulimit"):
        return InputKind.ULIMIT
    return InputKind.DF


SAMPLE_FILES = sorted(p for p in SAMPLES.rglob("*") if p.is_file() and p.name != "SOURCES.md")


def _head(path: Path) -> str:
    return sniff_text(path.read_bytes()[: 64 * 1024])


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_sample_is_detected_by_content(path: Path) -> None:
    # A neutral name: detection must work from the content alone.
    detection = detect(_head(path), "input.txt")
    assert detection.kind is expected_kind(path), detection


def test_every_kind_has_a_parser() -> None:
    assert {parser.kind for parser in PARSERS} == set(InputKind)


@pytest.mark.parametrize("head", ["", "abc", "\x00\x01\x02", "{", "[ 12.3", "Filesystem"])
def test_sniffers_stay_in_range_on_junk(head: str) -> None:
    for _parser, score, _named in scores(head, "x"):
        assert 0.0 <= score <= 1.2


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
