"""docker inspect / podman inspect JSON and docker-compose YAML parsers."""

from __future__ import annotations

import json

import pytest

from crashlens.model import Fact, FactValue
from crashlens.parsers.docker import DockerComposeParser, DockerInspectParser

from conftest import SAMPLES, sample_text

INSPECT = DockerInspectParser()
COMPOSE = DockerComposeParser()
JSON_SAMPLES = sorted(p.name for p in (SAMPLES / "docker_inspect").glob("*.json"))
YAML_SAMPLES = sorted(p.name for p in (SAMPLES / "docker_compose").glob("*.yml"))
DEFAULT_SHM = "docker_inspect_gpus_all_default_shm64m_exited1_REPRO.json"
OOM = "docker_inspect_ipc_host_ulimits_runtime_nvidia_oomkilled_137_REPRO.json"


def values(facts: tuple[Fact, ...], key: str) -> list[FactValue]:
    return [f.value for f in facts if f.key == key]


def one(facts: tuple[Fact, ...], key: str) -> Fact:
    found = [f for f in facts if f.key == key]
    assert len(found) == 1, (key, found)
    return found[0]


def inspect_sample(name: str) -> tuple[Fact, ...]:
    return INSPECT.parse(sample_text(f"docker_inspect/{name}"), name).facts


def test_samples_exist() -> None:
    assert len(JSON_SAMPLES) >= 7
    assert len(YAML_SAMPLES) >= 2


@pytest.mark.parametrize("name", JSON_SAMPLES)
def test_inspect_sniff_and_parse_every_sample(name: str) -> None:
    text = sample_text(f"docker_inspect/{name}")
    head = text[:65536]
    assert INSPECT.sniff(head) == 1.0
    assert COMPOSE.sniff(head) < 0.5
    result = INSPECT.parse(text, name)
    # Every sample is one container with a shm size, a status and a name.
    assert len(values(result.facts, "docker.shm_size_bytes")) == 1
    assert len(values(result.facts, "docker.status")) == 1
    assert len(values(result.facts, "docker.container")) == 1


@pytest.mark.parametrize("name", YAML_SAMPLES)
def test_compose_sniff_and_parse_every_sample(name: str) -> None:
    text = sample_text(f"docker_compose/{name}")
    assert COMPOSE.sniff(text[:65536]) == 1.0
    assert INSPECT.sniff(text[:65536]) < 0.5
    result = COMPOSE.parse(text, name)
    assert values(result.facts, "compose.shm_size_bytes")
    assert result.warnings == ()


def test_default_shm_sample() -> None:
    facts = inspect_sample(DEFAULT_SHM)
    shm = one(facts, "docker.shm_size_bytes")
    assert shm.value == 67108864
    assert shm.lineno == 83
    assert shm.text == '"ShmSize": 67108864'
    assert one(facts, "docker.shm_private_bytes").value == 67108864
    assert one(facts, "docker.ipc_mode").value == "private"
    assert one(facts, "docker.exit_code").value == 1
    assert one(facts, "docker.status").value == "exited"
    assert one(facts, "docker.oom_killed").value is False
    assert one(facts, "docker.gpu_count").value == -1
    assert one(facts, "docker.container").value == "train-resnet50"
    assert one(facts, "docker.container").attr("container") == "train-resnet50"
    assert one(facts, "docker.engine").value == "docker"
    assert one(facts, "docker.memory_limit_bytes").value == 0
    assert one(facts, "docker.image").value == "nvcr.io/nvidia/pytorch:24.12-py3"
    assert values(facts, "docker.dev_shm_mount") == []


