"""Mechanisms learned from batch 2026-12-07-eq's misses (fetches of models, data and container
images), tested on lines written for the tests, none a case's own: Go's HTTP client timing out
(the TLS handshake, the wait for headers, a TCP connect), a container registry's gateway errors
as the Docker daemon reports them, a registry refusing the image to a client without access, and
a job platform's own notice that the OOM killer killed the job."""

from __future__ import annotations

from pathlib import Path

from mechanism_helpers import assert_leads, log_report, rules_hitting

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "failed to copy: httpReadSeeker: failed open: failed to do request: Get"
        ' "https://production.cloudflare.docker.com/registry-v2/blobs/sha256/aa/data":'
        " net/http: TLS handshake timeout",
        "network-go-http-client-failed",
    ),
    (
        'Error: pull model manifest: Get "https://registry.ollama.ai/v2/library/llama3/manifests/'
        'latest": net/http: request canceled while waiting for connection (Client.Timeout'
        " exceeded while awaiting headers)",
        "network-go-http-client-failed",
    ),
    (
        'Error response from daemon: Head "https://ghcr.io/v2/org/image/manifests/v1":'
        " dial tcp 10.0.0.31:443: i/o timeout",
        "network-go-http-client-failed",
    ),
    (
        "Error response from daemon: received unexpected HTTP status: 504 Gateway Time-out",
        "network-http-gateway-error",
    ),
    (
        "Error response from daemon: login attempt to https://registry.example.com/v2/ failed"
        " with status: 503 Service Unavailable",
        "network-http-gateway-error",
    ),
    (
        "Job 17 was killed by the OOM killer (memory limit 32 GiB).",
        "host-oom-platform-reports-oom-killer",
    ),
    (
        "Error response from daemon: pull access denied for ghcr.io/org/trainer, repository does"
        " not exist or may require 'docker login': denied: requested access to the resource is"
        " denied",
        "permissions-container-registry-access-denied",
    ),
    (
        'Error response from daemon: Get "https://nvcr.io/v2/nvidia/private/x/manifests/1.0":'
        " unauthorized: authentication required",
        "permissions-container-registry-access-denied",
    ),
]


def test_a_registry_refusing_credentials_is_not_a_gateway_error() -> None:
    assert "network-http-gateway-error" not in rules_hitting(
        "Error response from daemon: login attempt to https://nvcr.io/v2/ failed with status:"
        " 401 Unauthorized"
    )


def test_a_dns_timeout_stays_the_dns_rules() -> None:
    hits = rules_hitting(
        'Error response from daemon: Get "https://nvcr.io/v2/": dial tcp: lookup nvcr.io on'
        " 10.0.0.2:53: read udp 10.0.0.5:40000->10.0.0.2:53: i/o timeout"
    )
    assert hits == ["network-go-dns-lookup-failed"]


def test_an_image_pull_that_times_out_is_the_network(tmp_path: Path) -> None:
    report = log_report(
        tmp_path,
        "$ docker pull nvcr.io/nvidia/pytorch:24.01-py3\n"
        'Error response from daemon: Get "https://nvcr.io/v2/": net/http: TLS handshake'
        " timeout\n",
    )
    assert_leads(report, "network")
