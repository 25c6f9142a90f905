"""libcurl's error codes, read through their catalog (patterns/tables/curl_errors.toml) end to end,
and the other wordings of a fetch that failed on the network, on lines written for the tests in
the shapes curl, git, wget, conda, urllib, Go programs and the Hugging Face client print (from
their sources and documentation, not from a corpus case; hosts changed):

* a model fetched with curl that times out, a git clone whose HTTP/2 stream is cut, and a clone
  whose large files Git LFS could not download, name `network`;
* curl's `(23)` of a closed pipe (`curl ... | head`) and `(6)`/`(7)`, which other rules read, are
  not the table's;
* every entry of the table is recognised, by exactly one rule;
* curl's connect failure (`Failed to connect to <host> port <n>: <reason>`) is the connect
  rule's whatever words the platform gives its reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mechanism_helpers import (
    assert_each_entry_recognised_once,
    assert_leads,
    log_report,
    rules_hitting,
)

FETCH_LINES = [
    (
        'Error response from daemon: Get "https://registry-1.docker.io/v2/": tls: failed to'
        " verify certificate: x509: certificate signed by unknown authority",
        "network-tls-certificate-rejected",
    ),
    (
        "CondaHTTPError: HTTP 000 CONNECTION FAILED for url"
        " <https://conda.anaconda.org/nvidia/linux-64/repodata.json>",
        "network-http-connect-failed",
    ),
    (
        "urllib.error.ContentTooShortError: <urlopen error retrieval incomplete: got only 1048576"
        " out of 553433881 bytes>",
        "network-http-connection-aborted",
    ),
    (
        "huggingface_hub.errors.LocalEntryNotFoundError: An error happened while trying to locate"
        " the file on the Hub and we cannot find the requested files in the local cache.",
        "network-hf-hub-unreachable-no-cache",
    ),
    ("2024-05-01 10:00:01 ERROR 502: Bad Gateway.", "network-http-gateway-error"),
    ("2024-05-01 10:00:01 ERROR 429: Too Many Requests.", "network-http-rate-limited"),
    ("curl: (35) OpenSSL SSL_connect: Connection reset by peer", "network-curl-transfer-failed"),
    (
        "fatal: unable to access 'https://gitlab.example.org/group/data.git/': gnutls_handshake()"
        " failed: Error in the pull function.",
        "network-http-tls-handshake-failed",
    ),
    (
        "fatal: unable to access 'https://gitlab.example.org/group/data.git/': The requested URL"
        " returned error: 504",
        "network-http-gateway-error",
    ),
    (
        "botocore.exceptions.ClientError: An error occurred (SlowDown) when calling the"
        " GetObject operation (reached max retries: 9): Please reduce your request rate.",
        "network-http-rate-limited",
    ),
    (
        "google.api_core.exceptions.TooManyRequests: 429 POST"
        " https://storage.googleapis.com/upload/storage/v1/b/runs/o: rate limit exceeded",
        "network-http-rate-limited",
    ),
    (
        "google.api_core.exceptions.GatewayTimeout: 504 GET"
        " https://storage.googleapis.com/storage/v1/b/runs/o/step-100: Gateway Timeout",
        "network-http-gateway-error",
    ),
    (
        "Error downloading object: weights/model.bin (9f8e7d6): Smudge error: Error downloading"
        " weights/model.bin (9f8e7d6c5b): batch response: Post"
        ' "https://gitlab.example.org/group/model.git/info/lfs/objects/batch": dial tcp'
        " 10.0.0.14:443: i/o timeout",
        "network-git-lfs-download-failed",
    ),
    (
        'Error: Get "https://registry.ollama.ai/v2/": dial tcp 10.0.0.9:443: connect: connection'
        " timed out",
        "network-go-http-client-failed",
    ),
    (
        "error: RPC failed; curl 18 transfer closed with outstanding read data remaining",
        "network-curl-transfer-failed",
    ),
]


CONNECT_REASONS = [
    # curl's connect failure with the reason worded by the platform's C library or by curl:
    # whichever the reason, the TCP connection was never made
    "Connection timed out",
    "Operation timed out",
    "Bad access",
    "Host is unreachable",
    "Couldn't connect to server",
]


@pytest.mark.parametrize("reason", CONNECT_REASONS)
def test_a_connect_failure_is_read_whatever_its_reason(reason: str) -> None:
    line = f"curl: (28) Failed to connect to cdn.example.org port 443 after 75003 ms: {reason}"
    assert rules_hitting(line) == ["network-http-connect-failed"]


@pytest.mark.parametrize(("line", "rule"), FETCH_LINES)
def test_each_fetch_failure_is_read_by_one_network_rule(line: str, rule: str) -> None:
    assert rules_hitting(line) == [rule]


@pytest.mark.parametrize(
    "line",
    [
        "curl: (23) Failure writing output to destination",
        "curl: (6) Could not resolve host: huggingface.co",
        "curl: (7) Failed to connect to huggingface.co port 443 after 3 ms: Connection refused",
        "error: RPC failed; curl 56-bit key",
    ],
)
def test_codes_other_rules_own_or_that_mean_nothing_are_not_the_tables(line: str) -> None:
    assert "network-curl-transfer-failed" not in rules_hitting(line)


def test_a_weights_download_that_times_out_names_the_network(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "curl-timeout",
        "$ bash scripts/download_weights.sh\n"
        "  % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current\n"
        "  3 4096M    3  131M    0     0   447k      0  2:36:20  0:05:00  2:31:20     0\n"
        "curl: (28) Operation too slow. Less than 1 bytes/sec transferred the last 60 seconds\n",
    )
    assert_leads(report, "network")


def test_a_git_clone_cut_mid_stream_names_the_network(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "git-http2",
        "$ git clone https://huggingface.co/org/model-7b\n"
        "Cloning into 'model-7b'...\n"
        "error: RPC failed; curl 92 HTTP/2 stream 5 was not closed cleanly: CANCEL (err 8)\n"
        "error: 2847 bytes of body are still expected\n"
        "fetch-pack: unexpected disconnect while reading sideband packet\n"
        "fatal: early EOF\n"
        "fatal: fetch-pack: invalid index-pack output\n",
    )
    assert_leads(report, "network")


def test_a_clone_whose_lfs_files_did_not_download_names_the_network(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "git-lfs",
        "$ git clone https://gitlab.example.org/group/model.git\n"
        "Cloning into 'model'...\n"
        "Downloading weights/model.bin (13 GB)\n"
        "Error downloading object: weights/model.bin (9f8e7d6): Smudge error: Error downloading"
        " weights/model.bin (9f8e7d6c5b): batch response: Post"
        ' "https://gitlab.example.org/group/model.git/info/lfs/objects/batch": EOF\n'
        "error: external filter 'git-lfs filter-process' failed\n"
        "fatal: weights/model.bin: smudge filter lfs failed\n"
        "warning: Clone succeeded, but checkout failed.\n",
    )
    assert_leads(report, "network")


def test_every_entry_is_recognised_by_exactly_one_rule(shipped_coverage: dict[str, Any]) -> None:
    assert_each_entry_recognised_once("curl_errors", shipped_coverage)
