"""The third outcome: inputs that show neither a death, nor a finish, nor a stop.

A run's log that simply stops is no evidence that the run went well: a hang (a collective
waiting forever, a stuck data loader, a network mount that stalls) and a kill that left no
trace in the log (the OOM killer, a node lost, `kill -9`) both look like this. So, when the
failure detector finds no ending, this module tells apart:

1. **The container is still running** (`still_running`): the process is alive and silent.
   `unknown`, citing the container's state: hung, or still working.
2. **A pod never scheduled, a Slurm job still pending**: `stopped` (`decide.never_started`).
3. **No input tells the run's story** (only records of a node: a kernel log, a GPU table):
   `unknown` with no sign; the inputs are judged on what they show (`none` when nothing in
   them failed), since nothing is known of the run's end, not even that its log stopped.
4. **The run was going on well where its log ends** (`ongoing`): no failure line and no
   uncaught exception, and each of the run's logs either ends at a line the program prints and
   goes on from (`decide.last_output`: a warning, a skipped fp16 step, a retry, a server
   answering, a metrics report), or at output its own project calls harmless (the catalog
   `tables/harmless_output.toml`, `decide.harmless_output`), or goes on past every line of it
   that looks alarming (a context rule's line, an NCCL WARN, an exception the process reported
   and went on from, a warning with the run's progress after it: `log.last_warning`), unless
   its last line is an error still propagating (NCCL's return-code trace, a Python traceback
   cut off before its exception line), or, in a log whose
   lines all name their process, the process that raised an alarm ends its own output with
   an error (`log.process_end`: other processes' later lines do not show it went on), or
   multiprocessing's resource tracker reporting leaked semaphores (the processes had ended,
   how is not shown),
   or its processes were last seen waiting for their peers to join with no training progress
   after it (`decide.peer_wait`: the lines after a wait do not show the peers joined).
   That is what an excerpt of scary-but-harmless lines looks like: the report lists each line
   and why it is harmless (for a catalog entry, its reason and its project's source), and the
   verdict is `none`.
5. **Otherwise the log stops** (`unknown`, citing its last line): the verdict is never `none`
   (`policy` counts a failure as possible: `unended`); the reason says what the end looks
   like (training in progress or not yet started) and what to collect to learn how it ended:
   the scheduler's record, the kernel log of the nodes, the container's state.

A failure line the run went on from is not how it ended (`gone_past`): the run's training
progress began after it, or went on for `stop_order.MIN_STEPS_AFTER` lines of its rank after
it (`stop_order.went_on`, the test a stop uses). TensorFlow's allocator retrying a failed
allocation with less memory, a batch-size finder catching an OOM and halving the batch, a
connect retry at start-up, each followed by the run's steps: such a line counts as an
alarming line the run went past (outcome 4 may hold), is judged harmless in the report, and
`policy` leaves it out of the weighing, so it is neither the headline nor a likely cause of
a log that stops. A failure line with no progress of its rank after it (the log ends in its
traceback, or one step of another rank follows) still counts as a failure.

A log with nothing alarming in it and no ending is such a stop, however ordinary its last
line: it has nothing harmless for an excerpt to be about, and its end is exactly where a silent
hang or a silent kill leaves a log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from crashlens.decide.harmless_output import harmless_entry, why
from crashlens.decide.ignored import IGNORED_REPORTS, why_harmless, without_ignored
from crashlens.decide.last_output import CUT_TRACEBACK, is_warning, read_last_record
from crashlens.decide.never_started import never_allocated, never_scheduled
from crashlens.decide.peer_wait import PEER_WAIT_RULES, PROGRESS_KEYS
from crashlens.decide.stop_order import progress_of, went_on
from crashlens.model import Assessment, Ending, Fact, Hit, InputKind, Role
from crashlens.parsers.launcher.tools import COLAB, HF_SPACES, KAGGLE
from crashlens.parsers.tables import CatalogEntry
from crashlens.text.clip import shortened

STORY_KINDS = frozenset({InputKind.LAUNCHER, InputKind.OTHER})
"""Inputs that tell the run's own story line by line (its logs)."""
MAX_LISTED = 8
"""Alarming lines listed as harmless, at most (then a count)."""
CLEAN_EXITS = frozenset({"SystemExit", "SystemExit: 0", "SystemExit: None"})
COLLECT = (
    "collect the scheduler's record of the job's end (`sacct -j <job> "
    "--format=JobID,State,ExitCode,Reason`, or `kubectl describe pod <pod>` for its last "
    "state), the kernel log of its nodes from that time (`dmesg -T`: an OOM kill, a GPU or "
    "NIC fault) and the container's state (`docker inspect <container>`: State, OOMKilled, "
    "ExitCode)"
)
"""What to collect to learn how a run whose log stops ended."""
COLLECT_ON = {
    HF_SPACES: (
        "collect the Space's own container log from before its restart (the Logs button on "
        "its page) and note its hardware tier's RAM, GPU memory and disk: a Space the platform "
        "stopped at one of them shows only a status line"
    ),
    COLAB: (
        "collect the notebook's full cell output and the runtime's state (Runtime, View "
        "resources: RAM, disk, GPU memory), and check that a Google Drive mount the job read "
        "from is still there (`ls /content/drive`): a runtime that ran out of RAM, reached its "
        "session limit or lost its Drive mount leaves no node or scheduler record to ask"
    ),
    KAGGLE: (
        "collect the notebook's full output and its session's resource panel (RAM, disk, "
        "GPU memory and the session's time used): a session stopped at one of its limits "
        "leaves no node or scheduler record to ask"
    ),
}
"""The same for a job a platform hosted (`platform.name`): it has no node or scheduler of its
own to ask."""
GONE_PAST = "the run went on from it: its training progress began or went on after it"
"""Why a failure line followed by the run's progress is not how the run ended."""


