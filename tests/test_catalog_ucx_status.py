"""UCX status codes, read through their catalog (patterns/tables/ucx_status.toml) end to end, on
logs in the shapes UCX and the programs on it print (UCX's own log lines, Open MPI, UCX-Py under
Dask; from UCX's sources and public reports, not from a corpus case; hosts changed):

* `Destination is unreachable` at wire-up names `network`;
* `Endpoint timeout` after the training had run names `network`;
* a peer's `Connection reset by remote peer` after another worker was killed for memory is a
  knock-on: the kill leads;
* UCX's shared-memory error names `shm`;
* every entry of the table is recognised, by exactly one rule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mechanism_helpers import assert_each_entry_recognised_once, assert_leads, log_report


def test_unreachable_destination_at_wire_up_names_the_network(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "ucx-unreachable",
        "$ mpirun -np 8 -H node-03:4,node-04:4 --mca pml ucx python train.py\n"
        "[1712034411.201877] [node-03:3321 :0]        wireup.c:1436 UCX  ERROR no active"
        " messages transport to <no debug data>: self/memory - Destination is unreachable\n"
        "[node-03:03321] pml_ucx.c:419  Error: ucp_ep_create(proc=5) failed: Destination is"
        " unreachable\n"
        "[node-03:03321] *** An error occurred in MPI_Init\n",
    )
    assert_leads(report, "network")


def test_endpoint_timeout_names_the_network(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "ucx-endpoint-timeout",
        "distributed.worker - INFO - Starting Worker plugin shuffle\n"
        "epoch 2 batch 400 loss 0.912\n"
        "[1712034999.118231] [node-04:7712 :0]  ucp_worker.c:1783  UCX  ERROR uct_ep_flush"
        " failed on ep 0x7f3a1c0: Endpoint timeout\n"
        "ucp._libs.exceptions.UCXError: <[Send #003] ep: 0x7f8b2c0a1040, tag: 0x1f6, nbytes:"
        " 8>: Endpoint timeout\n",
    )
    assert_leads(report, "network")


def test_shared_memory_error_names_shm(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "ucx-shm",
        "[1712034411.201877] [node-03:3321 :0]        mm_posix.c:233  UCX  ERROR mm_ep: failed"
        " to connect to remote FIFO: Shared memory error\n"
        "[node-03:03321] *** Process received signal ***\n",
    )
    assert_leads(report, "shm")


def test_every_entry_is_recognised_by_exactly_one_rule(shipped_coverage: dict[str, Any]) -> None:
    assert_each_entry_recognised_once("ucx_status", shipped_coverage)
