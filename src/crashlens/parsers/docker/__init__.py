"""`docker inspect` / `podman inspect` JSON and docker-compose YAML.

Both tell how a container was started: how big its /dev/shm is, whether it shares the host's
IPC namespace, its memory limit, capabilities, ulimits and GPUs. The JSON reader is tolerant:
it reads the first JSON value and ignores trailing garbage, accepts trailing commas (podman's
docs example), closes a truncated document at its last complete value, and as a last resort
reads the key fields with regular expressions. Every such guess leaves a warning.

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
"""

from __future__ import annotations

import json
import re
from collections import deque
from dataclasses import dataclass
from typing import Any

from crashlens.model import Fact, FactValue, InputKind
from crashlens.parsers.base import ANSI_RE, DocumentParser, DocumentResult, fact

# --------------------------------------------------------------------------------------------
# Sizes in docker units ("16gb", "8G", "512m", plain bytes)
# --------------------------------------------------------------------------------------------

_DOCKER_SIZE_RE = re.compile(r"^(\d+(?:\.\d+)?) ?([kmgtp]?)i?b?$", re.IGNORECASE)
_UNIT_POWER = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def docker_size(value: object) -> int | None:
    """Bytes from a docker size (`16gb`, `8G`, `'2g'`, `8589934592`); powers of 1024."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if not isinstance(value, str):
        return None
    found = _DOCKER_SIZE_RE.match(value.strip().strip("'\""))
    if not found:
        return None
    number, unit = found.groups()
    return int(float(number) * 1024 ** _UNIT_POWER[unit.lower()])


_TMPFS_SIZE_RE = re.compile(r"(?:^|,)size=([^,]+)")


def _tmpfs_opt_size(options: str) -> int | None:
    """The `size=` of tmpfs mount options (`rw,size=8g,mode=1777`), in bytes."""
    found = _TMPFS_SIZE_RE.search(options)
    return docker_size(found.group(1)) if found else None


# --------------------------------------------------------------------------------------------
# Tolerant JSON reading
# --------------------------------------------------------------------------------------------

# `[` or `{` opening a line, followed by the end of the line, `{` or a key: not `[rank0]:`.
_JSON_START_RE = re.compile(r"^[ \t]*(?P<open>\[[ \t]*(?:\r?$|\{)|\{[ \t]*(?:\r?$|\"))", re.M)
# A complete string, a string cut by the end of the text, or a structural character.
_JSON_TOKEN_RE = re.compile(
    r'(?P<str>"(?:[^"\\]|\\[\s\S])*")|(?P<cut>"(?:[^"\\]|\\[\s\S])*\Z)|[{}\[\],]'
)
_TRAILING_COMMA_RE = re.compile(r'("(?:[^"\\]|\\[\s\S])*")|,(\s*[\]}])')
_MAX_REPAIRS = 64
"""How many cut points the truncation repair tries, latest first."""

_DECODER = json.JSONDecoder()


@dataclass(slots=True)
class _Scan:
    """Structure of the first JSON value: container offsets and safe cut points."""

    object_starts: list[int]
    """Offsets of the objects that are containers (top-level, or inside a top-level array)."""
    end: int | None
    """Offset just past the first value, None when it never closes (truncated)."""
    cuts: deque[tuple[int, tuple[str, ...]]]
    """(offset, open brackets) where the text before `offset` ends with a complete value."""


def _scan(text: str, start: int) -> _Scan:
    """Walk the brackets of the JSON value at `start` without decoding it."""
    stack: list[str] = []
    starts: list[int] = []
    cuts: deque[tuple[int, tuple[str, ...]]] = deque(maxlen=_MAX_REPAIRS)
    for token in _JSON_TOKEN_RE.finditer(text, start):
        if token.lastgroup == "str":
            continue
        if token.lastgroup == "cut":
            break  # the document was cut inside a string
        char = token.group()
        if char in "[{":
            if char == "{" and (not stack or stack == ["["]):
                starts.append(token.start())
            stack.append(char)
        elif char in "]}":
            if stack:
                stack.pop()
            if not stack:
                return _Scan(starts, token.end(), cuts)
            cuts.append((token.end(), tuple(stack)))
        else:  # a comma outside strings follows a complete value
            cuts.append((token.start(), tuple(stack)))
    return _Scan(starts, None, cuts)


def _strip_trailing_commas(text: str) -> str:
    """Remove commas before `]`/`}` (outside strings), as podman's docs example has."""
    return _TRAILING_COMMA_RE.sub(lambda m: m.group(1) or m.group(2), text)


