"""How much a compressed input, an archive or a stream may expand before it is cut.

A plain file on disk is read whole, however big: its size is what the user handed over. What
comes out of a decompressor is not: a 17 KB nested zip can hold 10 GiB and `yes | crashlens
analyze -` never ends. Every decompressed byte is counted against the `Budget` of the input
the user named; past a limit the stream ends where it is, and the input is listed as cut (what
was read is kept) or the archive's remaining members as not read, each with the reason.

The limits have defaults that no real job log reaches and can be changed with environment
variables (`from_env`), so `analyze`, `detect`, `collect` and every worker of a
`scan` apply the same ones.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class InputLimits:
    """The limits applied to decompressed bytes; see the README's input section."""

    member_bytes: int = 1024 * MIB
    """One stream (an archive member, a compressed file, stdin) is cut past this many bytes."""
    stdin_bytes: int = 512 * MIB
    """What is read from stdin (which may never end: `tail -f`, `yes`) before it is cut."""
    archive_bytes: int = 4096 * MIB
    """Everything decompressed from one named input, nested archives included."""
    ratio: float = 200.0
    """Decompressed bytes per compressed byte read, once past `ratio_floor_bytes` (real logs
    compress 5-50x; a bomb of zeros about 1000x per deflate layer)."""
    ratio_floor_bytes: int = 32 * MIB
    """Decompressed bytes every input may give, whatever its ratio."""
    nesting: int = 3
    """Archives inside archives are followed this deep, then skipped with a reason."""
    buffered_zip_bytes: int = 32 * MIB
    """A zip read from a stream (inside another archive, on stdin) is held in memory to reach
    its index at the end; a bigger one is skipped with a reason."""


ENVIRONMENT: dict[str, tuple[str, int]] = {
    "member_bytes": ("CRASHLENS_MAX_MEMBER_MB", MIB),
    "stdin_bytes": ("CRASHLENS_MAX_STDIN_MB", MIB),
    "archive_bytes": ("CRASHLENS_MAX_ARCHIVE_MB", MIB),
    "ratio": ("CRASHLENS_MAX_RATIO", 1),
    "ratio_floor_bytes": ("CRASHLENS_RATIO_FLOOR_MB", MIB),
    "nesting": ("CRASHLENS_MAX_NESTING", 1),
    "buffered_zip_bytes": ("CRASHLENS_MAX_NESTED_ZIP_MB", MIB),
}
"""Per limit, the environment variable that sets it and the unit the variable counts in."""


def from_env(environ: Mapping[str, str] | None = None) -> InputLimits:
    """The default limits, with those set in the environment (a bad value keeps the default)."""
    environ = os.environ if environ is None else environ
    chosen: dict[str, int | float] = {}
    for item in fields(InputLimits):
        variable, unit = ENVIRONMENT[item.name]
        text = environ.get(variable, "").strip()
        if not text:
            continue
        try:
            value = float(text)
        except ValueError:
            continue
        if not 0 < value < 1e15:  # NaN, inf and negatives fail this too
            continue
        chosen[item.name] = value if item.name == "ratio" else max(1, int(value * unit))
    return InputLimits(**chosen)  # type: ignore[arg-type]


def mib(count: int) -> str:
    """A byte count as the user reads it in a reason: `1024 MiB`, `2.5 MiB`, `12 KiB`."""
    if count < 1024:
        return f"{count} bytes"
    if count < MIB:
        return f"{count / 1024:.0f} KiB"
    value = count / MIB
    return f"{value:.0f} MiB" if value >= 10 or value == int(value) else f"{value:.1f} MiB"


class Budget:
    """What one named input has given so far, against its limits.

    Three counts: `raw`, the bytes read as stored (from the disk or the pipe); `decoded`, every
    byte a decompressor gave (nested layers count once per layer), which bounds the work of
    decompressing, skipped members included; `analyzed`, the bytes handed to the analysis,
    which may not exceed `ratio` times the stored size (the file's size on disk, or what was
    read from a pipe). Once a limit is passed, `exceeded` says which, and stays set.
    """

    def __init__(self, limits: InputLimits, stored: int | None = None) -> None:
        self.limits = limits
        self.stored = stored
        self.raw = 0
        self.decoded = 0
        self.analyzed = 0
        self.exceeded: str | None = None

    def take_raw(self, count: int) -> None:
        """Bytes read from the input as stored."""
        self.raw += count

    def decode(self, count: int) -> str | None:
        """Bytes a decompressor gave; returns why the input must stop here, if it must."""
        self.decoded += count
        if self.exceeded is None and self.decoded > self.limits.archive_bytes:
            self.exceeded = (
                f"the input expanded past {mib(self.limits.archive_bytes)} decompressed "
                f"({ENVIRONMENT['archive_bytes'][0]})"
            )
        return self.exceeded

    def analyze(self, count: int) -> str | None:
        """Bytes handed to the analysis; returns why the input must stop here, if it must."""
        self.analyzed += count
        if self.exceeded is None:
            base = self.stored if self.stored is not None else self.raw
            # At the floor already (not past it): a member cut there ends the input's turn.
            floor = self.analyzed >= self.limits.ratio_floor_bytes
            if floor and self.analyzed > self.limits.ratio * max(base, 1):
                self.exceeded = (
                    f"the input expands more than {self.limits.ratio:g}x ({mib(base)} stored "
                    f"gave {mib(self.analyzed)}: a compression bomb? {ENVIRONMENT['ratio'][0]})"
                )
        return self.exceeded


def over_ratio(limits: InputLimits, produced: int, stored: int) -> bool:
    """Whether `produced` bytes from `stored` ones pass the ratio limit (past its floor)."""
    return produced > limits.ratio_floor_bytes and produced > limits.ratio * max(stored, 1)
