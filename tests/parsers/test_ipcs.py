"""ipcs parser: `ipcs -m` tables and `ipcs -l` limits."""

from __future__ import annotations

import pytest

from crashlens.model import Fact
from crashlens.parsers.df import DfParser
from crashlens.parsers.ipcs import IpcsParser
from crashlens.parsers.ulimit import UlimitParser

from conftest import SAMPLES, sample_text

IPCS = IpcsParser()
OTHERS = (DfParser(), UlimitParser())
IPCS_SAMPLES = sorted(p.name for p in (SAMPLES / "ipcs").glob("ipcs_*"))


def one(facts: tuple[Fact, ...], key: str) -> Fact:
    found = [f for f in facts if f.key == key]
    assert len(found) == 1, (key, found)
    return found[0]


def test_samples_exist() -> None:
    assert len(IPCS_SAMPLES) >= 3


@pytest.mark.parametrize("name", IPCS_SAMPLES)
def test_every_ipcs_sample(name: str) -> None:
    text = sample_text(f"ipcs/{name}")
    score = IPCS.sniff(text[:65536])
    assert score == 1.0
    assert all(other.sniff(text[:65536]) < score for other in OTHERS)
    result = IPCS.parse(text, name)
    assert result.facts
    assert result.warnings == ()


def test_segments() -> None:
    facts = IPCS.parse(sample_text("ipcs/ipcs_m_segments_REPRO.txt"), "m").facts
    segments = one(facts, "ipcs.shm_segments")
    assert segments.value == 4
    assert segments.attr("total_bytes") == 9637888 * 2 + 2097152 + 4
    assert segments.attr("dest") == 3
    assert segments.lineno == 2


def test_empty_table() -> None:
    facts = IPCS.parse(sample_text("ipcs/ipcs_m_empty_REPRO.txt"), "empty").facts
    segments = one(facts, "ipcs.shm_segments")
    assert (segments.value, segments.attr("total_bytes")) == (0, 0)


def test_limits() -> None:
    facts = IPCS.parse(sample_text("ipcs/ipcs_l_limits_REPRO.txt"), "l").facts
    shmmax = one(facts, "ipcs.shmmax_kb")
    assert (shmmax.value, shmmax.lineno) == (18014398509465599, 9)
    assert one(facts, "ipcs.shmall_kb").value == 18014398509481980
    assert one(facts, "ipcs.shmmni").value == 4096
    # Message and semaphore limits are not shared memory facts.
    assert len(facts) == 3


def test_plain_ipcs_counts_only_shared_memory_rows() -> None:
    text = (
        "\n------ Message Queues --------\n"
        "key        msqid      owner      perms      used-bytes   messages    \n"
        "0x0000abcd 0          root       644        0            0           \n\n"
        "------ Shared Memory Segments --------\r\n"
        "key        shmid      owner      perms      bytes      nattch     status      \r\n"
        "0x00000000 5          alice      600        524288     2          dest         \r\n\n"
        "------ Semaphore Arrays --------\n"
        "key        semid      owner      perms      nsems     \n"
        "0x00000001 7          root       600        1         \n"
    )
    segments = one(IPCS.parse(text, "all").facts, "ipcs.shm_segments")
    assert (segments.value, segments.attr("total_bytes"), segments.attr("dest")) == (1, 524288, 1)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00\xff garbage\n",
        "------ Shared Memory Segments --------\nkey        shmid      owner",
        "------ Shared Memory Segments --------\n0x00000000 32768 root 600 96",
        bytes(range(256)).decode("latin-1") * 8,
    ],
)
def test_bad_input(text: str) -> None:
    result = IPCS.parse(text, "bad")
    assert all(f.key.startswith("ipcs.") for f in result.facts)
    assert 0.0 <= IPCS.sniff(text) <= 1.0


def test_truncated_row_still_counts() -> None:
    text = "------ Shared Memory Segments --------\n0x00000000 32768 root 600 96"
    assert one(IPCS.parse(text, "cut").facts, "ipcs.shm_segments").value == 1


def test_sniff_rejects_unrelated_text() -> None:
    assert IPCS.sniff("---------- step 10 ----------\nloss 0.3\n") == 0.0


PARSERS = (IPCS,)
ALL_SAMPLES = sorted(str(p.relative_to(SAMPLES)) for p in SAMPLES.rglob("*") if p.is_file())


@pytest.mark.parametrize("name", ALL_SAMPLES)
def test_any_sample_cut_anywhere_parses(name: str) -> None:
    """Other kinds' samples (and their halves) never make this parser raise or hang."""
    text = sample_text(name)
    for piece in (text, text[: len(text) // 2], text[len(text) // 3 :]):
        for parser in PARSERS:
            assert 0.0 <= parser.sniff(piece[:65536]) <= 1.0
            parser.parse(piece, name)
