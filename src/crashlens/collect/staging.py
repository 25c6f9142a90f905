"""The bundle being written: raw outputs in a private folder, before redaction and packing."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

LOGS_DIR = "logs"
"""Where copies of the logs named on the command line go in the bundle."""


class Staging:
    """A private temporary folder the raw outputs go to before redaction and packing."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="crashlens-collect-")
        self.root = Path(self._tmp.name)
        os.chmod(self.root, 0o700)
        self.files: list[str] = []
        """Bundle names in the order they were written."""
        self.logs: set[str] = set()
        """The names that are copied logs (redacted in one pass; their names may be personal)."""

    def path(self, name: str) -> Path:
        """Where the bundle file `name` is staged (its folder is created)."""
        target = self.root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        return target

    def add(self, name: str, *, log: bool = False) -> None:
        """Record that `name` was written and goes into the bundle."""
        if name not in self.files:
            self.files.append(name)
        if log:
            self.logs.add(name)

    def unique(self, name: str) -> str:
        """`name`, or `name-2`, `name-3`... before its suffix when it is already taken."""
        if name not in self.files:
            return name
        stem, dot, suffix = name.rpartition(".")
        if not stem or "/" in suffix:
            stem, dot, suffix = name, "", ""
        n = 2
        while True:
            candidate = f"{stem}-{n}{dot}{suffix}"
            if candidate not in self.files:
                return candidate
            n += 1

    def cleanup(self) -> None:
        """Remove the folder and everything staged in it."""
        self._tmp.cleanup()
