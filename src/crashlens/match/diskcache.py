"""Where crashlens keeps what is costly to rebuild and cheap to reload between runs.

The compiled hyperscan database and the validated rule library are keyed by a digest of
everything they were built from, so a changed rule file simply gets a new entry; a missing,
corrupt or foreign entry is rebuilt. `CRASHLENS_CACHE_DIR` moves the folder (default
`$XDG_CACHE_HOME/crashlens`, else `~/.cache/crashlens`); `CRASHLENS_NO_CACHE=1` turns it off.
A cache that cannot be written (read-only home) only costs the rebuild next time.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path | None:
    """The cache folder, or None when caching is turned off."""
    if os.environ.get("CRASHLENS_NO_CACHE"):
        return None
    root = os.environ.get("CRASHLENS_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "crashlens"
    )
    return Path(root)


def read_entry(name: str) -> bytes | None:
    """The bytes stored under `name`, or None (no cache, missing, unreadable)."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        return (folder / name).read_bytes()
    except OSError:
        return None


def write_entry(name: str, data: bytes) -> None:
    """Store `data` under `name` atomically: a concurrent reader never sees half a file."""
    folder = cache_dir()
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f"{name}.{os.getpid()}.tmp"
        partial.write_bytes(data)
        partial.replace(folder / name)
    except OSError:
        pass
