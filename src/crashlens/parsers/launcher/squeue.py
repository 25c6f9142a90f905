"""A job that Slurm keeps pending, as `squeue` prints it: the job has not started.

`squeue`'s default format is `%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R` (JOBID PARTITION NAME
USER ST TIME NODES NODELIST(REASON)); the compact state `PD` is PENDING ("awaiting resource
allocation", squeue(1) JOB STATE CODES), its TIME is `0:00`, and the last column holds the
reason in parentheses instead of a node list (squeue(1) JOB REASON CODES: `Resources`,
`Priority`, `ReqNodeNotAvail, UnavailableNodes:...`, `Dependency`, `QOSMaxGRESPerUser`, or the
scheduler's long wording `Nodes required for job are DOWN, DRAINED or reserved for jobs in
higher priority partitions`). A pending job's processes never ran, so nothing of the run
failed yet.

Some pending reasons record that something did fail: a job whose launch failed and was
requeued and held (`launch failed requeued held`, `JobLaunchFailure`), one requeued after a
non-zero exit or a system failure, one whose dependency can never be satisfied (another job
failed). Those are no "never started" ending (`failed_before`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PENDING_ROW = re.compile(
    # job id (an array job's `123_[1-8%2]` or `123_4`), partition, name, user, `PD`, `0:00`,
    # node count, `(reason)` closing the line; squeue cuts the middle columns to their width
    r"^[ \t]*(?P<job>[0-9]+(?:_(?:\[[0-9,%\-]+\]|[0-9]+))?)[ \t]+(?P<partition>[^ \t\n]+)"
    r"[ \t]+[^ \t\n]+[ \t]+[^ \t\n]+[ \t]+PD[ \t]+0:00[ \t]+[0-9]+[ \t]+"
    r"\((?P<reason>[^()\n]+(?:\([^()\n]*\)[^()\n]*)*)\)[ \t]*$"
)
"""One row of `squeue`'s default table for a pending job, its reason in parentheses."""

FAILED_BEFORE = re.compile(
    r"launch failed|JobLaunchFailure|NonZeroExitCode|SystemFailure|DependencyNeverSatisfied",
    re.IGNORECASE,
)
"""Pending reasons that record a failure (of this job's launch, of an earlier run of it, or of
a job it depends on): such a job is not one that merely has not started."""


@dataclass(frozen=True, slots=True)
class PendingJob:
    """A job `squeue` shows pending, with the reason Slurm gives."""

    job: str
    partition: str
    reason: str


def pending_job(text: str) -> PendingJob | None:
    """The pending job of a `squeue` row, or None for any other line."""
    m = PENDING_ROW.search(text)
    if m is None:
        return None
    return PendingJob(m.group("job"), m.group("partition"), m.group("reason").strip())


def failed_before(reason: str) -> bool:
    """Whether a pending reason records that something failed (see the module docstring)."""
    return FAILED_BEFORE.search(reason) is not None
