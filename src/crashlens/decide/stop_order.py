"""Which came first, a failure or a stop? A stop that follows a failure is its teardown.

A process that fails rarely dies alone: its launcher or supervisor then stops the rest with
SIGTERM (vLLM's `Killing local vLLM worker processes`, torchelastic's `Sending process N
closing signal SIGTERM`), `docker stop` sends SIGTERM (exit 143), a pod is terminated, and
slurmstepd, once a job exceeds its memory limit, kills it and prints `*** JOB N ON node
CANCELLED AT ... ***` with no `by <uid>`, the same line `scancel` prints. Read alone, each of
those looks like a stop from outside. After a cause-level failure line it is the knock-on of
that failure, and the run died of the failure (`failure_before_stop`).

A stop is external only with no cause-level failure before it, or when an explicit user or
scheduler stop (Ctrl-C, a `KeyboardInterrupt`, `CANCELLED by <uid>`, `DUE TO TIME LIMIT`,
`TIMEOUT`, `PREEMPTED`, a pod preempted or evicted through the API) comes before the errors:
what the processes print after being stopped is then the stop's teardown noise.

A failure line the run went on from is no cause of the stop. At start-up: when a log's
training progress first shows after the line and before the stop (a connect retry at
start-up, then an hour of steps, then `scancel`), the run got past it. In mid-training: when
at least `MIN_STEPS_AFTER` progress lines of the same rank (where both lines name one) follow
the line before the stop (a failed save, then more steps, then a bare SIGTERM), the run went
on from it. Fewer than that may be other ranks finishing the step they were in while the
failure's teardown reached them, so the failure still reads as the cause. The parsers read
those progress lines among the log's last lines (`log.progress_mark`): a stop whose last
lines show no progress (a flood of teardown tracebacks) leaves the failure as its cause.

When every progress line of a log is in view (its first is among its last lines), the
start-up case is counted like the mid-training one: a line that names its training step
(`OOM during training step 3 times in a row`), an epoch header, or another rank finishing its
first step may follow a failure at start-up, and the run did not get past it.

The same test, with no stop to bound it, tells which failure lines a log that simply stops
went on from (`went_on`, `decide.unended.gone_past`): one test for both endings.

Order is read within one log (line numbers). A platform's record of the end (a container's
exit code, a pod's state, an sacct row) is written after every log line, so an ambiguous stop
there follows the failures the logs show; an explicit one there has no order against them
and is left to stand as an outside stop.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from crashlens.model import Fact, Hit, InputKind, Role

PROGRESS_MARK = "log.progress_mark"
FIRST_PROGRESS = "log.progress"

CAUSE_WEIGHT = 0.5
"""A hit at least this decisive is a cause-level failure line (`policy.STRONG_FAILURE`'s
level: the same strength that makes a failure seen whatever else the run printed)."""
RUN_LOG_KINDS = frozenset({InputKind.LAUNCHER, InputKind.OTHER})
"""Inputs that tell the run's own story line by line; the other kinds are records of it
(container and pod states, scheduler accounting), written when it had ended."""

MIN_STEPS_AFTER = 3
"""Progress lines after a mid-training failure line that show the run went on from it."""

USER_STOP_EXCEPTIONS = ("KeyboardInterrupt", "BdbQuit", "bdb.BdbQuit")
"""Python's exceptions of a user's stop: Ctrl-C's, and a debugger's quit."""
JULIA_INTERRUPT = re.compile(r"ERROR: (?:LoadError: )?InterruptException:")
"""Julia's report of an uncaught InterruptException, which it raises on SIGINT (Ctrl-C): the
user's stop, as Python's KeyboardInterrupt is (`ERROR: LoadError: ...` from a script file)."""
_EXPLICIT_SLURM = frozenset({"TIMEOUT", "PREEMPTED", "DEADLINE"})
_EXPLICIT_K8S = frozenset({"Preempting", "Shutdown", "NodeShutdown"})
STOPPED_LSF = {
    "TERM_RUNLIMIT": "the job reached its run time limit",
    "TERM_CPULIMIT": "the job reached its CPU time limit",
    "TERM_DEADLINE": "the job's deadline passed",
    "TERM_WINDOW": "the queue's run window closed",
    "TERM_OWNER": "its owner killed it (bkill)",
    "TERM_FORCE_OWNER": "its owner killed it at once (bkill -r)",
    "TERM_ADMIN": "an administrator killed it",
    "TERM_FORCE_ADMIN": "an administrator killed it at once",
    "TERM_REQUEUE_OWNER": "its owner killed and requeued it",
    "TERM_REQUEUE_ADMIN": "an administrator killed and requeued it",
    "TERM_PREEMPT": "it was preempted",
    "TERM_BUCKET_KILL": "it was killed with bkill -b",
    "TERM_CHKPNT": "it was killed after a checkpoint",
    "TERM_LOAD": "the host's load passed the queue's threshold",
}
"""LSF termination reasons that say who stopped the job and why (IBM Spectrum LSF's
`Termination reasons`, as `bhist -l` and the job report print them): a stop from outside,
like Slurm's TIMEOUT or CANCELLED by a user. The job was killed with SIGINT, SIGTERM, SIGUSR2
(the run limit's warning) and then SIGKILL, so the report's exit status (130, 140, 143, 137)
is that stop's. The other reasons (TERM_MEMLIMIT, TERM_SWAP, TERM_PROCESSLIMIT,
TERM_THREADLIMIT, TERM_CWD_NOTEXIST, TERM_RMS, TERM_EXTERNAL_SIGNAL, ...) are deaths."""

STOPPED_PBS = {
    "walltime": "the job reached its wall-time limit",
    "cput": "the job reached its CPU-time limit",
}
"""Limits whose PBS kill (`=>> PBS: job killed: walltime ...`) is the scheduler's stop, like
Slurm's TIMEOUT; a memory limit's kill (mem, vmem, pmem) is a death of its own."""


@dataclass(frozen=True, slots=True)
class Progress:
    """Where one log's training progress shows: its first progress line, and the progress
    lines among its last lines as (line, rank), in order (`log.progress_mark`)."""

    first: int | None
    marks: tuple[tuple[int, int | None], ...] = ()


@dataclass(frozen=True, slots=True)
class FailureFirst:
    """A cause-level failure line and the stop that followed it (its teardown)."""

    cause: Hit
    stop: Fact


def explicit_stop(item: Fact) -> bool:
    """Whether a stop fact says who stopped the run and why (a user, the scheduler's limits,
    a preemption), rather than only how the process was ended (SIGTERM, exit 143, a bare
    `CANCELLED`): only the latter is also how a failure's teardown looks."""
    key, value = item.key, str(item.value)
    if key == "python.exception":
        return value.startswith(USER_STOP_EXCEPTIONS)
    if key == "log.ends_with":
        text = item.text
        return any(name in text for name in USER_STOP_EXCEPTIONS) or bool(
            JULIA_INTERRUPT.search(text)
        )
    if key == "launcher.signal":
        return value == "SIGINT"
    if key in ("launcher.exit_code", "process.exit_code", "k8s.exit_code", "docker.exit_code"):
        return item.value in (130, -2)
    if key == "slurm.state":
        return value in _EXPLICIT_SLURM or item.attr("by") is not None
    if key == "slurm.cancelled":
        # slurmstepd names the scheduler's reasons (`DUE TO TIME LIMIT`, `DUE TO PREEMPTION`)
        # and, on newer versions, the cancelling uid; a bare `CANCELLED AT` is scancel or
        # slurmstepd's own kill (an exceeded memory limit).
        return value != "unspecified"
    if key == "lsf.term":
        return value in STOPPED_LSF
    if key == "pbs.killed":
        return value in STOPPED_PBS
    if key == "process.exit_code" and item.attr("lsf_term") is not None:
        return str(item.attr("lsf_term")) in STOPPED_LSF
    if key in ("platform.time_limit", "platform.shutdown"):
        return True
    if key == "slurm.task_failure":
        return value.lower() == "interrupt"
    if key in ("k8s.reason", "k8s.event"):
        return value in _EXPLICIT_K8S
    return key == "k8s.disruption"


