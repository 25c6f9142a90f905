"""What a log's last output says about how the run was doing when the log ends.

The parsers keep the last output line of each log (`log.last_line`) and name the endings they
know (completion lines, exit codes, signals: `decide.failure` reads those). Many programs end
in wording of their own, and an excerpt ends wherever its author stopped copying; both leave
no ending the parsers name. This module reads that one line for what it still tells:

* `finished`: the program says it finished (`Finished training loop.`, `finished in 00:03:12`,
  a bare `done.` or `success!`, `run completed successfully`, torchelastic's `Done waiting for
  other agents` after its workers succeeded, the closing summary of nccl-tests). A finish sign,
  counted only when nothing died.
* `exiting`: chatter that processes print as they exit (PyTorch's process group destroyed
  without `destroy_process_group()`, in torch 2.4's and 2.5's wordings; a CUDA IPC producer
  gone before its consumers; NCCL's proxy threads closing connections; TensorFlow skipping a
  queue's cancelled enqueue as its session closes; Ray shutting down). A finish sign too.
* `leaked`: multiprocessing's resource tracker reporting semaphores (or shared memory) that
  its processes never released, printed once they have all ended. The processes ended, but
  not necessarily well: Python's documentation names a process killed by a signal as the
  cause of such leaks, so a hang that was killed ends exactly like this. Neither a finish nor
  a run going on: the log stops at an ending it does not show (`Ending.UNKNOWN`).
* `strained`: an out-of-memory event the program reports and says it will go on from
  (fairseq's `attempting to recover from OOM`, TensorFlow's BFC allocator retrying an
  allocation). Whether it did go on is what the lines after it would show: as the last
  output it shows neither a run going on nor an ending (`Ending.UNKNOWN`).
* `stopped`: a stop from outside: the launcher passing a signal that only comes from outside
  (SIGHUP: the terminal closed; SIGINT: Ctrl-C) on to its workers; Docker's `stop` event, which
  the daemon records only when the container was stopped through its API (`docker stop`, a
  compose `down`); uvicorn's supervisor stopping, which only a stop signal brings about.
* `unwinding`: an error still propagating where the log ends (NCCL's return-code trace,
  `group.cc:75 -> 1`): the lines after an alarm that are only this are the failure going on,
  not the run. A Python traceback cut off before its exception line (the log stops at its
  `Traceback (most recent call last):` header or at one of its frames) is one too: Python
  prints the exception line last, so the error that was being reported is not shown.
* `notice`: a line a program prints and goes on from by design: a warning (its own level marker
  says so: `decide.severity`), Python's `Exception ignored in` report (the unraisable hook's,
  which never ends a process; Python 2's one-line `... in <...> ignored`), an fp16 loss-scale
  overflow that skips a step, a client entering its retry loop, a server that is up or
  answering requests, a metrics report of the training loop. Not an ending: with nothing
  failed, the run was going on where the log ends (`Ending.ONGOING`).

Each entry names what it shows as a clause for the report. Nothing here decides: the failure
detector weighs these against the other signs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from crashlens.decide.severity import Level, level_of
from crashlens.model import Fact

_PREFIX = r"^(?:\[[^\]\n]{1,60}\]:?[ \t]*)*"
"""Bracketed prefixes a launcher or logger puts before a message (`[rank0] `, `[1,20]<...>`)."""


@dataclass(frozen=True, slots=True)
class Wording:
    """One way of saying something in a last output line."""

    kind: str
    """`finished`, `exiting`, `leaked`, `strained`, `stopped`, `unwinding` or `notice` (see the
    module docstring)."""
    pattern: re.Pattern[str]
    says: str
    """What the line shows, as a clause (`the program says it finished`)."""


WARNING_CALL = Wording(
    "notice",
    re.compile(r"\bwarnings\.warn\("),
    "the program logged a warning, which it goes on from",
)
"""The `warnings.warn(...)` call a warning's source line shows (one of `WORDINGS`)."""
WORDINGS: tuple[Wording, ...] = (
    # A bare word of completion is how many scripts end (`print("done.")`); a longer line
    # must say what finished, so that `loading done, starting training` is not one.
    Wording(
        "finished",
        re.compile(
            _PREFIX + r"(?:all )?(?:done|finished|complete|completed|success|succeeded)[.!]?$", re.I
        ),
        "the program's last words say it finished",
    ),
    Wording(
        "finished",
        re.compile(
            r"\b(?:[Ff]inished|[Dd]one) (?:training|in [0-9])|\b[Ff]inished training loop"
            r"|\b(?:[Tt]raining|[Dd]iagnostics|[Bb]enchmark|[Ee]valuation|[Ii]nference|[Tt]ests?)"
            r" (?:complete|completed|finished|done|succeeded|passed)\b"
            r"|\b(?:[Rr]un|[Jj]ob|[Tt]raining|[Ee]valuation|[Ee]xperiment) (?:has )?"
            r"(?:completed|finished) successfully\b"
        ),
        "the program says it finished",
    ),
    # torchelastic's agent, once its worker group SUCCEEDED: the exit barrier's last line.
    Wording(
        "finished",
        re.compile(
            r"Done waiting for other agents|worker group successfully finished"
            r"|WorkerState\.SUCCEEDED"
        ),
        "torchelastic reports the worker group finished successfully",
    ),
    # nccl-tests print their result table, then this summary, only once every size ran.
    Wording(
        "finished",
        re.compile(r"^# (?:Avg bus bandwidth|Out of bounds values) *:"),
        "the benchmark printed its closing summary (nccl-tests)",
    ),
    # ProcessGroupNCCL's destructor at exit, in both of its torch 2.4 wordings (`... before it
    # is being destructed`, `... before we destruct ProcessGroupNCCL.`, the latter's advice on
    # two lines of their own, the last of which then ends the log)
    Wording(
        "exiting",
        re.compile(
            r"process group has NOT been destroyed before (?:it is being destructed"
            r"|we destruct ProcessGroupNCCL)"
            r"|" + _PREFIX + r"On normal program exit, the application should call "
            r"destroy_process_group\b"
            r"|" + _PREFIX + r"to ensure that any pending NCCL operations have finished in this "
            r"process\."
        ),
        "PyTorch's process group was destroyed as the program exited",
    ),
    # torch 2.5 on: the same, said by ProcessGroupNCCL's destructor as a warning.
    Wording(
        "exiting",
        re.compile(r"destroy_process_group\(\) was not called before(?: program exit|$)"),
        "PyTorch's process group was destroyed as the program exited",
    ),
    # The tracker outlives the processes it serves and reports what they left behind once the
    # last of them is gone: a process killed by a signal never releases its semaphores
    # (Python's `multiprocessing` docs), so this report follows a kill as often as a finish.
    # Its source line is shown under it: 3.8 on print the call's first line, 3.5-3.7 (the
    # `semaphore_tracker`) its last, `len(cache))`.
    # fairseq's trainer catches the OOM, frees what it can and skips the batch; TensorFlow's
    # BFC allocator logs the failed attempt and the caller may retry or fail next
    Wording(
        "strained",
        re.compile(
            r"attempting to recover from OOM"
            r"|ran out of memory trying to allocate [0-9.]+ ?[KMGT]?i?B"
        ),
        "the program reported running out of memory and tries to go on",
    ),
    Wording(
        "leaked",
        re.compile(
            r"(?:resource|semaphore)_tracker: There appear to be (?:[0-9]+ leaked|%d)"
            r"|^  len\(cache\)\)$"
        ),
        "multiprocessing's resource tracker reported semaphores its processes never released, "
        "which it does once they have all ended, and which a process killed by a signal leaves",
    ),
    Wording(
        "exiting",
        re.compile(r"Producer process has been terminated before all shared CUDA tensors"),
        "a process sharing CUDA tensors had exited before its consumers",
    ),
    Wording(
        "exiting",
        re.compile(r"NCCL INFO \[Service thread\] Connection closed by localRank"),
        "NCCL's proxy threads were closing as the ranks destroyed their communicators",
    ),
    Wording(
        "exiting",
        re.compile(r"Skipping cancelled (?:enqueue|dequeue) attempt with queue not closed"),
        "TensorFlow cancelled a queue operation as its session closed",
    ),
    Wording(
        "exiting",
        re.compile(r"Ray shutdown complete"),
        "Ray shut down",
    ),
    # torchelastic forwards the signal its agent received to the workers; SIGTERM is also how
    # it ends the others after one failed, SIGHUP and SIGINT only come from outside.
    Wording(
        "stopped",
        re.compile(r"Sending process [0-9]+ closing signal (?:SIGHUP|SIGINT)\b"),
        "the launcher was passing a stop signal from outside (SIGHUP, SIGINT) to its workers",
    ),
    Wording(
        "stopped",
        re.compile(r"\bcontainer stop [0-9a-f]{12,64}\b"),
        "Docker recorded the container stopped through its API (`docker stop`)",
    ),
    # uvicorn: its supervisor (`--workers`, `--reload`) leaves its loop only on a stop signal
    # (SIGINT, SIGTERM) and then says so. A server process's own `Finished server process` is
    # left out: an application can shut its server down after an error (an engine that died).
    Wording(
        "stopped",
        re.compile(r"Stopping (?:parent|reloader) process \[[0-9]+\]"),
        "uvicorn's supervisor stopped, which it does only on a stop signal (Ctrl-C, SIGTERM)",
    ),
    # NCCL's return-code trace: each function an error passes through logs `file.cc:LINE ->
    # CODE` (INFO) as it returns the error; a code of 0 is success.
    Wording(
        "unwinding",
        re.compile(r"NCCL INFO [^\n]*\.(?:cc|cu|h|hpp):[0-9]+ -> [1-9][0-9]*\b"),
        "NCCL was returning an error up its call stack (its return-code trace)",
    ),
    Wording(
        "notice",
        re.compile(
            r"OVERFLOW! Rank [0-9]+ Skipping step|[Gg]radient overflow\.? +Skipping step"
            r"|Skipping step, loss scaler"
            # apex's FP16_Optimizer and DeepSpeed's unfused optimizer:
            # `OVERFLOW! Skipping step. Attempted loss scale: 65536.0, reducing to 32768.0`
            r"|(?i:overflow)! Skipping step\. Attempted loss scale"
        ),
        "an fp16 loss-scale overflow skipped a step, which the loss scaler does by design",
    ),
    # A training loop's own note that it skipped an iteration (after an overflow or a batch
    # it could not use) is said on the way to the next one.
    Wording(
        "notice",
        re.compile(
            _PREFIX + r"[ \t]*(?:skipped|skipping) (?:this |the )?(?:iteration|step)\b", re.I
        ),
        "the training loop said it skipped an iteration, which it goes on from",
    ),
    # A deprecation notice says the call it names still works (for now): printed on the way,
    # often once per step, by a library's logger without a level marker. One that says the
    # thing was removed (not "will be removed") or fails is no notice.
    Wording(
        "notice",
        re.compile(
            r"^(?![^\n]*(?:[Ee]rror|(?:has been|have been|was|were|is|are|and) removed"
            r"|no longer (?:supported|available|works)))"
            r"[^\n]*\b(?:is|are|has been) deprecated\b"
        ),
        "the program printed a deprecation notice, which it goes on from (the call still works)",
    ),
    Wording(
        "notice",
        re.compile(r"entering retry loop"),
        "a client was retrying, which it does without stopping the run",
    ),
    Wording(
        "notice",
        re.compile(
            r"Uvicorn running on|Application startup complete|Started server process"
            r"|\"(?:GET|POST|PUT|DELETE) [^\"\n]*\" (?:200|201|204)\b"
            # Gradio's `launch()`: its address, then how to share it, once it serves
            r"|Running on (?:local|public) URL: |To create a public link, set `share=True`"
        ),
        "a server was up and answering",
    ),
    # HF Trainer and Keras-style loggers print each logging step's figures as a mapping.
    Wording(
        "notice",
        re.compile(r"^\{'[A-Za-z_/]+': -?[0-9][^,{}]*(?:, '[A-Za-z_/]+': -?[0-9][^,{}]*){2,}\}$"),
        "the training loop was reporting its metrics",
    ),
    # The source line of a warning (`warnings.warn(...)`) shown under it; a warning's own
    # record is read by its level marker (`decide.severity`).
    WARNING_CALL,
    # Python's unraisable hook (`sys.unraisablehook`) prints `Exception ignored in: <obj>` for
    # an exception raised where it cannot propagate (a `__del__`, a weakref callback, a
    # generator closed by the collector): the interpreter reports it and carries on, so it
    # never ends a process, whatever its traceback shows.
    Wording(
        "notice",
        re.compile(r"^[ \t]*Exception ignored (?:in|on calling|while)\b"),
        "Python reported an exception it ignores (`Exception ignored in`: sys.unraisablehook, "
        "for a finalizer's or a callback's exception, which cannot propagate)",
    ),
    # Python 2 wrote the same report on one line (PyErr_WriteUnraisable: `Exception <type>:
    # <value> in <obj> ignored`), the object usually a bound `__del__`.
    Wording(
        "notice",
        re.compile(r"^[ \t]*Exception (?=[^\n]* in <)[^\n]{1,4000}> ignored[ \t]*$"),
        "Python reported an exception it ignores (Python 2's `Exception ... in <...> ignored`, "
        "for a finalizer's exception, which cannot propagate)",
    ),
)
"""What a last output line may say, the most telling first."""

