"""ip_addr parser: `ip -br addr`, `ip addr`, both `ifconfig` layouts, several nodes per file."""

from __future__ import annotations

import pytest

from crashlens.inputs.detect import detect
from crashlens.model import Fact, InputKind
from crashlens.parsers.base import collect_text
from crashlens.parsers.ip_addr import IpAddrParser
from crashlens.parsers.launcher import LauncherParser

from conftest import SAMPLES, sample_text

PARSER = IpAddrParser()
SAMPLE_NAMES = sorted(p.name for p in (SAMPLES / "ip_addr").glob("*.txt"))


def parse(name: str) -> dict[str, Fact]:
    result = PARSER.parse(sample_text(f"ip_addr/{name}"), name)
    assert result.warnings == ()
    return {f"{f.attr('listing')}:{f.value}": f for f in result.facts}


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_every_sample_is_detected_by_content_alone(name: str) -> None:
    head = sample_text(f"ip_addr/{name}")
    assert detect(head, "capture.txt").kind is InputKind.IP_ADDR


def test_brief_rows_give_state_and_first_ipv4_address() -> None:
    found = parse("ip_br_addr_container_eth0_ifb_down.txt")
    assert set(found) == {"1:lo", "1:ifb0", "1:ifb1", "1:eth0"}
    assert found["1:eth0"].attr("state") == "up"
    assert found["1:eth0"].attr("address") == "192.0.2.2/24"
    assert found["1:ifb0"].attr("state") == "down"
    assert found["1:ifb0"].attr("address") is None
    assert found["1:lo"].attr("state") == "unknown"


def test_each_prompt_starts_a_node_listing_with_its_host() -> None:
    found = parse("ip_br_addr_two_hosts_prompts_REPRO.txt")
    assert found["1:enp6s0"].attr("host") == "gpu-node-1"
    assert found["2:enp4s0"].attr("host") == "gpu-node-2"
    assert "2:veth3a1f2c9" in found  # the `@if14` peer is not part of the name
    assert found["2:ib0"].attr("state") == "down"


def test_ip_addr_headers_states_and_inet_lines() -> None:
    found = parse("ip_addr_show_bond_bridge_veth_REPRO.txt")
    assert found["1:bond0"].attr("address") == "10.0.8.78/22"
    assert found["1:bond0"].attr("host") == "gpu-node-3"
    assert found["1:eno1"].attr("state") == "down"  # NO-CARRIER, state DOWN
    assert found["1:veth6d2e1b0"].attr("state") == "up"
    real = parse("ip_addr_container_eth0_ifb_down.txt")
    assert real["1:eth0"].attr("address") == "192.0.2.2/24"
    assert real["1:eth0"].lineno == 11


def test_both_ifconfig_layouts() -> None:
    new = parse("ifconfig_net_tools_2_10_container.txt")
    assert new["1:eth0"].attr("state") == "up"
    assert new["1:eth0"].attr("address") == "192.0.2.2"
    old = parse("ifconfig_net_tools_1_60_link_encap_REPRO.txt")
    assert old["1:eth0"].attr("state") == "up"
    assert old["1:eth0"].attr("address") == "10.10.1.21"
    assert old["1:ib0"].attr("state") == "down"  # no UP on its flags line


def test_ifconfig_up_without_carrier_is_down() -> None:
    text = (
        "docker0: flags=4099<UP,BROADCAST,MULTICAST>  mtu 1500\n"
        "        inet 172.17.0.1  netmask 255.255.0.0  broadcast 0.0.0.0\n"
    )
    (item,) = PARSER.parse(text, "ifconfig.txt").facts
    assert item.attr("state") == "down"


@pytest.mark.parametrize(
    "text",
    [
        "[rank0]: RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:260, unhandled system error\n",
        "Epoch 1 UP 10%\nloss DOWN 0.3\n",
        "",
    ],
)
def test_other_text_is_not_an_interface_listing(text: str) -> None:
    assert PARSER.sniff(text) == 0.0


def test_garbage_gives_a_warning_not_an_exception() -> None:
    result = PARSER.parse("\x00\xff mtu <<>>\n1: : <> mtu\n", "ip.txt")
    assert result.facts == ()
    assert result.warnings


def test_launcher_lines_give_the_socket_interface_settings() -> None:
    text = (
        "$ mpirun -np 2 -x NCCL_DEBUG=WARN -x NCCL_SOCKET_IFNAME=eth0 ./build/broadcast_perf\n"
        "node-01:167971:167971 [1] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth\n"
        "+ export GLOO_SOCKET_IFNAME=bond0\n"
        "please set NCCL_SOCKET_IFNAME to the right interface\n"
    )
    _, facts = collect_text(LauncherParser(), text, "train.log")
    settings = [
        (f.value, f.attr("var"), f.attr("host"), f.attr("source"))
        for f in facts
        if f.key == "net.socket_ifname"
    ]
    assert settings == [
        ("eth0", "NCCL_SOCKET_IFNAME", None, "command"),
        ("eth", "NCCL_SOCKET_IFNAME", "node-01", "nccl"),
        ("bond0", "GLOO_SOCKET_IFNAME", None, "command"),
    ]


def test_a_log_that_quotes_a_listing_at_its_top_stays_a_log() -> None:
    # a debugging session pastes `ip addr` and then runs the job: the NCCL lines must still
    # be read by the log rules, so the file is launcher output, not a listing
    listing = sample_text("ip_addr/ip_addr_show_bond_bridge_veth_REPRO.txt")
    log = "".join(
        f"node-01:881:881 [0] NCCL INFO Channel {i:02d}/02 :    0   1\n" for i in range(30)
    )
    text = (
        listing
        + log
        + "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:260, unhandled system error\n"
    )
    assert PARSER.sniff(text) == 0.0
    assert detect(text, "debug.txt").kind is InputKind.LAUNCHER
