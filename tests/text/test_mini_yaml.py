"""The YAML subset reader: nesting by indentation, lines kept, bad lines skipped, never raises."""

from __future__ import annotations

import pytest

from crashlens.text.mini_yaml import MAX_DEPTH, YamlNode, read_yaml

from conftest import sample_text

NESTED = """\
# a comment line
---
x-common: &common
  restart: "no"
services:
  "quoted key":
    image: 'repo/img:1#not-a-comment'   # a real comment
    ports: [ "8080:80" , 9090 ]
    labels: {team: ml, tier: "gpu"}
    script: |
      echo one
      echo two
    after_block: kept
    mounts:
      - type: tmpfs
        target: /dev/shm
        tmpfs:
          size: 1g
      -
        type: bind
        source: ./data
      - plain item
...
"""


def scalar(node: YamlNode | None) -> str | None:
    assert node is not None
    return node.text()


def test_nested_mappings_lists_and_flow_collections() -> None:
    root = read_yaml(NESTED)
    service = root.get("services", "quoted key")
    assert service is not None and isinstance(service.value, dict)
    assert scalar(service.get("image")) == "repo/img:1#not-a-comment"
    ports = service.get("ports")
    assert ports is not None and [item.text() for item in ports.items()] == ["8080:80", "9090"]
    assert scalar(service.get("labels", "tier")) == "gpu"
    mounts = service.get("mounts")
    assert mounts is not None
    first, second, third = mounts.items()
    assert scalar(first.get("tmpfs", "size")) == "1g"
    assert (scalar(second.get("type")), scalar(second.get("source"))) == ("bind", "./data")
    assert third.text() == "plain item"


def test_block_scalars_are_skipped_and_the_next_key_still_read() -> None:
    service = read_yaml(NESTED).get("services", "quoted key")
    assert service is not None
    script = service.get("script")
    assert script is not None and script.value is None
    assert scalar(service.get("after_block")) == "kept"


def test_tabs_count_as_indentation() -> None:
    root = read_yaml("services:\n\tjob:\n\t\tcommand: run\n")
    assert scalar(root.get("services", "job", "command")) == "run"


def test_every_node_keeps_its_line() -> None:
    root = read_yaml(NESTED)
    image = root.get("services", "quoted key", "image")
    assert image is not None and image.lineno == 7
    assert image.raw.startswith("image: 'repo/img:1#not-a-comment'")
    # A block value is cited by its key's line, not by its first child's.
    mounts = root.get("services", "quoted key", "mounts")
    assert mounts is not None and (mounts.lineno, mounts.raw) == (14, "mounts:")


def test_real_compose_sample_nested_devices() -> None:
    root = read_yaml(sample_text("docker_compose/docker-compose_shm_size_gpu_REPRO.yml"))
    trainer = root.get("services", "trainer")
    assert trainer is not None
    assert scalar(trainer.get("shm_size")) == "16gb"
    assert scalar(trainer.get("ulimits", "memlock")) == "-1"
    command = trainer.get("command")
    assert command is not None
    assert [item.text() for item in command.items()] == [
        "torchrun",
        "--nproc_per_node=8",
        "train.py",
    ]
    devices = trainer.get("deploy", "resources", "reservations", "devices")
    assert devices is not None
    (device,) = devices.items()
    assert (scalar(device.get("driver")), scalar(device.get("count"))) == ("nvidia", "all")
    caps = device.get("capabilities")
    assert caps is not None and [item.text() for item in caps.items()] == ["gpu"]


def test_real_compose_sample_long_volume_syntax() -> None:
    root = read_yaml(
        sample_text("docker_compose/docker-compose_runtime_nvidia_tmpfs_devshm_REPRO.yml")
    )
    volumes = root.get("services", "train", "volumes")
    assert volumes is not None
    (volume,) = volumes.items()
    assert scalar(volume.get("target")) == "/dev/shm"
    size = volume.get("tmpfs", "size")
    assert size is not None and (size.text(), size.lineno) == ("8589934592", 10)


def test_get_on_a_scalar_or_missing_path_is_none() -> None:
    root = read_yaml("a: 1\n")
    assert root.get("a", "b") is None
    assert root.get("missing") is None
    assert root.get("a") is not None and root.get("a").items() == [root.get("a")]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "text",
    ["", "just a sentence", ": : :", "- a\n- b\n", "{broken: [", "key:\n  - \n  -", "\x00\x01"],
)
def test_odd_input_never_raises(text: str) -> None:
    assert isinstance(read_yaml(text).value, dict)


def test_deep_nesting_stops_at_the_depth_limit() -> None:
    text = "".join(" " * depth + f"k{depth}:\n" for depth in range(MAX_DEPTH * 3))
    node: YamlNode | None = read_yaml(text)
    depth = 0
    while node is not None and isinstance(node.value, dict) and node.value:
        node = next(iter(node.value.values()))
        depth += 1
    assert MAX_DEPTH <= depth < MAX_DEPTH * 3
