"""Byte streams for inputs that are not plain files: decompressed, counted, cut, replayed.

Every stream here reads in bounded pieces and never raises for bad data: a decoder error, a
truncated stream or a passed limit ends the stream where it is, and a sentence saying so goes
into the input's `Notes`, which the report shows next to the input. So a `.gz` cut at two
thirds still gives the two thirds that decoded, with a note, instead of being thrown away.

- `Counting`: the stored bytes of a named input (file or pipe), counted for the ratio limit.
- `Decompressed`: gzip, bzip2, xz and zstd decoded incrementally from low-level decoders, each
  call's output bounded (a bomb never materializes), concatenated members followed.
- `Bounded`: the stream handed to the analysis: cut at a byte limit, errors turned into notes.
- `Replay`: the head already read to sniff a stream, given back before the rest.
"""

from __future__ import annotations

import bz2
import io
import lzma
import zlib
from collections.abc import Callable
from typing import IO, Any, Protocol, cast

from crashlens.inputs.limits import ENVIRONMENT, Budget, mib, over_ratio

RAW_CHUNK = 64 * 1024
"""Stored bytes handed to a decoder at a time."""
OUTPUT_CHUNK = 1024 * 1024
"""Most bytes one decoder call may give (a bomb's 1000x expands one read by this, no more)."""
ZSTD_PIECE = 1024
"""zstd has no output limit per call, and a 4-byte RLE block expands to 128 KiB: it is fed
1 KiB at a time, so one call gives at most 32 MiB."""
MAGICS = {
    "gzip": b"\x1f\x8b",
    "bzip2": b"BZh",
    "xz": b"\xfd7zXZ\x00",
    "zstd": b"(\xb5/\xfd",
}


class Notes:
    """What happened while an input was read, in the words the report shows (no duplicates)."""

    def __init__(self, *first: str) -> None:
        self.base = first
        """What was known before reading (how the input was reached): members inherit it."""
        self._items: list[str] = list(first)
        self.bomb = False
        """Set when the stream was cut for expanding past the ratio limit."""

    def add(self, text: str) -> None:
        if text not in self._items:
            self._items.append(text)

    def __call__(self) -> tuple[str, ...]:
        return tuple(self._items)

    def last(self) -> str | None:
        return self._items[-1] if self._items else None


