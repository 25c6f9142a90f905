"""What makes redaction fast must not change what it writes: the memo of texts and lines, the
learned names found by Hyperscan's literal matcher, the base64 run gate.

tests/test_redact.py and tests/test_redact_leaks.py hold the leak and over-redaction checks.
"""

from __future__ import annotations

import pytest

from crashlens.redact import Redactor
from crashlens.redact import patterns as p
from crashlens.redact.gates import Gates, Run, fold

JOB = [
    "trn-h100-031:40112:40112 [1] NCCL INFO Bootstrap : Using ib0:10.20.0.31<0>",
    "ssh carol@trn-h100-032 'export HF_TOKEN=hf_abcdefghijklmnopqrstuvwx'",
    "env-trn-h100-031.txt written by carol to /home/carol/runs",
    "MASTER_ADDR=trn-h100-031 WORLD_SIZE=16",
]


def test_a_text_seen_before_is_redacted_as_the_first_time() -> None:
    redactor = Redactor()
    for text in JOB:
        redactor.learn(text)
    first = [redactor.text(text) for text in JOB]
    assert [redactor.text(text) for text in JOB] == first  # from the memo now
    fresh = Redactor()
    for text in JOB:
        fresh.learn(text)
    assert [fresh.text(text) for text in reversed(JOB)][::-1] == first
    assert fresh.mapping() == redactor.mapping()
    assert "trn-h100" not in "".join(first) and "carol" not in "".join(first)


def test_a_big_text_and_its_lines_redact_alike() -> None:
    """A text past the digest threshold goes through the memo by digest; each of its lines
    alone (repeated: from the line memo the second time) gives the same lines."""
    big = "\n".join(JOB * 200)
    whole = Redactor()
    whole.learn(big)
    by_line = Redactor()
    by_line.learn(big)
    lines = [by_line.text(line) for line in big.splitlines()]
    assert whole.text(big).splitlines() == lines


@pytest.mark.parametrize(
    "text",
    [
        "carol-wsx and carol-ws. and xcarol-ws carol-wsx",
        "node7-carol-ws_carol.log carol-ws-carol",
        "carol-wscarol-ws carol-ws",
        "carolcarol-ws carol-wscarol",
    ],
)
def test_learned_names_on_small_texts_are_found_as_one_alternation_finds_them(text: str) -> None:
    """Hyperscan's literal matcher stands in for `re.finditer` over the learned names
    (longest first at a place, then past it): both backends give the same text. In
    `carol-wsx` the host `carol-ws` fails its edge and hides the user `carol` at its place."""
    pytest.importorskip("hyperscan")
    outputs = []
    for backend in ("hyperscan", "python"):
        redactor = Redactor(["carol-ws", "node7"], ["carol"], backend=backend)
        outputs.append(redactor.text(text))
    assert outputs[0] == outputs[1]
    assert "carol-wsx" in outputs[0] or "carol-wsx" not in text


def test_a_token_too_long_for_any_name_is_replaced_where_found_not_searched_for() -> None:
    # No host, user or account name is longer than DNS allows (253); a longer token a row takes
    # for one (a pdsh prefix glued to garbage) keeps its pseudonym there, but is not searched
    # for in every text: as a learned name it made the search quadratic (redactor._MAX_LEARNED)
    redactor = Redactor()
    host = "a-" * 50_000 + "b"
    redactor.learn(f"{host}: x")
    assert redactor.text(f"{host}: y").startswith("host-1: y")
    assert redactor.mapping() == {"host-1": host}
    redactor.learn("node-7: x")
    assert redactor.text("seen on node-7 again\n" + "pad " * 20_000).startswith("seen on host-2")


def test_the_base64_gate_proposes_only_mixed_case_runs() -> None:
    gates = Gates([Run(b"abcdefghijklmnopqrstuvwxyz0123456789+/", 40, mixed_case=True)])
    digest = "sha256 " + "0123456789abcdef" * 4
    blob = "key " + "Zm9vYmFyQmF6UXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1ub3A="
    text = f"{digest}\n{blob}\n{digest.upper()}"
    assert gates.lines(fold(text), text) == {len(digest) + 1: 1}
    assert set(gates.lines(fold(text))) == {0, len(digest) + 1, len(digest) + len(blob) + 2}
    assert "Zm9vYmFy" not in Redactor().text(text) and digest in Redactor().text(text)