def _decode_first(text: str) -> tuple[Any, int]:
    """Decode the first JSON value of text, accepting trailing commas; raises ValueError."""
    try:
        return _DECODER.raw_decode(text)
    except ValueError:
        return _DECODER.raw_decode(_strip_trailing_commas(text))


def _repair_truncated(text: str, scan: _Scan, start: int) -> Any:
    """Close a truncated document at its latest cut point that decodes; None when none does."""
    for offset, stack in reversed(scan.cuts):
        closers = "".join("]" if bracket == "[" else "}" for bracket in reversed(stack))
        try:
            return _decode_first(text[start:offset] + closers)[0]
        except ValueError:
            continue
    return None


# Regex fallback: the fields that matter, read wherever they appear first.
_FALLBACK_FIELDS: dict[str, tuple[str, re.Pattern[str]]] = {
    name: (section, re.compile(r'"' + name + r'"[ \t\r\n]*:[ \t\r\n]*' + value))
    for name, section, value in (
        ("ShmSize", "HostConfig", r"(-?\d+)"),
        ("IpcMode", "HostConfig", r'"([^"\n]*)"'),
        ("Memory", "HostConfig", r"(-?\d+)"),
        ("Privileged", "HostConfig", r"(true|false)"),
        ("Runtime", "HostConfig", r'"([^"\n]*)"'),
        ("OOMKilled", "State", r"(true|false)"),
        ("ExitCode", "State", r"(-?\d+)"),
        ("Status", "State", r'"([^"\n]*)"'),
        ("Name", "", r'"([^"\n]*)"'),
    )
}


def _fallback_container(text: str) -> dict[str, Any] | None:
    """A container object rebuilt from regex hits, for JSON too broken to decode."""
    container: dict[str, Any] = {"HostConfig": {}, "State": {}}
    found = False
    for name, (section, pattern) in _FALLBACK_FIELDS.items():
        hit = pattern.search(text)
        if not hit:
            continue
        raw = hit.group(1)
        value: Any = raw
        if raw in ("true", "false"):
            value = raw == "true"
        elif name in ("ShmSize", "Memory", "ExitCode"):
            value = int(raw)
        (container[section] if section else container)[name] = value
        found = found or bool(section)
    return container if found else None


# --------------------------------------------------------------------------------------------
# Locating a JSON key's line, for evidence
# --------------------------------------------------------------------------------------------

_KEY_RES: dict[str, re.Pattern[str]] = {
    key: re.compile(r'"' + key + r'"[ \t\r\n]*:')
    for key in (
        *("ShmSize", "IpcMode", "Memory", "Privileged", "CapAdd", "CapDrop", "SecurityOpt"),
        *("Runtime", "Ulimits", "DeviceRequests", "OOMKilled", "ExitCode", "Status", "Error"),
        *("Name", "Image", "Mounts", "Binds", "Tmpfs", "OCIRuntime", "Devices"),
    )
}
_KEY_RES["memlock"] = re.compile(r'"Name"[ \t\r\n]*:[ \t\r\n]*"memlock"')
_KEY_RES["NVIDIA_VISIBLE_DEVICES"] = re.compile(r'"NVIDIA_VISIBLE_DEVICES=')


class _Locator:
    """Finds the line of a key inside one container's part of the original text."""

    def __init__(self, text: str, start: int, end: int) -> None:
        self.text = text
        self.start = start
        self.end = end

    def find(self, key: str, value: FactValue | None = None) -> tuple[int | None, str | None]:
        """(1-based line, stripped source line) of the first `"key":` in the region.

        A string `value` picks the line that holds it (`"Name"` and `"Image"` occur often).
        """
        pattern = _KEY_RES.get(key)
        if pattern is None:
            return None, None
        hit = None
        if isinstance(value, str):
            # The key whose string value is `value` (a leading `/` allowed, as in "Name"),
            # tested in place: compiling a regex per value cost more than the whole parse.
            wanted = f'"{value}"'
            for found in pattern.finditer(self.text, self.start, self.end):
                at = found.end()
                while at < len(self.text) and self.text[at] in " \t\r\n":
                    at += 1
                if self.text.startswith(wanted, at) or self.text.startswith(f'"/{value}"', at):
                    hit = found
                    break
        if hit is None:
            hit = pattern.search(self.text, self.start, self.end)
        if hit is None:
            return None, None
        line_start = self.text.rfind("\n", 0, hit.start()) + 1
        line_end = self.text.find("\n", hit.start())
        line = self.text[line_start : line_end if line_end >= 0 else len(self.text)]
        return self.text.count("\n", 0, hit.start()) + 1, line.strip().rstrip(",")


