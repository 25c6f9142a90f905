"""Mechanisms learned from batch 2026-12-07-ec's misses (an HPC centre's support forum and the
known-issues and troubleshooting pages kept in repositories), tested on lines written for the
tests, none a case's own: the check macro of the GAMER code (`CUDA ERROR : <message>`) and the
libfabric CXI provider's event-queue overflow on Slingshot."""

from __future__ import annotations

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "ERROR : CUDA ERROR : no kernel image is available for execution on the device !!",
        "driver-no-kernel-image",
    ),
    ("ERROR : CUDA ERROR : out of memory !!  (Rank 3)", "gpu-oom-cuda-error-out-of-memory"),
    (
        "libfabric:7731:1736000000::cxi:core:cxip_cq_eq_progress():531<warn> nid001234: Cassini"
        " Event Queue overflow detected.",
        "network-libfabric-cxi-event-queue-overflow",
    ),
]
