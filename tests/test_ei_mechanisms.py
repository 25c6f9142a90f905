"""Mechanisms learned from batch 2026-12-07-ei's misses (training logbooks, GPU cluster
operations pages), tested on lines written for the tests, none a case's own: the NVIDIA Fabric
Manager's log and its service's status (the NVSwitch driver stack not up), and Kubernetes
without the `nvidia` runtime configured. The headless `dcgmi diag` rows are tested in
tests/test_dcgm_diag_table.py."""

from __future__ import annotations

# read by tests/test_mechanism_lines.py
LINES_AND_RULES = [
    (
        "[Mar 03 2026 07:12:40] [ERROR] [tid 1402] fabric manager NVIDIA GPU driver interface"
        " version 570.133.20 don't match with driver version 570.124.06. Please update with"
        " matching NVIDIA driver package.",
        "driver-cuda-system-not-ready",
    ),
    (
        "[Mar 03 2026 07:12:41] [ERROR] [tid 1402] not all local fabric manager instances"
        " finished their configuration",
        "driver-cuda-system-not-ready",
    ),
    (
        "    Process: 2231 ExecStart=/usr/bin/nv-fabricmanager -c"
        " /usr/share/nvidia/nvswitch/fabricmanager.cfg (code=exited, status=1/FAILURE)",
        "driver-cuda-system-not-ready",
    ),
    (
        "  Warning  FailedCreatePodSandBox  31s (x12 over 5m)  kubelet  Failed to create pod"
        " sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for"
        ' "nvidia" is configured',
        "driver-container-toolkit-error",
    ),
]