CALL_STOPS = frozenset({"platform.time_limit"})
"""Stops that end one call of a server that goes on (ZeroGPU's lease on a GPU), not the run."""


def outlived_call_stop(
    stop: Fact, hits: Sequence[Hit], failure_rules: frozenset[str], knock_on: frozenset[str]
) -> bool:
    """Whether `stop` ended only one call (`CALL_STOPS`) and a cause-level failure line follows
    it in the same log: the server went on and failed later, so the stop is not the ending."""
    if stop.key not in CALL_STOPS or stop.lineno is None:
        return False
    return any(
        hit.path == stop.path
        and (hit.lineno or 0) > stop.lineno
        and cause_level(hit, failure_rules, knock_on)
        for hit in hits
    )


def failed_request(
    finish: Fact, facts: Sequence[Fact], hits: Sequence[Hit], failure_rules: frozenset[str]
) -> bool:
    """Whether `finish` is a server's summary of one request (attr `request`, the finish signs'
    `per_request`) with a failure within that request, in the same log: after the line that
    opened it or the request summed up before (attr `since`), an exception's last line or a
    line a failure rule reads (any weight: a request's device loss is a symptom). The summary
    is printed after a failed request too, so it shows the server went on, not that the work
    succeeded."""
    if finish.attr("request") is not True or finish.lineno is None:
        return False
    since, before = int(finish.attr("since") or 0), finish.lineno
    return any(
        f.path == finish.path and f.key == "python.exception" and since < (f.lineno or 0) < before
        for f in facts
    ) or any(
        hit.path == finish.path
        and since < (hit.lineno or 0) < before
        and failure_line(hit, failure_rules)
        for hit in hits
    )


