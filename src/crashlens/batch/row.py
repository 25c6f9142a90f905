"""One row of `jobs.parquet`: the result of analyzing one job, as plain JSON-ready data."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from crashlens.batch.jobs import JobSpec
from crashlens.model import Verdict
from crashlens.render.inert import visible


@dataclass(slots=True)
class JobRow:
    """What the scan records for one job (the columns of jobs.parquet, in order)."""

    job: str
    """The job's path relative to the scanned root (`/` separators)."""
    verdict: str | None = None
    """As in the JSON report: a category, `unknown` or `none`; null when `reason` is set."""
    confidence: float | None = None
    """Confidence of the top cause; null for `none` and unreadable jobs."""
    fingerprint: str | None = None
    """`fp<version>-<hash>`: equal for the same failure in different jobs; null when healthy."""
    signature: str | None = None
    """The normalized lead line the fingerprint hashes (what the group looks like)."""
    summary: str | None = None
    """The top cause's one-line summary."""
    evidence: str | None = None
    """The lead evidence line: `path:line: text`, path relative to the root."""
    rules: list[str] = field(default_factory=list)
    """Rule ids cited by the top cause."""
    hosts: list[str] = field(default_factory=list)
    """Hosts implicated: in the top cause's evidence, the first failure or a hardware fault."""
    gpus: list[str] = field(default_factory=list)
    """GPUs implicated in hardware faults, as `host/PCI bus id`, UUID or `serial:N`."""
    hardware_hosts: list[str] = field(default_factory=list)
    """Hosts implicated in hardware faults (what the drain list counts)."""
    gpu_details: list[dict[str, str | None]] = field(default_factory=list)
    """Each implicated GPU with every id seen for it: label, host, pci, uuid, serial."""
    first_failure_at: float | None = None
    """Epoch seconds (UTC) of the first failure line, when the logs carry wall-clock time."""
    job_mtime: float | None = None
    """Epoch seconds of the newest file of the job."""
    files: int = 0
    bytes: int = 0
    skipped: list[str] = field(default_factory=list)
    """`path: reason` for inputs of the job that could not be read."""
    reason: str | None = None
    """Why the job could not be analyzed at all, else null."""
    seconds: float = 0.0
    """Time the analysis of this job took."""

    def make_inert(self) -> None:
        """Write every text field in its visible form (`render.inert.visible`): a control
        character or an escape sequence from a log line (`ESC ]52;`, `ESC c`, the single-byte
        CSI, NUL) is shown as `\\x1b]52;`, never written raw into the table, the cache, the
        summary or the metrics. Idempotent (the visible form has no control characters).

        It also makes the bytes of an undecodable file name `\\xNN`: such names reach Python
        as lone surrogates (surrogateescape), which no UTF-8 writer accepts.
        """
        for name in _TEXT_FIELDS:
            value = getattr(self, name)
            if isinstance(value, str):
                setattr(self, name, visible(value))
            elif isinstance(value, list):
                setattr(self, name, [visible(v) if isinstance(v, str) else v for v in value])
        self.gpu_details = [
            {key: None if text is None else visible(text) for key, text in item.items()}
            for item in self.gpu_details
        ]

    def to_dict(self) -> dict[str, Any]:
        """The row as plain data (lists copied; `asdict`'s deep recursion cost ~0.1 ms/row)."""
        data = {name: getattr(self, name) for name in COLUMNS}
        for name in _LIST_FIELDS:
            data[name] = list(data[name])
        data["gpu_details"] = [dict(item) for item in self.gpu_details]
        return data

    @classmethod
    def for_job(cls, job: JobSpec, reason: str | None = None) -> JobRow:
        """A row that names `job` (path, newest mtime, file count, bytes), nothing analyzed yet."""
        row = cls(
            job=job.rel,
            job_mtime=job.mtime_ns / 1e9 if job.files else None,
            files=len(job.files),
            bytes=job.size,
            reason=reason,
        )
        row.make_inert()  # the rows of jobs that fail before analysis are written too
        return row

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobRow:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    @property
    def failed(self) -> bool:
        """Analyzed, and a failure was seen (a cause or `unknown`)."""
        return self.reason is None and self.verdict not in (None, Verdict.NONE)

    @property
    def seen_at(self) -> float | None:
        """When the failure happened: the first failure line, else the job's newest file."""
        return self.first_failure_at if self.first_failure_at is not None else self.job_mtime


COLUMNS = tuple(f.name for f in fields(JobRow))
_TEXT_FIELDS = (
    "job",
    "verdict",
    "fingerprint",
    "signature",
    "summary",
    "evidence",
    "rules",
    "hosts",
    "gpus",
    "hardware_hosts",
    "skipped",
    "reason",
)


_LIST_FIELDS = ("rules", "hosts", "gpus", "hardware_hosts", "skipped")
