"""How a log ends: the facts its last lines show (the launcher and plain-text collectors).

Fact keys:

* `log.last_line`: str the last non-blank output (its last `\\r` redraw, <= 300 chars);
  attrs `terminated` (a newline follows it), `cut` (True when no newline follows and a
  bracket, parenthesis or quote it opened is still open: the writer stopped mid-record);
  `lead` (the line that starts the log's last record when the last line is not a record of
  its own: the line above a wrapped continuation, or the line before a thread's report cut
  off at its header, or the last worded line above bare numbers that end the log, or the
  call an interactive answer replies to) and `lead_kind` (`wrapped`, `thread`, `numbers` or
  `answer`: the log ends on a bare `True`/`False`, or IPython's `Out[N]: <value>`, printed
  for the line above it, e.g. `In [2]: torch.cuda.is_available()` then `Out[2]: False`).
* `log.last_warning`: int the line of the last line among the log's last lines, before its
  last line, that is logged at warning level (`WARNING_LEVEL`), when a line after it shows
  progress (`progress`, the caller's pattern of a training loop's progress, or a progress
  bar): the run went on working past it.
* `log.ends_with`: str what that output is: `traceback` (the exception line that closes a
  Python traceback, perhaps followed by its message's continuation lines; a chained
  traceback cut off at its separator; a Lua `stack traceback:`), `exception` (an exception
  line without a traceback in view), `fatal` (a fatal error or an abort message, from
  `FATAL_LINES`; attr `mechanism`), `error` (a program's `error:` / `Error response from
  daemon` line, or Julia's `ERROR: ` report above the stack trace that ends the log); at the
  line that shows it. attr `teardown`: `thread`, `shutdown`,
  `finalizer` or `cancelled` when the traceback is one the process reports and goes on from
  (`_teardown`, the kinds of `teardown.py`); a chained traceback cut off at its separator
  belongs to the report it continues. attr `during`: the type of the exception a traceback's
  exception was raised while handling (`During handling of the above exception, another
  exception occurred:`), where that earlier one is shown (`KeyboardInterrupt`: the user's
  stop, and an error of the code that handled it). An IPython or Jupyter traceback (its
  header names the type: `KeyboardInterrupt    Traceback (most recent call last)`) cut off
  among its frames is a `traceback` at its header. attr `hung_in`: `gpu_init` when a user
  stop's traceback (`KeyboardInterrupt`) shows the process inside the GPU runtime's
  initialisation (`GPU_INIT_FRAME`): the user stopped a start-up that hung. attr
  `interrupted`: True on a traceback chain cut off among its frames (no exception line to read)
  that opens at the terminal's `^C` echo (`^CTraceback (most recent call last):`): the user's
  Ctrl-C raised it, whatever exception the interrupted call turned it into (Ray's `Raylet
  connection closed`). Where the exception line shows, it is read as any other: an interrupt
  may only bring an earlier error to light.

Facts, not verdicts: `crashlens.decide.failure` decides what they mean with the other inputs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from crashlens.model import Fact, Line
from crashlens.parsers.base import fact
from crashlens.parsers.launcher.messages import EXCEPTION_CHARS, parse_exception
from crashlens.parsers.launcher.prompt_return import BARE_PROMPT
from crashlens.parsers.launcher.teardown import FEEDER_PIPE, QUEUE_CANCELLED
from crashlens.parsers.launcher.teardown import FRAMES as TEARDOWN_FRAMES

TRACEBACK_HEADER = re.compile(
    r"Traceback \(most recent call last\):|^[ \t]*File \"[^\"\n]+\", line [0-9]+"
)
"""A Python traceback's header or one of its frames (the frames suffice when a paste lost
the header)."""

FATAL_LINES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # CPython's faulthandler and its fatal-error path print this before the process dies.
    ("python-fatal", re.compile(r"Fatal Python error: ")),
    # libstdc++'s std::terminate handler: an uncaught C++ exception aborts the process; its
    # `what():` line follows.
    (
        "cpp-terminate",
        re.compile(r"terminate called (?:after throwing|without an active|recursively)"),
    ),
    ("cpp-terminate", re.compile(r"^[ \t]*what\(\): ")),
    # A C `assert()` that failed (glibc's wording), then abort().
    ("c-assert", re.compile(r"Assertion [`'][^\n]*' failed\.?")),
    # glibc's heap and stack checks abort the process.
    (
        "glibc-abort",
        re.compile(
            r"\*\*\* (?:Error in|stack smashing detected|buffer overflow detected)"
            r"|double free or corruption|free\(\): invalid|malloc\(\): [a-z]|corrupted size vs"
        ),
    ),
    # The shell's report of a signal death and the kernel's core dump.
    ("core-dumped", re.compile(r"\(core dump(?:ed)?\)")),
    # glog's fatal level (`F1203 10:00:00.000 ...`) and its CHECK macros, which abort; and
    # TensorFlow's own logger (`2019-05-15 07:00:34.445785: F tensorflow/...cc:274] ...`),
    # whose LOG(FATAL) aborts the same way.
    (
        "glog-fatal",
        re.compile(r"^F[0-9]{4} [0-9:.]+ |Check failed: |[0-9]{2}:[0-9]{2}:[0-9.]+: F [^ \n]+\]"),
    ),
    # The Go and Rust runtimes on an unrecovered panic.
    ("panic", re.compile(r"^panic: |^fatal error: |thread '[^'\n]*' panicked at")),
    # ggml (llama.cpp, whisper.cpp) reports a failed CUDA/HIP call in a block that ends in
    # GGML_ABORT (`CUDA error: <message>`, `current device: N, in function F at <file>:<line>`,
    # the call, `<file>:<line>: CUDA error`), and a failed GGML_ASSERT aborts the same way.
    (
        "ggml-abort",
        re.compile(
            r"^[ \t]*current device: [0-9]+, in function [^ \n]+ at "
            r"|GGML_ASSERT(?:\(|: )[^\n]* failed|GGML_ASSERT: [^ \n]+:[0-9]+: "
        ),
    ),
    # A program's own last word before it calls abort() or exit(1), alone on its line: the
    # check macros of CUDA projects print the failed call's code and place, then `Aborting...`
    # (TASO's `checkCUDA`, Caffe-era helpers); and the CUDA samples' verdict (`Result = FAIL`,
    # printed by deviceQuery and the other samples just before `exit(EXIT_FAILURE)`).
    ("abort-message", re.compile(r"^[ \t]*Aborting(?:\.{1,3})?[ \t]*$")),
    ("cuda-sample-fail", re.compile(r"^[ \t]*Result = FAIL[ \t]*$")),
    # MATLAB's stack of an uncaught error, under the error's message: `Error in <function>
    # (line <n>)`, one line per frame; the script stops there (and `matlab -batch` exits 1).
    ("matlab-error", re.compile(r"^Error in [A-Za-z_][A-Za-z0-9_.>]* \(line [0-9]+\)[ \t]*$")),
)
"""Lines a process prints as it dies (`name`, pattern), each naming the mechanism."""

FINALIZER = re.compile(r"Exception ignored in|in __del__$|_run_finalizers|weakref")
"""An error CPython reports and ignores: `Exception ignored in: <...>` heads the traceback of a
`__del__` method or a weakref callback (the unraisable hook), which cannot propagate."""
SHUTDOWN = re.compile(
    r"Python is likely shutting down|sys\.meta_path is None|interpreter shutdown"
    r"|in _run_exitfuncs|atexit callback"
)
"""What CPython prints for an error raised while the interpreter exits (after the program's
own code returned): imports fail once `sys.meta_path` is gone, `atexit` handlers run."""
THREAD_EXCEPTION = re.compile(r"^Exception in thread ")
"""`threading`'s report of a thread's uncaught exception: that thread ends, the process not."""
TRACEBACK_FRAME = re.compile(r"^[ \t]*File \"[^\"\n]+\", line [0-9]+")
CHAINED = re.compile(
    r"^During handling of the above exception, another exception occurred:"
    r"|^The above exception was the direct cause of the following exception:"
)
"""A chained traceback's separator: as the last output, the traceback was cut off mid-way."""
HANDLING = re.compile(r"^During handling of the above exception, another exception occurred:")
"""The separator of an implicitly chained traceback: what follows was raised while the
exception above it was being handled (an `except` or `finally` block, a signal handler)."""
IPYTHON_HEADER = re.compile(
    r"^[ \t]*((?:[A-Za-z_][A-Za-z0-9_]*\.)*[A-Z][A-Za-z0-9_]*(?:Error|Exception|Interrupt|Exit))"
    r"[ \t]{2,}Traceback \(most recent call last\)"
)
"""IPython's and Jupyter's traceback header (ultratb): the exception's type, padded, then
`Traceback (most recent call last)`; the frames follow and the `Type: message` line closes it
at the bottom, which a notebook excerpt often leaves out."""
IPYTHON_FRAME = re.compile(
    r"^[ \t]*(?:-*>[ \t]*)?[0-9]+(?:[ \t]|$)"
    r"|^[^ \t\n][^\n]*? in [A-Za-z_<][^\n]*$"
    r"|^(?:File [^\n]*:[0-9]+, in |Cell In\[[0-9]+\], line [0-9]+)"
)
"""A line of an IPython traceback's frames: a numbered source line (`---> 46 return f(x)`,
`     45 if x:`), a frame's place (`~/lib/call.py in launch(self, fn)`, `<ipython-input-1-2c>
in <module>`, IPython 8's `File ~/lib/call.py:46, in launch(self)` and `Cell In[3], line 5`)."""
MAX_IPYTHON_FRAMES = 36
"""Lines of frames read back from a log's end to its IPython header, at most."""
GPU_INIT_FRAME: tuple[tuple[str, ...], ...] = (
    ("torch/cuda/__init__", "_lazy_init"),
    ("torch/cuda/__init__", "_lazy_new"),
    ("torch._C._cuda_init(",),
    ("cuInit",),
    ("jax/_src/xla_bridge.py", "backends"),
    ("jax/_src/xla_bridge.py", "_init_backend"),
)
"""Traceback frames inside the GPU runtime's start-up, each as the words one line holds:
PyTorch's lazy CUDA initialisation (`torch/cuda/__init__.py ... in _lazy_init`, `_lazy_new`
before 0.4, `torch._C._cuda_init()`), the driver's `cuInit`, JAX's backend initialisation
(`xla_bridge.py ... in backends`). A user stop whose traceback stands there interrupted a
start-up that did not finish: a CUDA initialisation that hangs (PTX compiled for a GPU the build
has no kernels for, a driver or device in a bad state) rather than a run stopped on purpose.
Substrings, not a regex: words on one line, found in linear time."""