WARNING_RECORD = Wording(
    "notice",
    re.compile(r"(?!)"),  # read by `level_of`, never by a pattern of its own
    "the program logged a warning (its level marker says so), which it goes on from",
)
"""A record whose own level marker is a warning (`decide.severity`)."""
SOURCE_LINE = re.compile(r"^  (?! )(?!File \")\S")
"""The source line `warnings.formatwarning` prints under a warning: two spaces, then code."""
WARNING_SAYS = "the program logged a warning (its source line ends the log), which it goes on from"


def is_warning(wording: Wording) -> bool:
    """Whether a last line's wording says only that the program logged a warning (by its level
    marker, its `warnings.warn(` call or its source line), not what the warning is about."""
    return wording.pattern in (WARNING_RECORD.pattern, SOURCE_LINE, WARNING_CALL.pattern)


LEAD_PLACES = {
    "wrapped": "said by the line its last line continues",
    "thread": "said by the line before a thread's report cut off at its header",
    "numbers": "said by the last worded line, above the bare numbers that end the log",
    "answer": "said by the call whose answer ends the log",
}
"""Where a lead's wording was read, as a clause (`lead_kind`)."""


def read_last_record(item: Fact) -> Wording | None:
    """What a log's last record says (`log.last_line`): its last line's wording, else, when
    that line is no record of its own (`lead_kind`: a wrapped continuation, a thread's report
    cut off at its header), the wording of the line that leads it (`lead`)."""
    wording = read_last_output(item.text, str(item.value))
    lead = item.attr("lead")
    if wording is None and lead is None:
        wording = read_cut_traceback(item.text, str(item.value))
    if wording is not None or lead is None:
        return wording
    led = read_last_output(str(lead), str(lead))
    if led is None:
        return None
    where = LEAD_PLACES.get(str(item.attr("lead_kind")), "the line that leads its last line")
    return replace(led, says=f"{led.says} ({where})")


