"""The pieces of `crashlens.redact`: the word lists as data, the replacement table and its order.

tests/test_redact.py holds the planted-secret checks over whole files and reports.
"""

from __future__ import annotations

import tomllib
from importlib import resources

import pytest

from crashlens.redact import KINDS, Redactor
from crashlens.redact.replacements import REPLACEMENTS
from crashlens.redact.vocabulary import PUBLIC_DOMAINS, is_public


def test_the_word_lists_ship_with_the_package_and_are_lower_case_without_repeats() -> None:
    text = resources.files("crashlens.redact").joinpath("vocabulary.toml").read_text("utf-8")
    lists = tomllib.loads(text)
    assert set(lists) == {
        "system_users",
        "build_accounts",
        "common_words",
        "public_domains",
        "tlds",
        "file_suffixes",
        "tools",
        "code_tlds",
    }
    for name, words in lists.items():
        assert words, name
        assert all(w == w.lower().strip() and w for w in words), name  # compared lower-cased
        assert len(set(words)) == len(words), name
    assert not any(d.startswith(".") or d.endswith(".") for d in PUBLIC_DOMAINS)


def test_public_domains_cover_their_subdomains_only() -> None:
    assert is_public("huggingface.co") and is_public("cdn-lfs.HuggingFace.co.")
    assert not is_public("myhuggingface.co") and not is_public("gpu-3.cluster.internal")


def test_every_row_writes_a_known_kind_and_every_kind_has_a_row() -> None:
    assert {row.kind for row in REPLACEMENTS} == set(KINDS)
    assert len({row.pattern.pattern for row in REPLACEMENTS}) == len(REPLACEMENTS)


@pytest.mark.parametrize(
    ("line", "redacted"),
    [
        # secrets before users and hosts: the password goes whole, then user and host
        (
            "git clone https://carol:pa55w0rd@gpu-node-3.cluster.internal/x",
            "git clone https://user-1:secret-1@host-1/x",
        ),
        ("export DB_PASSWORD=carol@10.0.0.9", "export DB_PASSWORD=secret-1"),
        # e-mail before users: one address, not a user name and a domain left in clear
        ("user=carol@corp.example.org", "user=email-1"),
        # IPv6 before IPv4: an IPv4-mapped address is one address
        ("peer ::ffff:10.0.0.1 closed", "peer ip-1 closed"),
        # a host learned from one shape is replaced wherever it stands later in the text
        (
            "MASTER_ADDR=gpu-node-3 ; ping gpu-node-3 failed",
            "MASTER_ADDR=host-1 ; ping host-1 failed",
        ),
    ],
)
def test_the_order_of_the_table(line: str, redacted: str) -> None:
    assert Redactor().text(line) == redacted


def test_bare_serials_are_replaced_only_on_gpu_csv_lines() -> None:
    text = (
        "0, NVIDIA H100 80GB HBM3, 1652123456789, GPU-4b3c2d1e-0f9a-4b8c-9d7e-6f5a4b3c2d1e\n"
        "step, 1652123456789, loss\n"
        "1, Tesla V100, 1652123456790\n"
        "1652123456791, Tesla V100\n"
        "NVIDIA 1652123456792 without a comma"
    )
    assert Redactor().text(text).splitlines() == [
        "0, NVIDIA H100 80GB HBM3, serial-1, gpu-uuid-1",
        "step, 1652123456789, loss",
        "1, Tesla V100, serial-2",
        "serial-3, Tesla V100",
        "NVIDIA 1652123456792 without a comma",
    ]


def test_learned_names_carry_across_strings_and_the_mapping_keeps_the_originals() -> None:
    redactor = Redactor(known_users=["carol"])
    redactor.text("ssh carol@gpu-node-3 uptime")
    assert redactor.text("gpu-node-3: carol-laptop rebooted") == "host-1: user-1-laptop rebooted"
    assert redactor.mapping() == {"host-1": "gpu-node-3", "user-1": "carol"}
