"""Mechanisms learned from batch 2026-12-07-en's misses (CI incident reports, leads, older
frameworks), tested on lines written for the tests, none a case's own: getaddrinfo's other
failures (EAI_NODATA, EAI_FAIL, musl's wording) and the same failure as command-line clients and
Go programs report it, and a gateway error from a model hub as httpx and the Hugging Face
client's retry log word it."""

from __future__ import annotations

from mechanism_helpers import rules_hitting

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "URLError: <urlopen error [Errno -5] No address associated with hostname>",
        "network-name-resolution",
    ),
    (
        "socket.gaierror: [Errno -4] Non-recoverable failure in name resolution",
        "network-name-resolution",
    ),
    ("wget: unable to resolve host address 'data.example.com'", "network-name-resolution"),
    ("curl: (6) Could not resolve host: download.pytorch.org", "network-name-resolution"),
    (
        "Error: Get https://nvcr.io/v2/: dial tcp: lookup nvcr.io on 10.0.0.2:53: no such host",
        "network-name-resolution",
    ),
    (
        "httpx.HTTPStatusError: Server error '504 Gateway Timeout' for url"
        " 'https://huggingface.co/api/models/org/name/tree/main'",
        "network-http-gateway-error",
    ),
    (
        "HTTP Error 502 thrown while requesting HEAD"
        " https://huggingface.co/org/name/resolve/main/tokenizer.json",
        "network-http-gateway-error",
    ),
]


def test_a_client_error_and_a_servers_own_error_are_not_a_gateway() -> None:
    assert "network-http-gateway-error" not in rules_hitting(
        "httpx.HTTPStatusError: Server error '500 Internal Server Error' for url"
        " 'http://localhost:8000/v1/completions'"
    )
    assert "network-http-gateway-error" not in rules_hitting(
        "HTTP Error 429 thrown while requesting GET https://huggingface.co/api/models"
    )


def test_sudos_warning_about_its_own_host_name_is_still_no_dns_failure() -> None:
    assert "network-name-resolution" not in rules_hitting(
        "sudo: unable to resolve host gpu-box-7: Name or service not known"
    )