CUT_TRACEBACK = Wording(
    "unwinding",
    re.compile(
        _PREFIX + r"[ \t]*(?:Traceback \(most recent call last\):[ \t]*$"
        r"|File \"[^\"\n]+\", line [0-9]+)"
    ),
    "a Python traceback was being printed where the log ends (it stops at the traceback's "
    "header or a frame, before the exception line that Python prints last)",
)
"""A traceback cut off before its exception line. Read only when the last line has no lead:
a thread's report cut off at its header is read by the line before it (`lead_kind`)."""


def read_cut_traceback(raw: str, text: str) -> Wording | None:
    """`CUT_TRACEBACK` when a log's last output line is a traceback's header or frame."""
    if any(CUT_TRACEBACK.pattern.search(line) for line in (text, raw)):
        return CUT_TRACEBACK
    return None


def read_last_output(raw: str, text: str) -> Wording | None:
    """What a log's last output line says (its raw line and its message), or None."""
    for line in (text, raw):
        for wording in WORDINGS:
            if wording.pattern.search(line):
                return wording
    if any(level_of(line) is Level.WARNING for line in (text, raw)):
        return WARNING_RECORD
    if SOURCE_LINE.search(raw):
        return Wording("notice", SOURCE_LINE, WARNING_SAYS)
    return None