def test_a_long_text_kept_whole_or_remembered_by_digest_writes_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A long text is kept whole with its folded bytes while a budget lasts (the writing
    pass folds only the lines the rows changed), and by digest after it: both write what
    the rows and the learned names make of it, characters outside Latin-1 included."""
    from crashlens.redact import redactor as module

    lines = [
        *JOB,
        "│ trn-h100-031 │ ſecret=abcdefgh │ carol's ΚΕΡ run on trn-h100-032 ━━━",
        "Kelvin toKen=zyxwvuts on trn-h100-031 — 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 carol",
    ]
    big = "\n".join(lines * 60)
    assert len(big) > module._DIGEST_FROM
    kept = Redactor()
    kept.learn(big)
    assert kept.text(big) == kept.text(big)  # the second time from the memo
    monkeypatch.setattr(module, "_KEPT_BUDGET", 0)
    digested = Redactor()
    digested.learn(big)
    assert digested.text(big) == kept.text(big)
    assert digested.mapping() == kept.mapping()
    written = kept.text(big)
    assert "trn-h100" not in written and "carol" not in written and "abcdefgh" not in written


def test_the_base64_gate_leaves_out_paths() -> None:
    """A run whose parts between slashes are all short is a path `_entropy` keeps: the
    gate with `part` does not propose it; a blob with a long part, or with no slash, it does."""
    gates = Gates([Run(b"abcdefghijklmnopqrstuvwxyz0123456789+/", 40, mixed_case=True, part=24)])
    path = "at /opt/pytorch/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1"
    blob = "sent Zm9vYmFyQmF6UXV4MTIzNDU2Nzg5MGFi/Y2RlZmdoaWprbG1ub3A="
    bare = "sent Zm9vYmFyQmF6UXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1ub3A="
    text = f"{path}\n{blob}\n{bare}"
    assert gates.lines(fold(text), text) == {len(path) + 1: 1, len(path) + len(blob) + 2: 1}
    for line in (path, blob, bare):
        assert Redactor().text(line) == Redactor(backend="python").text(line)
    assert "Zm9vYmFy" not in Redactor().text(blob) and path in Redactor().text(path)


def test_the_curl_user_gate_asks_for_a_user_and_password() -> None:
    pytest.importorskip("hyperscan")
    from crashlens.redact.redactor import _LINE_ROWS, gates

    row = next(index for index, row in enumerate(_LINE_ROWS) if row.pattern is p.CURL_USER)
    for line, proposed in (
        ("/opt/conda/bin/python3 -u -m deepspeed.launcher --world_info=x", False),
        ("sort -u names.txt | uniq", False),
        ("curl -u carol:hunter2 https://x", True),
        ("curl --user 'carol:hunter2' https://x", True),
        ("curl --username=carol:hunter2", True),
    ):
        assert bool(gates().lines(fold(line)).get(0, 0) >> row & 1) is proposed, line
        assert Redactor().text(line) == Redactor(backend="python").text(line)
    assert "carol" not in Redactor().text("curl -u carol:hunter2 https://x")


def test_a_remembered_line_prefix_writes_what_the_row_writes() -> None:
    """pdsh's `host: ` prefix is remembered by its text: every line gets the same pseudonym,
    a tool's or a word's prefix stays, and a fresh redactor writes the same."""
    lines = [
        "gpu-node-07: [rank3] NCCL INFO Bootstrap",
        "nccl-tests: all_reduce_perf failed",
        "error: something",
        "gpu-node-07: [rank3] loss 0.1",
        "  gpu-node-07: indented",
    ]
    redactor = Redactor()
    shown = [redactor.text(line) for line in lines * 2]
    assert shown[:5] == shown[5:]
    assert shown[1] == lines[1] and shown[2] == lines[2]
    assert all("gpu-node-07" not in line for line in shown)
    assert shown[0].split(":")[0] == shown[3].split(":")[0] == shown[4].split(":")[0].strip()
    assert [Redactor().text(line) for line in lines][0] == shown[0]
    assert len(redactor.shown_prefixes) == 3  # `error` has no digit or dash: no gate


def test_a_prefix_met_again_in_one_text_writes_what_the_row_writes() -> None:
    """Within one text, a host prefix met again is written from the remembered answer without
    the row's match: the same text as a fresh redactor writes line by line."""
    lines = [
        "gpu-node-07: [rank3] NCCL INFO Bootstrap",
        "nccl-tests: all_reduce_perf failed",
        "gpu-node-07: [rank3] loss 0.1",
        "  gpu-node-07: indented",
        "gpu-node-07:no space after the colon",
        "gpu-node-08: [rank4] loss 0.2",
        "gpu-node-07: [rank3] done",
    ]
    together = Redactor().text("\n".join(lines * 3))
    alone = Redactor()
    assert together == "\n".join([alone.text(line) for line in lines] * 3)
    assert "gpu-node-0" not in together and together.count("nccl-tests: ") == 3
