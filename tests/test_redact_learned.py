"""Learned names in levels (`redact.learned`): whatever the order of learning and writing, a
text's spans are what one alternation of every name learned so far (longest first) finds with
`re.finditer`, on both backends; and a run of small texts that each teach a name no longer
compiles every name for every text."""

from __future__ import annotations

import math
import random
import re

import pytest

from crashlens.redact import Redactor
from crashlens.redact.learned import _MERGE_ALL_FROM, LearnedNames


def _alternation_spans(names: list[bytes], text: bytes) -> list[tuple[int, int, bytes]]:
    ordered = sorted(set(names), key=len, reverse=True)
    pattern = re.compile(b"|".join(re.escape(name) for name in ordered))
    return [(match.start(), match.end(), match.group(0)) for match in pattern.finditer(text)]


@pytest.mark.parametrize("hyperscan", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_levels_find_what_one_alternation_of_all_names_finds(hyperscan: bool, seed: int) -> None:
    rng = random.Random(seed)
    alphabet = b"ab-.c1\xe9 *()[]|?\\"  # overlapping names, prefixes, regex metacharacters
    for _ in range(150):
        learned = LearnedNames(hyperscan=hyperscan)
        names: list[bytes] = []
        for _ in range(rng.randint(1, 12)):  # learn some, write a text, learn more, ...
            for _ in range(rng.randint(1, 9)):
                name = bytes(rng.choices(alphabet, k=rng.randint(1, 6)))
                if name not in names:
                    names.append(name)
                    learned.add(name)
            text = bytes(rng.choices(alphabet, k=rng.randint(0, 200)))
            assert learned.spans(text) == _alternation_spans(names, text), (names, text)


@pytest.mark.parametrize("hyperscan", [True, False])
def test_a_long_text_is_searched_by_one_matcher_of_every_name(hyperscan: bool) -> None:
    learned = LearnedNames(hyperscan=hyperscan)
    names = [b"node-%d" % index for index in range(7)]
    for name in names:
        learned.add(name)
        learned.spans(b"x")
    assert len(learned._levels) > 1
    text = b" ".join(names) * (_MERGE_ALL_FROM // 40)
    assert learned.spans(text) == _alternation_spans(names, text)
    assert len(learned._levels) == 1


@pytest.mark.parametrize("backend", ["auto", "python"])
def test_many_small_texts_that_each_teach_a_name_keep_few_matchers(backend: str) -> None:
    redactor = Redactor(backend=backend)
    texts = [
        f"[rank0]: trn-h100-{index:04d}.cluster.internal:29500, saving to /home/alice{index}/ckpt"
        for index in range(300)
    ]
    # each text also names the host and the user of the text before it (learned by then)
    texts = [texts[0]] + [
        f"{text} (after trn-h100-{index - 1:04d}, alice{index - 1})"
        for index, text in enumerate(texts)
        if index > 0
    ]
    written = [redactor.text(text) for text in texts]
    assert all("trn-h100" not in text and "alice" not in text for text in written)
    learned = redactor._names
    # a binary counter of the names: log2(n) + 1 levels at most, not one matcher per text
    assert len(learned._levels) <= math.log2(len(learned.names)) + 1
    # what each text became is what a Redactor that learned the texts up to it, then wrote
    # it, writes (one matcher of all those names)
    for index in range(0, len(texts), 37):
        whole = Redactor(backend=backend)
        for text in texts[: index + 1]:
            whole.learn(text)
        assert whole.text(texts[index]) == written[index]


def test_a_name_hyperscan_refuses_takes_re_for_every_level() -> None:
    learned = LearnedNames(hyperscan=True)
    names = [b"host-a", b"host-b"]
    for name in names:
        learned.add(name)
        learned.spans(b"host-a")
    huge = b"h" * 70000  # past Hyperscan's literal length limit
    learned.add(huge)
    names.append(huge)
    text = b"host-a host-b " + huge
    assert learned.spans(text) == _alternation_spans(names, text)
    assert not learned.hyperscan


def test_a_token_longer_than_any_host_name_is_replaced_where_found_but_not_learned() -> None:
    # a pdsh prefix glued to a 100,000-character run (a mutated log from the fuzz campaign):
    # learned, that name was searched in every text, 15 s a text on the run of its characters
    glued = "A" * 100_000 + "node-02"
    text = f"{glued}:2290:2410 [2] NCCL INFO NET/IB : Using [0]ml{'A' * 200_000}\n"
    redactor = Redactor()
    out = redactor.text(text)
    assert "node-02" not in out  # the row still gave the token its pseudonym
    assert redactor.mapping() == {"host-1": glued}
    assert redactor._names.names == []  # noqa: SLF001 (nothing that long is searched for)
    redactor.learn_host("node-03")
    assert redactor._names.names == [b"node-03"]  # noqa: SLF001