@dataclass(frozen=True, slots=True)
class Alarm:
    """A line of a run's log that looks alarming and named no failure."""

    path: str
    lineno: int
    says: str
    why: str | None = None
    """Why the line is harmless, when its project says so (`decide.harmless_output`)."""


def running_state(facts: Sequence[Fact]) -> Fact | None:
    """A platform's record of the job's container still running (`State.Status`), if any:
    with a log that simply stops, the process is alive and silent, so the run had not ended
    well when the inputs were collected."""
    return next((f for f in facts if f.key == "docker.status" and f.value == "running"), None)


def unended(assessment: Assessment) -> bool:
    """Whether an assessment is the stop of outcome 1 or 5 (the run's log or its container
    shows no ending, and the inputs hold them): a failure is possible, `none` is not earned."""
    return assessment.ending is Ending.UNKNOWN and assessment.sign is not None


def gone_past(
    hits: Sequence[Hit], facts: Sequence[Fact], failure_rules: frozenset[str]
) -> list[Hit]:
    """The failure lines of `hits` that the run went on from (`stop_order.went_on`, with no
    stop): not how a log with no ending ended."""
    started = progress_of(facts)
    return [
        h
        for h in hits
        if h.rule_id in failure_rules
        and not h.against
        and h.role is not Role.CONTEXT
        and h.lineno is not None
        and went_on(h, started)
    ]


def without_ending(
    facts: Sequence[Fact],
    hits: Sequence[Hit],
    kinds: Mapping[str, InputKind | None],
    failure_rules: frozenset[str],
) -> Assessment:
    """The assessment of inputs in which the failure detector found no ending (see the
    module docstring for the five outcomes)."""
    story = any(kinds.get(item.path) in STORY_KINDS for item in facts) or any(
        kind in STORY_KINDS for kind in kinds.values()
    )
    lasts = _last_lines(facts, kinds)
    past = gone_past(hits, facts, failure_rules)
    gone = set(past)
    live = [h for h in hits if h not in gone]
    if (state := running_state(facts)) is not None:
        return Assessment(
            ending=Ending.UNKNOWN,
            sign=state.cited("the container was still running when it was inspected"),
            reason=(
                "No ending was found: the log simply stops, and the container was still "
                "running when it was inspected: the process was alive but printed nothing "
                "more (hung, or still working)."
            ),
        )
    if (never := never_scheduled(facts, story)) is not None:
        return never
    # a pending Slurm job beside a failure line: the failure is what the inputs are about
    if not _failed(facts, live, failure_rules) and (never := never_allocated(facts)) is not None:
        return never
    if not lasts:
        what = "no input shows how the run ended" if not story else "the run's log is empty"
        return Assessment(ending=Ending.UNKNOWN, sign=None, reason=f"No ending was found: {what}.")
    if not _failed(facts, live, failure_rules):
        going = _ongoing(facts, hits, lasts, past)
        if going is not None:
            return going
    return _stops(facts, lasts, past)


