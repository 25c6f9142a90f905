"""What discovery yields: a `Source` to read, or an `InputStatus` saying why it was skipped."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from crashlens.model import InputState, InputStatus


def _no_notes() -> tuple[str, ...]:
    return ()


@dataclass(frozen=True, slots=True)
class Source:
    """One input to analyze: a display path and a way to read its (decompressed) bytes."""

    path: str
    """Display path: as the user gave it; members of archives as `archive!member`."""
    open: Callable[[], IO[bytes]]
    """Open a binary stream. Valid until the discovery generator advances; a streamed input
    (an archive member, a compressed file, stdin) can be opened once only."""
    size_bytes: int | None
    """Size on disk or in the archive (compressed sources: the compressed size)."""
    name: str
    """The file name without compression suffixes, used as a weak hint for detection."""
    notes: Callable[[], tuple[str, ...]] = _no_notes
    """How the input was read, for the inputs table: a symbolic link followed, a cut at a
    limit, a truncated or corrupt stream. Complete once its stream has been read."""


Item = Source | InputStatus


def skipped(path: str, reason: str, size: int | None = None) -> InputStatus:
    """An input that could not be analyzed, with the reason shown to the user."""
    return InputStatus(
        path=path, kind=None, status=InputState.SKIPPED, reason=reason, size_bytes=size
    )