# --------------------------------------------------------------------------------------------
# docker inspect
# --------------------------------------------------------------------------------------------

_PODMAN_KEYS = ("OCIRuntime", "ConmonPidFile", "EffectiveCaps", "BoundingCaps", "IsInfra")
_NO_OWN_SHM_IPC = ("host", "none")
"""IpcMode values with no /dev/shm of the container's own (plus `container:<id>`)."""
_DEV_SHM = "/dev/shm"
_DOCKER_DEFAULT_SHM = 64 * 1024 * 1024
"""What `docker run` / compose give /dev/shm when nothing sets its size."""


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


def _bind_kind(source: str) -> str:
    """A `-v SRC:DST` source is a host path (bind) or a named volume."""
    return "bind" if source.startswith(("/", ".", "~")) else "volume"


def _dev_shm_mount(container: dict[str, Any], host: dict[str, Any]) -> _ShmMount | None:
    """How /dev/shm is mounted into the container, if a mount replaces the default one."""
    for mount in _list(container.get("Mounts")):
        mount = _dict(mount)
        if str(mount.get("Destination", "")).rstrip("/") == _DEV_SHM:
            kind = str(mount.get("Type") or "bind")
            return _ShmMount(kind, mount.get("Source") or None, None, "Mounts")
    for mount in _list(host.get("Mounts")):
        mount = _dict(mount)
        if str(mount.get("Target", "")).rstrip("/") == _DEV_SHM:
            kind = str(mount.get("Type") or "bind")
            size = _int(_dict(mount.get("TmpfsOptions")).get("SizeBytes"))
            return _ShmMount(kind, mount.get("Source") or None, size, "Mounts")
    for bind in _list(host.get("Binds")):
        parts = str(bind).split(":")
        if len(parts) >= 2 and parts[1].rstrip("/") == _DEV_SHM:
            return _ShmMount(_bind_kind(parts[0]), parts[0], None, "Binds")
    tmpfs = _dict(host.get("Tmpfs"))
    for target, options in tmpfs.items():
        if str(target).rstrip("/") == _DEV_SHM:
            return _ShmMount("tmpfs", None, _tmpfs_opt_size(str(options or "")), "Tmpfs")
    return None


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

    def __init__(self, container: dict[str, Any], path: str, locator: _Locator) -> None:
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
        return self.facts

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
        own_ns = ipc_text not in _NO_OWN_SHM_IPC and not ipc_text.startswith("container:")
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


def _json_start(text: str) -> int | None:
    """Offset of the first line that opens a JSON value (skips a pasted `$ docker inspect`)."""
    found = _JSON_START_RE.search(text)
    return found.start("open") if found else None


def _clean(text: str) -> str:
    text = text.lstrip("\ufeff")
    if "\x1b" in text:
        text = ANSI_RE.sub("", text)
    return text.replace("\x00", "")


_SNIFF_KEYS = ('"HostConfig"', '"State"', '"Id"', '"ShmSize"', '"IpcMode"', '"Mounts"')