class _Reader(io.RawIOBase):
    """A readable raw stream whose `read` does the work; `readinto` is derived from it."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def readall(self) -> bytes:
        parts = []
        while block := self.read(OUTPUT_CHUNK):
            parts.append(block)
        return b"".join(parts)


class Counting(_Reader):
    """The stored bytes of a named input, counted into its budget; seekable when the file is."""

    def __init__(self, raw: IO[bytes], budget: Budget, owns: bool = True) -> None:
        super().__init__()
        self._raw = raw
        self._budget = budget
        self._owns = owns

    def read(self, size: int | None = -1) -> bytes:
        data = self._raw.read(-1 if size is None else size)
        self._budget.take_raw(len(data))
        return data

    def seekable(self) -> bool:
        return self._raw.seekable()

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._raw.seek(offset, whence)

    def tell(self) -> int:
        return self._raw.tell()

    def close(self) -> None:
        try:
            if self._owns:
                self._raw.close()
        finally:
            super().close()


class Replay(_Reader):
    """`head` (already read from `inner` to sniff it) first, then the rest of `inner`."""

    def __init__(self, head: bytes, inner: IO[bytes], owns: bool = True) -> None:
        super().__init__()
        self._head = head
        self._inner = inner
        self._owns = owns

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            head, self._head = self._head, b""
            return head + self._inner.read()
        if self._head:
            head, self._head = self._head[:size], self._head[size:]
            return head
        return self._inner.read(size)

    def close(self) -> None:
        try:
            if self._owns:
                self._inner.close()
        finally:
            super().close()


def read_up_to(stream: IO[bytes], count: int) -> bytes:
    """Up to `count` bytes, fewer only at the end of the stream (streams may read short)."""
    parts: list[bytes] = []
    got = 0
    while got < count:
        block = stream.read(count - got)
        if not block:
            break
        parts.append(block)
        got += len(block)
    return b"".join(parts)


def peek(stream: IO[bytes], count: int) -> tuple[bytes, IO[bytes]]:
    """The first `count` bytes of `stream`, and a stream that gives them again, then the rest."""
    head = read_up_to(stream, count)
    return head, cast(IO[bytes], Replay(head, stream))


class _Decoder(Protocol):
    """One member of a compressed stream, fed stored bytes, giving bounded output."""

    eof: bool

    def give(self, data: bytes) -> None: ...

    def take(self, limit: int) -> bytes:
        """Up to `limit` decoded bytes; empty when it needs input (or the member ended)."""
        ...

    def rest(self) -> bytes:
        """Stored bytes past the end of this member (once `eof`)."""
        ...


class _Gzip:
    def __init__(self) -> None:
        self._decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._pending = b""
        self._full = False
        self.eof = False

    def give(self, data: bytes) -> None:
        self._pending = self._pending + data if self._pending else data

    def take(self, limit: int) -> bytes:
        if self.eof or (not self._pending and not self._full):
            return b""
        out = self._decoder.decompress(self._pending, limit)
        self._pending = self._decoder.unconsumed_tail
        self._full = len(out) >= limit  # zlib may hold more output with no input left
        self.eof = self._decoder.eof
        return out

    def rest(self) -> bytes:
        return self._decoder.unused_data


class _Buffered:
    """bzip2 and xz: their decoders keep the input they could not use yet."""

    def __init__(self, decoder: bz2.BZ2Decompressor | lzma.LZMADecompressor) -> None:
        self._decoder = decoder
        self._pending = b""
        self.eof = False

    def give(self, data: bytes) -> None:
        self._pending += data

    def take(self, limit: int) -> bytes:
        if self.eof:
            return b""
        data, self._pending = self._pending, b""
        if not data and self._decoder.needs_input:
            return b""
        out = self._decoder.decompress(data, limit)
        self.eof = self._decoder.eof
        return out

    def rest(self) -> bytes:
        return self._decoder.unused_data


class _Zstd:
    def __init__(self) -> None:
        import zstandard  # deferred: only needed for .zst inputs

        self._decoder = zstandard.ZstdDecompressor().decompressobj()
        self._pending = b""
        self._at = 0
        self._out = b""
        self._rest = b""
        self.eof = False

    def give(self, data: bytes) -> None:
        self._pending = self._pending[self._at :] + data
        self._at = 0

    def take(self, limit: int) -> bytes:
        while not self._out:
            if self.eof or self._at >= len(self._pending):
                return b""
            piece = self._pending[self._at : self._at + ZSTD_PIECE]
            self._at += len(piece)
            self._out = self._decoder.decompress(piece)
            if self._decoder.eof:
                self.eof = True
                self._rest = self._decoder.unused_data + self._pending[self._at :]
        out, self._out = self._out[:limit], self._out[limit:]
        return out

    def rest(self) -> bytes:
        return self._rest


def _decoder(kind: str) -> _Decoder:
    if kind == "gzip":
        return _Gzip()
    if kind == "bzip2":
        return _Buffered(bz2.BZ2Decompressor())
    if kind == "xz":
        return _Buffered(lzma.LZMADecompressor())
    return _Zstd()


class Decompressed(_Reader):
    """The decoded bytes of a gzip, bzip2, xz or zstd stream, counted into `budget`.

    Concatenated members (pigz, pbzip2, multi-frame zstd) are read one after the other. The
    stream ends early, with a note, when the data is truncated or corrupt or the budget is
    spent; what decoded before stays read.
    """

    def __init__(self, raw: IO[bytes], kind: str, budget: Budget, notes: Notes) -> None:
        super().__init__()
        self._raw = raw
        self._kind = kind
        self._budget = budget
        self._notes = notes
        self._decoder: _Decoder | None = None
        self._rest = b""
        self._produced = 0
        self._done = False

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            return self.readall()
        if self._done or size == 0:
            return b""
        try:
            data = self._next(min(size, OUTPUT_CHUNK))
        except Exception as error:  # zlib, lzma, bz2 and zstandard each raise their own
            if self._produced:
                self._stop(
                    f"the {self._kind} data is corrupt after {mib(self._produced)} decoded "
                    f"({error}): what decoded before the damage was read"
                )
            else:
                self._stop(f"corrupt {self._kind} data: {error}")
            return b""
        if not data:
            self._done = True
            return b""
        self._produced += len(data)
        exceeded = self._budget.decode(len(data))
        if exceeded is not None:
            self._stop(f"cut after {mib(self._produced)} decompressed: {exceeded}")
        return data

    def _stop(self, note: str) -> None:
        self._notes.add(note)
        self._done = True

    def _next(self, limit: int) -> bytes:
        while True:
            if self._decoder is None and not self._start_member():
                return b""
            decoder = self._decoder
            assert decoder is not None
            out = decoder.take(limit)
            if out:
                return out
            if decoder.eof:
                self._rest = decoder.rest()
                self._decoder = None
                continue
            data = self._raw.read(RAW_CHUNK)
            if not data:
                self._stop(
                    f"the {self._kind} data is truncated after {mib(self._produced)} decoded: "
                    "what decoded before the cut was read"
                    if self._produced
                    else f"corrupt {self._kind} data: it ends before anything decoded"
                )
                return b""
            decoder.give(data)

    def _start_member(self) -> bool:
        """Start the next member where the stored bytes go on; False at the end."""
        magic = MAGICS[self._kind]
        data = self._rest
        self._rest = b""
        while len(data.lstrip(b"\x00")) < len(magic):  # padding (xz, tape blocks) is no data
            block = self._raw.read(RAW_CHUNK)
            if not block:
                break
            data += block
        data = data.lstrip(b"\x00")
        if not data:
            return False
        if not data.startswith(magic):
            self._notes.add(f"data after the end of the {self._kind} stream was ignored")
            return False
        self._decoder = _decoder(self._kind)
        self._decoder.give(data)
        return True

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()


Explain = Callable[[BaseException], str]


def _plain(error: BaseException) -> str:
    return f"reading stopped: {error}"


class Bounded(_Reader):
    """A stream read with limits: full reads, at most `cap` bytes, never an exception.

    With a `budget`, what is read counts against it: as decoded bytes (`counts="decoded"`: a
    zip member, whose decoder lives inside zipfile) or as bytes handed to the analysis
    (`counts="analyzed"`: the stream of a `Source`, which is also cut when it expands past the
    ratio limit against the stored bytes read meanwhile). `explain` words an error of the
    stream under it (a tar member's stream fails when the archive's stream stopped: the
    archive knows why). `cap_reason` says why `cap` is what it is.
    """

    def __init__(
        self,
        inner: IO[bytes],
        notes: Notes,
        cap: int | None = None,
        budget: Budget | None = None,
        counts: str | None = None,
        explain: Explain = _plain,
        cap_reason: str | None = None,
        owns: bool = True,
    ) -> None:
        super().__init__()
        self._inner = inner
        self._notes = notes
        self._cap = cap
        self._budget = budget
        self._counts = counts
        self._explain = explain
        self._cap_reason = cap_reason or f"{ENVIRONMENT['member_bytes'][0]}"
        self._owns = owns
        self._raw_start = budget.raw if budget is not None else 0
        self.count = 0
        self._done = False
        self._limit_reason: str | None = None
        self._bomb = False

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            return self.readall()
        parts: list[bytes] = []
        got = 0
        while got < size and not self._done:
            block = self._read_some(size - got)
            if not block:
                break
            parts.append(block)
            got += len(block)
        return b"".join(parts)

    def _read_some(self, size: int) -> bytes:
        if self._limit_reason is not None:
            self._at_limit(self._limit_reason)
            return b""
        ask = size
        if self._cap is not None:
            room = self._cap - self.count
            if room <= 0:
                self._at_limit(f" ({self._cap_reason}): the rest was not read")
                return b""
            ask = min(ask, room)
        try:
            data = self._inner.read(ask)
        except Exception as error:  # whatever the stream under it raises, the input is kept
            self._stop(f": {self._explain(error)}")
            return b""
        if not data:
            self._done = True
            return b""
        self.count += len(data)
        self._account(len(data))
        return data

    def _account(self, count: int) -> None:
        budget = self._budget
        if budget is None or self._counts is None:
            return
        if self._counts == "decoded":
            exceeded = budget.decode(count)
        else:
            exceeded = budget.analyze(count)
            stored = budget.raw - self._raw_start
            if exceeded is None and over_ratio(budget.limits, self.count, stored):
                ratio = budget.limits.ratio
                exceeded = (
                    f"it expands more than {ratio:g}x ({mib(stored)} stored gave "
                    f"{mib(self.count)}: a compression bomb? {ENVIRONMENT['ratio'][0]})"
                )
                self._bomb = True
        if exceeded is not None:
            self._limit_reason = f": {exceeded}"  # said only if the stream goes on past it

    def _stop(self, why: str) -> None:
        """End here with a note: `why` follows `cut after N` (starting with `:` or ` (`)."""
        cut = f"cut after {mib(self.count)}"
        if not any(note.startswith(cut) for note in self._notes()):  # one cut, one note
            self._notes.add(f"{cut}{why}")
        self._done = True

    def _at_limit(self, why: str) -> None:
        """Stop at a limit; say so when the stream had more to give (not at its very end)."""
        self._done = True
        try:
            more = self._inner.read(1)
        except Exception:  # the stream broke right at the limit: it was cut all the same
            more = b"?"
        if more:
            self._stop(why)
            self._notes.bomb = self._notes.bomb or self._bomb

    def close(self) -> None:
        try:
            if self._owns:
                self._inner.close()
        except Exception:  # closing a broken member stream must not cost the input
            pass
        finally:
            super().close()


def read_once(stream: IO[bytes]) -> Callable[[], IO[bytes]]:
    """An opener for a stream that can only be read once (an archive member, stdin)."""
    used = False

    def opener() -> IO[bytes]:
        nonlocal used
        if used:
            raise OSError("a streamed input can only be read once")
        used = True
        return stream

    return opener