def failure_line(hit: Hit, failure_rules: frozenset[str]) -> bool:
    """Whether a rule hit reads a failure, of any weight: not counter-evidence, not a context."""
    return not hit.against and hit.role is not Role.CONTEXT and hit.rule_id in failure_rules


def cause_level(hit: Hit, failure_rules: frozenset[str], knock_on: frozenset[str]) -> bool:
    """Whether a rule hit shows a failure that can end a run by itself: a decisive failure line
    that is not counter-evidence, a context, or a rule's usual consequence of another failure."""
    return (
        failure_line(hit, failure_rules)
        and hit.weight >= CAUSE_WEIGHT
        and hit.rule_id not in knock_on
        and hit.lineno is not None
    )


def failure_before_stop(
    stops: Sequence[Fact],
    hits: Sequence[Hit],
    kinds: Mapping[str, InputKind | None],
    failure_rules: frozenset[str],
    knock_on: frozenset[str],
    progress: Mapping[str, Progress] | None = None,
) -> FailureFirst | None:
    """The earliest cause-level failure line that a stop followed, with that stop; None when
    every stop is external (nothing failed before it, or an explicit stop came first).
    `progress`: where each log's training progress shows."""
    started = progress or {}
    causes = sorted(
        (h for h in hits if cause_level(h, failure_rules, knock_on)),
        key=lambda h: (h.path, h.lineno or 0),
    )
    if not causes:
        return None
    logs = {h.path for h in causes}
    # An explicit stop with no order against the failures (another input, a platform's
    # record) stands: the errors may be what the stopped processes printed.
    if any(explicit_stop(s) and (s.path not in logs or s.lineno is None) for s in stops):
        return None
    for stop in sorted(stops, key=lambda s: (s.path, s.lineno or 0)):
        before = [h for h in causes if _precedes(h, stop, kinds) and not went_on(h, started, stop)]
        if not before:
            continue
        first = before[0]
        if any(_stopped_first(s, first) for s in stops if explicit_stop(s)):
            continue
        return FailureFirst(cause=first, stop=stop)
    return None


def _precedes(cause: Hit, stop: Fact, kinds: Mapping[str, InputKind | None]) -> bool:
    if stop.path == cause.path:
        return stop.lineno is None or (cause.lineno or 0) < stop.lineno
    # A platform's record of the end follows every line of the run's logs.
    return kinds.get(stop.path) not in RUN_LOG_KINDS and kinds.get(cause.path) in RUN_LOG_KINDS


def progress_of(facts: Sequence[Fact]) -> dict[str, Progress]:
    """Where each log's training progress shows (`log.progress`, `log.progress_mark`)."""
    first = {f.path: f.lineno for f in facts if f.key == FIRST_PROGRESS and f.lineno}
    marks: dict[str, list[tuple[int, int | None]]] = {}
    for item in facts:
        if item.key == PROGRESS_MARK and item.lineno is not None:
            rank = item.attr("rank")
            ranked = rank if isinstance(rank, int) and not isinstance(rank, bool) else None
            marks.setdefault(item.path, []).append((item.lineno, ranked))
    return {
        path: Progress(first.get(path), tuple(sorted(marks.get(path, ()))))
        for path in first.keys() | marks.keys()
    }


def went_on(cause: Hit, started: Mapping[str, Progress], stop: Fact | None = None) -> bool:
    """Whether the run went on from the failure line: its training progress began after the
    line and went on beyond the log's last lines, or `MIN_STEPS_AFTER` progress lines (of its
    rank) follow it; before `stop` when it is in the same log (with no stop, to the log's end)."""
    seen = started.get(cause.path)
    line = cause.lineno or 0
    if seen is None:
        return False
    limit = None
    if stop is not None and stop.path == cause.path and stop.lineno is not None:
        limit = stop.lineno
    after = [rank for at, rank in seen.marks if at > line and (limit is None or at < limit)]
    if cause.rank is not None:
        # the failing rank's own steps (or unprefixed lines): another rank's step may be one
        # it finished while the failure's teardown reached it
        after = [rank for rank in after if rank in (cause.rank, None)]
    began_after = (
        seen.first is not None and line < seen.first and (limit is None or seen.first < limit)
    )
    if began_after and not any(at == seen.first for at, _ in seen.marks):
        return True  # more went on after its first progress than the log's last lines hold
    return len(after) >= MIN_STEPS_AFTER


def _stopped_first(stop: Fact, cause: Hit) -> bool:
    """Whether an explicit stop comes before the failure line, in the same log."""
    return stop.path == cause.path and (stop.lineno or 0) < (cause.lineno or 0)