def _collect(facts: Sequence[Fact]) -> str:
    """What to collect to learn how the run ended: the platform's own record where a platform
    hosted it, else the scheduler's, the nodes' and the container's."""
    hosts = (COLLECT_ON.get(str(f.value)) for f in facts if f.key == "platform.name")
    return next((says for says in hosts if says is not None), COLLECT)


def _last_lines(facts: Sequence[Fact], kinds: Mapping[str, InputKind | None]) -> list[Fact]:
    """The last output line of each of the run's logs, the launcher's first, then by path."""
    found = [
        f
        for f in facts
        if f.key == "log.last_line" and f.lineno is not None and kinds.get(f.path) in STORY_KINDS
    ]
    return sorted(found, key=lambda f: (kinds.get(f.path) is not InputKind.LAUNCHER, f.path))


def _failed(facts: Sequence[Fact], hits: Sequence[Hit], failure_rules: frozenset[str]) -> bool:
    """Whether anything shows a failure: a failure rule's line (not one the process reported
    and went on from), or an exception that may have ended its process."""
    kept = without_ignored(hits, facts)
    if any(hit.rule_id in failure_rules and not hit.against for hit in kept):
        return True
    return any(item.key == "python.exception" and ended_process(item) for item in facts)


def ended_process(item: Fact) -> bool:
    """Whether a `python.exception` can have ended its process: not one the process reports
    and goes on from (a thread's, a finalizer's, an `atexit` handler's, one an `except` block
    printed: its `teardown`), nor a `SystemExit` with status 0 (a clean exit raised as an
    exception)."""
    return item.attr("teardown") is None and str(item.value) not in CLEAN_EXITS


def _alarms(
    facts: Sequence[Fact], hits: Sequence[Hit], path: str, past: Sequence[Hit] = ()
) -> list[Alarm]:
    """The lines of one log that look alarming: a rule's line, an NCCL WARN, an exception
    the process reported and went on from; once per line, in order. A failure line of `past`
    (`gone_past`) says why it is harmless."""
    passed = {h.lineno for h in past if h.path == path}
    progress = _last_progress(facts, path)
    found = [
        Alarm(
            h.path,
            h.lineno,
            f"`{shortened(h.text.strip(), 80)}` ({h.rule_id})",
            _why(h.text, progress > h.lineno) or (GONE_PAST if h.lineno in passed else None),
        )
        for h in hits
        if h.path == path and h.lineno is not None and not h.against
    ]
    found += [
        Alarm(f.path, f.lineno, f"NCCL WARN `{shortened(str(f.value), 80)}`")
        for f in facts
        if f.path == path and f.key == "nccl.warn" and f.lineno is not None
    ]
    found += [
        Alarm(f.path, f.lineno, f"`{shortened(str(f.value), 80)}`")
        for f in facts
        if f.path == path
        and f.key == "python.exception"
        and f.lineno is not None
        and f.attr("teardown") in IGNORED_REPORTS
    ]
    found += [
        Alarm(f.path, f.lineno, f"a warning `{shortened(f.text.strip(), 80)}`")
        for f in facts
        if f.path == path and f.key == "log.last_warning" and f.lineno is not None
    ]
    kept: dict[int, Alarm] = {}
    for alarm in found:
        kept.setdefault(alarm.lineno, alarm)
    return [kept[line] for line in sorted(kept)]


def _why(text: str, went_on: bool) -> str | None:
    """Why a line is harmless, by the catalog; `went_on`: the run's progress follows it (an
    entry harmless only where the run goes on past it needs that, `unless_stopped`)."""
    entry = _harmless_here(text, went_on)
    return why(entry) if entry is not None else None


def _harmless_here(text: str, went_on: bool) -> CatalogEntry | None:
    """The catalog entry that makes a line harmless in its log, or None: an entry with
    `unless_stopped` only where the run's progress follows the line."""
    entry = harmless_entry(text)
    if entry is None or (entry.unless_stopped and not went_on):
        return None
    return entry


def _last_progress(facts: Sequence[Fact], path: str) -> int:
    """The last line of a log that reports training progress (0: none does)."""
    return max(
        (f.lineno or 0 for f in facts if f.path == path and f.key in PROGRESS_KEYS), default=0
    )


