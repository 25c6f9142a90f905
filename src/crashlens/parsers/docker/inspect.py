"""`docker inspect` / `podman inspect` JSON (or the Engine API's container list).

Both tell how a container was started: how big its /dev/shm is, whether it shares the host's
IPC namespace, its memory limit, capabilities, ulimits and GPUs. The JSON is read tolerantly
(`text.tolerant_json`: trailing garbage, trailing commas, truncation), and as a last resort the
key fields are read with regular expressions (`json_keys`). Every such guess leaves a warning.

Facts from `docker inspect` (one set per container; attrs `container` on each):

* `docker.engine`: str `docker` | `podman` (podman adds OCIRuntime, ConmonPidFile, EffectiveCaps).
* `docker.container`: str container name without the leading `/`.
* `docker.image`: str `Config.Image`.
* `docker.status`: str `State.Status` (`running`, `exited`, ...).
* `docker.exit_code`: int `State.ExitCode` (137 = SIGKILL, 135 = SIGBUS ...).
* `docker.oom_killed`: bool `State.OOMKilled`.
* `docker.error`: str `State.Error` when not empty.
* `docker.shm_size_bytes`: int `HostConfig.ShmSize`.
* `docker.ipc_mode`: str `HostConfig.IpcMode` when set.
* `docker.dev_shm_mount`: str `tmpfs` | `bind` | `volume`: /dev/shm comes from a mount
  (`Mounts`, `HostConfig.Mounts`, `HostConfig.Binds`, `HostConfig.Tmpfs`); attrs `source`,
  `size_bytes` (a tmpfs size when the options give one).
* `docker.shm_private_bytes`: int size of the container's own /dev/shm: `ShmSize`, only when the
  IPC namespace is the container's own (IpcMode not `host`, `container:<id>` or `none`) and no
  mount replaces /dev/shm; a tmpfs mount with a known size gives that size instead.
* `docker.memory_limit_bytes`: int `HostConfig.Memory` (0 = no limit).
* `docker.privileged`: bool; `docker.cap_add`, `docker.cap_drop`, `docker.security_opt`: str,
  comma-joined, only when not empty.
* `docker.ulimit_memlock`: int bytes, the memlock soft limit (-1 = unlimited); attrs `hard`.
* `docker.gpu_count`: int GPUs from `HostConfig.DeviceRequests` (-1 = all); with the legacy
  `nvidia` runtime and no requests, from `NVIDIA_VISIBLE_DEVICES`; 0 when neither gives GPUs;
  attrs `source` (`device_requests` | `devices` (`--device /dev/nvidiaN`, CDI
  `nvidia.com/gpu=...`) | `env`).
* `docker.runtime`: str `HostConfig.Runtime`.
* `docker.mount`: str a mount point inside the container, one per destination (at most
  `MAX_MOUNTS`); attrs `rw` (bool: writable), `source`, `type` (`bind` | `volume` | `tmpfs`
  ...), `origin` (`Mounts` | `HostConfig.Mounts` | `Binds` | `Tmpfs` | `ReadonlyRootfs`). With
  `ReadonlyRootfs: true` the root filesystem is the mount `/` with rw=False, so the mount that
  holds a path is the deepest mount point containing it.
* `docker.readonly_rootfs`: bool `HostConfig.ReadonlyRootfs`.
* `docker.env_tmpdir`: str the directory Python's `tempfile` writes to in the container, from
  `Config.Env` (`TMPDIR`, else `TEMP`, else `TMP`, the order `tempfile.gettempdir` reads them);
  attrs `var`. `TMPDIR=/dev/shm` puts every temporary file in the container's /dev/shm.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from crashlens.model import Fact, FactValue, InputKind
from crashlens.parsers.base import DocumentParser, DocumentResult, fact
from crashlens.parsers.docker.common import (
    DEV_SHM,
    NO_OWN_SHM_IPC,
    bind_kind,
    clean_document,
    tmpfs_size_option,
)
from crashlens.parsers.docker.json_keys import KeyLocator, fallback_container
from crashlens.text.tolerant_json import Repair, json_start, read_first_value

_PODMAN_KEYS = ("OCIRuntime", "ConmonPidFile", "EffectiveCaps", "BoundingCaps", "IsInfra")


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _int(value: object) -> int | None:
    """An int JSON value (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True, slots=True)