class DockerInspectParser(DocumentParser):
    """`docker inspect` / `podman inspect` / Engine API container JSON."""

    kind = InputKind.DOCKER_INSPECT
    name = "docker inspect"
    filenames = ("*inspect*.json", "docker*.json", "podman*.json", "container*.json")

    @staticmethod
    def sniff(head: str) -> float:
        start = _json_start(head)
        if start is None or head[:start].strip().count("\n") > 3:
            return 0.0
        found = sum(key in head for key in _SNIFF_KEYS)
        if '"HostConfig"' in head and '"State"' in head:
            return 1.0
        if '"HostConfig"' in head or '"ShmSize"' in head:
            return 0.8
        return 0.1 * found

    def parse(self, text: str, path: str) -> DocumentResult:
        text = _clean(text)
        warnings: list[str] = []
        start = _json_start(text)
        if start is None:
            return self._fallback(text, path, warnings, "no JSON value found")
        # The bracket walk (`_scan`) costs more than decoding: it runs only when decoding
        # fails (to repair a truncated document) or to split several containers by offset.
        scan: _Scan | None = None
        value: Any = None
        end: int | None = None
        try:
            value, end = _DECODER.raw_decode(text, start)
        except ValueError:
            value = None
        if value is None:
            scan = _scan(text, start)
            end = scan.end
            try:
                value, length = _decode_first(text[start:])
                end = start + length if end is None else end
                warnings.append("malformed JSON (trailing commas): read leniently")
            except ValueError:
                value = _repair_truncated(text, scan, start)
                if value is None:
                    return self._fallback(text, path, warnings, "unreadable JSON")
                warnings.append("truncated JSON: read with the tolerant reader")
        if end is not None and text[end:].strip():
            warnings.append(f"ignored {len(text[end:].strip())} characters after the JSON")
        containers = _containers(value)
        if not containers:
            return self._fallback(text, path, warnings, "no container object in the JSON")
        if len(containers) > 1 and scan is None:
            scan = _scan(text, start)
        starts = scan.object_starts if scan is not None else []
        facts: list[Fact] = []
        stop_all = end if end is not None else len(text)
        bounds = [*starts, stop_all]
        for index, container in containers:
            # The n-th object of the decoded array starts at the n-th `{` the scan saw.
            begin = bounds[index] if index < len(starts) else start
            stop = bounds[index + 1] if index < len(starts) else stop_all
            locator = _Locator(text, begin, stop)
            facts.extend(_ContainerFacts(container, path, locator).build())
        return DocumentResult(tuple(facts), tuple(warnings))

    @staticmethod
    def _fallback(text: str, path: str, warnings: list[str], why: str) -> DocumentResult:
        container = _fallback_container(text)
        if container is None:
            warnings.append(f"{why}: no docker inspect fields found")
            return DocumentResult((), tuple(warnings))
        warnings.append(f"{why}: key fields read with a regex fallback")
        # The regex hits come from this very text, so their lines are right.
        locator = _Locator(text, 0, len(text))
        facts = _ContainerFacts(container, path, locator).build()
        return DocumentResult(tuple(facts), tuple(warnings))


# --------------------------------------------------------------------------------------------
# docker-compose YAML, read by indentation (no YAML library)
# --------------------------------------------------------------------------------------------

_YAML_KEY_RE = re.compile(r"""^("[^"]*"|'[^']*'|[^\s#'"{\[][^:#]*?)[ \t]*:(?:[ \t]+(.*)|)$""")
_YAML_COMMENT_RE = re.compile(r"""[ \t]+#.*$""")
_MAX_YAML_DEPTH = 64
"""Deeper nesting is not compose; stop descending instead of recursing without end."""


@dataclass(slots=True)
class _YLine:
    lineno: int
    indent: int
    content: str
    raw: str


@dataclass(slots=True)
class _YNode:
    """A YAML value with the line it was written on."""

    value: str | dict[str, _YNode] | list[_YNode] | None
    lineno: int
    raw: str

    def get(self, *keys: str) -> _YNode | None:
        """The node at a path of mapping keys, or None."""
        node: _YNode | None = self
        for key in keys:
            if node is None or not isinstance(node.value, dict):
                return None
            node = node.value.get(key)
        return node

    def text(self) -> str | None:
        """The scalar as a string (None for mappings, lists and empty values)."""
        return self.value if isinstance(self.value, str) else None

    def items(self) -> list[_YNode]:
        """The list items (a scalar counts as a one-item list)."""
        if isinstance(self.value, list):
            return self.value
        return [self] if isinstance(self.value, str) else []


def _strip_comment(content: str) -> str:
    """Drop a trailing `# comment` unless the `#` sits inside quotes."""
    if "#" not in content:
        return content
    if content.lstrip().startswith("#"):
        return ""
    quote: str | None = None
    for index, char in enumerate(content):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and index > 0 and content[index - 1] in " \t":
            return content[:index].rstrip()
    return content