USER_STOPS = ("KeyboardInterrupt",)
"""The exception a user's Ctrl-C raises (the failure detector reads it as a stop)."""


def _in_gpu_init(line: str) -> bool:
    return any(all(word in line for word in words) for words in GPU_INIT_FRAME)


LUA_TRACEBACK = re.compile(r"^\[C\]: (?:in \?|at 0x[0-9a-fA-F]+)$")
"""The last frame of the standalone Lua interpreter's `stack traceback:` (its main chunk; Lua
5.1 prints its address): printed when an error was not caught (Torch7's `th` too)."""
ERROR_NAMED = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*(?:Error|Exception)\b")
"""A line that names an error type first (`ncclInternalError: Internal check failed.`)."""
TF_OP_NOTE = re.compile(r"^\[\[(?:\{\{node |Node: )")
"""TensorFlow's note of the op that raised, printed under its error (`[[{{node
fifo_queue_enqueue}}]]`, TF 1.x `[[Node: name = Op[...]]]`): part of the exception message."""
MAX_CONTINUATION = 6
"""Lines an exception message may continue below its exception line."""

TF1_RERAISED = re.compile(r"^[A-Z][A-Za-z0-9_]*(?:Error|Exception) \(see above for traceback\): ")
"""TensorFlow 1.x's session re-raising an op's error once it has printed the op's traceback."""

