"""The learned names' trie (`redact.names`) finds what one alternation of them, longest first,
finds with `re.finditer`: the same spans, the same names, on texts built to sit where names
overlap, are prefixes of each other and fail to match one byte from their end."""

from __future__ import annotations

import random
import re

import pytest

from crashlens.redact.names import _FEW_NAMES, _MAX_NESTING, names_pattern, trie_pattern


def _alternation(names: set[bytes]) -> re.Pattern[bytes]:
    return re.compile(b"|".join(re.escape(name) for name in sorted(names, key=len, reverse=True)))


def _found(pattern: re.Pattern[bytes], text: bytes) -> list[tuple[tuple[int, int], bytes]]:
    return [(match.span(), match.group(0)) for match in pattern.finditer(text)]


@pytest.mark.parametrize("seed", range(4))
def test_the_trie_finds_what_the_alternation_finds(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = b"ab-.c1\xe9 *()[]|?\\"  # regex metacharacters and a Latin-1 letter too
    for _ in range(1500):
        names = {
            bytes(rng.choices(alphabet, k=rng.randint(1, 7))) for _ in range(rng.randint(1, 30))
        }
        text = bytes(rng.choices(alphabet, k=rng.randint(0, 300)))
        trie = trie_pattern(names)
        assert trie is not None
        assert _found(trie, text) == _found(_alternation(names), text), names


def test_names_learned_from_a_job_are_found_alike() -> None:
    names = {b"carol", b"carol-ws", b"trn-h100-031", b"trn-h100-03", b"trn-h100-031.corp", b"b7"}
    text = b"carol-wsx trn-h100-0311 trn-h100-031.corp.x carol-ws.carol trn-h100-03-b7 carolcarol"
    trie = trie_pattern(names)
    assert trie is not None
    assert _found(trie, text) == _found(_alternation(names), text)
    # one path for the three, not one per name
    assert trie.pattern.count(re.escape(b"trn-h100-03")) == 1


def test_few_names_keep_the_alternation_and_many_take_the_trie() -> None:
    # Building the trie walks every byte in Python: for a handful of names (one hostile 32 KiB
    # name) the alternation is cheaper and finds the same.
    few = {b"node-%d" % index for index in range(_FEW_NAMES)}
    assert names_pattern(few).pattern == _alternation(few).pattern
    many = few | {b"node-x"}
    assert names_pattern(many).pattern == trie_pattern(many).pattern  # type: ignore[union-attr]


def test_names_nested_past_the_limit_take_the_alternation() -> None:
    deep = {b"a" * size for size in range(1, _MAX_NESTING + 20)}
    text = b"a" * 200 + b" " + b"a" * 7
    assert names_pattern(deep).pattern == _alternation(deep).pattern
    assert _found(names_pattern(deep), text) == _found(_alternation(deep), text)
    shallow = {b"a" * size for size in range(1, _MAX_NESTING + 1)}
    assert names_pattern(shallow).pattern != _alternation(shallow).pattern
    assert _found(names_pattern(shallow), text) == _found(_alternation(shallow), text)


def test_a_long_name_is_one_literal() -> None:
    host = b"a-" * 50_000 + b"b"
    pattern = trie_pattern({host, b"a-a"})
    assert pattern is not None
    after = 2 + len(host)
    assert _found(pattern, b"x " + host + b" a-a-") == [
        ((2, after), host),
        ((after + 1, after + 4), b"a-a"),
    ]
