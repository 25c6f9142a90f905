"""ulimit parser: bash 4, bash 5.2, container, dash and zsh layouts."""

from __future__ import annotations

import pytest

from crashlens.model import FactValue
from crashlens.parsers.df import DfParser
from crashlens.parsers.ipcs import IpcsParser
from crashlens.parsers.ulimit import UlimitParser

from conftest import SAMPLES, sample_text

ULIMIT = UlimitParser()
OTHERS = (DfParser(), IpcsParser())
ULIMIT_SAMPLES = sorted(p.name for p in (SAMPLES / "ulimit").glob("ulimit_*"))


def table(name: str) -> dict[str, FactValue]:
    result = ULIMIT.parse(sample_text(f"ulimit/{name}"), name)
    assert result.warnings == ()
    return {f.key: f.value for f in result.facts}


def test_samples_exist() -> None:
    assert len(ULIMIT_SAMPLES) >= 4


@pytest.mark.parametrize("name", ULIMIT_SAMPLES)
def test_every_ulimit_sample(name: str) -> None:
    text = sample_text(f"ulimit/{name}")
    score = ULIMIT.sniff(text[:65536])
    assert score >= 0.5
    assert all(other.sniff(text[:65536]) < score for other in OTHERS)
    facts = table(name)
    for key in ("ulimit.memlock_kb", "ulimit.nofile", "ulimit.stack_kb", "ulimit.nproc"):
        assert key in facts


def test_bash4_memlock_64() -> None:
    facts = table("ulimit_a_bash4_memlock_64_REPRO.txt")
    assert facts["ulimit.memlock_kb"] == 64
    assert facts["ulimit.nofile"] == 1048576
    assert facts["ulimit.stack_kb"] == 8192
    assert facts["ulimit.nproc"] == -1


def test_bash52_memlock_8192() -> None:
    result = ULIMIT.parse(sample_text("ulimit/ulimit_a_bash52_memlock_8192_REPRO.txt"), "b")
    memlock = next(f for f in result.facts if f.key == "ulimit.memlock_kb")
    assert (memlock.value, memlock.lineno) == (8192, 7)
    assert memlock.text == "max locked memory           (kbytes, -l) 8192"
    facts = {f.key: f.value for f in result.facts}
    assert facts["ulimit.nofile"] == 1024
    assert facts["ulimit.nproc"] == 2062722


def test_container_unlimited_memlock() -> None:
    facts = table("ulimit_a_container_ngc_flags_unlimited_memlock_REPRO.txt")
    assert facts["ulimit.memlock_kb"] == -1
    assert facts["ulimit.stack_kb"] == 65536
    assert facts["ulimit.core_blocks"] == -1


def test_dash() -> None:
    facts = table("ulimit_a_dash_sh_REPRO.txt")
    assert facts["ulimit.memlock_kb"] == 64
    assert facts["ulimit.nofile"] == 1024
    assert facts["ulimit.stack_kb"] == 8192
    assert facts["ulimit.nproc"] == 1031369


def test_zsh() -> None:
    text = (
        "-t: cpu time (seconds)              unlimited\n"
        "-f: file size (blocks)              unlimited\n"
        "-s: stack size (kbytes)             8192\n"
        "-l: locked-in-memory size (kbytes)  64\n"
        "-n: file descriptors                1024\n"
    )
    facts = {f.key: f.value for f in ULIMIT.parse(text, "zsh").facts}
    assert facts == {"ulimit.stack_kb": 8192, "ulimit.memlock_kb": 64, "ulimit.nofile": 1024}
    assert ULIMIT.sniff(text) >= 0.5


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00\xff garbage\n",
        "core file size          (blocks, -c) 0\nmax locked memory       (kbytes, -l",
        bytes(range(256)).decode("latin-1") * 8,
    ],
)
def test_bad_input(text: str) -> None:
    result = ULIMIT.parse(text, "bad")
    assert all(f.key.startswith("ulimit.") for f in result.facts)
    assert 0.0 <= ULIMIT.sniff(text) <= 1.0


