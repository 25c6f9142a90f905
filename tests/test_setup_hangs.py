"""Runs whose logs stop while their processes set up communication: waiting for peers to join
(ps-lite binding, a store barrier) or NCCL connecting its ranks. Such a log is a possible hang,
never an excerpt of a run going on well (`decide/unended.py`), and the NCCL case points at the
network (`network-nccl-stopped-at-connection-setup`)."""

from __future__ import annotations

from pathlib import Path

from crashlens.model import Ending, Verdict
from mechanism_helpers import ending_of, log_report

PS_LITE_SCHEDULER = (
    "../../tools/launch.py -n 2 -H hosts python train_mnist.py --kv-store dist_sync\n"
    "[10:02:11] src/van.cc:69: Bind to role=scheduler, id=1, ip=10.1.0.4, port=9100, "
    "is_recovery=0\n"
    "2024-05-02 10:02:13,058 INFO rsync /home/user/example/ -> 10.1.0.13:/tmp/mxnet\n"
)
NCCL_CONNECTING = (
    "node-01:4411:4502 [0] NCCL INFO NET/Socket : Using [0]eth0:10.1.0.11<0>\n"
    "node-01:4411:4502 [0] NCCL INFO Channel 00/02 :    0   1\n"
    "node-01:4411:4502 [0] NCCL INFO Channel 00 : 1[81000] -> 0[41000] [receive] via NET/Socket/0\n"
    "node-01:4411:4502 [0] NCCL INFO Channel 00 : 0[41000] -> 1[81000] [send] via NET/Socket/0\n"
)
NCCL_CONNECTED = (
    "node-01:4411:4502 [0] NCCL INFO Connected all rings\n"
    "node-01:4411:4502 [0] NCCL INFO comm 0x55d1c8a0 rank 0 nranks 2 cudaDev 0 busId 41000 "
    "- Init COMPLETE\n"
)


def _rules_cited(report: object) -> set[str]:
    causes = getattr(report, "causes", ())
    return {item.rule for cause in causes for item in cause.evidence}


def test_lines_after_a_peer_wait_are_no_sign_of_a_run_going_on(tmp_path: Path) -> None:
    # The launcher copying files after the scheduler bound its port says nothing of the
    # workers ever joining: the log stops during set-up.
    report = log_report(tmp_path, PS_LITE_SCHEDULER)
    assert ending_of(report) is Ending.UNKNOWN
    assert report.verdict is not Verdict.NONE


def test_a_log_that_stops_while_nccl_connects_points_at_the_network(tmp_path: Path) -> None:
    report = log_report(tmp_path, NCCL_CONNECTING)
    assert ending_of(report) is Ending.UNKNOWN
    assert report.verdict is not Verdict.NONE
    assert report.causes and report.causes[0].category.value == "network"
    assert "network-nccl-stopped-at-connection-setup" in _rules_cited(report)


def test_nccl_set_up_that_finished_is_not_cited(tmp_path: Path) -> None:
    report = log_report(tmp_path, NCCL_CONNECTING + NCCL_CONNECTED)
    assert "network-nccl-stopped-at-connection-setup" not in _rules_cited(report)


def test_an_mpi_connection_dropped_for_its_source_address_points_at_the_network(
    tmp_path: Path,
) -> None:
    # Open MPI's TCP transport dropping a peer's connection (an address the peer never
    # published: NAT, a docker bridge), and then nothing: the ranks wait on each other.
    text = (
        "[node-01:06805] btl: tcp: attempting to connect() to [[27443,1],1] address "
        "10.1.0.12 on port 1024\n"
        "[node-01:06805] btl: tcp: Incoming connection from 172.17.0.1 does not match known "
        "addresses for peer [[27443,1],1]. Drop !\n"
    )
    report = log_report(tmp_path, text)
    assert report.verdict is not Verdict.NONE
    assert report.causes and report.causes[0].category.value == "network"
    assert "network-openmpi-btl-tcp-connection-dropped" in _rules_cited(report)


def test_a_warning_before_a_wait_for_peers_is_no_run_going_on(tmp_path: Path) -> None:
    # The warning is gone past, but the processes were last seen waiting for their peers.
    wait = (
        "[torch.distributed.distributed_c10d][INFO] - Waiting in store based barrier to "
        "initialize process group for rank: 0, key: store_based_barrier_key:1 (world_size=4, "
        "worker_count=2, timeout=0:30:00)\n"
    )
    text = "node-01:2521:2528 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
    report = log_report(tmp_path, text + wait * 2)
    assert ending_of(report) is Ending.UNKNOWN
    assert report.verdict is not Verdict.NONE


def test_a_wait_for_peers_followed_by_training_is_gone_past(tmp_path: Path) -> None:
    text = (
        "[torch.distributed.distributed_c10d][INFO] - Waiting in store based barrier to "
        "initialize process group for rank: 0, key: store_based_barrier_key:1 (world_size=2, "
        "worker_count=1, timeout=0:30:00)\n"
        "epoch 1 step 100 loss 0.91\n"
        "epoch 1 step 200 loss 0.88\n"
    )
    report = log_report(tmp_path, text)
    assert ending_of(report) is Ending.ONGOING
    assert report.verdict is Verdict.NONE