ERROR_LINE = re.compile(
    r"^(?:[A-Za-z0-9_./+-]+: )?(?:[A-Za-z0-9_-]+ )?(?:error|fatal)(?:\[[^\]\n]*\])?: "
    r"|Error response from daemon: ",
    re.IGNORECASE,
)
"""A command-line program's own error report (`docker: Error response from daemon: ...`,
`nvidia-container-cli: requirement error: ...`, `error: ...`): printed as it gives up."""

_OPENERS = {"(": ")", "[": "]", "{": "}"}


def last_segment(text: str) -> str:
    """What a line redrawn with `\\r` (a progress bar) shows last."""
    if "\r" not in text:
        return text.strip()
    segments = [s for s in text.split("\r") if s.strip()]
    return segments[-1].strip() if segments else ""


def is_cut(text: str) -> bool:
    """Whether a line that no newline ends leaves a bracket or a quote open."""
    depth: list[str] = []
    for char in text:
        if char in _OPENERS:
            depth.append(_OPENERS[char])
        elif depth and char == depth[-1]:
            depth.pop()
    return bool(depth) or text.count('"') % 2 == 1


def fatal_kind(text: str) -> str | None:
    """The mechanism a dying process's line names (`FATAL_LINES`), or None."""
    for name, pattern in FATAL_LINES:
        if pattern.search(text):
            return name
    return None