def _yaml_lines(text: str) -> list[_YLine]:
    lines: list[_YLine] = []
    for lineno, raw in enumerate(text.split("\n"), start=1):
        raw = raw.rstrip("\r")
        expanded = raw.replace("\t", "    ")
        content = _strip_comment(expanded.strip())
        if not content or content in ("---", "..."):
            continue
        lines.append(_YLine(lineno, len(expanded) - len(expanded.lstrip()), content, raw.strip()))
    return lines


def _is_item(line: _YLine) -> bool:
    """Whether a line is a block sequence item (`- x` or a bare `-`)."""
    return line.content == "-" or line.content.startswith("- ")


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _scalar(value: str, lineno: int, raw: str) -> _YNode:
    """A scalar, or a one-level flow list/mapping (`[gpu]`, `{size: 1g}`)."""
    value = value.strip()
    if value.startswith("[") and value.endswith("]"):
        parts = [part for part in value[1:-1].split(",") if part.strip()]
        return _YNode([_YNode(_unquote(part), lineno, raw) for part in parts], lineno, raw)
    if value.startswith("{") and value.endswith("}"):
        mapping: dict[str, _YNode] = {}
        for part in value[1:-1].split(","):
            key, _, item = part.partition(":")
            if key.strip():
                mapping[_unquote(key)] = _YNode(_unquote(item), lineno, raw)
        return _YNode(mapping, lineno, raw)
    return _YNode(_unquote(value), lineno, raw)


class _YamlReader:
    """Block mappings and sequences by indentation: enough of YAML for compose files."""

    def __init__(self, text: str) -> None:
        self.lines = _yaml_lines(text)
        self.pos = 0

    def read(self) -> _YNode:
        root = _YNode({}, 1, "")
        while self.pos < len(self.lines):
            start = self.pos
            node = self._block(self.lines[self.pos].indent, 0)
            if isinstance(node.value, dict) and isinstance(root.value, dict):
                root.value.update(node.value)
            if self.pos == start:
                self.pos += 1  # a line no block took: skip it rather than loop
        return root

    def _block(self, indent: int, depth: int) -> _YNode:
        if _is_item(self.lines[self.pos]):
            return self._sequence(indent, depth)
        return self._mapping(indent, depth)

    def _child(self, parent_indent: int, depth: int, lineno: int, raw: str) -> _YNode:
        """The block value after `key:` (deeper lines, or a same-indent `- ` list)."""
        if self.pos >= len(self.lines) or depth >= _MAX_YAML_DEPTH:
            return _YNode(None, lineno, raw)
        nxt = self.lines[self.pos]
        if nxt.indent > parent_indent or (nxt.indent == parent_indent and _is_item(nxt)):
            return self._block(nxt.indent, depth + 1)
        return _YNode(None, lineno, raw)

    def _mapping(self, indent: int, depth: int) -> _YNode:
        first = self.lines[self.pos]
        mapping: dict[str, _YNode] = {}
        while self.pos < len(self.lines):
            line = self.lines[self.pos]
            if line.indent < indent or (line.indent == indent and _is_item(line)):
                break
            self.pos += 1
            found = _YAML_KEY_RE.match(line.content) if line.indent == indent else None
            if not found:
                continue  # continuation of a multi-line scalar, or not YAML at all
            key, rest = _unquote(found.group(1)), (found.group(2) or "").strip()
            if rest and rest[0] in "|>":
                mapping[key] = _YNode(None, line.lineno, line.raw)
                self._skip_deeper(indent)
            elif rest:
                mapping[key] = _scalar(rest, line.lineno, line.raw)
            else:
                child = self._child(indent, depth, line.lineno, line.raw)
                # A block value is cited by its key's line (`trainer:`, `devices:`).
                child.lineno, child.raw = line.lineno, line.raw
                mapping[key] = child
        return _YNode(mapping, first.lineno, first.raw)

    def _sequence(self, indent: int, depth: int) -> _YNode:
        first = self.lines[self.pos]
        items: list[_YNode] = []
        while self.pos < len(self.lines):
            line = self.lines[self.pos]
            if line.indent != indent or not _is_item(line):
                if line.indent > indent:
                    self.pos += 1
                    continue
                break
            rest = line.content[1:].strip()
            if not rest:
                self.pos += 1
                items.append(self._child(indent, depth, line.lineno, line.raw))
            elif _YAML_KEY_RE.match(rest) and depth < _MAX_YAML_DEPTH:
                # `- key: value` opens a mapping whose keys line up with `key`.
                offset = indent + len(line.content) - len(rest)
                self.lines[self.pos] = _YLine(line.lineno, offset, rest, line.raw)
                items.append(self._mapping(offset, depth + 1))
            else:
                self.pos += 1
                items.append(_scalar(rest, line.lineno, line.raw))
        return _YNode(items, first.lineno, first.raw)

    def _skip_deeper(self, indent: int) -> None:
        while self.pos < len(self.lines) and self.lines[self.pos].indent > indent:
            self.pos += 1


