"""docker-compose / compose-spec YAML: how each service's container will be started.

Read with `text.mini_yaml` (no YAML library): enough of YAML for compose files, and every value
keeps its line, so each fact cites the line that set it.

Facts from docker-compose (attrs `service` on each; every fact has its line number):

* `compose.shm_size_bytes`: int `shm_size` in bytes (docker units, powers of 1024).
* `compose.ipc`: str `ipc`.
* `compose.runtime`: str `runtime`.
* `compose.gpu_count`: int from `deploy.resources.reservations.devices` (`count`, `device_ids`)
  or `gpus:`; -1 = all.
* `compose.dev_shm_mount`: str `tmpfs` | `bind` | `volume` when `tmpfs:` or `volumes:` cover
  /dev/shm; attrs `source`, `size_bytes`.
* `compose.shm_private_bytes`: int, like `docker.shm_private_bytes`: `shm_size` (or the /dev/shm
  tmpfs size) when `ipc` is not shared and no bind/volume replaces /dev/shm. When the service
  sets none of them it gets Docker's default, 67108864, with attrs `default=True` and the
  service's line.
* `compose.mem_limit_bytes`: int `mem_limit` / `deploy.resources.limits.memory`.
* `compose.ulimit_memlock`: int soft memlock limit as written (-1 = unlimited).
* `compose.read_only`: bool `read_only` (true: the container's root filesystem is mounted
  read-only, as `docker run --read-only` and docker inspect's `HostConfig.ReadonlyRootfs`).
"""

from __future__ import annotations

import re

from crashlens.model import Fact, FactValue, InputKind
from crashlens.parsers.base import DocumentParser, DocumentResult, fact
from crashlens.parsers.docker.common import (
    DEV_SHM,
    DOCKER_DEFAULT_SHM,
    NO_OWN_SHM_IPC,
    bind_kind,
    clean_document,
    tmpfs_size_option,
)
from crashlens.text.mini_yaml import YamlNode, read_yaml
from crashlens.text.sizes import docker_size
from crashlens.text.values import bounded_int


class _ServiceFacts:
    """The facts of one compose service."""

    def __init__(self, name: str, service: YamlNode, path: str) -> None:
        self.name = name
        self.service = service
        self.path = path
        self.facts: list[Fact] = []

    def add(self, key: str, value: FactValue, node: YamlNode, **attrs: FactValue | None) -> None:
        self.facts.append(
            fact(key, value, self.path, node.lineno, text=node.raw, service=self.name, **attrs)
        )

    def build(self) -> list[Fact]:
        shm = self._shm_size()
        ipc = self._string("ipc", "compose.ipc")
        self._string("runtime", "compose.runtime")
        mount = self._dev_shm_mount()
        shared = ipc is not None and (
            ipc in NO_OWN_SHM_IPC or ipc.startswith(("container:", "service:"))
        )
        if not shared:
            if mount is None and shm is not None:
                self.add("compose.shm_private_bytes", shm[0], shm[1])
            elif mount is None:
                # Nothing sets /dev/shm: the container gets Docker's default.
                self.add(
                    "compose.shm_private_bytes", DOCKER_DEFAULT_SHM, self.service, default=True
                )
            elif mount is not None and mount[0] == "tmpfs" and mount[2] is not None:
                self.add("compose.shm_private_bytes", mount[2], mount[3], source="tmpfs")
        self._gpus()
        self._memory()
        self._read_only()
        return self.facts

    def _read_only(self) -> None:
        node = self.service.get("read_only")
        text = (node.text() or "").strip().lower() if node else ""
        if node is not None and text in ("true", "false"):
            self.add("compose.read_only", text == "true", node)

    def _string(self, key: str, fact_key: str) -> str | None:
        node = self.service.get(key)
        value = node.text() if node else None
        if node is None or not value:
            return None
        self.add(fact_key, value, node)
        return value

    def _shm_size(self) -> tuple[int, YamlNode] | None:
        node = self.service.get("shm_size")
        size = docker_size(node.text()) if node else None
        if node is None or size is None:
            return None
        self.add("compose.shm_size_bytes", size, node)
        return size, node

    def _dev_shm_mount(self) -> tuple[str, str | None, int | None, YamlNode] | None:
        """(kind, source, tmpfs size, node) of a mount on /dev/shm, and its fact."""
        found = self._find_dev_shm_mount()
        if found is not None:
            kind, source, size, node = found
            self.add("compose.dev_shm_mount", kind, node, source=source, size_bytes=size)
        return found

    def _find_dev_shm_mount(self) -> tuple[str, str | None, int | None, YamlNode] | None:
        tmpfs = self.service.get("tmpfs")
        for item in tmpfs.items() if tmpfs else []:
            where, _, options = (item.text() or "").partition(":")
            if where.rstrip("/") == DEV_SHM:
                return "tmpfs", None, tmpfs_size_option(options), item
        volumes = self.service.get("volumes")
        for item in volumes.items() if volumes else []:
            if isinstance(item.value, dict):  # long syntax
                target = item.get("target")
                if target is None or (target.text() or "").rstrip("/") != DEV_SHM:
                    continue
                kind = (item.get("type") or YamlNode("volume", 0, "")).text() or "volume"
                source = item.get("source")
                size = item.get("tmpfs", "size")
                size_bytes = docker_size(size.text()) if size else None
                return kind, source.text() if source else None, size_bytes, target
            parts = (item.text() or "").split(":")
            if len(parts) >= 2 and parts[1].rstrip("/") == DEV_SHM:
                return bind_kind(parts[0]), parts[0], None, item
        return None

    def _gpus(self) -> None:
        devices = self.service.get("deploy", "resources", "reservations", "devices")
        total: int | None = None
        first: YamlNode | None = None
        for device in devices.items() if devices else []:
            caps = device.get("capabilities")
            cap_names = {item.text() for item in caps.items()} if caps else set()
            driver = device.get("driver")
            if "gpu" not in cap_names and (driver.text() if driver else None) != "nvidia":
                continue
            first = first or device
            count, ids = device.get("count"), device.get("device_ids")
            if count is not None and (count.text() or "").lower() == "all":
                self.add("compose.gpu_count", -1, count)
                return
            digits = (count.text() or "") if count else ""
            number = (bounded_int(digits) if digits.isdigit() else None) or 0
            total = (total or 0) + (len(ids.items()) if ids else number)
        if first is not None and total is not None:
            self.add("compose.gpu_count", total, first)
            return
        gpus = self.service.get("gpus")
        if gpus is not None and (gpus.text() or "").lower() == "all":
            self.add("compose.gpu_count", -1, gpus)

    def _memory(self) -> None:
        limit = self.service.get("mem_limit") or self.service.get(
            "deploy", "resources", "limits", "memory"
        )
        size = docker_size(limit.text()) if limit else None
        if limit is not None and size is not None:
            self.add("compose.mem_limit_bytes", size, limit)
        memlock = self.service.get("ulimits", "memlock")
        if memlock is None:
            return
        soft = memlock.get("soft") if isinstance(memlock.value, dict) else memlock
        value = (soft.text() or "") if soft else ""
        limit_kb = bounded_int(value) if value.lstrip("-").isdigit() else None
        if limit_kb is not None:
            self.add("compose.ulimit_memlock", limit_kb, soft or memlock)