def test_oom_killed_ipc_host_sample() -> None:
    facts = inspect_sample(OOM)
    assert one(facts, "docker.oom_killed").value is True
    assert one(facts, "docker.exit_code").value == 137
    assert one(facts, "docker.oom_killed").lineno == 18
    assert one(facts, "docker.ipc_mode").value == "host"
    assert one(facts, "docker.shm_size_bytes").value == 67108864
    # The host's /dev/shm is used: ShmSize says nothing about it.
    assert values(facts, "docker.shm_private_bytes") == []
    assert one(facts, "docker.memory_limit_bytes").value == 68719476736
    memlock = one(facts, "docker.ulimit_memlock")
    assert memlock.value == -1
    assert memlock.attr("hard") == -1
    assert one(facts, "docker.cap_add").value == "IPC_LOCK,SYS_NICE"
    assert one(facts, "docker.runtime").value == "nvidia"
    gpus = one(facts, "docker.gpu_count")
    assert (gpus.value, gpus.attr("source")) == (-1, "env")


def test_privileged_capadd_memory_sample() -> None:
    facts = inspect_sample("docker_inspect_runlike_fixture6_privileged_capadd_memory.json")
    assert one(facts, "docker.privileged").value is True
    assert one(facts, "docker.cap_add").value == "CHOWN"
    assert one(facts, "docker.security_opt").value == "label=disable"
    assert one(facts, "docker.memory_limit_bytes").value == 2147483648
    assert one(facts, "docker.status").value == "running"
    assert one(facts, "docker.gpu_count").value == 0


def test_shm16g_device_ids_sample() -> None:
    facts = inspect_sample("docker_inspect_running_shm16g_privileged_device_ids_REPRO.json")
    assert one(facts, "docker.shm_size_bytes").value == 17179869184
    assert one(facts, "docker.shm_private_bytes").value == 17179869184
    assert one(facts, "docker.ipc_mode").value == "shareable"
    assert one(facts, "docker.gpu_count").value == 4
    assert one(facts, "docker.privileged").value is True


def test_single_object_engine_api_sample() -> None:
    facts = inspect_sample("docker_inspect_watchtower_container_running.json")
    assert one(facts, "docker.container").value == "portainer"
    assert one(facts, "docker.shm_size_bytes").value == 67108864


def test_trailing_garbage_sample() -> None:
    name = "docker_inspect_watchtower_memory_limit_trailing_garbage.json"
    result = INSPECT.parse(sample_text(f"docker_inspect/{name}"), name)
    assert any("after the JSON" in warning for warning in result.warnings)
    assert one(result.facts, "docker.memory_limit_bytes").value == 2147483648
    assert one(result.facts, "docker.exit_code").value == 255
    # The `docker ps` object after the array is not a second container.
    assert values(result.facts, "docker.container") == ["webserver"]


def test_podman_trailing_commas_sample() -> None:
    name = "podman_inspect_docs_example_trailing_commas.json"
    result = INSPECT.parse(sample_text(f"docker_inspect/{name}"), name)
    assert any("trailing commas" in warning for warning in result.warnings)
    assert one(result.facts, "docker.engine").value == "podman"
    assert one(result.facts, "docker.shm_size_bytes").value == 65536000
    assert one(result.facts, "docker.shm_size_bytes").lineno == 188
    assert one(result.facts, "docker.runtime").value == "oci"
    assert one(result.facts, "docker.container").value == "foobar"


