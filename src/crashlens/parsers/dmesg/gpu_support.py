"""Which driver branches support a GPU, by its PCI device id (`tables/versions/gpu_driver_support`).

NVRM refuses a GPU that its branch does not know with `The NVIDIA GPU <bus> (PCI ID: 10de:<id>)
installed in this system is not supported by the NVIDIA <version> driver release`, printed over
two or three kernel lines. The same words come out when a card that the branch does support
fails its probe (a faulty GPU among working siblings of the same model): the table tells the two
apart for the devices it lists.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache

from crashlens.errors import PatternError
from crashlens.library import tables_dir


@dataclass(frozen=True, slots=True)
class GpuSupport:
    """The driver branches that support one GPU model."""

    device: str
    """The PCI device id, lower-case hex (`2330`)."""
    name: str
    first: int
    """A branch that certainly supports it (the first one, or a later one where unsure)."""
    last: int | None
    """The last branch that supports it, when support has ended."""


@cache
def support_table() -> dict[str, GpuSupport]:
    """The shipped table, by device id."""
    path = tables_dir() / "versions" / "gpu_driver_support.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return {
            str(row["device"]).lower(): GpuSupport(
                str(row["device"]).lower(),
                str(row["name"]),
                int(row["first"]),
                int(row["last"]) if "last" in row else None,
            )  # fmt: skip
            for row in data["gpu"]
        }
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as exc:
        raise PatternError(str(path), f"cannot read the GPU support table: {exc}") from exc


def branch_of(version: str) -> int | None:
    """The branch of a driver version (`580` of `580.126.09`), or None."""
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() and len(head) <= 4 else None


def listed_support(device: str, version: str) -> str:
    """What the table says of this device under this driver: `supported`, `unsupported` (older
    than its first branch, or newer than its last), or `unknown` (not listed, or no version)."""
    entry = support_table().get(device.lower())
    branch = branch_of(version)
    if entry is None or branch is None:
        return "unknown"
    if branch < entry.first or (entry.last is not None and branch > entry.last):
        return "unsupported"
    return "supported"