def _ongoing(
    facts: Sequence[Fact], hits: Sequence[Hit], lasts: Sequence[Fact], past: Sequence[Hit]
) -> Assessment | None:
    """`ongoing` when every log of the run ends going on well (outcome 4), else None."""
    reports = why_harmless(facts)
    reported = {
        (f.path, f.lineno)
        for f in facts
        if f.key == "python.exception" and f.attr("teardown") in IGNORED_REPORTS
    }
    shown: list[tuple[Fact, str]] = []
    harmless: list[str] = []
    for last in lasts:
        line = last.lineno or 0
        alarms = _alarms(facts, hits, last.path, past)
        wording = read_last_record(last)
        known = _harmless_here(last.text, went_on=False)
        if wording is CUT_TRACEBACK and any(path == last.path for path, _ in reported):
            wording = None  # a chained traceback continuing a report the process went on from
        if wording is not None and wording.kind == "unwinding":
            return None  # the error of its last alarm was still propagating
        if wording is not None and wording.kind == "leaked":
            return None  # its processes had ended, and how is not shown
        if wording is not None and wording.kind == "strained":
            return None  # it ran out of memory there, and whether it went on is not shown
        if _still_waiting(facts, hits, last.path):
            return None  # nothing shows that the peers it waited for ever joined
        unexcused = [a for a in alarms if a.why is None and (a.path, a.lineno) not in reported]
        if _alarm_process_ended(facts, last.path, unexcused):
            return None  # its last line is another process's: the alarmed one ended on an error
        if (
            wording is not None
            and wording.kind == "notice"
            and not (is_warning(wording) and _stalled_at_start(facts, last.path))
        ):
            says = f"its last line shows it going on: {wording.says}"
        elif known is not None and all(a.lineno < line or a.why for a in alarms):
            says = f"its last line is output its project calls harmless ({known.id})"
        elif reports and all((a.path, a.lineno) in reported for a in alarms):
            says = "its errors are reports the process went on from"
        elif alarms and max(a.lineno for a in alarms) < line:
            says = f"it went on past the lines that look alarming, to line {line}"
        else:
            return None
        shown.append((last, says))
        harmless += [_judged(a, line) for a in alarms if a.why is not None or a.lineno < line]
    first, says = shown[0]
    known_lines = [h for h in harmless if "; known harmless: " in h]
    listed = reports + known_lines if reports else harmless
    more = len(listed) - MAX_LISTED
    listed = listed[:MAX_LISTED] + ([f"... and {more} more such lines."] if more > 0 else [])
    return Assessment(
        ending=Ending.ONGOING,
        sign=first.cited(says),
        reason=(
            "No finish line or exit status was found, and nothing failed: the run was going on "
            f"where its log ends ({says}), as in an excerpt of lines that look alarming but "
            "are harmless (judged below)."
        ),
        harmless=tuple(listed),
    )


def _stalled_at_start(facts: Sequence[Fact], path: str) -> bool:
    """Whether a log announced that its training loop began (`log.training_start`) and shows
    no training progress after that: a warning it then stops at is said on the way, but on
    the way to a first step that never came (a stuck data loader, a collective waiting for a
    peer), so the warning shows no run going on."""
    start = next(
        (f.lineno for f in facts if f.path == path and f.key == "log.training_start"), None
    )
    return start is not None and _last_progress(facts, path) <= start


def _alarm_process_ended(facts: Sequence[Fact], path: str, alarms: Sequence[Alarm]) -> bool:
    """Whether an alarm belongs to a process whose own last lines are an error (in a log
    whose lines all name their process: `log.process_end`): other processes' later lines do
    not show that this one went on."""
    alarmed = {a.lineno for a in alarms}
    for item in facts:
        if item.path == path and item.key == "log.process_end":
            lines = str(item.attr("lines") or "").split(",")
            if alarmed.intersection(int(n) for n in lines if n.isdigit()):
                return True
    return False


def _still_waiting(facts: Sequence[Fact], hits: Sequence[Hit], path: str) -> bool:
    """Whether a log's processes were last seen waiting for their peers to join
    (`PEER_WAIT_RULES`): a wait with no training progress after it. Only progress shows that
    the peers joined; other lines after the wait (another node's set-up, the launcher copying
    files, more waits) do not, so such a log is no excerpt of a run going on well."""
    waits = [
        h.lineno
        for h in hits
        if h.path == path and h.rule_id in PEER_WAIT_RULES and h.lineno is not None
    ]
    if not waits:
        return False
    return _last_progress(facts, path) <= max(waits)


