"""Reading an input's bytes: the head for detection, newline-cut chunks for scanning, text.

Logs are read as bytes and never decoded wholesale: a 2 GB log is streamed in chunks cut at a
newline, so memory stays bounded whatever the file size. Runs of NUL bytes (what a node crash
leaves in a log) are text, not a reason to skip the file.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from typing import IO

CHUNK_BYTES = 8 * 1024 * 1024
"""Scan granularity: large enough that per-chunk overhead vanishes, small enough for RSS."""
MAX_LINE_BYTES = 64 * 1024 * 1024
"""A line longer than this is cut into pieces (a 50 MB single-line log must not blow memory)."""
HEAD_BYTES = 64 * 1024
"""How much of an input detection looks at."""

_BINARY_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x7fELF", "an ELF executable or core dump"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF", "a PDF document"),
    (b"SQLite format 3", "an SQLite database"),
    (b"\x80\x04\x95", "a Python pickle"),
    (b"\x93NUMPY", "a NumPy array"),
    (b"PAR1", "a Parquet file"),
    (b"7z\xbc\xaf", "a 7-Zip archive"),
    (b"Rar!", "a RAR archive"),
)


_CONTROL_BYTES = bytes(c for c in range(32) if c not in (9, 10, 12, 13, 27))
"""Control characters that text does not contain (tab, newlines, form feed and ESC do)."""
SNIFF_CHARS = 16 * 1024
"""How much of the head the format sniffers read: every format shows itself in its first lines,
and sniffing is most of the per-file cost of a scan over thousands of small logs."""


def read_head(stream: IO[bytes]) -> bytes:
    """Read up to HEAD_BYTES from a fresh stream."""
    return stream.read(HEAD_BYTES)


def binary_reason(head: bytes) -> str | None:
    """Why `head` is not a log, or None when it is text (NUL runs from a crash are text)."""
    for magic, what in _BINARY_MAGIC:
        if head.startswith(magic):
            return f"binary data ({what}), not a log"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return None
    body = head.replace(b"\x00", b"") if b"\x00" in head else head
    if not body:
        return None  # all NULs so far: a crashed log's hole; the scan will find what follows
    controls = len(body) - len(body.translate(None, _CONTROL_BYTES))
    if controls / len(body) > 0.10:
        share = 100 * controls // len(body)
        return f"binary data ({share}% control bytes in the first 64 KiB), not a log"
    return None


def utf16_encoding(head: bytes) -> str | None:
    """The UTF-16 variant when the input starts with a UTF-16 byte-order mark."""
    if head.startswith(codecs.BOM_UTF16_LE):
        return "utf-16-le"
    if head.startswith(codecs.BOM_UTF16_BE):
        return "utf-16-be"
    return None


def iter_chunks(
    stream: IO[bytes], chunk_bytes: int = CHUNK_BYTES, first: bytes = b""
) -> Iterator[bytes]:
    """Yield the stream's bytes in chunks that end at a newline (except possibly the last).

    `first` is what was already read from the stream (its head): it comes first. A line
    longer than MAX_LINE_BYTES is cut, so a pathological input never needs more than about
    that much memory.
    """
    pending: list[bytes] = [first] if first else []
    held = len(first)
    while True:
        block = stream.read(chunk_bytes)
        if not block:
            break
        cut = block.rfind(b"\n")
        if cut < 0:
            # No line end yet: hold the pieces (joined once, not copied on every block).
            pending.append(block)
            held += len(block)
            if held >= MAX_LINE_BYTES:
                yield b"".join(pending)
                pending, held = [], 0
            continue
        end = cut + 1
        if not pending:
            yield block if end == len(block) else block[:end]
        else:
            # The held line's start and this block up to its last newline, copied once: a
            # slice first copied every byte of a streamed input twice (0.9 s a GiB).
            yield b"".join([*pending, memoryview(block)[:end]])
        rest = block[end:]
        pending, held = ([rest], len(rest)) if rest else ([], 0)
    if pending:
        yield b"".join(pending)


def iter_utf16_chunks(stream: IO[bytes], encoding: str, first: bytes = b"") -> Iterator[bytes]:
    """Transcode a UTF-16 input to UTF-8 chunks (Windows tools sometimes write UTF-16).

    `first` is the head already read (it starts with the byte-order mark).
    """
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    if not first:
        first = stream.read(2)
    for block in iter_chunks(stream, first=first[2:]):  # past the byte-order mark
        text = decoder.decode(block)
        yield text.lstrip("\ufeff").encode("utf-8")
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail.encode("utf-8")


def text_chunks(stream: IO[bytes], head: bytes) -> Iterator[bytes]:
    """The whole input as UTF-8-compatible newline-cut chunks, `head` (already read) first."""
    encoding = utf16_encoding(head)
    if encoding:
        return iter_utf16_chunks(stream, encoding, head)
    if _rewound(stream, len(head)):
        return iter_chunks(stream)  # whole chunks from the start: no head + rest copy
    return iter_chunks(stream, first=head)


def _rewound(stream: IO[bytes], position: int) -> bool:
    """Seek a file back to its start when that is cheap (a regular file or archive member).

    Reading the head again costs less than gluing it to the rest of a small log, which
    copied every byte of a scan once more."""
    try:
        if not stream.seekable() or stream.tell() != position:
            return False
        stream.seek(0)
    except (OSError, ValueError):
        return False
    return True


def sniff_text(head: bytes) -> str:
    """The part of the head the format sniffers read, decoded (UTF-16 too), NULs removed."""
    encoding = utf16_encoding(head)
    text = head.decode(encoding, errors="replace") if encoding else decode(head)
    return text[:SNIFF_CHARS].replace("\x00", "")


def decode(data: bytes) -> str:
    """Decode bytes as UTF-8, each undecodable byte becoming U+FFFD (never raises)."""
    return data.decode("utf-8", errors="replace")
