"""What `docker inspect` and compose share: how /dev/shm is provided, and cleaning a paste."""

from __future__ import annotations

import re

from crashlens.parsers.base import ANSI_RE
from crashlens.text.sizes import docker_size

DEV_SHM = "/dev/shm"
DOCKER_DEFAULT_SHM = 64 * 1024 * 1024
"""What `docker run` / compose give /dev/shm when nothing sets its size."""
NO_OWN_SHM_IPC = ("host", "none")
"""IpcMode values with no /dev/shm of the container's own (plus `container:<id>`)."""

_TMPFS_SIZE_RE = re.compile(r"(?:^|,)size=([^,]+)")


def tmpfs_size_option(options: str) -> int | None:
    """The `size=` of tmpfs mount options (`rw,size=8g,mode=1777`), in bytes."""
    found = _TMPFS_SIZE_RE.search(options)
    return docker_size(found.group(1)) if found else None


def bind_kind(source: str) -> str:
    """A `-v SRC:DST` source is a host path (bind) or a named volume."""
    return "bind" if source.startswith(("/", ".", "~")) else "volume"


def clean_document(text: str) -> str:
    """Drop a byte-order mark, ANSI escapes and NUL bytes from a pasted document."""
    text = text.lstrip("\ufeff")
    if "\x1b" in text:
        text = ANSI_RE.sub("", text)
    return text.replace("\x00", "")
