"""Aggregating job rows into the scan summary, one row at a time (memory: per group, not job).

Jobs by verdict, the most frequent fingerprints (count, first and last seen, example jobs),
the host and GPU hotspots (the drain list) and the failures over time when the logs carry
wall-clock timestamps. `summary_dict` is what summary.json holds; the renderers read only it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from crashlens import __version__
from crashlens.batch.fingerprint import FINGERPRINT_VERSION
from crashlens.batch.hotspots import MAX_EXAMPLES, HotspotTracker
from crashlens.batch.row import JobRow
from crashlens.model import Verdict

SUMMARY_VERSION = 1
TOP_FINGERPRINTS = 20


@dataclass(slots=True)
class _Group:
    verdict: str
    signature: str | None
    count: int = 0
    first: float | None = None
    last: float | None = None
    file_first: float | None = None
    file_last: float | None = None
    examples: list[str] = field(default_factory=list)
    evidence: str | None = None
    rules: Counter[str] = field(default_factory=Counter)

    def add(self, row: JobRow) -> None:
        self.count += 1
        when = row.first_failure_at
        if when is not None:
            self.first = when if self.first is None else min(self.first, when)
            self.last = when if self.last is None else max(self.last, when)
        mtime = row.job_mtime
        if mtime is not None:
            self.file_first = mtime if self.file_first is None else min(self.file_first, mtime)
            self.file_last = mtime if self.file_last is None else max(self.file_last, mtime)
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(row.job)
        if self.evidence is None:
            self.evidence = row.evidence
        self.rules.update(row.rules)

    def seen(self) -> tuple[str | None, str | None, str | None]:
        """(first, last, source): log times when any job has them, else file mtimes."""
        if self.first is not None:
            return iso(self.first), iso(self.last), "logs"
        if self.file_first is not None:
            return iso(self.file_first), iso(self.file_last), "file mtime"
        return None, None, None


def iso(epoch: float | None) -> str | None:
    """Epoch seconds as an ISO 8601 UTC string."""
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")


class SummaryBuilder:
    """Feed it every row (`add`), then ask for the summary."""

    def __init__(self, min_jobs: int = 2) -> None:
        self.min_jobs = min_jobs
        self.jobs = 0
        self.bytes = 0
        self.failed = 0
        self.unreadable = 0
        self.cached = 0
        self.by_verdict: Counter[str] = Counter()
        self.reasons: Counter[str] = Counter()
        self.groups: dict[str, _Group] = {}
        self.hotspots = HotspotTracker()
        self.times: list[tuple[float, str]] = []
        self.unreadable_examples: list[str] = []

    def add(self, row: JobRow, cached: bool = False) -> None:
        """Count one job."""
        self.jobs += 1
        self.bytes += row.bytes
        self.cached += cached
        if row.reason is not None:
            self.unreadable += 1
            self.reasons[_reason_kind(row.reason)] += 1
            if len(self.unreadable_examples) < MAX_EXAMPLES:
                self.unreadable_examples.append(f"{row.job}: {row.reason}")
            return
        verdict = row.verdict or Verdict.NONE.value
        self.by_verdict[verdict] += 1
        if row.failed:
            self.failed += 1
            if row.fingerprint:
                group = self.groups.get(row.fingerprint)
                if group is None:
                    group = self.groups[row.fingerprint] = _Group(verdict, row.signature)
                group.add(row)
            if row.first_failure_at is not None:
                self.times.append((row.first_failure_at, verdict))
        if row.hardware_hosts or row.gpu_details:
            self.hotspots.add(
                row.job, row.seen_at, row.verdict, row.hardware_hosts, row.gpu_details
            )

    def summary(self, **extra: Any) -> dict[str, Any]:
        """The summary as JSON-ready data; `extra` fields (root, timing...) are merged in."""
        groups = sorted(self.groups.items(), key=lambda kv: (-kv[1].count, kv[0]))
        data: dict[str, Any] = {
            "summary_version": SUMMARY_VERSION,
            "crashlens_version": __version__,
            "fingerprint_version": FINGERPRINT_VERSION,
            **extra,
            "jobs": {
                "scanned": self.jobs,
                "from_cache": self.cached,
                "failed": self.failed,
                "healthy": self.by_verdict.get(Verdict.NONE, 0),
                "unreadable": self.unreadable,
            },
            "bytes": self.bytes,
            "by_verdict": dict(sorted(self.by_verdict.items(), key=lambda kv: (-kv[1], kv[0]))),
            "unreadable": {
                "by_reason": dict(self.reasons.most_common()),
                "examples": self.unreadable_examples,
            },
            "fingerprints": {
                "distinct": len(self.groups),
                "top": [
                    {
                        "fingerprint": fp,
                        "verdict": group.verdict,
                        "count": group.count,
                        "first_seen": group.seen()[0],
                        "last_seen": group.seen()[1],
                        "seen_from": group.seen()[2],
                        "signature": group.signature,
                        "rules": [rule for rule, _ in group.rules.most_common(5)],
                        "evidence": group.evidence,
                        "examples": group.examples,
                    }
                    for fp, group in groups[:TOP_FINGERPRINTS]
                ],
            },
            "hotspots": {
                "min_jobs": self.min_jobs,
                "hosts": [_dated(item) for item in self.hotspots.hosts(self.min_jobs)],
                "gpus": [_dated(item) for item in self.hotspots.gpus(self.min_jobs)],
            },
            "timeline": timeline(self.times),
        }
        return data


def _dated(item: dict[str, Any]) -> dict[str, Any]:
    return {**item, "first_seen": iso(item["first_seen"]), "last_seen": iso(item["last_seen"])}


def _reason_kind(reason: str) -> str:
    """A reason without the paths and details that make every job's reason unique."""
    head = reason.split(" (", 1)[0].split(":", 1)[0]
    return head.strip() or reason


def timeline(times: list[tuple[float, str]]) -> dict[str, Any]:
    """Failures per hour, day or month (picked from the span), with the verdicts of each."""
    if not times:
        return {"unit": None, "buckets": []}
    span = max(t for t, _ in times) - min(t for t, _ in times)
    if span <= 3 * 86400:
        unit, layout = "hour", "%Y-%m-%dT%H:00Z"
    elif span <= 180 * 86400:
        unit, layout = "day", "%Y-%m-%d"
    else:
        unit, layout = "month", "%Y-%m"
    buckets: dict[str, Counter[str]] = {}
    for when, verdict in times:
        key = datetime.fromtimestamp(when, UTC).strftime(layout)
        buckets.setdefault(key, Counter())[verdict] += 1
    return {
        "unit": unit,
        "buckets": [
            {"period": key, "failed": sum(counts.values()), "by_verdict": dict(counts)}
            for key, counts in sorted(buckets.items())
        ],
    }