class _ShmMount:
    kind: str
    source: str | None
    size: int | None
    key: str
    """The JSON key it was found under, to cite its line."""


def _dev_shm_mount(container: dict[str, Any], host: dict[str, Any]) -> _ShmMount | None:
    """How /dev/shm is mounted into the container, if a mount replaces the default one."""
    for mount in _list(container.get("Mounts")):
        mount = _dict(mount)
        if str(mount.get("Destination", "")).rstrip("/") == DEV_SHM:
            kind = str(mount.get("Type") or "bind")
            return _ShmMount(kind, mount.get("Source") or None, None, "Mounts")
    for mount in _list(host.get("Mounts")):
        mount = _dict(mount)
        if str(mount.get("Target", "")).rstrip("/") == DEV_SHM:
            kind = str(mount.get("Type") or "bind")
            size = _int(_dict(mount.get("TmpfsOptions")).get("SizeBytes"))
            return _ShmMount(kind, mount.get("Source") or None, size, "Mounts")
    for bind in _list(host.get("Binds")):
        parts = str(bind).split(":")
        if len(parts) >= 2 and parts[1].rstrip("/") == DEV_SHM:
            return _ShmMount(bind_kind(parts[0]), parts[0], None, "Binds")
    tmpfs = _dict(host.get("Tmpfs"))
    for target, options in tmpfs.items():
        if str(target).rstrip("/") == DEV_SHM:
            return _ShmMount("tmpfs", None, tmpfs_size_option(str(options or "")), "Tmpfs")
    return None


MAX_MOUNTS = 64
"""Mount facts kept per container (a container with hundreds of mounts is not a training job)."""


@dataclass(frozen=True, slots=True)
class _Mount:
    destination: str
    rw: bool
    source: str | None
    kind: str
    origin: str
    key: str
    """The JSON key to cite (`Destination`, `Target`, `Binds`, `Tmpfs`, `ReadonlyRootfs`)."""


def _bind_mount(bind: str) -> _Mount | None:
    """`SRC:DST[:OPTS]` of `HostConfig.Binds` (`ro` in OPTS: read-only)."""
    parts = bind.split(":")
    if len(parts) < 2 or not parts[1].startswith("/"):
        return None
    options = parts[2].split(",") if len(parts) > 2 else []
    rw = "ro" not in options
    return _Mount(parts[1], rw, parts[0], bind_kind(parts[0]), "Binds", "Binds")


def _mounts(container: dict[str, Any], host: dict[str, Any]) -> list[_Mount]:
    """Every mount of the container, each destination once (what `Mounts` reports first)."""
    found: list[_Mount] = []
    for entry in map(_dict, _list(container.get("Mounts"))):
        destination, rw = entry.get("Destination"), entry.get("RW")
        if isinstance(destination, str) and isinstance(rw, bool):
            kind = str(entry.get("Type") or "bind")
            source = entry.get("Source") or None
            found.append(_Mount(destination, rw, source, kind, "Mounts", "Destination"))
    for entry in map(_dict, _list(host.get("Mounts"))):
        target = entry.get("Target")
        if isinstance(target, str):
            rw = entry.get("ReadOnly") is not True
            kind = str(entry.get("Type") or "bind")
            source = entry.get("Source") or None
            found.append(_Mount(target, rw, source, kind, "HostConfig.Mounts", "Target"))
    found.extend(m for bind in _list(host.get("Binds")) if (m := _bind_mount(str(bind))))
    for target, options in _dict(host.get("Tmpfs")).items():
        rw = "ro" not in str(options or "").split(",")
        found.append(_Mount(str(target), rw, None, "tmpfs", "Tmpfs", "Tmpfs"))
    if host.get("ReadonlyRootfs") is True:
        found.append(_Mount("/", False, None, "rootfs", "ReadonlyRootfs", "ReadonlyRootfs"))
    unique: dict[str, _Mount] = {}
    for mount in found:
        unique.setdefault(mount.destination.rstrip("/") or "/", mount)
    return list(unique.values())[:MAX_MOUNTS]