def ending_facts(
    path: str, tail: Sequence[Line], terminated: bool, progress: re.Pattern[str] | None = None
) -> list[Fact]:
    """`log.last_line` and `log.ends_with` from the last lines of a log (see the docstring)."""
    shown = [(line, last_segment(line.text)) for line in tail]
    # an elision mark (`...`, `[...]`) is the reader's cut, not the program's output
    shown = [(line, text) for line, text in shown if text and not ELISION.match(text)]
    if shown and BARE_PROMPT.match(shown[-1][1].rstrip()):
        # the shell's next prompt is not the program's output: its last words come before it
        # (`prompt_return.py` reads the prompt itself as the command's exit)
        shown = shown[:-1]
    if not shown:
        return []
    line, text = shown[-1]
    is_last = line is tail[-1]
    cut = is_last and not terminated and is_cut(text)
    facts = [
        fact(
            "log.last_line",
            text[:EXCEPTION_CHARS],
            path,
            line.lineno,
            text=line.raw,
            terminated=terminated or not is_last,
            cut=cut,
            **_lead([t for _, t in shown], [ln.raw for ln, _ in shown]),
        )
    ]
    warned = [i for i, (w, _) in enumerate(shown[:-1]) if WARNING_LEVEL.search(w.raw)]
    marks = (TQDM_BAR,) if progress is None else (TQDM_BAR, progress)
    after = shown[warned[-1] + 1 :] if warned else []
    if any(mark.search(t) for _, t in after for mark in marks):
        last_warning = shown[warned[-1]][0]  # the run went on working past it
        facts.append(
            fact(
                "log.last_warning",
                last_warning.lineno,
                path,
                last_warning.lineno,
                text=last_warning.raw[:EXCEPTION_CHARS],
            )
        )
    texts = [t for _, t in shown]
    closing = _closing(texts, line.raw)
    if closing is not None:
        kind, index, mechanism, teardown = closing
        sign = shown[index][0]
        facts.append(
            fact(
                "log.ends_with",
                kind,
                path,
                sign.lineno,
                text=sign.raw,
                mechanism=mechanism,
                teardown=teardown,
                during=_handled_before(texts, index) if kind == "traceback" else None,
                hung_in=_hung_in(texts, index) if kind == "traceback" else None,
            )
        )
    elif (header := _interrupted_cut(texts)) is not None:
        sign = shown[header][0]
        facts.append(
            fact("log.ends_with", "traceback", path, sign.lineno, text=sign.raw, interrupted=True)
        )
    return facts


def _header_of(texts: Sequence[str], index: int) -> int | None:
    """Where the traceback closed at `texts[index]` starts: its `Traceback (most recent call
    last)` line (at `index` itself for an IPython header), at most `MAX_IPYTHON_FRAMES` up."""
    return next(
        (
            i
            for i in range(index, max(index - MAX_IPYTHON_FRAMES, 0) - 1, -1)
            if "Traceback (most recent call last)" in texts[i]
        ),
        None,
    )


