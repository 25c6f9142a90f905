"""Both gate backends write the same bytes, and a long text writes what its lines alone do.

Texts past 64 KB once found learned names differently with Hyperscan (every occurrence, so a
name that failed its edge check left a shorter one at its place in play) than with `re` (one
alternation, longest first, going on past a name even where it is not replaced): 55 lines of a
random 124 KB text differed. The long texts here are real samples, shuffled line by line with
planted hosts, users and paths that sit where that differs (`carol-wsx`: the host `carol-ws`
fails its edge, and hides the user `carol` at its place).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from crashlens.redact import Redactor

_SAMPLES = Path(__file__).parent / "data" / "samples"
_SHARED_SAMPLES = Path("/work/shared/samples")
"""The team's shared samples, where this machine has them (the repository's alone suffice)."""
_SKIPPED_SUFFIXES = (".md", ".gz", ".zst", ".zip")


def _sample_lines() -> list[str]:
    lines: list[str] = []
    for root in (_SAMPLES, _SHARED_SAMPLES):
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.suffix not in _SKIPPED_SUFFIXES:
                lines += path.read_bytes().decode("utf-8", "surrogateescape").splitlines()
    return lines


def _planted_lines(rng: random.Random, count: int) -> list[str]:
    """Lines that name random hosts and users, some joined to each other or to a letter."""

    def word(size: int) -> str:
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(size))

    users = [word(rng.randint(3, 7)) for _ in range(12)]
    hosts = [f"{rng.choice(users)}-{word(3)}" for _ in range(10)]
    hosts += [f"{word(3)}-{word(4)}-{rng.randint(0, 999):03d}" for _ in range(10)]
    lines = []
    for _ in range(count):
        host, other, user = rng.choice(hosts), rng.choice(hosts), rng.choice(users)
        pid, tid, rank = rng.randint(1, 99999), rng.randint(1, 9999), rng.randint(0, 7)
        lines.append(
            rng.choice(
                [
                    f"{host}:{pid}:{tid} [{rank}] NCCL INFO connected to {other}x",
                    f"ssh {user}@{host} 'ls /home/{user}/runs/{other}-{user}.txt'",
                    f"{host}: [rank{rank}] {user}{host} {host}{user} {user}-{host}x {host}.{user}",
                    f"MASTER_ADDR={host} USER={user} path=/home/{user}/{word(4)}_{host}/{other}",
                    f"{user}{user} {host[:-1]} {host}{host[-3:]} {host}_{user} {other}s",
                ]
            )
        )
    return lines


def _long_text(seed: int) -> str:
    rng = random.Random(seed)
    lines = _sample_lines() + _planted_lines(rng, 3000)
    rng.shuffle(lines)
    return "\n".join(lines) + "\n"


def _written(text: str, backend: str) -> tuple[str, dict[str, str]]:
    redactor = Redactor(backend=backend)
    redactor.learn(text)
    return redactor.text(text), redactor.mapping()


@pytest.mark.parametrize("seed", [1, 2])
def test_both_backends_write_a_long_text_byte_for_byte_alike(seed: int) -> None:
    pytest.importorskip("hyperscan")
    text = _long_text(seed)
    assert len(text.encode("utf-8", "surrogateescape")) >= 200_000
    fast, fast_mapping = _written(text, "hyperscan")
    slow, slow_mapping = _written(text, "python")
    assert fast_mapping == slow_mapping
    differ = [
        (mine, theirs)
        for mine, theirs in zip(fast.splitlines(), slow.splitlines(), strict=True)
        if mine != theirs
    ]
    assert not differ, f"{len(differ)} lines differ, first: {differ[0]}"
    assert fast == slow


@pytest.mark.parametrize("backend", ["hyperscan", "python"])
def test_a_long_text_writes_what_its_lines_alone_write(backend: str) -> None:
    """The learned names are found in a long text as in each of its lines alone (no name
    holds a newline): the length of what is redacted at once changes nothing."""
    if backend == "hyperscan":
        pytest.importorskip("hyperscan")
    text = _long_text(3)
    whole = Redactor(backend=backend)
    whole.learn(text)
    by_line = Redactor(backend=backend)
    by_line.learn(text)
    lines = text.splitlines(keepends=True)
    assert whole.text(text) == "".join(by_line.text(line) for line in lines)


@pytest.mark.parametrize("backend", ["hyperscan", "python"])
def test_a_name_that_fails_its_edge_hides_the_shorter_one_in_a_long_text(backend: str) -> None:
    """`carol-wsx`: the host `carol-ws` is no token there and is kept, and so is the user
    `carol` at its place, in a text of any length and on either backend."""
    if backend == "hyperscan":
        pytest.importorskip("hyperscan")
    pad = "padding line with nothing personal\n" * 3000
    for text in ("carol-wsx and carol-ws.\n", "carol-wsx and carol-ws.\n" + pad):
        redactor = Redactor(["carol-ws"], ["carol"], backend=backend)
        assert redactor.text(text).startswith("carol-wsx and host-1."), len(text)
