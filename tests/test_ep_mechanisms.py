"""Mechanisms learned from batch 2026-12-07-ep's misses (one builder per category area,
non-English threads), tested on lines written for the tests, none a case's own: downloads that a
remote service refused or throttled (HTTP 429 in urllib's, reqwest's and Docker's wordings,
GitHub's API quota behind torch.hub, Google Drive's quota as gdown prints it), OpenSSL's
certificate failure whichever exception carries it, the Hugging Face client retrying a read
that timed out, the KFD device node failing to open under strace and HCC finding no device,
PaddlePaddle 1.x's bare CUDA runtime codes, PyTorch's XPU start-up warning, Sophgo's device
memory allocator, and Moab's memory-limit cancellation."""

from __future__ import annotations

from pathlib import Path

from crashlens.model import Ending, Verdict
from mechanism_helpers import assert_leads, ending_of, log_report, rules_hitting

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    ("urllib.error.HTTPError: HTTP Error 429: Too Many Requests", "network-http-rate-limited"),
    ("HTTPError: HTTP Error 403: rate limit exceeded", "network-http-rate-limited"),
    (
        "Error: HTTP status client error (429 Too Many Requests) for url"
        " (https://huggingface.co/org/model/resolve/main/weights.bin)",
        "network-http-rate-limited",
    ),
    (
        "Error response from daemon: toomanyrequests: You have reached your pull rate limit.",
        "network-http-rate-limited",
    ),
    (
        "URLError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get"
        " local issuer certificate (_ssl.c:997)",
        "network-tls-certificate-rejected",
    ),
    (
        "Too many users have viewed or downloaded this file recently. Please",
        "network-google-drive-download-refused",
    ),
    (
        "Permission denied: https://drive.google.com/uc?id=0BxYzAbCdEfGhIjKlMnOpQrStUv",
        "network-google-drive-download-refused",
    ),
    (
        """'(ReadTimeoutError("HTTPSConnectionPool(host='huggingface.co', port=443): Read timed"""
        """ out. (read timeout=10)"), '(Request ID: 0f0e0d0c)')' thrown while requesting GET"""
        " https://huggingface.co/api/models/org/model/revision/main",
        "network-hf-hub-request-connect-retry",
    ),
    (
        'openat(AT_FDCWD, "/dev/kfd", O_RDWR|O_CLOEXEC) = -1 ENOENT (No such file or directory)',
        "driver-rocm-gpu-unavailable",
    ),
    ("There is no device can be used to do the computation", "driver-rocm-gpu-unavailable"),
    (
        "Error: cudaGetDevice failed in paddle::platform::GetCurrentDeviceId, error code : 35,"
        " Please see detail in https://docs.nvidia.com/cuda/cuda-runtime-api/"
        "group__CUDART__TYPES.html at (/paddle/paddle/fluid/platform/gpu_info.cc:140)",
        "driver-cuda-driver-insufficient",
    ),
    (
        "UserWarning: Failed to initialize XPU devices. The driver may not be installed,"
        " installed incorrectly, or incompatible with the current setup.",
        "driver-intel-gpu-unavailable",
    ),
    (
        "[bmlib_memory][error] bm_alloc_gmem failed, dev_id = 2, size = 0x7e9000",
        "gpu-oom-sophon-device-memory-alloc-failed",
    ),
    (
        "job 31337.pbs-01 exceeded MEM usage hard limit (4100 > 4096)",
        "host-oom-pbs-memory-limit",
    ),
]


def test_a_kfd_open_refused_for_the_user_stays_a_permission() -> None:
    hits = rules_hitting(
        'openat(AT_FDCWD, "/dev/kfd", O_RDWR|O_CLOEXEC) = -1 EACCES (Permission denied)'
    )
    assert hits == ["permissions-amd-gpu-device-access"]


def test_a_kfd_open_without_memory_is_no_host_memory_shortage() -> None:
    hits = rules_hitting('open("/dev/kfd", O_RDWR|O_CLOEXEC) = -1 ENOMEM (Cannot allocate memory)')
    assert hits == ["driver-rocm-gpu-unavailable"]


def test_a_plain_forbidden_is_not_a_rate_limit() -> None:
    assert "network-http-rate-limited" not in rules_hitting(
        "urllib.error.HTTPError: HTTP Error 403: Forbidden"
    )


def test_a_drive_quota_refusal_ends_a_download_run_on_the_network(tmp_path: Path) -> None:
    report = log_report(
        tmp_path,
        "Downloading checkpoint...\n"
        "Access denied with the following error:\n\n"
        " \tToo many users have viewed or downloaded this file recently. Please\n"
        "\ttry accessing the file again later.\n\n"
        "You may still be able to access the file from the browser:\n\n"
        "\t https://drive.google.com/uc?id=0BxYzAbCdEfGhIjKlMnOpQrStUv\n",
    )
    assert report.verdict is not Verdict.NONE
    assert_leads(report, "network")


def test_a_hub_that_stops_answering_is_the_network_when_the_log_ends_there(
    tmp_path: Path,
) -> None:
    retry = (
        """'(ReadTimeoutError("HTTPSConnectionPool(host='huggingface.co', port=443): Read"""
        """ timed out. (read timeout=10)"), '(Request ID: 1a2b)')' thrown while requesting"""
        " HEAD https://huggingface.co/org/model/resolve/main/config.json\n"
    )
    report = log_report(tmp_path, "Loading model org/model\n" + retry + retry)
    assert_leads(report, "network")


def test_a_run_that_goes_on_past_a_hub_retry_is_not_blamed(tmp_path: Path) -> None:
    retry = (
        """'(ReadTimeoutError("HTTPSConnectionPool(host='huggingface.co', port=443): Read"""
        """ timed out. (read timeout=10)"), '(Request ID: 1a2b)')' thrown while requesting"""
        " HEAD https://huggingface.co/org/model/resolve/main/config.json\n"
    )
    steps = "".join(f"step {n}/200 loss {2.0 - n / 200:.3f}\n" for n in range(1, 201))
    report = log_report(tmp_path, retry + "Retrying in 1s [Retry 1/5].\n" + steps + "Done.\n")
    assert report.verdict is Verdict.NONE
    assert ending_of(report) is not Ending.DIED