def _handled_before(texts: Sequence[str], index: int) -> str | None:
    """The type of the exception that the traceback closed at `texts[index]` was raised while
    handling: the exception line above the traceback's own header, where an implicit chain's
    separator stands between them; else None."""
    header = _header_of(texts, index)
    if header is None or header < 2 or not HANDLING.search(texts[header - 1]):
        return None
    for earlier in range(header - 2, max(header - 2 - MAX_CONTINUATION, 0) - 1, -1):
        parsed = parse_exception(texts[earlier].rstrip())
        if parsed is not None:
            return parsed[0]
        if TRACEBACK_FRAME.search(texts[earlier]) or IPYTHON_FRAME.search(texts[earlier]):
            return None
    return None


def _hung_in(texts: Sequence[str], index: int) -> str | None:
    """`gpu_init` when the traceback closed at `texts[index]` is a user stop whose frames (from
    its header: above the exception line, or below an IPython header) stand in the GPU
    runtime's initialisation (`GPU_INIT_FRAME`); else None."""
    header = _header_of(texts, index)
    if header is None:
        return None
    # an IPython header closes nothing above it: its frames are below it
    end = index + 1 if header < index else header + MAX_IPYTHON_FRAMES
    block = texts[header:end]
    if not any(name in line for line in block for name in USER_STOPS):
        return None
    return "gpu_init" if any(_in_gpu_init(line) for line in block) else None


INTERRUPT_ECHO_HEADER = re.compile(r"^[ \t]*(?:\^C)+Traceback \(most recent call last\):")
"""A traceback header right after the terminal's echo of Ctrl-C: the interrupt raised it."""


def _chain_headers(texts: Sequence[str], index: int) -> list[int]:
    """The headers of the traceback that reaches `texts[index]` and of those its chain
    continues (`During handling ...`, `The above exception ...`), nearest first, each at most
    `MAX_IPYTHON_FRAMES` lines above the one below it."""
    headers: list[int] = []
    at = index
    while (header := _header_of(texts, at)) is not None:
        headers.append(header)
        if header < 2 or not CHAINED.search(texts[header - 1]):
            break
        at = header - 2  # the exception line closing the traceback above the separator
    return headers


def _interrupted_cut(texts: Sequence[str]) -> int | None:
    """Where the traceback chain that a log's last lines are frames of (cut off before its
    exception line) opens at the terminal's `^C` echo: that header's index; else None."""
    last = len(texts) - 1
    # the last line is a frame, or the source line printed under the frame above it
    if not any(TRACEBACK_FRAME.search(text) for text in texts[max(last - 1, 0) :]):
        return None
    headers = _chain_headers(texts, last)
    return next((h for h in reversed(headers) if INTERRUPT_ECHO_HEADER.search(texts[h])), None)


ELISION = re.compile(
    r"^[ \t]*(?:\.{3,}|\u2026+"
    r"|[\[(<][ \t]*(?:(?:\.{3}|\u2026)[^\])>\n]*|snip(?:ped)?)[\])>])[ \t]*$"
)
"""A line that only marks where whoever pasted the log left lines out (`...`, `…`, `[...]`,
`[... repeated 300 times ...]`, `<snip>`): nothing the program printed, so no line of its
output to end at or go on to."""
WRAPPED = re.compile(r"^(?:[a-z]+[ ,]|\((?!\)))")
"""A line that may continue the sentence above it (a message wrapped by the terminal or by its
writer): it starts with a word in lower case or with an opening parenthesis."""
WRAPPED_ABOVE = re.compile(r"^.{60,}[^.!?:;)\]}>\s]$")
"""A line that a wrap cut mid-sentence: long, and not ending as a sentence or a record does."""
BARE_NUMBER = re.compile(r"^[ \t]*[-+]?[0-9][0-9.,:eE+-]*[ \t]*$")
"""A line that is only a number (a counter or a value a script prints): no words, so it says
nothing of how the run was doing; the worded line above it does."""
ANSWER = re.compile(r"^[ \t]*(?:Out\[[0-9]+\]:[ \t]*[^ \t\n][^\n]*|True|False)[ \t]*$")
"""The reply of an interactive session or a probe's print (IPython's `Out[N]: value`, a bare
`True`/`False` under `>>> call` or `python -c "print(call)"`): what it means is in the line
that asked."""
MAX_BARE_NUMBERS = 8
"""Bare-number lines read past at the end of a log, at most."""
THREAD_REPORT_REST = re.compile(r"Traceback \(most recent call last\):|^[ \t]*File \"|^    ")
"""What follows `Exception in thread <name>:` before the exception line: the header, frames
and their source lines."""