def test_truncated_json_still_yields_shm_size() -> None:
    text = sample_text(f"docker_inspect/{DEFAULT_SHM}")
    result = INSPECT.parse(text[: len(text) // 2], "half.json")
    assert any("truncated JSON" in warning for warning in result.warnings)
    assert one(result.facts, "docker.shm_size_bytes").value == 67108864
    assert one(result.facts, "docker.shm_size_bytes").lineno == 83
    assert one(result.facts, "docker.exit_code").value == 1


def test_truncated_inside_a_string() -> None:
    text = sample_text(f"docker_inspect/{OOM}")
    cut = text.index("nvcr.io") + 3
    result = INSPECT.parse(text[:cut], "cut.json")
    assert result.warnings
    assert one(result.facts, "docker.oom_killed").value is True


def test_unreadable_json_uses_the_regex_fallback() -> None:
    text = sample_text(f"docker_inspect/{OOM}").replace("{", "(")
    result = INSPECT.parse(text, "broken.json")
    assert any("regex fallback" in warning for warning in result.warnings)
    assert one(result.facts, "docker.shm_size_bytes").value == 67108864
    assert one(result.facts, "docker.oom_killed").value is True
    assert one(result.facts, "docker.exit_code").value == 137


def test_multiple_containers_keep_their_own_lines() -> None:
    first = json.loads(sample_text(f"docker_inspect/{DEFAULT_SHM}"))[0]
    second = json.loads(sample_text(f"docker_inspect/{OOM}"))[0]
    text = json.dumps([first, second], indent=4)
    facts = INSPECT.parse(text, "two.json").facts
    exits = {f.attr("container"): (f.value, f.lineno) for f in facts if f.key == "docker.exit_code"}
    assert exits["train-resnet50"][0] == 1
    assert exits["train-llm-sft"][0] == 137
    line = text.split("\n")[(exits["train-llm-sft"][1] or 0) - 1]
    assert '"ExitCode": 137' in line


def test_dev_shm_mounts_replace_shm_size() -> None:
    container = {
        "Name": "/x",
        "State": {"Status": "exited", "ExitCode": 135},
        "HostConfig": {
            "ShmSize": 67108864,
            "IpcMode": "private",
            "Binds": ["/dev/shm:/dev/shm"],
        },
    }
    facts = INSPECT.parse(json.dumps([container]), "bind.json").facts
    mount = one(facts, "docker.dev_shm_mount")
    assert (mount.value, mount.attr("source")) == ("bind", "/dev/shm")
    assert values(facts, "docker.shm_private_bytes") == []
    container["HostConfig"] = {"ShmSize": 67108864, "Tmpfs": {"/dev/shm": "rw,size=8g"}}
    facts = INSPECT.parse(json.dumps(container), "tmpfs.json").facts
    assert one(facts, "docker.dev_shm_mount").value == "tmpfs"
    assert one(facts, "docker.shm_private_bytes").value == 8 * 1024**3


def test_image_inspect_gives_no_container_facts() -> None:
    text = json.dumps([{"Id": "sha256:abc", "RepoTags": ["x:1"], "Config": {"Env": []}}])
    result = INSPECT.parse(text, "image.json")
    assert result.facts == ()
    assert result.warnings


@pytest.mark.parametrize(
    "text",
    ["", "   \n", "\x00\xff\xfe garbage \x1b[31m", "[", "{", '[{"Id": "x", "State": {"Status']
    + [bytes(range(256)).decode("latin-1") * 4],
)
def test_inspect_bad_input(text: str) -> None:
    result = INSPECT.parse(text, "bad.json")
    assert all(f.key.startswith("docker.") for f in result.facts)
    assert 0.0 <= INSPECT.sniff(text) <= 1.0


def test_inspect_sniff_rejects_other_text() -> None:
    log = "Filesystem error\n[rank0]: RuntimeError: DataLoader worker is killed by signal\n"
    assert INSPECT.sniff(log) < 0.5
    assert INSPECT.sniff('{"level": "info", "msg": "step 10"}') < 0.5


def test_compose_shm_size_gpu_sample() -> None:
    name = "docker-compose_shm_size_gpu_REPRO.yml"
    facts = COMPOSE.parse(sample_text(f"docker_compose/{name}"), name).facts
    shm = one(facts, "compose.shm_size_bytes")
    assert (shm.value, shm.lineno, shm.attr("service")) == (16 * 1024**3, 6, "trainer")
    gpus = one(facts, "compose.gpu_count")
    assert (gpus.value, gpus.lineno) == (-1, 23)
    assert one(facts, "compose.mem_limit_bytes").value == 64 * 1024**3
    assert one(facts, "compose.ulimit_memlock").value == -1
    # `ipc: host` is commented out: no ipc fact.
    assert values(facts, "compose.ipc") == []
    assert one(facts, "compose.shm_private_bytes").value == 16 * 1024**3


def test_compose_runtime_tmpfs_sample() -> None:
    name = "docker-compose_runtime_nvidia_tmpfs_devshm_REPRO.yml"
    facts = COMPOSE.parse(sample_text(f"docker_compose/{name}"), name).facts
    assert one(facts, "compose.shm_size_bytes").value == 8 * 1024**3
    assert one(facts, "compose.runtime").value == "nvidia"
    mount = one(facts, "compose.dev_shm_mount")
    assert (mount.value, mount.attr("size_bytes"), mount.lineno) == ("tmpfs", 8589934592, 8)


def test_compose_ipc_host_and_device_ids() -> None:
    text = (
        "version: '3.8'\r\n"
        "services:\r\n"
        "  a:\r\n"
        "    image: x\r\n"
        "    ipc: host\r\n"
        "    shm_size: '2g'\r\n"
        "    deploy:\r\n"
        "      resources:\r\n"
        "        reservations:\r\n"
        "          devices:\r\n"
        "          - driver: nvidia\r\n"
        "            device_ids: ['0', '3']\r\n"
        "            capabilities: [gpu]\r\n"
        "  b:\r\n"
        "    image: y\r\n"
        "    tmpfs:\r\n"
        "      - /dev/shm:size=1g\r\n"
    )
    facts = COMPOSE.parse(text, "c.yml").facts
    by_service = {(f.key, f.attr("service")): f.value for f in facts}
    assert by_service[("compose.ipc", "a")] == "host"
    assert by_service[("compose.shm_size_bytes", "a")] == 2 * 1024**3
    assert by_service[("compose.gpu_count", "a")] == 2
    assert ("compose.shm_private_bytes", "a") not in by_service
    assert by_service[("compose.dev_shm_mount", "b")] == "tmpfs"
    assert by_service[("compose.shm_private_bytes", "b")] == 1024**3


@pytest.mark.parametrize(
    "text", ["", "\x00\x01\x02\xff", "services:", "services:\n  - a\n  - b\n", ":\n  :\n" * 50]
)
def test_compose_bad_input(text: str) -> None:
    result = COMPOSE.parse(text, "bad.yml")
    assert all(f.key.startswith("compose.") for f in result.facts)


def test_compose_deep_nesting_does_not_recurse_forever() -> None:
    text = "services:\n" + "".join(" " * i + f"k{i}:\n" for i in range(1, 3000))
    facts = COMPOSE.parse(text, "deep.yml").facts
    # One service, k1, that sets nothing: only Docker's default shm size.
    assert [(f.key, f.attr("service"), f.attr("default")) for f in facts] == [
        ("compose.shm_private_bytes", "k1", True)
    ]


def test_compose_without_shm_size_gets_the_docker_default() -> None:
    text = (
        "services:\n"
        "  tabby:\n"
        "    build:\n"
        "      context: ..\n"
        "    volumes:\n"
        "      - ./models:/app/models\n"
        "  host:\n"
        "    image: x\n"
        "    ipc: host\n"
    )
    facts = COMPOSE.parse(text, "c.yml").facts
    private = one(facts, "compose.shm_private_bytes")
    assert (private.value, private.attr("default"), private.lineno) == (67108864, True, 2)
    assert private.attr("service") == "tabby"
    assert values(facts, "compose.shm_size_bytes") == []


def test_json_after_a_prompt_and_launcher_lines() -> None:
    body = sample_text(f"docker_inspect/{OOM}")
    text = "$ docker inspect train-llm-sft\n[rank0]: not json\n" + body + "```\n"
    result = INSPECT.parse(text, "pasted.txt")
    assert one(result.facts, "docker.exit_code").value == 137
    assert one(result.facts, "docker.exit_code").lineno == 21 + 2
    assert INSPECT.sniff(text) == 1.0


PARSERS = (INSPECT, COMPOSE)
ALL_SAMPLES = sorted(str(p.relative_to(SAMPLES)) for p in SAMPLES.rglob("*") if p.is_file())


@pytest.mark.parametrize("name", ALL_SAMPLES)
def test_any_sample_cut_anywhere_parses(name: str) -> None:
    """Other kinds' samples (and their halves) never make this parser raise or hang."""
    text = sample_text(name)
    for piece in (text, text[: len(text) // 2], text[len(text) // 3 :]):
        for parser in PARSERS:
            assert 0.0 <= parser.sniff(piece[:65536]) <= 1.0
            parser.parse(piece, name)


def test_compose_lines_starting_with_dashes_terminate() -> None:
    text = "------ Shared Memory Segments --------\n-x: 1\n  - a\n-\nkey: v\n"
    assert COMPOSE.parse(text, "dashes.yml").facts == ()


def _mounts(facts: tuple[Fact, ...]) -> dict[FactValue, Fact]:
    return {f.value: f for f in facts if f.key == "docker.mount"}


def test_mounts_of_a_real_sample_say_which_are_read_only() -> None:
    facts = inspect_sample(DEFAULT_SHM)
    mounts = _mounts(facts)
    assert set(mounts) == {"/workspace/data", "/workspace/output", "/root/.cache/huggingface"}
    data = mounts["/workspace/data"]
    assert data.attr("rw") is False
    assert data.attr("source") == "/data/datasets/imagenet"
    assert data.attr("origin") == "Mounts"
    assert data.text == '"Destination": "/workspace/data"'
    assert data.lineno == 161
    assert mounts["/workspace/output"].attr("rw") is True
    assert one(facts, "docker.readonly_rootfs").value is False


def _container(host: dict[str, object], mounts: list[object] | None = None) -> str:
    return json.dumps([{"Id": "c1", "Name": "/job", "State": {}, "HostConfig": host,
                        "Mounts": mounts or []}], indent=2)  # fmt: skip


def test_binds_tmpfs_and_a_read_only_root_become_mounts() -> None:
    host = {
        "Binds": ["/srv/ckpt:/ckpt:ro,rslave", "cache:/cache", "/etc/localtime:/etc/localtime:ro"],
        "Tmpfs": {"/scratch": "rw,size=1g", "/cfg": "ro"},
        "ReadonlyRootfs": True,
    }
    mounts = _mounts(INSPECT.parse(_container(host), "i.json").facts)
    assert mounts["/ckpt"].attr("rw") is False and mounts["/ckpt"].attr("type") == "bind"
    assert mounts["/cache"].attr("rw") is True and mounts["/cache"].attr("type") == "volume"
    assert mounts["/scratch"].attr("rw") is True and mounts["/cfg"].attr("rw") is False
    assert mounts["/"].attr("rw") is False and mounts["/"].attr("origin") == "ReadonlyRootfs"


def test_the_mounts_list_wins_over_binds_for_the_same_destination() -> None:
    host = {"Binds": ["/srv/data:/data"], "Mounts": [{"Target": "/models", "ReadOnly": True}]}
    mounts = [{"Type": "bind", "Source": "/srv/data", "Destination": "/data/", "RW": False}]
    facts = INSPECT.parse(_container(host, mounts), "i.json").facts
    found = _mounts(facts)
    assert found["/data/"].attr("rw") is False and found["/data/"].attr("origin") == "Mounts"
    assert "/data" not in found
    assert found["/models"].attr("rw") is False
    assert found["/models"].attr("origin") == "HostConfig.Mounts"


@pytest.mark.parametrize("binds", [["no-colon"], ["C:\\data:D:\\data"], [42], "text"])
def test_odd_binds_are_skipped(binds: object) -> None:
    facts = INSPECT.parse(_container({"Binds": binds}), "i.json").facts
    assert not _mounts(facts)
