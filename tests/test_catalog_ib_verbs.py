"""InfiniBand verbs work-completion statuses, read through their catalog
(patterns/tables/ib_verbs.toml) end to end, on logs in the shapes RDMA users print (Open MPI's
openib BTL, NCCL's net_ib, UCX's mlx5 syndromes; from the programs' sources and public reports,
not from a corpus case; hosts changed):

* Open MPI's `RETRY EXCEEDED ERROR` (its own upper-case name of status 12) names `network`;
* a local protection error on a GPU buffer names `network` through the local-buffer rule,
  whose remedy looks at GPUDirect RDMA;
* flushed work requests after a retry-exceeded error are a knock-on: the retry error leads;
* every entry of the table is recognised, by exactly one rule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mechanism_helpers import assert_each_entry_recognised_once, assert_leads, log_report

_MPIRUN = (
    "$ mpirun -np 16 -H node-06:8,node-03:8 -bind-to none -x NCCL_DEBUG=WARN python train.py\n"
    "[1,0]<stdout>:epoch 3 step 1200 loss 2.114\n"
)


def test_open_mpi_retry_exceeded_names_the_fabric(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "ompi-retry",
        _MPIRUN
        + "[[31705,1],7][btl_openib_component.c:3496:handle_wc] from node-06 to: node-03 error"
        " polling LP CQ with status RETRY EXCEEDED ERROR status number 12 for wr_id 217ce00"
        " opcode 0  vendor error 129 qp_idx 0\n"
        "--------------------------------------------------------------------------\n"
        "The InfiniBand retry count between two MPI processes has been\n"
        'exceeded.  "Retry count" is defined in the InfiniBand spec 1.2\n'
        "--------------------------------------------------------------------------\n"
        "mpirun noticed that process rank 7 with PID 0 on node node-06 exited on signal 6"
        " (Aborted).\n",
    )
    assert_leads(report, "network")


def test_local_protection_error_points_at_gpudirect(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "nccl-loc-prot",
        "node-02:2290:2290 [2] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.12<0>\n"
        "node-02:2290:2412 [2] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from"
        " peer 10.0.0.11<54321> with status=IBV_WC_LOC_PROT_ERR(4) opcode=IBV_WC_RECV(128)"
        " reqSize=0 vendor_err=81 req_type=Recv localGid ::ffff:10.0.0.12\n"
        "node-02:2290:2412 [2] NCCL INFO transport/net.cc:1134 -> 6\n",
    )
    assert_leads(report, "network")
    rules = {item.rule for item in report.causes[0].evidence}
    assert "network-ib-local-memory-access-error" in rules, rules


def test_flushed_requests_follow_the_retry_error(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "ucx-flush",
        "[1714021233.918114] [node-03:51120:0]    ib_mlx5_log.c:177  UCX  ERROR Error on QP"
        " 0x3b1c wqe[117]: Transport retry count exceeded (synd 0x15 vend 0x81) opcode SEND\n"
        "[1714021234.002311] [node-03:51120:0]    ib_mlx5_log.c:177  UCX  ERROR Error on QP"
        " 0x3b1c wqe[118]: WR flushed because QP in error state (synd 0x5 vend 0xf9) opcode"
        " SEND\n",
    )
    assert_leads(report, "network")
    first = report.causes[0].evidence[0].rule
    assert first == "network-ib-completion-error", [e.rule for e in report.causes[0].evidence]


def test_every_entry_is_recognised_by_exactly_one_rule(shipped_coverage: dict[str, Any]) -> None:
    assert_each_entry_recognised_once("ib_verbs", shipped_coverage)