WARNING_LEVEL = re.compile(
    r"(?:^|[ \t|\[])WARN(?:ING)?(?:[ \t]*(?:->|[:|\]])|[ \t]+-[ \t])|^W[0-9]{4} "
    r"|\[W(?:[0-9]{4} [0-9:.]+ | )[A-Za-z0-9_]+\.(?:cpp|cc|h|hpp):[0-9]+\]"
)
"""A line logged at warning level (logging's `WARNING:`, ` - WARNING - `, `[WARN]`, glog's
`W0102`, c10's `[W file.cpp:N]`): the program says it goes on."""


TQDM_BAR = re.compile(r"\b[0-9]+/[0-9]+ \[[0-9:]+<[0-9:?]+")
"""A progress bar's counter and times (tqdm's `34/34 [00:08<00:00`): work going on."""


JULIA_ERROR = re.compile(r"^(?:\[[^\]\n]{1,60}\]:?[ \t]*)*ERROR: ")
"""Julia's report of an uncaught error (`ERROR: LoadError: DimensionMismatch: ...`,
`ERROR: InterruptException:`), behind any bracketed launcher prefix."""
JULIA_STACK = re.compile(
    r"^[ \t]*(?:Stacktrace:|\[[0-9]+\] |@ |in expression starting at |caused by: "
    r"|\.\.\. ?\(the last [0-9]+ lines are repeated)"
)
"""The lines Julia prints under that report: `Stacktrace:`, its frames (`[3] fit!(m::Model)`),
their places (`@ Main ~/train.jl:41`), `in expression starting at`, a `caused by:` chain."""
MAX_JULIA_STACK = 400
"""Stack-trace lines read back from a log's end to find the error report they belong to."""
MAX_JULIA_MESSAGE = 30
"""Lines an error report's message may take above its `Stacktrace:` (CUDA.jl's `Out of GPU
memory` adds its pool's usage on two more lines; a load failure lists its reasons)."""


def julia_error(texts: Sequence[str]) -> int | None:
    """The index of the Julia error report whose stack trace (a `Stacktrace:` header and
    what follows it) runs to the log's end; None when the log ends otherwise."""
    last = len(texts) - 1
    index = last
    while index >= 0 and last - index < MAX_JULIA_STACK and JULIA_STACK.search(texts[index]):
        index -= 1
    if index == last or index < 0 or texts[index + 1].strip() != "Stacktrace:":
        return None
    # the report's first line opens its message; the lines under it, down to the stack
    # trace, are the rest of that message
    for above in range(index, max(index - MAX_JULIA_MESSAGE, -1), -1):
        if JULIA_ERROR.search(texts[above]):
            return above
    return None


def _lead(texts: Sequence[str], raws: Sequence[str]) -> dict[str, str]:
    """`lead` and `lead_kind` for a log whose last line is not a record of its own (see the
    module docstring), or nothing. `texts`: the shown lines, `raws`: the same, unstripped."""
    last = len(texts) - 1
    if last < 1:
        return {}
    if WRAPPED.search(raws[last]) and WRAPPED_ABOVE.search(raws[last - 1].rstrip()):
        return {"lead": texts[last - 1][:EXCEPTION_CHARS], "lead_kind": "wrapped"}
    if ANSWER.search(texts[last]) and texts[last - 1].strip():
        return {"lead": texts[last - 1][:EXCEPTION_CHARS], "lead_kind": "answer"}
    if BARE_NUMBER.search(texts[last]):
        index = last
        while index > 0 and last - index < MAX_BARE_NUMBERS and BARE_NUMBER.search(texts[index]):
            index -= 1
        if BARE_NUMBER.search(texts[index]):
            return {}
        return {"lead": raws[index][:EXCEPTION_CHARS], "lead_kind": "numbers"}
    for index in range(last, max(last - 2 * MAX_CONTINUATION, 0) - 1, -1):
        if THREAD_EXCEPTION.search(texts[index]):
            if index > 0 and all(THREAD_REPORT_REST.search(t) for t in raws[index + 1 :]):
                return {"lead": texts[index - 1][:EXCEPTION_CHARS], "lead_kind": "thread"}
            return {}
        if not THREAD_REPORT_REST.search(raws[index]):
            return {}
    return {}