_COMPOSE_TOP_RE = re.compile(r"^services[ \t]*:[ \t]*(?:#.*)?$", re.MULTILINE)
_COMPOSE_SERVICE_KEY_RE = re.compile(
    r"^[ \t]+(?:image|build|shm_size|deploy|ipc|runtime|volumes|command|environment)[ \t]*:",
    re.MULTILINE,
)
_COMPOSE_VERSION_RE = re.compile(r"""^version[ \t]*:[ \t]*['"]?[0-9.]+['"]?[ \t]*$""", re.MULTILINE)


class DockerComposeParser(DocumentParser):
    """A docker-compose / compose-spec YAML file."""

    kind = InputKind.DOCKER_COMPOSE
    name = "docker-compose"
    filenames = ("docker-compose*.yml", "docker-compose*.yaml", "compose*.yml", "compose*.yaml")

    @staticmethod
    def sniff(head: str) -> float:
        if "services" not in head and not head.startswith("version") and "\nversion" not in head:
            return 0.0  # substring gate: every sniffer runs on every file of a scan
        top = _COMPOSE_TOP_RE.search(head) is not None
        keys = _COMPOSE_SERVICE_KEY_RE.search(head) is not None
        if top and keys:
            return 1.0
        if top or (keys and _COMPOSE_VERSION_RE.search(head)):
            return 0.6
        return 0.0

    def parse(self, text: str, path: str) -> DocumentResult:
        text = clean_document(text)
        root = read_yaml(text)
        services = root.get("services")
        warnings: list[str] = []
        if services is None or not isinstance(services.value, dict):
            if not isinstance(root.value, dict) or not root.value:
                return DocumentResult((), ("no YAML mapping found",))
            # Compose file format 1: services are the top-level keys.
            services = root
            warnings.append("no `services:` key: read top-level keys as services")
        facts: list[Fact] = []
        entries = services.value if isinstance(services.value, dict) else {}
        for name, service in entries.items():
            if isinstance(service.value, dict):
                facts.extend(_ServiceFacts(name, service, path).build())
        return DocumentResult(tuple(facts), tuple(warnings))
