"""Reading files for the bundle: a small value, the tail of a big file, text in pieces.

None of these raise for a file that is missing or unreadable where the caller records the
reason instead (`read_value`, `read_tail`).
"""

from __future__ import annotations

import collections
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from crashlens.collect.steps import AttemptResult
from crashlens.text.sizes import human_bytes

CHUNK = 1024 * 1024
"""Bytes read at a time: big logs are streamed, never read whole."""


def read_value(path: Path) -> str | None:
    """The stripped text of a small file (/proc, /sys), or None when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def read_tail(source: Path, target: Path, limit: int) -> AttemptResult:
    """Copy the last `limit` bytes of `source` to `target`, as an attempt's result."""
    started = time.monotonic()
    try:
        with source.open("rb") as stream, target.open("wb") as out:
            note = copy_tail(stream, out, limit)
    except FileNotFoundError:
        return AttemptResult(str(source), "not-found", detail="no such file")
    except PermissionError:
        return AttemptResult(str(source), "permission-denied", detail="not readable by this user")
    except OSError as error:
        return AttemptResult(str(source), "error", detail=error.strerror or str(error))
    return AttemptResult(str(source), "ok", time.monotonic() - started, detail=note)


def copy_tail(stream: IO[bytes], out: IO[bytes], limit: int) -> str:
    """Copy `stream` to `out`, keeping only its last `limit` bytes cut at a line start.

    Returns a note when something was cut off, else "".
    """
    seekable = False
    try:
        seekable = stream.seekable()
    except (OSError, ValueError):
        seekable = False
    if seekable:
        end = stream.seek(0, os.SEEK_END)
        if end <= limit:
            stream.seek(0)
            shutil.copyfileobj(stream, out, CHUNK)
            return ""
        stream.seek(end - limit)
        stream.readline()  # drop the partial first line
        dropped = stream.tell()
        shutil.copyfileobj(stream, out, CHUNK)
        return f"kept the last {human_bytes(end - dropped)} of {human_bytes(end)}"
    # A decompressing or piped stream cannot seek: keep a window of recent chunks instead.
    chunks: collections.deque[bytes] = collections.deque()
    kept = total = 0
    while chunk := stream.read(CHUNK):
        chunks.append(chunk)
        kept += len(chunk)
        total += len(chunk)
        while kept - len(chunks[0]) >= limit:
            kept -= len(chunks.popleft())
    data = b"".join(chunks)
    if total > limit:
        data = data[len(data) - limit :]
        newline = data.find(b"\n")
        data = data[newline + 1 :] if newline >= 0 else data
        out.write(data)
        return f"kept the last {human_bytes(len(data))} of {human_bytes(total)}"
    out.write(data)
    return ""


def text_chunks(stream: IO[bytes]) -> Iterator[str]:
    """Decoded text in ~1 MiB pieces cut after a newline (bytes that are not UTF-8 survive)."""
    pending = b""
    while chunk := stream.read(CHUNK):
        data = pending + chunk
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            pending = data
            continue
        pending = data[cut:]
        yield data[:cut].decode("utf-8", errors="surrogateescape")
    if pending:
        yield pending.decode("utf-8", errors="surrogateescape")


LEARN_BYTES_PER_INPUT = 32 * 1024 * 1024
LEARN_BYTES_TOTAL = 256 * 1024 * 1024
"""How much of the inputs `analyze --redact` reads again to learn names from: the head of each
input, within a total (the report's own lines are always learned from as well)."""


def input_texts(
    paths: list[str],
    per_input: int = LEARN_BYTES_PER_INPUT,
    total: int = LEARN_BYTES_TOTAL,
) -> Iterator[str]:
    """Decoded text of the inputs under `paths` (stdin is not read again), for the redactor to
    learn from before it writes a report: a host named only in an uncited line or in another
    input is then known in every format alike."""
    from crashlens.inputs.discover import iter_inputs
    from crashlens.model import InputStatus

    left = total
    for item in iter_inputs([p for p in paths if p != "-"]):
        if isinstance(item, InputStatus) or left <= 0:
            continue
        yield item.path
        budget = min(per_input, left)
        try:
            with item.open() as stream:
                for text in text_chunks(stream):
                    yield text
                    budget -= len(text)
                    left -= len(text)
                    if budget <= 0:
                        break
        except OSError:
            continue
