"""Mechanisms that decide an ambiguous failure (GPU, fabric, storage) from the field's
catalogs, decided end to end on logs of their own (public threads' line formats, never a
corpus case's text).

* GPUDirect RDMA writes into a GPU's memory: when that GPU falls off the bus (Xid 79), the
  peers' InfiniBand completions fail (`IBV_WC_RETRY_EXC_ERR`) and NCCL reports a remote error.
  The kernel log of the node that lost its GPU decides: hardware, not the fabric.
* Text Generation Inference's warmup reports a GPU memory shortage in its own words.
* A connection errno (ECOMM, EHOSTDOWN) that Python prints with a file path was raised by a
  file operation: a network filesystem failed, not the job's own connection.
"""

from __future__ import annotations

from pathlib import Path

from mechanism_helpers import Scenario, assert_scenario_verdict, report_of

IB_FAILURE = (
    "node-a:5120:5188 [3] transport/net_ib.cc:2244 NCCL WARN NET/IB: Got completion from peer "
    "10.1.0.12<40412> with status=12 opcode=1 len=1048576 vendor err 129 (Send) localGid "
    "::ffff:10.1.0.11 remoteGids::ffff:10.1.0.12 hca mlx5_3\n"
    "node-a:5120:5188 [3] NCCL INFO transport/net.cc:1362 -> 6\n"
    "[rank3]: torch.distributed.DistBackendError: NCCL error in: "
    "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, remote process exited or there "
    "was a network error, NCCL version 2.21.5\n"
    "[rank3]: ncclRemoteError: A call failed possibly due to a network error or a remote "
    "process exiting prematurely.\n"
    "E1103 04:12:09.118000 5101 torch/distributed/elastic/multiprocessing/api.py:869] failed "
    "(exitcode: 1) local_rank: 3 (pid: 5120) of binary: /usr/bin/python3\n"
)

PEER_GPU_LOST = (
    "[Tue Nov  3 04:11:52 2026] NVRM: GPU at PCI:0000:1b:00: "
    "GPU-4a1e0c2b-7d1f-4f3c-9a0e-2b6f1d9c8e77\n"
    "[Tue Nov  3 04:11:52 2026] NVRM: Xid (PCI:0000:1b:00): 79, pid='<unknown>', "
    "name=<unknown>, GPU has fallen off the bus.\n"
    "[Tue Nov  3 04:11:52 2026] NVRM: GPU at 00000000:1b:00.0 has fallen off the bus.\n"
)

PEER_PORT_DOWN = (
    "[Tue Nov  3 04:11:52 2026] mlx5_core 0000:5e:00.0: mlx5_port_module_event:1116:(pid 0): "
    "Port module event: module 0, Cable unplugged\n"
    "[Tue Nov  3 04:11:52 2026] mlx5_core 0000:5e:00.0 ibp94s0: Link down\n"
)


def test_a_peer_gpu_off_the_bus_explains_the_fabric_errors(tmp_path: Path) -> None:
    report = report_of(
        tmp_path / "job",
        {"train-node-a.log": IB_FAILURE, "dmesg-node-b.txt": PEER_GPU_LOST},
    )
    assert str(report.verdict) == "hardware"
    rules = {item.rule for item in report.causes[0].evidence}
    assert "hardware-gpu-lost-explains-rdma-failure" in rules
    assert any("fell off the PCIe bus" in note for note in report.notes)


def test_without_a_lost_gpu_the_fabric_errors_stay_network(tmp_path: Path) -> None:
    report = report_of(
        tmp_path / "job",
        {"train-node-a.log": IB_FAILURE, "dmesg-node-b.txt": PEER_PORT_DOWN},
    )
    assert report.causes[0].category.value == "network"
    rules = {item.rule for cause in report.causes for item in cause.evidence}
    assert "hardware-gpu-lost-explains-rdma-failure" not in rules


def test_tgi_warmup_shortage_is_gpu_oom(tmp_path: Path) -> None:
    assert_scenario_verdict(
        tmp_path,
        Scenario(
            name="tgi",
            files={
                "launcher.log": (
                    "2026-03-02T10:00:01.000000Z  INFO text_generation_launcher: Starting shard "
                    "rank=0\n"
                    "2026-03-02T10:02:41.000000Z ERROR warmup{max_input_length=1024 "
                    "max_prefill_tokens=4096 max_total_tokens=2048}:warmup: "
                    "text_generation_client: router/client/src/lib.rs:33: Server error: Not "
                    "enough memory to handle 4096 prefill tokens. You need to decrease "
                    "`--max-batch-prefill-tokens`\n"
                    'Error: WebServer(Warmup(Generation("Not enough memory to handle 4096 '
                    'prefill tokens. You need to decrease `--max-batch-prefill-tokens`")))\n'
                )
            },
            verdict="gpu_oom",
            rule="gpu-oom-tgi-warmup-not-enough-memory",
        ),
    )


def test_a_connection_errno_on_a_file_path_is_the_network_filesystem(tmp_path: Path) -> None:
    assert_scenario_verdict(
        tmp_path,
        Scenario(
            name="beegfs",
            files={
                "train.log": (
                    "Traceback (most recent call last):\n"
                    '  File "train.py", line 530, in main_worker\n'
                    "    classes = sorted(os.listdir(train_dir))\n"
                    "OSError: [Errno 70] Communication error on send: "
                    "'/mnt/beegfs/imagenet/train'\n"
                )
            },
            verdict="filesystem",
            rule="filesystem-network-errno-on-a-path",
        ),
    )


def test_the_same_errno_on_a_socket_is_not_the_filesystem(tmp_path: Path) -> None:
    report = report_of(
        tmp_path / "job",
        {
            "train.log": (
                "Traceback (most recent call last):\n"
                '  File "client.py", line 88, in send\n'
                "    sock.sendall(payload)\n"
                "OSError: [Errno 70] Communication error on send\n"
            )
        },
    )
    assert all(cause.category.value != "filesystem" for cause in report.causes)
