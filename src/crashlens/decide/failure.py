"""Did the run fail, and where does that show? Decided before "why", from the facts of every input.

The parsers keep what a death looks like in each input kind as facts (exit codes and signals
in every convention, the shell's `Killed`, debugger and faulthandler backtraces, fatal and
abort messages, how the log ends, container, pod and scheduler states); this module reads
them into one `Assessment`, with two signs of its own: a last output line that a rule names
as a cause (a root hit), or that prints an error of the CUDA or NCCL catalogs:

1. **A normal finish wins.** A completion line (final metrics, Lightning's `Trainer.fit`
   stopped, HF's `Training completed.`) ends the run; a process's clean exit (`exits
   successfully`, exit 0, a `Completed` / `COMPLETED` state, an error raised as the
   interpreter shuts down) does when no other process died. Alarming lines before it are
   something the run went on from; lines after it are teardown (finalizers, a crash at
   interpreter exit). Only an error that is the log's last output after the finish, and
   that is not a finalizer's, still counts: the program failed after its training loop; so
   does a platform's record of the end (a container's state, a sacct/scontrol state), which
   is written after the log's last line. A process seen exiting (PyTorch's
   `destroy_process_group()` warning, a finalizer that found its modules torn down) that then
   crashes crashed in its teardown: that death does not count.
2. **A death sign means the run failed** (`DIED`), unless it is how an outside stop looks:
   SIGINT, SIGTERM, SIGHUP, exit 130 / 143, `KeyboardInterrupt`, torchelastic's
   `SignalException` (its agent got one of those from outside), a Slurm `TIMEOUT`,
   `PREEMPTED` or `CANCELLED` state, a pod preempted by the scheduler or evicted through the
   API (its `DisruptionTarget` reason), and, once a scheduler has stopped the job, its SIGKILL
   (exit 137, a container's `Error` with exit code 137). Those make the ending `STOPPED`
   when nothing else died, and no cause-level failure line came before the stop: a SIGTERM,
   a bare `CANCELLED`, a `docker stop` after one is the failure's teardown, and the run
   `DIED` of the failure (`decide/stop_order.py`; an explicit stop that came first stands).
   A launcher's SIGTERM that nothing else attributes (no scheduler state, container stop or
   user interrupt beside it) is no stop either: a cancel and a memory watchdog send the same
   signal, so the ending is `UNKNOWN` and the report says what to collect.
3. **Otherwise no sign says how it ended**, and `decide/unended.py` tells the rest apart:
   the run going on well where its log ends (`ONGOING`: past every alarming line, or at a
   harmless notice), or its log simply stops (`UNKNOWN`, its last line cited; or its
   container still running, silent): a hang or a silent kill looks like that, so the policy
   counts a failure as possible and never answers `none`.

The wording of a log's last output adds signs of its own (`decide/last_output.py`): a
program's last words of completion (`Finished training loop.`) or of exiting (a process
group destroyed at exit) are a finish, counted like a clean exit (only when nothing died);
a launcher passing SIGHUP or SIGINT on to its workers, or Docker's `stop` event, is a stop.

Each sign says which mechanism it shows; `DEATH_SIGNS` ranks them, so the report names the
most telling line (an exit code or a signal before the mere shape of the last line).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from crashlens.decide.catalog_last_line import catalog_error, cut_catalog_error
from crashlens.decide.cuda_unloading import SAYS as UNLOADING_SAYS
from crashlens.decide.cuda_unloading import shows_unloading
from crashlens.decide.ending_signs import (
    Sign,
    alarming,
    alarms,
    completed,
    place,
    position,
    stop_harmless,
)
from crashlens.decide.ignored import LIFESPAN_SAYS, RUNNER_SAYS, without_ignored
from crashlens.decide.interrupt_end import interrupt_superseded, interrupt_teardown
from crashlens.decide.last_output import read_last_record
from crashlens.decide.peer_wait import stopped_waiting
from crashlens.decide.stop_order import (
    JULIA_INTERRUPT,
    STOPPED_LSF,
    STOPPED_PBS,
    USER_STOP_EXCEPTIONS,
    FailureFirst,
    cause_level,
    failed_request,
    failure_before_stop,
    outlived_call_stop,
    progress_of,
)
from crashlens.decide.unended import ended_process, without_ending
from crashlens.match.rules import Rule, rule_index, shipped_rules
from crashlens.model import (
    Assessment,
    Category,
    Ending,
    Fact,
    FactValue,
    Hit,
    InputAnalysis,
    InputKind,
    Role,
)
from crashlens.parsers.tables import CatalogEntry
from crashlens.parsers.windows_status import is_windows_error_status, windows_status
from crashlens.text.clip import shortened

STOP_SIGNALS = frozenset({"SIGINT", "SIGTERM", "SIGHUP"})
"""Signals an outside stop sends (Ctrl-C, `kill`, `scancel`, a scheduler's grace period)."""
DEATH_SIGNALS = frozenset(
    {
        "SIGKILL",
        "SIGBUS",
        "SIGSEGV",
        "SIGABRT",
        "SIGFPE",
        "SIGILL",
        "SIGSYS",
        "SIGTRAP",
        "SIGQUIT",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGPWR",
    }
)
"""Signals whose default action ends the process (SIGUSR1, SIGCONT... are requests, not deaths)."""
STOP_EXITS = frozenset({130, 143, 129, -2, -15, -1})
"""Exit statuses of a process ended by SIGINT, SIGTERM or SIGHUP (128+N, or -N from Python)."""
AGENT_STOP_EXCEPTION = re.compile(
    r"(?:^|[ \t:])(?:torch\.distributed\.elastic\.multiprocessing\.api\.)?SignalException\b"
)
"""torchelastic's agent raises SignalException from the handlers it installs for SIGTERM,
SIGINT, SIGHUP and SIGQUIT (`multiprocessing/api.py`): signals that reach the agent from
outside (a scheduler, Ctrl-C, a closed terminal); it sends SIGTERM to its workers, never to
itself. So the exception is an outside stop, whichever of them its message names."""
AGENT_STOP_SAYS = "the elastic agent was stopped by a signal from outside (its SignalException)"
DIED_SLURM = frozenset({"FAILED", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL"})
STOPPED_SLURM = frozenset({"TIMEOUT", "PREEMPTED", "DEADLINE", "CANCELLED"})
DIED_K8S = frozenset(
    {
        "OOMKilled",
        "OOMKilling",
        "Error",
        "ContainerCannotRun",
        "StartError",
        "DeadlineExceeded",
        "Evicted",
        "CrashLoopBackOff",
        "BackOff",
        # a container the runtime could not create or start (runc's error in the message)
        "CreateContainerError",
        "RunContainerError",
    }
)
STOPPED_K8S = frozenset({"Preempting", "Shutdown", "NodeShutdown"})
STOPPED_K8S_DISRUPTIONS = frozenset({"PreemptionByScheduler", "EvictionByEvictionAPI"})
"""`DisruptionTarget` reasons of an outside stop (a higher-priority pod, a drain); the
kubelet's own `TerminationByKubelet` (node pressure) is a failure."""
KERNEL_DEATHS = {
    "kernel.oom_kill": "the kernel's OOM killer killed a process",
    "kernel.panic": "the kernel panicked",
    "kernel.gpu_off_bus": "a GPU fell off the bus",
}
FINISHED_PROCESS_KINDS = frozenset({InputKind.LAUNCHER, InputKind.OTHER})
"""Inputs that tell the run's own story: where a completion line and a last output mean it."""

MODULE_TEARDOWN = re.compile(
    r"'NoneType' object (?:is not callable|has no attribute)|sys\.meta_path is None"
    r"|Python is likely shutting down"
)
"""What a `__del__` or weakref callback raises when it runs as the interpreter exits: CPython
tears modules down, so the globals the finalizer uses are already None (the warning under
`object.__del__` in the data model reference), and imports fail once `sys.meta_path` is gone."""
LAST_WORDS = frozenset({"said-finished", "said-exiting", "prompt-returned"})
"""Finish signs read from the wording of a log's last output (`decide.last_output`), and the
shell's prompt back after it: none counts once a failure is in view."""

_Add = Callable[[Ending, str, str], None]
"""Records one sign of the fact being read: its ending, kind and what it says."""

FAILED_REQUEST_SAYS = (
    "the server summed up a request after that request's failure (it went on to the next)"
)
"""What a request summary after its failure shows (`stop_order.failed_request`)."""
DEATH_SIGNS = (
    "state",
    "signal",
    "exit",
    "fatal",
    "report",
    "traceback",
    "kernel",
    "cut",
)
"""Kinds of death sign, most telling first: the report names the best one found."""


def assess(analyses: Sequence[InputAnalysis], rules: Sequence[Rule] | None = None) -> Assessment:
    """The ending of the run the inputs show, and the line that shows it. `rules`: the library
    that matched the hits (the shipped one when not given), for which of them show a failure."""
    kinds = {a.status.path: a.status.kind for a in analyses}
    facts = [item for analysis in analyses for item in analysis.facts]
    hits = [hit for analysis in analyses for hit in analysis.hits]
    exited = {f.path for f in facts if f.key == "docker.status" and f.value == "exited"}
    signs = [
        sign for item in facts for sign in _signs(item, kinds.get(item.path), item.path in exited)
    ]
    signs += _root_as_last_output(facts, hits)
    finishes = [s for s in signs if s.ending is Ending.COMPLETED]
    stops = [s for s in signs if s.ending is Ending.STOPPED]
    deaths = [s for s in signs if s.ending is Ending.DIED]
    # A platform's limit that ends one call of a server (ZeroGPU's lease) is no ending once the
    # server went on and a later call failed: that failure is what the log shows.
    index = rule_index(rules if rules is not None else shipped_rules())
    stops = [
        s for s in stops if not outlived_call_stop(s.fact, hits, index.failure, index.knock_on)
    ]
    # A server's summary of one request after that request failed is no finish: it shows the
    # request failed (the server went on), and the failure line before it says why.
    failed = [s for s in finishes if failed_request(s.fact, facts, hits, index.failure)]
    finishes = [s for s in finishes if s not in failed]
    deaths += [Sign(Ending.DIED, "report", s.fact, FAILED_REQUEST_SAYS) for s in failed]
    # An uncaught KeyboardInterrupt ends the interpreter: a native crash after it in the same
    # log (an assertion in a destructor, a fatal error at interpreter shutdown) is that exit's
    # teardown, unless Python went on to raise something else there (a notebook's next cell).
    stops = [s for s in stops if not interrupt_superseded(s, facts, hits, index)]
    interrupted = interrupt_teardown(stops, deaths, facts)
    deaths = [s for s in deaths if s not in interrupted]
    if _scheduler_stopped(stops):
        # A scheduler's stop ends with SIGKILL after the grace period: that kill is the stop.
        stops += [s for s in deaths if _is_stop_kill(s)]
    # A line that shows a stop (`srun: error: task 0: Terminated`) is that stop, whatever
    # else its shape says.
    stop_lines = {position(s) for s in stops}
    deaths = [s for s in deaths if position(s) not in stop_lines]
    # A dying message that shows CUDA already unloaded is a destructor's at exit: an exit.
    unloading = [
        s
        for s in deaths
        if s.fact.key in ("log.fatal", "log.ends_with") and shows_unloading(s.fact, hits)
    ]
    deaths = [s for s in deaths if s not in unloading]
    finishes += [Sign(Ending.COMPLETED, "exiting", s.fact, UNLOADING_SAYS) for s in unloading]
    # A crash whose stack runs through the exit path (exit handlers, the interpreter's
    # finalization) happened after the program's work had returned; not where a failure is
    # in view, whose teardown crashes the same way (a CUDA error freed at exit).
    exit_paths = _exit_path_crashes(facts)
    in_teardown = [s for s in deaths if position(s) in exit_paths]
    if in_teardown and not _failure_in_view(facts, hits, rules):
        deaths = [s for s in deaths if s not in in_teardown]
        finishes += [
            Sign(Ending.COMPLETED, "exiting", s.fact, _exit_path_says(exit_paths[position(s)]))
            for s in in_teardown
        ]
    # Python exits the same way after an uncaught exception: with one in view, no finish.
    if any(f.key == "python.exception" and f.attr("teardown") is None for f in facts):
        finishes = [s for s in finishes if s.kind != "exiting"]
    if any(s.kind in LAST_WORDS for s in finishes) and _failure_in_view(facts, hits, rules):
        # A bare `done.` or exit chatter is a wrapper's or another process's words once an
        # uncaught exception or a cause-level failure line is in view.
        finishes = [s for s in finishes if s.kind not in LAST_WORDS]
    exits = [s for s in finishes if s.kind == "exiting"]
    if exits:
        # A crash after the interpreter began to exit is its teardown (a native destructor):
        # the program's own code had returned.
        teardown = [s for s in deaths if _after_exit(s, exits)]
        deaths = [s for s in deaths if s not in teardown]
    else:
        teardown = []
    runs = [s for s in finishes if s.kind == "completed"]
    if runs:
        after = _errors_after_finish(runs, deaths, facts, hits)
        if not after:
            return completed(runs, alarms(deaths + stops, hits))
        deaths = after
    elif finishes and not deaths and not stops:
        # A clean exit counts only when no other process died (one rank of many may exit 0).
        return completed(finishes, alarms(teardown, hits))
    if deaths:
        best = min(deaths, key=_telling)
        others = len({(s.fact.path, s.fact.lineno) for s in deaths}) - 1
        more = f" ({others} more death sign{'s' if others != 1 else ''})" if others > 0 else ""
        return Assessment(
            ending=Ending.DIED,
            sign=best.fact.cited(best.says),
            reason=f"The run failed: {best.says}{more}.",
        )
    if stops and (first := _failure_first(stops, hits, facts, kinds, rules)) is not None:
        return _died_before_stop(first, stops)
    if stops and (waiting := stopped_waiting(facts, hits)) is not None:
        return waiting
    if stops and all(map(_sigterm_from_nobody_named, stops)):
        return _unattributed_sigterm(min(stops, key=position))
    if stops:
        best = min(stops, key=position)
        return Assessment(
            ending=Ending.STOPPED,
            sign=best.fact.cited(best.says),
            reason=f"The run was stopped from outside, not by a failure: {best.says}.",
            harmless=tuple(stop_harmless(alarms(alarming(stops), hits), best)),
        )
    return without_ending(facts, hits, kinds, index.failure)


def _sigterm_from_nobody_named(sign: Sign) -> bool:
    """Whether a stop is only a SIGTERM its sender left unnamed: a launcher or the agent that
    received it, with no scheduler's, container's or user's record of a stop beside it."""
    fact = sign.fact
    return fact.key == "launcher.signal" and fact.value == "SIGTERM"


def _unattributed_sigterm(sign: Sign) -> Assessment:
    """A run ended by SIGTERM and nothing else: Ctrl-C is SIGINT and a closed terminal SIGHUP,
    but SIGTERM is what a scheduler's cancel, a time limit, a preemption and `docker stop` send
    and also what memory watchdogs send before they kill (earlyoom; the Neuron runtime's host
    memory guard, whose runbook gives this very log). The log cannot tell a deliberate stop
    from a killed run: `none` is not earned, and the scheduler's record tells which."""
    return Assessment(
        ending=Ending.UNKNOWN,
        sign=sign.fact.cited(f"{sign.says}, and no record says who sent it"),
        reason=(
            f"The run ended on a SIGTERM that no input attributes: {sign.says}. A scheduler's "
            "cancel, time limit or preemption sends one, as do a container stop and watchdogs "
            "that end processes when the host runs out of memory, so the log cannot tell a "
            "deliberate stop from a kill. Collect the scheduler's record of the job (sacct -j "
            "<jobid> -o State,ExitCode,MaxRSS,ReqMem) and the kernel log (dmesg -T | grep -i oom)."
        ),
    )


def _failure_first(
    stops: Sequence[Sign],
    hits: Sequence[Hit],
    facts: Sequence[Fact],
    kinds: Mapping[str, InputKind | None],
    rules: Sequence[Rule] | None,
) -> FailureFirst | None:
    """A failure line that a stop followed (`decide.stop_order`): the stop is its teardown,
    unless the run's training progress began or went on after the line (it got past it)."""
    index = rule_index(rules if rules is not None else shipped_rules())
    stopped, causes = [s.fact for s in stops], without_ignored(hits, facts)
    return failure_before_stop(
        stopped, causes, kinds, index.failure, index.knock_on, progress_of(facts)
    )


def _exit_path_crashes(facts: Sequence[Fact]) -> dict[tuple[str, int], str]:
    """(path, line) of each crash line whose native stack runs through the exit path, with
    the exit-path function (`native.exit_crash`)."""
    return {(f.path, f.lineno or 0): str(f.value) for f in facts if f.key == "native.exit_crash"}


def _exit_path_says(function: str) -> str:
    """What a crash in the exit path shows, as a clause."""
    return (
        f"the process crashed in its exit path ({function} on its stack): after its own work "
        "had returned, as it was tearing down"
    )


def _failure_in_view(
    facts: Sequence[Fact], hits: Sequence[Hit], rules: Sequence[Rule] | None
) -> bool:
    """Whether an uncaught exception or a cause-level failure line (one the process did not
    report and go on from) is in the inputs."""
    if any(f.key == "python.exception" and ended_process(f) for f in facts):
        return True
    index = rule_index(rules if rules is not None else shipped_rules())
    kept = without_ignored(hits, facts)
    return any(cause_level(h, index.failure, index.knock_on) for h in kept)


def _died_before_stop(first: FailureFirst, stops: Sequence[Sign]) -> Assessment:
    cause = first.cause
    stop = next((s for s in stops if s.fact is first.stop), None)
    stopped = f" ({stop.says})" if stop is not None else ""
    same_log = first.stop.path == cause.path and first.stop.lineno is not None
    where = f"line {first.stop.lineno}" if same_log else place(first.stop.path, first.stop.lineno)
    says = f"a failure line ({cause.rule_id}) came before the stop at {where}"
    return Assessment(
        ending=Ending.DIED,
        sign=cause.cited(says),
        reason=(
            f"The run failed: {says}; that stop{stopped} is the failure's teardown (a launcher, "
            "runtime or scheduler ending the processes), not a stop from outside."
        ),
    )


def _root_as_last_output(facts: Sequence[Fact], hits: Sequence[Hit]) -> list[Sign]:
    """A line that names a cause (a rule's root hit) as the log's last output: the program
    stopped on it."""
    last = {(f.path, f.lineno): f for f in facts if f.key == "log.last_line"}
    found: dict[tuple[str, int | None], Sign] = {}
    # a report the process went on from (a finalizer's, one an `except` block printed) names
    # no ending, whatever it names
    for hit in without_ignored(hits, facts):
        item = last.get((hit.path, hit.lineno))
        if item is not None and hit.role is Role.ROOT and not hit.against:
            says = f"the last output names a cause ({hit.rule_id})"
            found.setdefault((hit.path, hit.lineno), Sign(Ending.DIED, "traceback", item, says))
    return list(found.values())


def _signs(item: Fact, kind: InputKind | None, exited: bool = False) -> list[Sign]:
    """The signs one fact gives. `exited`: its container has exited (a running container's
    exit code 0 says nothing)."""
    key, value = item.key, item.value
    found: list[Sign] = []

    def add(ending: Ending, sign_kind: str, says: str) -> None:
        found.append(Sign(ending, sign_kind, item, says))

    if key == "process.exit_code" and (why := STOPPED_LSF.get(str(item.attr("lsf_term")))):
        add(Ending.STOPPED, "scheduler", f"LSF ended the job: {why} (exit status {value})")
    elif key in ("launcher.exit_code", "process.exit_code", "k8s.exit_code"):
        _exit_sign(value, add, "")
    elif key == "docker.exit_code" and (value != 0 or exited):
        _exit_sign(value, add, "the container ")
    elif key == "shell.prompt_returned":
        add(
            Ending.COMPLETED,
            "prompt-returned",
            "the shell's prompt came back after the command's output: it exited, and no death "
            "sign or failure line came before the prompt",
        )
    elif key == "docker.oom_killed" and value is True:
        add(Ending.DIED, "state", "the container was OOM-killed (State.OOMKilled)")
    elif key == "launcher.signal":
        _signal_sign(str(value), str(item.attr("source") or ""), add)
    elif key == "launcher.completed" and value is True:
        if item.attr("scope") == "process":
            add(Ending.COMPLETED, "exit-0", "a process of the run exited successfully")
        else:
            add(Ending.COMPLETED, "completed", "the run printed its completion line")
    elif key == "launcher.first_failure":
        add(Ending.DIED, "report", f"torchelastic names rank {value} as the first failure")
    elif key == "launcher.killing_workers":
        add(
            Ending.DIED,
            "report",
            f"the {value} launcher was killing its processes, as it does when one of them failed",
        )
    elif key == "python.exception" and item.attr("source") in ("error-file", "torchelastic-report"):
        _exception_sign(str(value), add, "torchelastic recorded ")
    elif (
        key == "python.exception"
        and str(value).startswith(USER_STOP_EXCEPTIONS)
        and item.attr("teardown") is None
        and item.attr("source") == "log"
    ):
        _exception_sign(str(value), add, "")
    elif key == "torchelastic.error_code":
        add(Ending.DIED, "report", f"the worker's error file records error code {value}")
    elif key == "python.exiting":
        add(Ending.COMPLETED, "exiting", "a process reached its interpreter's exit")
    elif (
        key == "python.exception"
        and item.attr("teardown") == "finalizer"
        and MODULE_TEARDOWN.search(str(value))
    ):
        add(
            Ending.COMPLETED,
            "exiting",
            "an object's finalizer found a module already torn down (the interpreter was exiting)",
        )
    elif key == "python.fatal_error":
        add(Ending.DIED, "fatal", f"Python aborted with a fatal error ({value})")
    elif key == "log.fatal":
        add(Ending.DIED, "fatal", f"the process printed a dying message ({value})")
    elif key == "serving.engine_dead":
        says = item.attr("says")
        add(Ending.DIED, "fatal", f"the {value} serving engine reported its own death ({says})")
    elif key == "jupyter.kernel_died":
        add(Ending.DIED, "fatal", "the notebook server found its kernel process dead")
    elif key == "python.thread_dump" and item.attr("after_timeout") is not True:
        add(Ending.DIED, "fatal", "faulthandler dumped the threads of a crashing process")
    elif key == "log.ends_with":
        _ending_sign(str(value), item, add)
    elif key == "log.last_line" and (error := catalog_error(str(value))) is not None:
        add(Ending.DIED, "traceback", f"the last output is an error the catalogs know ({error})")
    elif key == "log.last_line" and (error := cut_catalog_error(str(value))) is not None:
        add(
            Ending.DIED,
            "traceback",
            f"the last output is an error the catalogs know, cut short ({error})",
        )
    elif key == "log.last_line" and item.attr("cut") is True and kind is InputKind.LAUNCHER:
        add(
            Ending.DIED,
            "cut",
            "the last launcher line is cut short, as by a process killed mid-write",
        )
    elif key == "log.last_line" and kind in FINISHED_PROCESS_KINDS:
        _last_output_sign(item, add)
    elif key == "slurm.state":
        _slurm_sign(item, add)
    elif key == "slurm.cancelled":
        reason = str(value)
        if "NODE FAIL" in reason.upper():
            add(Ending.DIED, "state", f"Slurm cancelled the job due to {reason.lower()}")
        else:
            # Without a reason it is `scancel` or slurmstepd's own kill (an exceeded memory
            # limit): `decide.stop_order` tells them apart by what came before.
            what = (
                " (no reason given: scancel, or slurmstepd's own kill)"
                if reason == "unspecified"
                else f" due to {reason.lower()}"
            )
            add(Ending.STOPPED, "scheduler", f"Slurm cancelled the job{what}")
    elif key == "platform.time_limit":
        add(Ending.STOPPED, "scheduler", f"{value} ended the work at its time limit")
    elif key == "platform.shutdown":
        why = "its cloud's preemption notice" if value == "preemption" else "its power key"
        add(Ending.STOPPED, "scheduler", f"the machine was shut down from outside ({why})")
    elif key == "slurm.task_failure":
        _srun_sign(str(value), add)
    elif key == "pbs.killed":
        resource = str(value)
        if (why := STOPPED_PBS.get(resource)) is not None:
            add(Ending.STOPPED, "scheduler", f"PBS killed the job: {why}")
        else:
            add(Ending.DIED, "state", f"PBS killed the job for passing its {resource} limit")
    elif key == "lsf.term":
        reason = str(value)
        if (why := STOPPED_LSF.get(reason)) is not None:
            add(Ending.STOPPED, "scheduler", f"LSF ended the job: {why} ({reason})")
        else:
            add(Ending.DIED, "state", f"LSF's job report gives the termination reason {reason}")
    elif key == "mpi.nonzero_exit":
        add(Ending.DIED, "exit", "Open MPI reports a process that exited with a non-zero status")
    elif key == "slurm.oom_kill_events":
        add(Ending.DIED, "state", "Slurm detected an OOM kill in the job step")
    elif key in ("k8s.reason", "k8s.event"):
        reason = str(value)
        if reason in DIED_K8S:
            add(Ending.DIED, "state", f"Kubernetes reports the container or pod as {reason}")
        elif reason in STOPPED_K8S:
            add(Ending.STOPPED, "scheduler", f"Kubernetes reports {reason}")
        elif reason == "Completed":
            add(Ending.COMPLETED, "completed", "Kubernetes reports the container Completed")
        elif key == "k8s.event" and reason == "Failed" and item.attr("type") != "Normal":
            # The kubelet's warning that it could not pull, create or start a container; its
            # message carries the runtime's error (runc's `container init was OOM-killed`).
            add(Ending.DIED, "state", "the kubelet could not start a container (a Failed event)")
    elif key == "k8s.disruption" and value in STOPPED_K8S_DISRUPTIONS:
        add(Ending.STOPPED, "scheduler", f"Kubernetes stopped the pod from outside ({value})")
    elif key == "k8s.job_condition" and value == "Failed":
        add(Ending.DIED, "state", f"the {item.attr('kind') or 'training job'} failed")
    elif key == "k8s.job_condition" and value == "Succeeded":
        add(Ending.COMPLETED, "completed", f"the {item.attr('kind') or 'training job'} succeeded")
    elif key in KERNEL_DEATHS:
        add(Ending.DIED, "kernel", KERNEL_DEATHS[key])
    return found


def _exit_sign(value: FactValue, add: _Add, who: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        return
    windows = windows_status(value)
    if value == 0:
        add(Ending.COMPLETED, "exit-0", f"{who or 'the process '}exited with status 0")
    elif value in STOP_EXITS or (windows is not None and windows.category == "noise"):
        meaning = f" (Windows {windows.id})" if windows is not None else ""
        add(
            Ending.STOPPED,
            "interrupt",
            f"{who or 'the process '}exited with status {value}{meaning}",
        )
    else:
        meaning = _exit_meaning(value, windows)
        add(Ending.DIED, "exit", f"{who or 'the process '}exited with status {value}{meaning}")


def _exit_meaning(value: int, windows: CatalogEntry | None) -> str:
    """`windows`: the status's NTSTATUS entry, when the table knows it."""
    if is_windows_error_status(value):
        # Windows' exit status of a crash is its NTSTATUS code, signed or not: never a signal
        unsigned = value % 2**32
        name = windows.id if windows is not None else "an NTSTATUS error"
        return f" (Windows {name}, 0x{unsigned:08X})"
    if -64 <= value < 0:
        return f" (killed by signal {-value})"
    if 128 < value < 160:
        return f" (128 + signal {value - 128})"
    return ""


_SIGNAL_SOURCES = {
    "shell": "the shell's report",
    "echo": "the terminal's `^C` echo of Ctrl-C, with the program's output after it",
    "debugger": "a debugger backtrace",
    "faulthandler": "faulthandler's report",
    "exit-code": "an exit code",
    "torchelastic": "torchelastic's report",
    "dataloader-worker": "a DataLoader worker",
    "srun": "srun's report",
    "mpirun": "mpirun's report",
    "subprocess": "a subprocess's status",
    "accelerate": "accelerate's report",
    "agent-received": "the elastic agent",
    "text": "the log's wording",
    "crash-handler": "a crash handler's report (abseil, glog)",
}
"""How each `launcher.signal` source is named in a sentence."""


def _signal_sign(name: str, source: str, add: _Add) -> None:
    seen = f" (seen in {_SIGNAL_SOURCES[source]})" if source in _SIGNAL_SOURCES else ""
    if name in STOP_SIGNALS:
        add(Ending.STOPPED, "interrupt", f"a process received {name}{seen}")
    elif name in DEATH_SIGNALS:
        add(Ending.DIED, "signal", f"a process was killed by {name}{seen}")


def _exception_sign(text: str, add: _Add, prefix: str) -> None:
    if text.startswith(USER_STOP_EXCEPTIONS):
        add(Ending.STOPPED, "interrupt", f"{prefix}a user interrupt ({text.split(':')[0]})")
    elif AGENT_STOP_EXCEPTION.search(text):
        add(Ending.STOPPED, "interrupt", f"{prefix}{AGENT_STOP_SAYS}")
    elif not text.startswith("SystemExit"):
        add(Ending.DIED, "report", f"{prefix}an uncaught exception ({shortened(text, 120)})")


def _ending_sign(kind: str, item: Fact, add: _Add) -> None:
    text = item.text.strip()
    teardown = item.attr("teardown")
    if teardown == "shutdown":
        add(Ending.COMPLETED, "exit-0", "the last error was raised as the interpreter shut down")
    elif teardown == "lifespan":
        add(Ending.STOPPED, "interrupt", LIFESPAN_SAYS)
    elif teardown == "runner":
        add(Ending.STOPPED, "interrupt", RUNNER_SAYS)
    elif teardown is not None:
        return  # Python reported and ignored it (a thread's or a finalizer's exception)
    elif kind in ("traceback", "exception"):
        during = item.attr("during")
        if any(name in text for name in USER_STOP_EXCEPTIONS):
            if item.attr("hung_in"):
                # the stop interrupted a start-up that never finished: the run was not working
                says = "the user stopped a process that hung in the GPU runtime's initialisation"
                add(Ending.DIED, "traceback", says)
            else:
                add(Ending.STOPPED, "interrupt", "the log ends with a user interrupt")
        elif item.attr("interrupted"):
            # cut off among its frames where the terminal echoed Ctrl-C before it: the user's
            # interrupt raised it, and no exception line shows anything else
            add(Ending.STOPPED, "interrupt", "the log ends in a traceback raised by Ctrl-C")
        elif isinstance(during, str) and during.endswith(USER_STOP_EXCEPTIONS):
            # Python's implicit chain: the user's stop came first, and the code that handled
            # it (a `finally`, an `except KeyboardInterrupt` that tidies up) failed on it
            add(
                Ending.STOPPED,
                "interrupt",
                f"the log ends with an error raised while handling a user interrupt ({during})",
            )
        elif AGENT_STOP_EXCEPTION.search(text):
            add(Ending.STOPPED, "interrupt", f"the log ends as {AGENT_STOP_SAYS}")
        elif "SystemExit" not in text:
            add(Ending.DIED, "traceback", f"the log ends with an uncaught {kind}")
    elif kind == "fatal":
        add(Ending.DIED, "fatal", "the log ends with a fatal error")
    elif kind == "error" and JULIA_INTERRUPT.search(text):
        add(Ending.STOPPED, "interrupt", "the log ends with Julia's InterruptException (Ctrl-C)")
    elif kind == "error":
        add(Ending.DIED, "traceback", "the log ends with the program's error message")


def _last_output_sign(item: Fact, add: _Add) -> None:
    """What the wording of a log's last output shows (`decide.last_output`): a finish, an
    exit in progress, or a stop passed on from outside; its notices are no ending."""
    wording = read_last_record(item)
    if wording is None:
        return
    if wording.kind == "finished":
        add(Ending.COMPLETED, "said-finished", wording.says)
    elif wording.kind == "exiting":
        add(Ending.COMPLETED, "said-exiting", wording.says)
    elif wording.kind == "stopped":
        add(Ending.STOPPED, "interrupt", wording.says)


def _slurm_sign(item: Fact, add: _Add) -> None:
    state = str(item.value)
    code, signal = item.attr("exit_code"), item.attr("signal")
    if state in DIED_SLURM:
        add(Ending.DIED, "state", f"Slurm records the job as {state}")
    elif state in STOPPED_SLURM:
        by = item.attr("by")
        who = f" by uid {by}" if by is not None else ""
        add(Ending.STOPPED, "scheduler", f"Slurm records the job as {state}{who}")
    elif state == "COMPLETED" and code in (0, None) and signal in (0, None):
        # Per job and per step (the `extern` step always completes): a process's finish.
        add(Ending.COMPLETED, "exit-0", "Slurm records the job or a step as COMPLETED")


def _srun_sign(what: str, add: _Add) -> None:
    lowered = what.lower()
    if lowered in ("terminated", "interrupt"):
        add(Ending.STOPPED, "interrupt", f"srun reports a task {lowered}")
    elif lowered == "killed":
        add(Ending.DIED, "signal", "srun reports a task Killed")
    elif "exit code 0" not in lowered:
        add(Ending.DIED, "state", f"srun reports a task failure ({what})")


def _scheduler_stopped(stops: Sequence[Sign]) -> bool:
    return any(s.kind == "scheduler" for s in stops)


def _is_stop_kill(sign: Sign) -> bool:
    value = sign.fact.value
    if sign.fact.key == "k8s.reason":
        # A container killed after the grace period reads `Error` with exit code 137.
        return value == "Error" and sign.fact.attr("exit_code") == 137
    if sign.kind == "signal":
        return value in ("SIGKILL", "Killed")
    return sign.kind == "exit" and value in (-9, 137)


def _after_exit(death: Sign, exits: Sequence[Sign]) -> bool:
    """Whether a death sign follows, in the same log and on the same rank (or both on none), a
    sign that its process was exiting."""
    rank = death.fact.attr("rank")
    return any(
        s.fact.path == death.fact.path
        and (s.fact.lineno or 0) < (death.fact.lineno or 0)
        and s.fact.attr("rank") == rank
        for s in exits
    )


def _errors_after_finish(
    finishes: Sequence[Sign], deaths: Sequence[Sign], facts: Sequence[Fact], hits: Sequence[Hit]
) -> list[Sign]:
    """Deaths that still count after a finish: the log's last output is an error (a traceback,
    an error of the catalogs, a line a rule names as a cause: a memory monitor's kill of the
    final save), after the finish line of the same log, and no finalizer printed it."""
    # A finalizer's or a thread's exception line (any report the process goes on from) is the
    # last output of many finished runs; the rules and the catalogs read causes in it too.
    reported = {
        (f.path, f.lineno)
        for f in facts
        if f.key in ("python.exception", "log.ends_with") and f.attr("teardown") is not None
    }
    # Once the finish line is printed the work is done: a network error after it is a peer's
    # teardown (NCCL's remote-process-exited, an IB completion error) or an upload (W&B, the
    # Hub), not the run failing; a memory kill of the final save, a failed write or a device
    # error still is. A line every cause of which is network does not count by this route.
    causes: dict[tuple[str, int | None], set[Category]] = {}
    for hit in hits:
        if not hit.against:
            causes.setdefault((hit.path, hit.lineno), set()).add(hit.category)
    network_only = {line for line, found in causes.items() if found == {Category.NETWORK}}
    last_finish = {
        s.fact.path: max(f.fact.lineno or 0 for f in finishes if f.fact.path == s.fact.path)
        for s in finishes
    }
    return [
        s
        for s in deaths
        if (
            (
                (s.fact.key == "log.ends_with" and s.fact.value in ("traceback", "exception"))
                or (
                    s.fact.key == "log.last_line"
                    and s.kind == "traceback"
                    and (s.fact.path, s.fact.lineno) not in reported
                    and (s.fact.path, s.fact.lineno) not in network_only
                )
            )
            and (s.fact.lineno or 0) > last_finish.get(s.fact.path, 1 << 62)
        )
        or _final_record(s)
    ]


def _final_record(sign: Sign) -> bool:
    """A platform's record of how the process ended (a pod's current container state, a
    Slurm state read from sacct or scontrol): written after the log's last line, so a
    death there follows any finish the log printed (the save after the metrics was killed)."""
    item = sign.fact
    if item.key == "k8s.reason":
        return item.attr("state") in ("state", "pod") and item.attr("container") is not None
    return item.key == "slurm.state" and item.attr("step") is not None


def _telling(sign: Sign) -> tuple[int, str, int]:
    return (DEATH_SIGNS.index(sign.kind), sign.fact.path, sign.fact.lineno or 0)


def _where(item: Fact) -> str:
    return place(item.path, item.lineno)