def _closing(texts: Sequence[str], raw: str) -> tuple[str, int, str | None, str | None] | None:
    """(kind, index of the line that shows it, fatal mechanism, teardown) for the output that
    closes the log, or None for ordinary output."""
    last = len(texts) - 1
    mechanism = fatal_kind(texts[last]) or fatal_kind(raw)
    if mechanism is not None:
        return "fatal", last, mechanism, None
    # The exception line may be followed by its message's continuation (NCCL's `Last
    # error:` lines), never by another frame.
    for index in range(last, max(last - MAX_CONTINUATION, 0) - 1, -1):
        text = texts[index]
        if TRACEBACK_FRAME.search(text):
            break
        if index < last and not _continues(texts[index : index + 2]):
            break  # ordinary output after it: the program went on
        if parse_exception(text) is not None or TF1_RERAISED.search(text):
            framed = any(TRACEBACK_HEADER.search(t) for t in texts[:index])
            if not framed and index != last:
                break
            kind = "traceback" if framed else "exception"
            return kind, index, None, _teardown(texts[: index + 1])
    header = _ipython_header(texts)
    if header is not None:
        return "traceback", header, None, None
    if CHAINED.search(texts[last]):
        # cut off where the next traceback of the chain would begin: the exception above it
        # says whose report this is
        return "traceback", last, None, _teardown(texts[:last])
    if LUA_TRACEBACK.search(texts[last]):
        return "traceback", last, None, None
    if ERROR_LINE.search(texts[last]):
        return "error", last, None, None
    if (error := julia_error(texts)) is not None:
        return "error", error, None, None
    return None


def _ipython_header(texts: Sequence[str]) -> int | None:
    """The index of the IPython traceback header whose frames run to the log's end (the
    excerpt stopped before its closing `Type: message` line), else None."""
    last = len(texts) - 1
    for index in range(last, max(last - MAX_IPYTHON_FRAMES, -1), -1):
        if IPYTHON_HEADER.search(texts[index]):
            return index if index < last else None
        if not IPYTHON_FRAME.search(texts[index]):
            return None
    return None


def _continues(pair: Sequence[str]) -> bool:
    """Whether the second line continues an exception message that the first line ends or
    carries: another exception line, or a line announced by one ending with `:` (NCCL's
    `Last error:` and the WARN after it)."""
    first, second = pair[0], pair[-1]
    announced = first.rstrip().endswith(":")
    return (
        bool(ERROR_NAMED.search(second))
        or announced
        or second.rstrip().endswith(":")
        or bool(TF_OP_NOTE.search(second))
    )


def _teardown(block: Sequence[str]) -> str | None:
    """Whether the traceback that ends `block` was one the process reports and goes on from:
    `thread` (a thread's exception), `shutdown` (at interpreter exit), `finalizer` (a
    `__del__` or weakref callback's exception, which Python ignores), `cancelled` (a
    TensorFlow queue operation cancelled as its queue or session closed), `handled` (a
    multiprocessing queue feeder's broken pipe, which it prints and goes on from)."""
    headers = [i for i, t in enumerate(block) if "Traceback (most recent call last)" in t]
    start = max(headers[-1] - 1, 0) if headers else max(len(block) - 4, 0)
    own = block[start:]
    if any(QUEUE_CANCELLED.search(t) for t in own):
        return "cancelled"  # a feeder thread's, too: it ended because the loop closed its queue
    if own and THREAD_EXCEPTION.search(own[0]):
        return "thread"
    if any(SHUTDOWN.search(t) for t in own):
        return "shutdown"
    if any(FINALIZER.search(t) for t in own):
        return "finalizer"
    for kind, frame in TEARDOWN_FRAMES:
        if kind == "thread" and any(frame.search(t) for t in own):
            return "thread"  # its outermost frame, where the announcing line was lost
        if kind == "feeder" and any(frame.search(t) for t in own):
            # multiprocessing's queue feeder caught and printed it; a broken pipe only is
            # harmless to it (`teardown.py`), other errors lost the item being sent
            return "handled" if any(FEEDER_PIPE.search(t) for t in own) else None
    return None