TEMP_DIR_VARS = ("TMPDIR", "TEMP", "TMP")
"""What Python's `tempfile.gettempdir` reads, in its order."""


def _temp_dir(env: list[Any]) -> tuple[str, str] | None:
    """(variable, directory) of the temporary directory `env` sets, None when none is set."""
    values: dict[str, str] = {}
    for entry in env:
        name, _, value = str(entry).partition("=")
        if name in TEMP_DIR_VARS and value.strip() and name not in values:
            values[name] = value.strip()
    return next(((var, values[var]) for var in TEMP_DIR_VARS if var in values), None)


def _visible_devices_count(env: list[Any]) -> int | None:
    """GPUs named by NVIDIA_VISIBLE_DEVICES (-1 = all), None when it is not set."""
    for entry in env:
        name, _, value = str(entry).partition("=")
        if name != "NVIDIA_VISIBLE_DEVICES":
            continue
        value = value.strip()
        if value == "all":
            return -1
        if value in ("", "none", "void"):
            return 0
        return len([part for part in value.split(",") if part.strip()])
    return None


_NVIDIA_DEV_RE = re.compile(r"^/dev/nvidia[0-9]+$")
_CDI_GPU_RE = re.compile(r"nvidia\.com/gpu=(\S+)")


def _device_gpus(devices: list[Any]) -> int | None:
    """GPUs passed as devices: `--device /dev/nvidia0` or CDI `nvidia.com/gpu=all` (podman)."""
    total: int | None = None
    for device in devices:
        host_path = str(_dict(device).get("PathOnHost", device if isinstance(device, str) else ""))
        cdi = _CDI_GPU_RE.search(host_path)
        if cdi and cdi.group(1) == "all":
            return -1
        if cdi or _NVIDIA_DEV_RE.match(host_path):
            total = (total or 0) + 1
    return total


def _device_request_gpus(requests: list[Any]) -> int | None:
    """GPUs asked for by `--gpus` (DeviceRequests): -1 = all, None when there is no GPU request."""
    total: int | None = None
    for request in requests:
        request = _dict(request)
        caps = json.dumps(request.get("Capabilities"))
        if "gpu" not in caps and request.get("Driver") != "nvidia":
            continue
        count = request.get("Count")
        ids = _list(request.get("DeviceIDs"))
        if count == -1:
            return -1
        wanted: int = len(ids) if ids else (count if isinstance(count, int) else 0)
        total = (total or 0) + wanted
    return total


