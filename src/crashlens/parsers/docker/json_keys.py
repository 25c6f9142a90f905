"""`docker inspect` JSON read as text: the line each key is on, and a last-resort reader.

Facts cite the line their key was written on, found by regex in the container's part of the
original text (the decoded JSON keeps no positions). When the JSON cannot be decoded even
tolerantly, the fields that matter are read by regex wherever they first appear.
"""

from __future__ import annotations

import re
from typing import Any

from crashlens.model import FactValue
from crashlens.text.values import bounded_int

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


def fallback_container(text: str) -> dict[str, Any] | None:
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
            value = bounded_int(raw)
            if value is None:
                continue  # an absurd number: this field is left unread
        (container[section] if section else container)[name] = value
        found = found or bool(section)
    return container if found else None


_KEY_RES: dict[str, re.Pattern[str]] = {
    key: re.compile(r'"' + key + r'"[ \t\r\n]*:')
    for key in (
        *("ShmSize", "IpcMode", "Memory", "Privileged", "CapAdd", "CapDrop", "SecurityOpt"),
        *("Runtime", "Ulimits", "DeviceRequests", "OOMKilled", "ExitCode", "Status", "Error"),
        *("Name", "Image", "Mounts", "Binds", "Tmpfs", "OCIRuntime", "Devices"),
        *("Destination", "Target", "ReadonlyRootfs"),
    )
}
_KEY_RES["memlock"] = re.compile(r'"Name"[ \t\r\n]*:[ \t\r\n]*"memlock"')
_KEY_RES["NVIDIA_VISIBLE_DEVICES"] = re.compile(r'"NVIDIA_VISIBLE_DEVICES=')
# the temporary directory's variables, as `Config.Env` entries
_KEY_RES.update({var: re.compile(f'"{var}=') for var in ("TMPDIR", "TEMP", "TMP")})


class KeyLocator:
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