def test_truncated_and_crlf() -> None:
    text = sample_text("ulimit/ulimit_a_bash4_memlock_64_REPRO.txt").replace("\n", "\r\n")
    cut = text[: text.index("open files")]
    facts = {f.key: f.value for f in ULIMIT.parse(cut, "cut").facts}
    assert facts["ulimit.memlock_kb"] == 64
    assert "ulimit.nofile" not in facts


def test_single_queries_as_a_terminal_shows_them() -> None:
    # `ulimit -l` alone prints the bare value on the next line; a prompt may lead the command
    text = "user@node-01:~$ ulimit -l\n8192\n$ ulimit -Hn\nunlimited\n"
    result = ULIMIT.parse(text, "ulimit.txt")
    facts = {f.key: f for f in result.facts}
    assert facts["ulimit.memlock_kb"].value == 8192
    assert facts["ulimit.memlock_kb"].lineno == 2
    assert facts["ulimit.memlock_kb"].text == "user@node-01:~$ ulimit -l -> 8192"
    assert facts["ulimit.nofile"].value == -1
    assert ULIMIT.sniff(text) >= 0.5


def test_a_log_that_echoes_a_ulimit_command_is_no_ulimit_file() -> None:
    # a job script echoing the command among its output: the queries are not the whole file
    log = "+ ulimit -l\n8192\nepoch 1 loss 0.3\nepoch 2 loss 0.2\n"
    assert ULIMIT.sniff(log) < 0.5
    assert ULIMIT.sniff("ulimit -l unlimited\nstarting\n") < 0.5


def test_sniff_rejects_unrelated_text() -> None:
    log = "epoch 1 loss 0.3\nstack size exceeded? no\nopen files 12\n"
    assert ULIMIT.sniff(log) < 0.5


PARSERS = (ULIMIT,)
ALL_SAMPLES = sorted(str(p.relative_to(SAMPLES)) for p in SAMPLES.rglob("*") if p.is_file())


@pytest.mark.parametrize("name", ALL_SAMPLES)
def test_any_sample_cut_anywhere_parses(name: str) -> None:
    """Other kinds' samples (and their halves) never make this parser raise or hang."""
    text = sample_text(name)
    for piece in (text, text[: len(text) // 2], text[len(text) // 3 :]):
        for parser in PARSERS:
            assert 0.0 <= parser.sniff(piece[:65536]) <= 1.0
            parser.parse(piece, name)


PROC_LIMITS = "proc_self_limits_linux_memlock_8m.txt"


def test_proc_limits_reads_soft_and_hard_in_ulimit_units() -> None:
    """`/proc/<pid>/limits`: bytes become the KiB `ulimit -a` prints; the hard limit is an attr."""
    text = sample_text(f"ulimit/{PROC_LIMITS}")
    assert ULIMIT.sniff(text[:65536]) == 1.0
    assert all(other.sniff(text[:65536]) < 0.5 for other in OTHERS)
    result = ULIMIT.parse(text, PROC_LIMITS)
    facts = {f.key: f for f in result.facts}
    memlock = facts["ulimit.memlock_kb"]
    assert (memlock.value, memlock.attr("hard"), memlock.lineno) == (8192, 8192, 10)
    assert memlock.text.startswith("Max locked memory")
    assert (facts["ulimit.stack_kb"].value, facts["ulimit.stack_kb"].attr("hard")) == (8192, -1)
    assert facts["ulimit.nofile"].value == 20000
    assert facts["ulimit.vmem_kb"].value == -1


def test_proc_limits_with_a_64k_memlock_and_odd_rows() -> None:
    text = (
        "Limit                     Soft Limit           Hard Limit           Units     \n"
        "Max locked memory         65536                65536                bytes     \n"
        "Max nice priority         0                    0                    \n"
        "Max open files            garbage              1024                 files     \n"
    )
    facts = {f.key: f.value for f in ULIMIT.parse(text, "limits").facts}
    assert facts == {"ulimit.memlock_kb": 64}
    assert ULIMIT.parse("Limit   Soft Limit   Hard Limit   Units\n", "l").warnings
