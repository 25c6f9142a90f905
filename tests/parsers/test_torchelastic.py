"""TorchElasticErrorParser: the TORCHELASTIC_ERROR_FILE JSON, whole, truncated and broken."""

from __future__ import annotations

import pytest

from crashlens.model import Fact
from crashlens.parsers.base import safe_sniff
from crashlens.parsers.launcher import LauncherParser
from crashlens.parsers.torchelastic import TorchElasticErrorParser

from conftest import SAMPLES, sample_text

PARSER = TorchElasticErrorParser()
FILES = sorted(p.name for p in (SAMPLES / "torchelastic_error").glob("*.json"))
RANK1 = "torchelastic_error_file_rank1_REPRO.json"
RANK3 = "torchelastic_error_file_rank3_with_errorCode_REPRO_VARIANT.json"


def one(facts: tuple[Fact, ...], key: str) -> Fact:
    found = [f for f in facts if f.key == key]
    assert len(found) == 1, f"{key}: {found}"
    return found[0]


def test_both_samples_present() -> None:
    assert sorted([RANK1, RANK3]) == FILES


@pytest.mark.parametrize("name", FILES)
def test_sniff_beats_launcher(name: str) -> None:
    head = sample_text(f"torchelastic_error/{name}")[:65536]
    score = safe_sniff(PARSER, head)
    assert score >= 0.9
    assert score > safe_sniff(LauncherParser, head)


@pytest.mark.parametrize(
    "name",
    sorted(
        str(p.relative_to(SAMPLES))
        for p in SAMPLES.glob("*/*")
        if not p.name.startswith("torchelastic_error_file")
    ),
)
def test_sniff_zero_elsewhere(name: str) -> None:
    assert safe_sniff(PARSER, sample_text(name)[:65536]) <= 0.2


def test_rank1_oom() -> None:
    result = PARSER.parse(sample_text(f"torchelastic_error/{RANK1}"), RANK1)
    assert result.warnings == ()
    exc = one(result.facts, "python.exception")
    assert str(exc.value).startswith("OutOfMemoryError: CUDA out of memory. Tried to allocate")
    assert (exc.attr("type"), exc.attr("rank")) == ("torch.OutOfMemoryError", 1)
    assert one(result.facts, "torchelastic.timestamp").value == 1741943143
    oom = one(result.facts, "cuda.oom")
    assert (oom.value, oom.attr("gpu")) == (2 * 1024**3, 1)
    assert not [f for f in result.facts if f.key == "torchelastic.error_code"]


def test_rank3_error_code() -> None:
    result = PARSER.parse(sample_text(f"torchelastic_error/{RANK3}"), RANK3)
    assert result.warnings == ()
    exc = one(result.facts, "python.exception")
    assert exc.attr("type") == "torch.distributed.DistBackendError"
    assert exc.attr("rank") == 3
    assert "\n" not in str(exc.value) and len(str(exc.value)) <= 300
    assert one(result.facts, "torchelastic.error_code").value == 1
    assert one(result.facts, "torchelastic.timestamp").value == 1741943144
    assert one(result.facts, "nccl.version").value == "2.23.4"


def test_plain_string_message_and_agent_path() -> None:
    text = '{"message": "ValueError: bad batch", "timestamp": 1700000000}\r\n'
    path = "/tmp/torchelastic_x/none_y/attempt_2/5/error.json"
    result = PARSER.parse(text, path)
    exc = one(result.facts, "python.exception")
    assert (exc.value, exc.attr("local_rank"), exc.attr("rank")) == (
        "ValueError: bad batch",
        5,
        None,
    )
    assert one(result.facts, "torchelastic.timestamp").value == 1700000000


@pytest.mark.parametrize("cut", [300, 700, 1500])
def test_truncated_file_uses_tolerant_reader(cut: int) -> None:
    text = sample_text(f"torchelastic_error/{RANK1}")[:cut]
    result = PARSER.parse(text, RANK1)
    assert result.warnings and "tolerant" in result.warnings[0]
    exc = one(result.facts, "python.exception")
    assert str(exc.value).startswith("OutOfMemoryError: CUDA out of memory")


def test_ansi_and_bom_tolerated() -> None:
    text = '\ufeff\x1b[32m{"message": {"message": "KeyError: x", "extraInfo": {}}}\x1b[0m'
    result = PARSER.parse(text, "e.json")
    assert one(result.facts, "python.exception").value == "KeyError: x"


@pytest.mark.parametrize("text", ["", "\x00\x01\ufffd" * 40, "[1, 2]", "{", '{"message": 12'])
def test_bad_input(text: str) -> None:
    result = PARSER.parse(text, "bad.json")
    assert not [f for f in result.facts if f.key == "python.exception"]
    assert 0.0 <= safe_sniff(PARSER, text) <= 1.0
    if text.strip():
        assert result.warnings