def _judged(alarm: Alarm, line: int) -> str:
    """Why an alarming line of a run going on well is harmless, as a sentence."""
    place = f"{alarm.path}:{alarm.lineno}: {alarm.says}"
    if alarm.why is not None:
        return f"{place}; {alarm.why}."
    return (
        f"{place}; the run went on after it (its log goes on to line {line}), and no failure "
        "line follows."
    )


def _stops(facts: Sequence[Fact], lasts: Sequence[Fact], past: Sequence[Hit]) -> Assessment:
    """`unknown`: the log stops (outcome 5), its last line cited; the failure lines the run
    went on from (`past`) are judged harmless."""
    last = lasts[0]
    passed = _gone_past_alarms(past)
    judged = tuple(_judged(a, a.lineno) for a in passed[:MAX_LISTED])
    if len(passed) > MAX_LISTED:
        judged += (f"... and {len(passed) - MAX_LISTED} more such lines.",)
    one = len(passed) == 1
    went = (
        f" The failure line{'' if one else 's'} before that {'is' if one else 'are'} not how it "
        f"ended: the run went on from {'it' if one else 'them'} (judged below)."
        if passed
        else ""
    )
    went += _stopped_on(facts, lasts)
    place = f"{last.path}:{last.lineno}"
    others = len(lasts) - 1
    also = f" (and {others} more of the run's logs)" if others > 0 else ""
    wording = read_last_record(last)
    if wording is not None and wording.kind == "leaked":
        return Assessment(
            ending=Ending.UNKNOWN,
            sign=last.cited(f"the last output: {wording.says}"),
            reason=(
                f"The run's processes had ended, but the log does not show how: its last "
                f"output ({place}{also}) is multiprocessing's resource tracker reporting "
                "semaphores they never released, which it prints once they are all gone, after "
                "a finish, a crash or a kill alike (a process killed by a signal leaves them), "
                f"{_progress(facts, last)}. A hang that was killed looks like this: "
                f"{_collect(facts)}.{went}"
            ),
            harmless=judged,
        )
    return Assessment(
        ending=Ending.UNKNOWN,
        sign=last.cited("the last line of the log: nothing after it shows how the run ended"),
        reason=(
            f"The log stops without showing how the run ended: no exit status, death sign or "
            f"finish follows its last line ({place}{also}), {_progress(facts, last)}. A hang, "
            f"or a kill that left no trace in the log, looks like this: {_collect(facts)}.{went}"
        ),
        harmless=judged,
    )


def _stopped_on(facts: Sequence[Fact], lasts: Sequence[Fact]) -> str:
    """A sentence on the last line of a log when it is output the catalog calls harmless only
    where the run goes on past it (`unless_stopped`), and nothing went on: what it means then."""
    for last in lasts:
        entry = harmless_entry(last.text)
        if entry is not None and entry.unless_stopped:
            return (
                f" Its last line is `{entry.id}`, harmless only where the run goes on: "
                f"{entry.unless_stopped}."
            )
    return ""


def _gone_past_alarms(past: Sequence[Hit]) -> list[Alarm]:
    """The failure lines the run went on from, once per line, in order."""
    kept: dict[tuple[str, int], Alarm] = {}
    for h in sorted(past, key=lambda h: (h.path, h.lineno or 0)):
        says = f"`{shortened(h.text.strip(), 80)}` ({h.rule_id})"
        kept.setdefault((h.path, h.lineno or 0), Alarm(h.path, h.lineno or 0, says, GONE_PAST))
    return list(kept.values())


def _progress(facts: Sequence[Fact], last: Fact) -> str:
    """Whether training was in progress where the log stops, as a clause."""
    marks = [
        f.lineno
        for f in facts
        if f.path == last.path and f.key == "log.progress_mark" and f.lineno is not None
    ]
    first = next((f.lineno for f in facts if f.path == last.path and f.key == "log.progress"), None)
    if marks:
        return (
            f"while training was in progress (its last lines report training progress, the "
            f"last at line {max(marks)})"
        )
    if first is not None:
        return (
            f"after training had started (its first progress at line {first}), with no "
            "training progress among its last lines"
        )
    return (
        "before any training progress shows (while setting up: rendezvous, NCCL "
        "initialisation, data loading)"
    )