class _ServiceFacts:
    """The facts of one compose service."""

    def __init__(self, name: str, service: _YNode, path: str) -> None:
        self.name = name
        self.service = service
        self.path = path
        self.facts: list[Fact] = []

    def add(self, key: str, value: FactValue, node: _YNode, **attrs: FactValue | None) -> None:
        self.facts.append(
            fact(key, value, self.path, node.lineno, text=node.raw, service=self.name, **attrs)
        )

    def build(self) -> list[Fact]:
        shm = self._shm_size()
        ipc = self._string("ipc", "compose.ipc")
        self._string("runtime", "compose.runtime")
        mount = self._dev_shm_mount()
        shared = ipc is not None and (
            ipc in _NO_OWN_SHM_IPC or ipc.startswith(("container:", "service:"))
        )
        if not shared:
            if mount is None and shm is not None:
                self.add("compose.shm_private_bytes", shm[0], shm[1])
            elif mount is None:
                # Nothing sets /dev/shm: the container gets Docker's default.
                self.add(
                    "compose.shm_private_bytes", _DOCKER_DEFAULT_SHM, self.service, default=True
                )
            elif mount is not None and mount[0] == "tmpfs" and mount[2] is not None:
                self.add("compose.shm_private_bytes", mount[2], mount[3], source="tmpfs")
        self._gpus()
        self._memory()
        return self.facts

    def _string(self, key: str, fact_key: str) -> str | None:
        node = self.service.get(key)
        value = node.text() if node else None
        if node is None or not value:
            return None
        self.add(fact_key, value, node)
        return value

    def _shm_size(self) -> tuple[int, _YNode] | None:
        node = self.service.get("shm_size")
        size = docker_size(node.text()) if node else None
        if node is None or size is None:
            return None
        self.add("compose.shm_size_bytes", size, node)
        return size, node

    def _dev_shm_mount(self) -> tuple[str, str | None, int | None, _YNode] | None:
        """(kind, source, tmpfs size, node) of a mount on /dev/shm, and its fact."""
        found = self._find_dev_shm_mount()
        if found is not None:
            kind, source, size, node = found
            self.add("compose.dev_shm_mount", kind, node, source=source, size_bytes=size)
        return found

    def _find_dev_shm_mount(self) -> tuple[str, str | None, int | None, _YNode] | None:
        tmpfs = self.service.get("tmpfs")
        for item in tmpfs.items() if tmpfs else []:
            where, _, options = (item.text() or "").partition(":")
            if where.rstrip("/") == _DEV_SHM:
                return "tmpfs", None, _tmpfs_opt_size(options), item
        volumes = self.service.get("volumes")
        for item in volumes.items() if volumes else []:
            if isinstance(item.value, dict):  # long syntax
                target = item.get("target")
                if target is None or (target.text() or "").rstrip("/") != _DEV_SHM:
                    continue
                kind = (item.get("type") or _YNode("volume", 0, "")).text() or "volume"
                source = item.get("source")
                size = item.get("tmpfs", "size")
                size_bytes = docker_size(size.text()) if size else None
                return kind, source.text() if source else None, size_bytes, target
            parts = (item.text() or "").split(":")
            if len(parts) >= 2 and parts[1].rstrip("/") == _DEV_SHM:
                return _bind_kind(parts[0]), parts[0], None, item
        return None

    def _gpus(self) -> None:
        devices = self.service.get("deploy", "resources", "reservations", "devices")
        total: int | None = None
        first: _YNode | None = None
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
            number = int(count.text() or "") if count and (count.text() or "").isdigit() else 0
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
        if value.lstrip("-").isdigit():
            self.add("compose.ulimit_memlock", int(value), soft or memlock)


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
        text = _clean(text)
        root = _YamlReader(text).read()
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