class _ContainerFacts:
    """Builds the facts of one container object."""

    def __init__(self, container: dict[str, Any], path: str, locator: KeyLocator) -> None:
        self.container = container
        self.host = _dict(container.get("HostConfig"))
        self.state = container.get("State")
        self.path = path
        self.locator = locator
        self.name = str(container.get("Name") or "").lstrip("/") or None
        if self.name is None:
            names = _list(container.get("Names"))
            self.name = str(names[0]).lstrip("/") if names else None
        self.facts: list[Fact] = []

    def add(self, key: str, value: FactValue, json_key: str, **attrs: FactValue | None) -> None:
        lineno, line = self.locator.find(json_key, value)
        text = line if line else f"{key} = {value}"
        self.facts.append(
            fact(key, value, self.path, lineno, text=text, container=self.name, **attrs)
        )

    def build(self) -> list[Fact]:
        self._identity()
        self._state()
        self._shm()
        self._limits()
        self._gpus()
        self._mounts()
        self._tmpdir()
        return self.facts

    def _tmpdir(self) -> None:
        env = _list(_dict(self.container.get("Config")).get("Env"))
        found = _temp_dir(env)
        if found is not None:
            self.add("docker.env_tmpdir", found[1], found[0], var=found[0])

    def _identity(self) -> None:
        podman = any(key in self.container for key in _PODMAN_KEYS)
        self.add("docker.engine", "podman" if podman else "docker", "OCIRuntime" if podman else "")
        if self.name:
            self.add("docker.container", self.name, "Name")
        image = _dict(self.container.get("Config")).get("Image")
        if isinstance(image, str) and image:
            self.add("docker.image", image, "Image")

    def _state(self) -> None:
        if isinstance(self.state, str):  # the Engine's container *list* format
            self.add("docker.status", self.state, "Status")
            return
        state = _dict(self.state)
        if isinstance(state.get("Status"), str):
            self.add("docker.status", state["Status"], "Status")
        exit_code = _int(state.get("ExitCode"))
        if exit_code is not None:
            self.add("docker.exit_code", exit_code, "ExitCode")
        if isinstance(state.get("OOMKilled"), bool):
            self.add("docker.oom_killed", state["OOMKilled"], "OOMKilled")
        if isinstance(state.get("Error"), str) and state["Error"]:
            self.add("docker.error", state["Error"][:300], "Error")

    def _shm(self) -> None:
        shm = _int(self.host.get("ShmSize"))
        if shm is not None:
            self.add("docker.shm_size_bytes", shm, "ShmSize")
        ipc = self.host.get("IpcMode")
        if isinstance(ipc, str) and ipc:
            self.add("docker.ipc_mode", ipc, "IpcMode")
        mount = _dev_shm_mount(self.container, self.host)
        if mount is not None:
            self.add(
                "docker.dev_shm_mount",
                mount.kind,
                mount.key,
                source=mount.source,
                size_bytes=mount.size,
            )
        ipc_text = ipc if isinstance(ipc, str) else ""
        own_ns = ipc_text not in NO_OWN_SHM_IPC and not ipc_text.startswith("container:")
        if not own_ns:
            return
        if mount is None and shm is not None:
            self.add("docker.shm_private_bytes", shm, "ShmSize")
        elif mount is not None and mount.kind == "tmpfs" and mount.size is not None:
            self.add("docker.shm_private_bytes", mount.size, mount.key, source="tmpfs")

    def _limits(self) -> None:
        host = self.host
        memory = _int(host.get("Memory"))
        if memory is not None:
            self.add("docker.memory_limit_bytes", memory, "Memory")
        if isinstance(host.get("Privileged"), bool):
            self.add("docker.privileged", host["Privileged"], "Privileged")
        for key, json_key in (
            ("docker.cap_add", "CapAdd"),
            ("docker.cap_drop", "CapDrop"),
            ("docker.security_opt", "SecurityOpt"),
        ):
            values = [str(item) for item in _list(host.get(json_key))]
            if values:
                self.add(key, ",".join(values), json_key)
        for ulimit in _list(host.get("Ulimits")):
            ulimit = _dict(ulimit)
            soft = _int(ulimit.get("Soft"))
            if ulimit.get("Name") == "memlock" and soft is not None:
                hard = _int(ulimit.get("Hard"))
                self.add("docker.ulimit_memlock", soft, "memlock", hard=hard)
        runtime = host.get("Runtime")
        if isinstance(runtime, str) and runtime:
            self.add("docker.runtime", runtime, "Runtime")

    def _mounts(self) -> None:
        readonly_rootfs = self.host.get("ReadonlyRootfs")
        if isinstance(readonly_rootfs, bool):
            self.add("docker.readonly_rootfs", readonly_rootfs, "ReadonlyRootfs")
        for mount in _mounts(self.container, self.host):
            cite: FactValue = mount.destination if mount.key in ("Destination", "Target") else ""
            lineno, line = self.locator.find(mount.key, cite or None)
            text = line if line else f"docker.mount = {mount.destination}"
            self.facts.append(
                fact(
                    "docker.mount",
                    mount.destination,
                    self.path,
                    lineno,
                    text=text,
                    container=self.name,
                    rw=mount.rw,
                    source=mount.source,
                    type=mount.kind,
                    origin=mount.origin,
                )
            )

    def _gpus(self) -> None:
        if "DeviceRequests" not in self.host and "Runtime" not in self.host:
            return  # too little of HostConfig to say anything about GPUs
        count = _device_request_gpus(_list(self.host.get("DeviceRequests")))
        if count is not None:
            self.add("docker.gpu_count", count, "DeviceRequests", source="device_requests")
            return
        count = _device_gpus(_list(self.host.get("Devices")))
        if count is not None:
            self.add("docker.gpu_count", count, "Devices", source="devices")
            return
        if self.host.get("Runtime") == "nvidia":
            env = _list(_dict(self.container.get("Config")).get("Env"))
            visible = _visible_devices_count(env)
            if visible is not None:
                self.add("docker.gpu_count", visible, "NVIDIA_VISIBLE_DEVICES", source="env")
                return
        self.add("docker.gpu_count", 0, "DeviceRequests", source="device_requests")


