"""The incremental-scan cache: a rescan re-analyzes only the jobs whose files changed.

`scan-cache.jsonl` in the output folder: a header line, then one line per job with its path
relative to the root, the signature of its files (name, size and mtime of each; for objects in
a store, name, size and ETag: an object's time is its upload, see `jobs.FileStat`) and its row.
The header names everything a row depends on besides the job's files: the cache format, the
fingerprint version, a digest of the crashlens code and rule library, the scanned root and
the job rule. When any of them differs the whole cache is ignored, so an upgrade never mixes
old and new verdicts. The file is replaced atomically (written aside, then renamed).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from crashlens import __version__
from crashlens.batch.fingerprint import FINGERPRINT_VERSION
from crashlens.batch.row import JobRow
from crashlens.match.rules import Rule

CACHE_NAME = "scan-cache.jsonl"
CACHE_FORMAT = 1


@cache
def code_digest() -> str:
    """A digest of the crashlens package's source (a change to a parser changes results)."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.blake2b(digest_size=12)
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def rules_digest(rules: tuple[Rule, ...]) -> str:
    """A digest of everything in the rule library that can change a verdict."""
    digest = hashlib.blake2b(digest_size=12)
    for rule in rules:
        parts = (
            rule.id,
            rule.category,
            rule.role,
            rule.weight,
            rule.inputs and sorted(rule.inputs),
            rule.patterns,
            rule.excludes,
            rule.facts,
            rule.ignore_case,
            rule.also,
            rule.knock_on,
            rule.failure,
            rule.summary,
        )
        digest.update(repr(parts).encode() + b"\n")
    return digest.hexdigest()


def header(root: str, job_glob: str | None, rules: tuple[Rule, ...]) -> dict[str, Any]:
    """What a cached row depends on besides the job's own files."""
    return {
        "cache_format": CACHE_FORMAT,
        "crashlens": __version__,
        "fingerprint_version": FINGERPRINT_VERSION,
        "code": code_digest(),
        "rules": rules_digest(rules),
        "root": root,
        "job_glob": job_glob,
    }


@dataclass(slots=True)
class ScanCache:
    """Cached rows by job path, each with the signature of the files it was computed from."""

    header: dict[str, Any]
    entries: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)

    def get(self, job: str, signature: str) -> JobRow | None:
        """The cached row of `job` if its files are unchanged, else None."""
        entry = self.entries.get(job)
        if entry is None or entry[0] != signature:
            return None
        return JobRow.from_dict(entry[1])


def load(folder: Path, expected: dict[str, Any]) -> ScanCache:
    """The cache in `folder` when it was made under the same `expected` header, else empty."""
    path = folder / CACHE_NAME
    result = ScanCache(header=expected)
    try:
        with path.open(encoding="utf-8") as stream:
            first = stream.readline()
            if not first or json.loads(first) != expected:
                return result
            for line in stream:
                try:
                    item = json.loads(line)
                    result.entries[item["job"]] = (item["sig"], item["row"])
                except (ValueError, KeyError, TypeError):
                    continue  # a torn last line after a crash: that job is rescanned
    except (OSError, ValueError):
        return result
    return result


def save(folder: Path, head: dict[str, Any], rows: list[tuple[str, JobRow]]) -> None:
    """Write the cache for `rows` ((signature, row) pairs) atomically."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / CACHE_NAME
    temporary = path.with_name(f".{CACHE_NAME}.{os.getpid()}.tmp")
    with temporary.open("w", encoding="utf-8") as stream:
        stream.write(json.dumps(head, sort_keys=True) + "\n")
        for signature, row in rows:
            item = {"job": row.job, "sig": signature, "row": row.to_dict()}
            stream.write(json.dumps(item, ensure_ascii=False) + "\n")
    os.replace(temporary, path)
