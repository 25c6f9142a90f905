"""A socket-interface setting compared with the nodes' interfaces (`decide/interfaces.py`), and
the rule that reads the result (`network-socket-ifname-matches-no-interface`): logs of their
own, analyzed as `crashlens analyze` does."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.decide.interfaces import unmatched_interfaces
from crashlens.match.rules import fact_from_line
from crashlens.model import Fact
from crashlens.pipeline import AnalyzeOptions, analyze


def _facts(*lines: str) -> list[Fact]:
    # the listings come from one file, the settings from the log
    return [
        fact_from_line(line, path="ip_addr.txt" if line.startswith("net.iface=") else "train.log")
        for line in lines
    ]


def _unmatched(*lines: str) -> list[tuple[object, object, object]]:
    return [
        (f.value, f.attr("host"), f.attr("reason")) for f in unmatched_interfaces(_facts(*lines))
    ]


LISTING_A = ("net.iface=lo state=unknown listing=1", "net.iface=eth0 state=up listing=1")


def test_a_prefix_selects_every_interface_it_starts() -> None:
    assert _unmatched("net.socket_ifname=eth var=NCCL_SOCKET_IFNAME", *LISTING_A) == []


def test_an_exact_name_or_a_gloo_name_must_match_whole() -> None:
    assert _unmatched("net.socket_ifname==eth var=NCCL_SOCKET_IFNAME", *LISTING_A) == [
        ("=eth", None, "absent")
    ]
    assert _unmatched("net.socket_ifname=eth var=GLOO_SOCKET_IFNAME", *LISTING_A) == [
        ("eth", None, "absent")
    ]


def test_an_exclusion_names_nothing_that_must_exist() -> None:
    assert _unmatched("net.socket_ifname=^docker,lo var=NCCL_SOCKET_IFNAME", *LISTING_A) == []


def test_a_named_interface_that_is_down_does_not_count() -> None:
    assert _unmatched(
        "net.socket_ifname=ib0 var=NCCL_SOCKET_IFNAME",
        "net.iface=ib0 state=down listing=1",
        "net.iface=eth0 state=up listing=1",
    ) == [("ib0", None, "down")]


def test_one_setting_for_every_node_fails_on_the_node_named_otherwise() -> None:
    assert _unmatched(
        "net.socket_ifname=ens3,ens4 var=NCCL_SOCKET_IFNAME",
        "net.iface=ens3 state=up listing=1 host=a1",
        "net.iface=eno2 state=up listing=2 host=a2",
    ) == [("ens3,ens4", "a2", "absent")]


def test_a_setting_echoed_by_one_node_is_compared_with_that_node_only() -> None:
    assert (
        _unmatched(
            "net.socket_ifname=ens3 var=NCCL_SOCKET_IFNAME host=a1",
            "net.iface=ens3 state=up listing=1 host=a1",
            "net.iface=eno2 state=up listing=2 host=a2",
        )
        == []
    )


def test_nothing_is_derived_without_both_inputs() -> None:
    assert _unmatched("net.socket_ifname=eth0 var=NCCL_SOCKET_IFNAME") == []
    assert _unmatched(*LISTING_A) == []


GRPO_LIKE = (
    "+ export NCCL_SOCKET_IFNAME=eth0\n"
    "[rank0]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/"
    "distributed/c10d/ProcessGroupNCCL.cpp:2588, internal error - please report this issue to "
    "the NCCL developers, NCCL version 2.21.5\n"
    "[rank0]: ncclInternalError: Internal check failed.\n"
)
SYSTEM_ERROR = (
    "+ export NCCL_SOCKET_IFNAME=bond0\n"
    "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1169, "
    "unhandled system error, NCCL version 2.10.3\n"
    "ncclSystemError: System call (socket, malloc, munmap, etc) failed.\n"
)
NODES = (
    "user@node-07:~$ ip -br addr\n"
    "lo               UNKNOWN        127.0.0.1/8 ::1/128 \n"
    "ens18f0          UP             10.0.4.21/24 \n"
    "docker0          DOWN           172.17.0.1/16 \n"
)


def _folder(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("log", [GRPO_LIKE, SYSTEM_ERROR], ids=["internal", "system"])
def test_an_nccl_error_on_a_node_without_the_named_interface_is_network(
    tmp_path: Path, log: str
) -> None:
    folder = _folder(tmp_path, {"train.log": log, "ip_addr.txt": NODES})
    report = analyze([str(folder)], AnalyzeOptions(use_model=False))
    assert str(report.verdict) == "network", [(c.category, c.confidence) for c in report.causes]
    cited = {item.rule for item in report.causes[0].evidence}
    assert "network-socket-ifname-matches-no-interface" in cited
    assert any("node-07 has no interface up" in note for note in report.notes)


def test_the_same_error_where_the_interface_exists_keeps_its_own_reading(tmp_path: Path) -> None:
    nodes = NODES.replace("ens18f0", "eth0   ")
    folder = _folder(tmp_path, {"train.log": GRPO_LIKE, "ip_addr.txt": nodes})
    report = analyze([str(folder)], AnalyzeOptions(use_model=False))
    assert all(c.category != "network" for c in report.causes[:1])
