"""A GPU's compute capability, from its name or from a line that states it
(`tables/versions/gpu_architectures.toml`).

The launcher parser reads GPU lines a job prints (torch.utils.collect_env's `GPU 0: NVIDIA
GeForce RTX 3090`, TensorFlow's `name: ..., compute capability: 8.6`, XLA's `Compute Capability
8.6`, PyTorch's `with CUDA capability sm_86`) and `decide/gpu_arch.py` reads nvidia-smi's GPU
names, so both ask here.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

from crashlens.errors import PatternError
from crashlens.library import tables_dir

Capability = tuple[int, int]

_STATED = re.compile(
    r"[Cc]ompute [Cc]apability:? ([0-9]{1,2})\.([0-9])\b|CUDA capability sm_([0-9]{1,2})([0-9])\b"
    r"|\bmajor: ([0-9]{1,2}) minor: ([0-9])\b"
)
"""A capability the line states: TensorFlow's and XLA's `compute capability: 8.6`, PyTorch's
`NVIDIA GeForce RTX 3090 with CUDA capability sm_86 is not compatible ...`, TensorFlow 1.x's
device properties `name: GeForce RTX 3090 major: 8 minor: 6 memoryClockRate(GHz): 1.695`."""

GPU_LINE_ANCHOR = (
    r"GeForce|Quadro|TITAN|Tesla [A-Z]|NVIDIA [A-Z]|RTX [0-9A]|A100|A800|H100|H200|H800|V100|P100"
    r"|[Cc]ompute [Cc]apability:? [0-9]|CUDA capability sm_[0-9]|major: [0-9]{1,2} minor: [0-9]"
)
"""Line-safe: the lines that may name a GPU or state its capability (the collector's anchor)."""


def capability(text: str) -> Capability | None:
    """`major.minor` as numbers (`8.6` -> (8, 6)), or None."""
    major, dot, minor = text.strip().partition(".")
    if not dot or not major.isdigit() or not minor.isdigit() or len(major) > 2:
        return None
    return int(major), int(minor)


TABLE_PATH = tables_dir() / "versions" / "gpu_architectures.toml"


def _load_table() -> dict[str, Any]:
    try:
        return tomllib.loads(TABLE_PATH.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise PatternError(str(TABLE_PATH), f"cannot read the GPU architecture table: {e}") from e


TABLE = _load_table()
"""The GPU architecture table, read once: its name families here, its CUDA releases in
`decide/gpu_arch.py`."""


def _families() -> tuple[re.Pattern[str], tuple[Capability, ...]]:
    """The table's name families as one regex (group `f<i>` for family i) and their
    capabilities: one search per line, however many families the table lists."""
    try:
        patterns: list[str] = []
        capabilities: list[Capability] = []
        for index, row in enumerate(TABLE["family"]):
            cap = capability(str(row["capability"]))
            if cap is None:
                raise ValueError(f"capability {row['capability']!r}")
            pattern = str(row["pattern"])
            re.compile(pattern)
            patterns.append(f"(?P<f{index}>{pattern})")
            capabilities.append(cap)
        return re.compile("|".join(patterns)), tuple(capabilities)
    except (KeyError, TypeError, ValueError, re.error) as e:
        raise PatternError(str(TABLE_PATH), f"cannot read the GPU name families: {e}") from e


FAMILIES, _CAPABILITIES = _families()
"""The GPU name families (`tables/versions/gpu_architectures.toml`) as one regex: the leftmost
family found in a name gives its capability; at one place, the one the table lists first."""


def _family_of(text: str) -> tuple[Capability, str] | None:
    m = FAMILIES.search(text)
    if m is None or m.lastgroup is None:
        return None
    return _CAPABILITIES[int(m.lastgroup[1:])], m.group(0)


def capability_of_name(name: str) -> Capability | None:
    """The capability of the family found in a GPU's name, or None."""
    found = _family_of(name)
    return found[0] if found is not None else None


def gpu_on_line(text: str) -> tuple[Capability, str] | None:
    """(capability, how the line shows it) for a line that states a capability or names a GPU
    the table knows: the stated capability first."""
    if m := _STATED.search(text):
        major, minor = next(
            (m.group(i), m.group(i + 1)) for i in (1, 3, 5) if m.group(i) is not None
        )
        return (int(major), int(minor)), "stated"
    return _family_of(text)


def shown(cap: Capability) -> str:
    return f"{cap[0]}.{cap[1]}"
