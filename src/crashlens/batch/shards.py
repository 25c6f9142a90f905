"""`--shard K/N`: one of N disjoint parts of an archive, for schedulers without Dask.

A job belongs to shard `1 + hash(path) mod N`, the hash a BLAKE2b digest of the job's path
relative to the scanned root: every job is in exactly one shard, a rerun (or another machine,
another Python) picks the same jobs, and shards stay balanced in job count. K is 1-based, as
in "part 1 of 4"; a 0-based index (Kubernetes' JOB_COMPLETION_INDEX, a Slurm array started
at 0) is written `$((INDEX + 1))/N`. `crashlens scan-merge` joins the shards' outputs again.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


class ShardError(ValueError):
    """A --shard value that is not K/N with 1 <= K <= N."""


@dataclass(frozen=True, slots=True)
class Shard:
    """Shard `index` (1-based) of `count`."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, rel: str) -> bool:
        """Whether the job at `rel` (relative to the root, `/` separators) is in this shard."""
        return shard_of(rel, self.count) == self.index


def parse_shard(text: str) -> Shard:
    """`K/N` as a Shard; raises ShardError naming what is wrong."""
    match = _SHARD.fullmatch(text)
    if match is None:
        raise ShardError(f"--shard {text!r}: expected K/N, e.g. 1/4 (K counts from 1)")
    index, count = int(match[1]), int(match[2])
    if count < 1:
        raise ShardError(f"--shard {text!r}: N must be at least 1")
    if not 1 <= index <= count:
        hint = (
            " (K counts from 1: write $((INDEX + 1))/N for a 0-based index)" if index == 0 else ""
        )
        raise ShardError(f"--shard {text!r}: K must be between 1 and {count}{hint}")
    return Shard(index, count)


def shard_of(rel: str, count: int) -> int:
    """The 1-based shard of `count` that the job at `rel` belongs to (stable everywhere)."""
    digest = hashlib.blake2b(rel.encode("utf-8", "surrogateescape"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count + 1