def _containers(value: Any) -> list[tuple[int, dict[str, Any]]]:
    """(position among the objects, object) of each container (image inspects lack State)."""
    items = value if isinstance(value, list) else [value]
    objects = [item for item in items if isinstance(item, dict)]
    return [
        (index, item)
        for index, item in enumerate(objects)
        if "HostConfig" in item or "State" in item
    ]


_SNIFF_KEYS = ('"HostConfig"', '"State"', '"Id"', '"ShmSize"', '"IpcMode"', '"Mounts"')


class DockerInspectParser(DocumentParser):
    """`docker inspect` / `podman inspect` / Engine API container JSON."""

    kind = InputKind.DOCKER_INSPECT
    name = "docker inspect"
    filenames = ("*inspect*.json", "docker*.json", "podman*.json", "container*.json")

    @staticmethod
    def sniff(head: str) -> float:
        start = json_start(head)
        if start is None or head[:start].strip().count("\n") > 3:
            return 0.0
        found = sum(key in head for key in _SNIFF_KEYS)
        if '"HostConfig"' in head and '"State"' in head:
            return 1.0
        if '"HostConfig"' in head or '"ShmSize"' in head:
            return 0.8
        return 0.1 * found

    def parse(self, text: str, path: str) -> DocumentResult:
        text = clean_document(text)
        warnings: list[str] = []
        start = json_start(text)
        if start is None:
            return self._fallback(text, path, warnings, "no JSON value found")
        first = read_first_value(text, start)
        if first is None:
            return self._fallback(text, path, warnings, "unreadable JSON")
        if first.repair is Repair.TRAILING_COMMAS:
            warnings.append("malformed JSON (trailing commas): read leniently")
        elif first.repair is Repair.TRUNCATED:
            warnings.append("truncated JSON: read with the tolerant reader")
        end = first.end
        if end is not None and text[end:].strip():
            warnings.append(f"ignored {len(text[end:].strip())} characters after the JSON")
        containers = _containers(first.value)
        if not containers:
            return self._fallback(text, path, warnings, "no container object in the JSON")
        # Object offsets cost a bracket walk: only asked for when several containers need
        # telling apart (or a repair walked the brackets already).
        walked = len(containers) > 1 or first.repair is not None
        starts = first.object_starts() if walked else []
        facts: list[Fact] = []
        stop_all = end if end is not None else len(text)
        bounds = [*starts, stop_all]
        for index, container in containers:
            # The n-th object of the decoded array starts at the n-th `{` the walk saw.
            begin = bounds[index] if index < len(starts) else start
            stop = bounds[index + 1] if index < len(starts) else stop_all
            locator = KeyLocator(text, begin, stop)
            facts.extend(_ContainerFacts(container, path, locator).build())
        return DocumentResult(tuple(facts), tuple(warnings))

    @staticmethod
    def _fallback(text: str, path: str, warnings: list[str], why: str) -> DocumentResult:
        container = fallback_container(text)
        if container is None:
            warnings.append(f"{why}: no docker inspect fields found")
            return DocumentResult((), tuple(warnings))
        warnings.append(f"{why}: key fields read with a regex fallback")
        # The regex hits come from this very text, so their lines are right.
        locator = KeyLocator(text, 0, len(text))
        facts = _ContainerFacts(container, path, locator).build()
        return DocumentResult(tuple(facts), tuple(warnings))
