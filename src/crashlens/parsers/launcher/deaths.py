"""Signs that a process died, as any text log prints them: the facts the failure detector reads.

The base of the launcher collector, which reads plain text too (`parsers.plaintext`), since a
debugger session, `kubectl describe pod` or `sacct` output arrive as either. Bounded state:
one fact per signal and pid (`SignalLog`), per fatal mechanism, per state, capped. Fact keys:

* `launcher.signal` (see the package docstring) with these sources too: `shell` (the shell's
  strsignal() word, read by `shell_words`: `Killed` / `Bus error (core dumped)`, at the end
  of a line or of its last `\\r` redraw, so after progress-bar output with no newline before
  it), `debugger` (gdb's `Program received signal SIGBUS`), `faulthandler` (`Fatal Python
  error: Bus error`), `text`
  (`killed by signal 9`, `terminated by signal SIGSEGV`, `received signal 7`, Go's
  `signal: killed`, cargo's `(signal: 9, SIGKILL: kill)`, the Intel Fortran runtime's
  `forrtl: error (200): program aborting due to control-C event`: SIGINT).
* `python.fatal_error`: str what `Fatal Python error:` says (first of each).
* `python.thread_dump`: True, the first faulthandler thread dump (`Thread 0x... (most recent
  call first):`); attr `after_timeout` (a `Timeout (0:05:00)!` line came first: a hang
  watchdog's dump, not a crash).
* `log.fatal`: str the mechanism of a line a dying process prints (`ending.FATAL_LINES`:
  python-fatal, cpp-terminate, c-assert, glibc-abort, core-dumped, glog-fatal, panic,
  ggml-abort, abort-message, cuda-sample-fail, matlab-error); the
  first line of each mechanism.
* `process.exit_code`: int an exit status in a program's generic wording (`exited with code
  137`, `Process finished with exit code 0`, `exit status 1`, a ProcessFailure's
  `exitcode=-7`); attr `wording`.
* `mpi.nonzero_exit`: True, Open MPI's report that a process returned a non-zero status.
* `k8s.reason`: str a pod's or container's state reason (`OOMKilled`, `Error`, `Completed`,
  `Evicted`, `CrashLoopBackOff`, ...) from `kubectl describe`, pod YAML/JSON or the events
  table; `k8s.exit_code`: int a container's `Exit Code:` / `exitCode:`.
* `slurm.state`: str a job or step state from `sacct`, `scontrol show job` or `seff`
  (`OUT_OF_MEMORY`, `FAILED`, `NODE_FAIL`, `TIMEOUT`, `CANCELLED`, `PREEMPTED`, `COMPLETED`,
  truncated `OUT_OF_ME+` read whole); attrs exit_code, signal, by (the uid that cancelled).
* `native.exit_crash`: str an exit-path function (`__run_exit_handlers`, `Py_FinalizeEx`, Ray's
  `CoreWorker::ForceExit`, `_EXIT_PATH`) on the native stack under a crash line (a fatal message,
  a crash handler's or a debugger's signal); its line is the crash line; attr `frame`.
* `pbs.killed`: str the resource whose limit PBS killed the job for (`walltime`, `cput`, `mem`,
  `vmem`, ...: `=>> PBS: job killed: walltime 3650 exceeded limit 3600`).
* `platform.time_limit`: str the platform that ended the work at its time limit (`ZeroGPU`: a
  Hugging Face Space's GPU call that outran its lease, `GPU task aborted`).
* `platform.shutdown`: str who shut the machine down under the job, from the machine's own
  log: `power key` (systemd-logind's `Power key pressed`: the ACPI power button a hypervisor
  presses to stop or preempt a cloud VM, or a person's), `preemption` (Taskcluster's worker
  passing on GCP's notice, `GCP Metadata Service says termination is imminent`).
* `lsf.term`: str the termination reason an IBM Spectrum LSF job report gives (`TERM_RUNLIMIT`,
  `TERM_MEMLIMIT`, `TERM_OWNER`, ...); the report's `Exited with exit code N.` just below it is
  a `process.exit_code` with attr `lsf_term` (that reason).
* `launcher.completed` (see the package docstring): the run's completion line, in any log: a
  line of the finish signs' catalog (`finish_signs.py`, `tables/finish_signs.toml`); attrs
  scope, tool, request (a server's summary of one request, printed after a failed one too),
  since (`request_lines.py`).
* `slurm.pending`: str the reason `squeue` gives for a job it shows pending (`PD`, `squeue.py`);
  attrs job, partition, failed_before (the reason records a failure: a launch that failed).
* `dcgm.diag_message`, `dcgm.test_failed`: DCGM's diagnostic table (`dcgmi diag`) in the log,
  its messages joined across the rows it wraps them over (`dcgm_diag.py`).
* `log.container`: str what shows that the job ran in a Docker container, the first such line:
  `compose` (docker compose's `service_1  | ` prefix), `prompt` (a shell prompt on a host
  named by a container id, `root@3f2a9c1b7d4e:`), `nccl` (NCCL's `<container id>:pid:tid`).
* `python.exiting`: True, the first of PyTorch's `destroy_process_group() was not called
  before program exit` warnings: a process group's destructor ran as the interpreter exited.
* `log.progress`: True at the first line that reports training progress (an epoch, step or
  iteration counter with its number, a loss value): the run got past start-up, so its
  libraries loaded and its GPU worked. Loading bars are no progress of training.
* `log.training_start`: True at the first line where a trainer announces that its training
  loop begins (`TRAINING_START`: `***** Running training *****`, `Starting training`, ...):
  a log that stops after it with no progress stopped before the first step finished.
* `log.progress_mark`: int, each progress line among the log's last lines (`progress.py`):
  whether training went on after a failure line.
* `python.gc_crash`: True, faulthandler's `Garbage-collecting` line in a dumped stack: the
  fatal error struck during a garbage collection (CPython 3.10+, bpo-44466), i.e. while the
  collector walked the heap: a corrupted object, so corrupted memory.
* `serving.engine_dead`: str the serving engine whose own death sign a line prints
  (`ENGINE_DEATHS`: vLLM's `EngineDeadError`, SGLang's scheduler exception, TGI's shard or
  download process signaled to shut down), the first line of each engine; attr `says`.
* `jupyter.kernel_died`: str what Jupyter's kernel restarter did (`restarting`, `restart
  failed`): it found the kernel process dead (it acts only on a kernel that is no longer
  alive: a crash, a signal, the OOM killer; a restart the user asks for is logged otherwise).
* `log.last_line`, `log.ends_with`: how the log ends (`ending.py`); `log.process_end`: how
  each process's own output ends, in a log whose lines all name their process
  (`process_ends.py`).
* `shell.sudo_contrast`: a command that failed as the user and not under sudo, in a shell
  transcript among the log's last lines (`sudo_contrast.py`).
* `shell.prompt_returned`: the shell's bare prompt as the log's last line, after a command's
  output: the command exited (`prompt_return.py`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from crashlens.model import Fact, FactValue, Line
from crashlens.parsers.base import Anchor, AnchoredCollector, fact
from crashlens.parsers.launcher.dcgm_diag import DcgmDiagReader
from crashlens.parsers.launcher.ending import ending_facts, fatal_kind
from crashlens.parsers.launcher.finish_signs import FINISH_ANCHOR, finish_sign
from crashlens.parsers.launcher.messages import EXCEPTION_CHARS
from crashlens.parsers.launcher.process_ends import process_ends
from crashlens.parsers.launcher.progress import tail_progress
from crashlens.parsers.launcher.prompt_return import prompt_returned
from crashlens.parsers.launcher.request_lines import request_since
from crashlens.parsers.launcher.shell_words import (
    CORE,
    LINE_WORD,
    REDRAW_REST,
    SHELL_SCRIPT,
    WORDS,
    shell_signal,
    signal_name,
)
from crashlens.parsers.launcher.signals import (
    SIGNAL_WORDS,
    SIGNALS,
    SignalLog,
)
from crashlens.parsers.launcher.squeue import failed_before, pending_job
from crashlens.parsers.launcher.sudo_contrast import sudo_contrast
from crashlens.parsers.machine_shutdown import ANCHOR as SHUTDOWN_ANCHOR
from crashlens.parsers.machine_shutdown import shutdown_kind
from crashlens.text.values import bounded_int

MAX_SIGNS = 200
"""Facts of each kind kept (states, exit codes, signals)."""

_INTERRUPT_ECHO = re.compile(r"\A[ \t]*(?:\^C)+(?!Traceback)[^\s^]")
"""A line opening with the terminal's echo of Ctrl-C and the program's output after it. Not a
traceback: what a Python traceback after the echo shows is read from its exception (a
`KeyboardInterrupt`, or an error the interrupt only brought to light: a hung run's task
exception reported as the loop shut down)."""
_DEBUGGER = re.compile(
    r"(?:Program received signal|Program terminated with signal"
    r"|Thread [0-9]+ \"[^\"\n]*\" received signal) (SIG[A-Z0-9]+)"
)
_PY_FATAL = re.compile(r"Fatal Python error: ([^\n]*)")
_THREAD_DUMP = re.compile(r"(?:Current thread|Thread) 0x[0-9a-fA-F]+ \(most recent call first\):")
_FAULT_TIMEOUT = re.compile(r"^Timeout \([0-9]+:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?\)!")
_BY_SIGNAL = re.compile(
    r"(?:(?:killed|terminated|died|exited) (?:by|with|from|on|due to)|(?:got|caught|received)"
    # text-generation-inference's launcher on a shard that died of a signal (`Shard process
    # was signaled to shutdown with signal 9`)
    r"|signaled to shutdown with)"
    r" signal:? ?([0-9]+|SIG[A-Z0-9]+)\b"
    # torchelastic's wording, also inside a ProcessFailure's repr that other launchers print
    r"|Signal [0-9]+ \((SIG[A-Z0-9]+)\) received by PID ([0-9]+)"
    # Go's os/exec (`signal: killed`), which launchers and operators written in Go print
    # (not the DataLoader's `killed by signal: Bus error`, which its own handler reads)
    rf"|(?<!by )\bsignal: ({WORDS})\b"
    # cargo's report on a child (cargo-util's process_error.rs: `(signal: 9, SIGKILL: kill)`)
    r"|\(signal: [0-9]+, (SIG[A-Z0-9]+): "
    # the crash handlers of abseil (TensorFlow, JAX/XLA, Ray, gRPC: `*** SIGSEGV received at
    # time=1741149596 on cpu 63 ***`) and glog (`*** SIGSEGV (@0x0) received by PID 4242 (TID
    # 0x7f...) from PID 0; stack trace: ***`), each followed by the crashed stack
    r"|\*\*\* (SIG[A-Z0-9]+) (?:received at time=|\(@0x[0-9a-f]+\) received by PID )"
    # Julia's signal handler (`signal (7): Bus error`, then the Julia stack), as it dies
    r"|^signal \(([0-9]{1,2})\): [A-Z]"
    # HTCondor's job event log, under `Job terminated.` (`(0) Abnormal termination (signal 9)`)
    r"|\bAbnormal termination \(signal ([0-9]{1,2})\)",
    re.IGNORECASE,
)
_NATIVE_FRAME = (
    r"(?:^|[ \t)\]])(?:PC: )?@ +0x[0-9a-fA-F]{4,}|frame #[0-9]+: "
    r"|^#[0-9]+ +0x[0-9a-fA-F]+ in "
)
"""A frame line of a crashed process's native stack: abseil's and glog's (`@ 0x7f...`, also
behind a prefix such as Ray's `(TorchTrainer pid=439, ip=...)`),
c10's (`frame #3: ...`), gdb's (`#3  0x7f... in ...`)."""
_EXIT_PATH = re.compile(
    r"\b(?:__run_exit_handlers|_dl_fini|__cxa_finalize|Py_FinalizeEx|Py_Finalize|Py_Exit"
    r"|finalize_modules|PyImport_Cleanup|atexit_callfuncs"
    r"|CoreWorker::(?:ForceExit|Shutdown|Disconnect|Exit))\b"
)
"""Functions that run only once a process is exiting: libc's exit handlers and library
destructors, the interpreter's finalization, Ray's worker shutdown. A crash with one of them
on its stack happened after the program's own work had returned (its teardown)."""
CRASH_STACK_LINES = 400
"""Lines below a crash line that its stack may take (c10's and abseil's stacks run to ~60)."""
_EXIT_WORDING = re.compile(
    r"(exited with (?:exit |status )?code|finished with exit code|exit status|exit code:?"
    # GNU time's report of the command it ran (`Command exited with non-zero status 1`)
    r"|exited with non-zero status"
    # a torchelastic ProcessFailure's repr (`exitcode=-7`)
    r"|\bexitcode="
    # HTCondor's job event log (`(1) Normal termination (return value 1)`)
    r"|Normal termination \(return value) ?(0x[0-9a-f]{8}|-?[0-9]+)\b",
    re.IGNORECASE,
)
"""An exit status in a program's generic wording (GNU time's too); Go prints a Windows status
in hexadecimal (`exit status 0xc0000135`: Ollama's runner), Rust's process supervisors
`exited with status code -1073741515`."""
_LSF_TERM = re.compile(r"^[ \t]*(TERM_[A-Z_]{2,40}): [A-Za-z]")
"""The termination reason an LSF job report gives (`TERM_RUNLIMIT: job killed after reaching
LSF run time limit.`), on its own line above the report's `Exited with exit code N.`."""
_PBS_KILLED = re.compile(r"PBS: job killed: ([a-z_]{2,20}) ")
"""PBS Pro's and Torque's note of the resource whose limit a job passed, in its error file
(`=>> PBS: job killed: walltime 3650 exceeded limit 3600`)."""
_LSF_EXITED = re.compile(r"^[ \t]*Exited with exit code -?[0-9]+\.")
_MPI_NONZERO = re.compile(
    # Open MPI's two wordings for a job whose process returned a non-zero status
    r"a non-zero exit code\. Per user-direction, the job has been aborted"
    r"|detected that one or more processes exited with non-zero status"
)
_K8S_REASONS = (
    "OOMKilled|OOMKilling|Error|Completed|ContainerCannotRun|DeadlineExceeded|StartError"
    "|Evicted|CrashLoopBackOff|BackOff|Preempting|Shutdown|NodeShutdown"
)
_K8S_REASON = re.compile(
    rf"(?:\b[Rr]eason\"?:[ \t]*\"?|^[ \t]*Warning[ \t]+)({_K8S_REASONS})\b(?![-.])"
)
_K8S_EXIT = re.compile(r"(?:Exit Code:|\bexitCode\"?:)[ \t]*([0-9]+)\b")
_SLURM_STATES = (
    r"COMPLETED|FAILED|OUT_OF_ME(?:MORY|\+)|NODE_FAIL|TIMEOUT|CANCELLED(?: by [0-9]+|\+)?"
    r"|PREEMPTED|BOOT_FAIL|DEADLINE"
)
_SACCT_ROW = re.compile(rf"(?:^|[ \t|])({_SLURM_STATES})[ \t|]+([0-9]+):([0-9]+)(?=[ \t|]|$)")
_SACCT_CELL = re.compile(
    rf"(?:^|[ \t|])({_SLURM_STATES})(?=[ \t|]+(?:"
    # a custom `sacct --format` without the ExitCode column: the State cell followed by a
    # Start/End time, an Elapsed time or a size (MaxRSS, ReqMem), or by the job id as the last
    # cell (`OUT_OF_ME+ 2024-02-16T04:38:07 31130319.interactive`)
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:"
    r"|(?:[0-9]+-)?[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:[ \t|]|$)"
    r"|[0-9.]+[KMGT](?:[ \t|]|$)"
    r"|[0-9]+(?:_[0-9]+)?(?:\.[A-Za-z0-9+]+)?[ \t|]*$"
    r"))"
)
_SCONTROL = re.compile(rf"\bJobState=({_SLURM_STATES})\b")
PROGRESS = re.compile(
    # not a trainer's plan printed before its loop (the Hugging Face Trainer's banner: `Num
    # Epochs = 3`, `Total optimization steps = 375`, `Gradient Accumulation steps = 1`, `Num
    # update steps per epoch = 10`, and `Max steps`, `Warmup steps` of other trainers)
    r"(?<!Num )(?<!optimization )(?<!Accumulation )(?<!per )(?<![Mm]ax )(?<![Ww]armup )"
    r"\b(?:[Ee]poch|EPOCH|[Ss]tep|STEP|[Ii]ter(?:ation)?|ITER)s?\b[ \t:=#\[(]*[0-9]+"
    r"|\b(?:[Ll]oss|LOSS)\b['\"]?[ \t]*[:=][ \t]*-?[0-9]*\.?[0-9]"
    # a bare tqdm bar, no description before it: the Hugging Face Trainer's training and
    # evaluation loops (a described bar is a step of its own: `Loading checkpoint shards:`)
    r"|^[ \t]*[0-9]{1,3}%\|[^|\n]{0,200}\|[ \t]*[0-9]+/[0-9]+[ \t]*\["
    # Ultralytics/YOLOv5's training row: epoch/epochs, then the GPU memory in G
    r"|^[ \t]*[0-9]{1,5}/[0-9]{1,5}[ \t]+[0-9.]{1,8}G[ \t]"
)
"""A training loop's progress line: a counter (`Epoch 3`, `[Epoch 1]`, `step: 200`, `iter 40`;
not a trainer's plan, `Num Epochs = 3`), a loss value (`loss: 0.42`, `loss=1.3`, and the
Hugging Face Trainer's logged dict `{'loss': 0.42, ...}`), the Trainer's bare progress bar
(` 45%|####5     | 450/1000 [02:13<02:43,  3.37it/s]`) or an Ultralytics training row
(`     26/99     2.57G    0.0183 ...`)."""
TRAINING_START = re.compile(
    # the Hugging Face Trainer (and DeepSpeed-Chat's copy of its banner)
    r"\*{5} Running training \*{5}"
    # llm-foundry, detectron2 (`Starting training from iteration 0`), ultralytics
    # (`Starting training for 100 epochs...`)
    r"|\bStarting training\b"
    # MosaicML Composer's trainer, as it enters its loop
    r"|\bSpinning the dataloaders\b"
    # Megatron-LM's timestamp before its first step
    r"|\[before the start of training step\]"
    # fairseq's train loop
    r"|\bbegin training epoch [0-9]"
)
"""A trainer's announcement that its training loop begins: the line before the first step."""
ENGINE_DEATHS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # vLLM: the engine core's loop died (V1 `EngineDeadError`, V0 `AsyncEngineDeadError`
    # and its `Background loop has errored already`), or never came up; every later
    # request fails with it, the server does not recover
    (
        "vLLM",
        re.compile(
            r"\b(?:Async)?EngineDeadError\b|Background loop has errored already"
            r"|EngineCore encountered a fatal error|Engine core initialization failed"
            # V1's engine core process logging the exception that ended its start-up
            r"|EngineCore failed to start"
        ),
    ),
    # SGLang: a subprocess's event loop caught an exception; it then sends SIGQUIT to the
    # server's parent process, which exits
    (
        "SGLang",
        re.compile(
            r"\b(?:Scheduler|TpModelWorkerClient|DetokenizerManager|DataParallelController)"
            r" hit an exception"
        ),
    ),
    # Hugging Face TGI's launcher: a child process (shard, download, webserver) died
    (
        "TGI",
        re.compile(
            r"\b(?:Shard|Download|Webserver) process was signaled to shutdown"
            r"|\bShard [0-9]+ failed to start\b"
        ),
    ),
)
"""A serving engine's own words for its death, by engine: the server stops serving."""
_ENGINE_ANCHOR = (
    r"EngineDeadError|Background loop has errored|EngineCore encountered a fatal"
    r"|Engine core initialization failed| hit an exception"
    r"|process was signaled to shutdown|failed to start"
)
_KERNEL_RESTARTER = re.compile(r"KernelRestarter: restart(ing kernel \([0-9]+/[0-9]+\)| failed)")
"""jupyter_client's restarter (`KernelRestarter`, `AsyncIOLoopKernelRestarter`) polls the kernel
process and, when it is no longer alive, logs `restarting kernel (n/limit)`, then `restart
failed` past the limit."""
_KERNEL_UI = re.compile(
    r"The kernel appears to have died\. It will restart automatically"
    r"|The kernel has died, and the automatic restart has failed"
    r"|The Kernel crashed while executing code in the current cell"
    r"|Disposing session as kernel process died"
    r"|^Kernel died, restarting"
)
"""What a notebook front end shows once it finds its kernel process dead, as users paste it:
the classic Notebook's and JupyterLab's dialogs (restarting, then past the restarter's limit),
VS Code's Jupyter extension (its cell message and its log's line) and Spyder's console. The
front end learns it from the restarter above: the kernel process is gone, whatever killed it."""
_CONTAINER_LINE = re.compile(
    # docker compose's prefix of a service's output (`trainer_1  | `, compose v2 `trainer-1  | `)
    r"^(?P<compose>[A-Za-z0-9][A-Za-z0-9_.-]{0,80}[-_][0-9]{1,3})[ \t]+\| "
    # Docker's default host name, the container id's first 12 hex digits: in a shell prompt
    # (`root@3f2a9c1b7d4e:/workspace#`) or NCCL's `host:pid:tid` prefix
    r"|@(?P<prompt>[0-9a-f]{12}):"
    r"|^(?:\[[^]\n]{1,40}\][ \t]*)?(?P<nccl>[0-9a-f]{12}):[0-9]+:[0-9]+ \[[0-9]"
)
"""A line that shows the job ran in a Docker container (fact `log.container`)."""
_GC_CRASH = re.compile(r"^[ \t]*Garbage-collecting[ \t]*$")
_SEFF = re.compile(rf"^State: ({_SLURM_STATES}) \(exit code ([0-9]+)\)")


def slurm_state(text: str) -> tuple[str, dict[str, FactValue]] | None:
    """A Slurm state and its exit code / signal / uid from a sacct, scontrol or seff line."""
    figures: dict[str, int | None] = {}
    if m := _SACCT_ROW.search(text):
        state = m.group(1)
        figures = {"exit_code": bounded_int(m.group(2)), "signal": bounded_int(m.group(3))}
    elif m := _SEFF.search(text):
        state = m.group(1)
        figures = {"exit_code": bounded_int(m.group(2))}
    elif (m := _SCONTROL.search(text)) or (m := _SACCT_CELL.search(text)):
        state = m.group(1)
    else:
        return None
    attrs: dict[str, FactValue] = {k: v for k, v in figures.items() if v is not None}
    if state.startswith("CANCELLED by "):
        attrs["by"] = state.removeprefix("CANCELLED by ")
    state = state.split(" ", 1)[0].rstrip("+")
    state = {"OUT_OF_ME": "OUT_OF_MEMORY", "CANCELLED": "CANCELLED"}.get(state, state)
    return state, attrs


class DeathSigns(AnchoredCollector):
    """The handlers of `DEATH_ANCHORS` and how the log ends (the launcher collector's base)."""

    def __init__(self, path: str, table: Sequence[Anchor[Any]]) -> None:
        # `table`: the subclass's anchors, which include DEATH_ANCHORS
        super().__init__(path, table)
        self.signals = SignalLog(path, MAX_SIGNS)
        self.signs: list[Fact] = []
        self.fatal: set[str] = set()
        self.states: set[tuple[str, str]] = set()
        self.fault_timeout = False
        self.run_completed = False
        self.ending: list[Fact] = []
        self.progress: list[Fact] = []
        self.shell: list[Fact] = []
        self.crash: tuple[int, str] | None = None
        """The last line that reported a crash (a fatal message, a crash handler's or a
        debugger's signal): the native stack below it is its stack."""
        self.lsf_term: tuple[str, int] | None = None
        """The last LSF termination reason and its line: the report's exit status follows it."""
        self.dcgm = DcgmDiagReader(path)
        """DCGM's diagnostic tables (`dcgmi diag`), their wrapped messages joined."""

    def _sign(self, key: str, value: FactValue, line: Line, **attrs: FactValue | None) -> None:
        if (key, str(value)) in self.states or len(self.signs) >= MAX_SIGNS:
            return
        self.states.add((key, str(value)))
        self.signs.append(fact(key, value, self.path, line.lineno, text=line.raw, **attrs))

    def on_shell_word(self, line: Line) -> None:
        name = shell_signal(line.text) or shell_signal(line.raw)
        if name is not None:
            # The script report names the pid: the launcher's own reading of it is the same death.
            script = SHELL_SCRIPT.search(line.text)
            pid = bounded_int(script.group(1)) if script else None
            self.signals.add(
                name, line.lineno, line.raw, rank=line.rank, host=line.host, pid=pid, source="shell"
            )

    def on_interrupt_echo(self, line: Line) -> None:
        # A terminal echoes Ctrl-C as `^C` where the cursor stands; output the program then
        # prints (its shutdown, a Go server's `context canceled`, a traceback) follows on the
        # same line. So `^C` opening a line, with text after it, is a user's interrupt the
        # program went on to handle. A bare `^C` at the end is not: it is also how a notebook
        # shows a process its runtime killed (`host-oom-notebook-process-killed-bare-interrupt`).
        if _INTERRUPT_ECHO.match(line.text) or _INTERRUPT_ECHO.match(line.raw):
            self.signals.add(
                "SIGINT", line.lineno, line.raw, rank=line.rank, host=line.host, source="echo"
            )

    def on_dcgm_header(self, line: Line) -> None:
        self.dcgm.header(line)

    def on_dcgm_section(self, line: Line) -> None:
        self.dcgm.section_rule(line)

    def on_dcgm_row(self, line: Line) -> None:
        self.dcgm.row(line)

    def on_fortran_interrupt(self, line: Line) -> None:
        # The Intel Fortran runtime (libifcoremd/libifcore, loaded with numpy and scipy built
        # on Intel's MKL, common on Windows) installs a console control handler that aborts
        # the process on Ctrl-C and says so: the user's interrupt, in its words.
        self.signals.add(
            "SIGINT", line.lineno, line.raw, rank=line.rank, host=line.host, source="text"
        )

    def on_debugger(self, line: Line) -> None:
        if (m := _DEBUGGER.search(line.text)) and (name := signal_name(m.group(1))):
            self.crash = (line.lineno, line.raw)
            self.signals.add(
                name, line.lineno, line.raw, rank=line.rank, host=line.host, source="debugger"
            )

    def on_fatal(self, line: Line) -> None:
        if m := _PY_FATAL.search(line.text):
            what = m.group(1).strip()
            self._sign("python.fatal_error", what[:EXCEPTION_CHARS], line, rank=line.rank)
            signum = SIGNAL_WORDS.get(what.rstrip(".").lower())
            if signum is not None:
                self.signals.add(
                    SIGNALS[signum],
                    line.lineno,
                    line.raw,
                    rank=line.rank,
                    host=line.host,
                    source="faulthandler",
                )
        mechanism = fatal_kind(line.text) or fatal_kind(line.raw)
        if mechanism is not None:
            self.crash = (line.lineno, line.raw)
        if mechanism is not None and mechanism not in self.fatal:
            self.fatal.add(mechanism)
            self.signs.append(fact("log.fatal", mechanism, self.path, line.lineno, text=line.raw))

    def on_thread_dump(self, line: Line) -> None:
        if _FAULT_TIMEOUT.search(line.text):
            self.fault_timeout = True
        elif _THREAD_DUMP.search(line.text):
            self._sign("python.thread_dump", True, line, after_timeout=self.fault_timeout)

    def on_by_signal(self, line: Line) -> None:
        m = _BY_SIGNAL.search(line.text)
        if m is None:
            return
        if m.group(4):
            name = SIGNALS.get(SIGNAL_WORDS.get(m.group(4).lower(), 0))
        else:
            found = m.group(1) or m.group(2) or m.group(5) or m.group(6) or m.group(7) or m.group(8)
            name = signal_name(found.upper())
        pid = bounded_int(m.group(3)) if m.group(3) else None
        if name is not None:
            if m.group(6):
                self.crash = (line.lineno, line.raw)
            # With the pid, torchelastic's own line and this one name one death (`SignalLog`).
            source = (
                "torchelastic" if pid is not None else "crash-handler" if m.group(6) else "text"
            )
            self.signals.add(
                name, line.lineno, line.raw, rank=line.rank, host=line.host, pid=pid, source=source
            )

    def on_exit_wording(self, line: Line) -> None:
        if m := _EXIT_WORDING.search(line.text):
            number = m.group(2)
            code = int(number, 16) if number[:2].lower() == "0x" else bounded_int(number)
            if code is not None:
                # the status of an LSF job report says why through the reason line above it
                term = self.lsf_term
                reason = (
                    term[0]
                    if term is not None
                    and term[1] == line.lineno - 1
                    and _LSF_EXITED.match(line.text)
                    else None
                )
                self._sign(
                    "process.exit_code", code, line, wording=m.group(1).lower(), lsf_term=reason
                )
        elif _MPI_NONZERO.search(line.text):
            self._sign("mpi.nonzero_exit", True, line)

    def on_native_frame(self, line: Line) -> None:
        """A frame of the exit path under a crash line: the crash happened in teardown."""
        crash = self.crash
        if crash is None or line.lineno - crash[0] > CRASH_STACK_LINES:
            return
        if (m := _EXIT_PATH.search(line.text)) is None:
            return
        key = ("native.exit_crash", str(crash[0]))
        if key in self.states or len(self.signs) >= MAX_SIGNS:
            return
        self.states.add(key)
        self.signs.append(
            fact(
                "native.exit_crash",
                m.group(0),
                self.path,
                crash[0],
                text=crash[1],
                frame=line.raw[:EXCEPTION_CHARS],
            )
        )

    def on_pbs_killed(self, line: Line) -> None:
        if m := _PBS_KILLED.search(line.text):
            self._sign("pbs.killed", m.group(1), line)

    def on_gpu_lease_end(self, line: Line) -> None:
        self._sign("platform.time_limit", "ZeroGPU", line)

    def on_machine_shutdown(self, line: Line) -> None:
        if (what := shutdown_kind(line.raw)) is not None:
            self._sign("platform.shutdown", what, line)

    def on_lsf_term(self, line: Line) -> None:
        if m := _LSF_TERM.match(line.text):
            self.lsf_term = (m.group(1), line.lineno)
            self._sign("lsf.term", m.group(1), line)

    def on_k8s(self, line: Line) -> None:
        if m := _K8S_REASON.search(line.text):
            self._sign("k8s.reason", m.group(1), line)
        m = _K8S_EXIT.search(line.text)
        if m and (code := bounded_int(m.group(1))) is not None:
            self._sign("k8s.exit_code", code, line)

    def on_slurm_state(self, line: Line) -> None:
        if found := slurm_state(line.text):
            state, attrs = found
            key = f"{state}:{attrs.get('exit_code')}:{attrs.get('signal')}"
            if ("slurm.state", key) not in self.states and len(self.signs) < MAX_SIGNS:
                self.states.add(("slurm.state", key))
                self.signs.append(
                    fact("slurm.state", state, self.path, line.lineno, text=line.raw, **attrs)
                )

    def on_completed(self, line: Line) -> None:
        """Keep the last line saying the run finished (`launcher.completed`): whether the
        whole run's training said so, or only one process's exit (`scope`, the catalog
        entry's: once a line said the run finished, a later process exit does not undo it)."""
        sign = finish_sign(line.text) or finish_sign(line.raw)
        if sign is None:
            return
        if sign.scope == "run":
            self.run_completed = True
        before = self.singles.pop("launcher.completed", None)
        scope, request = ("run", False) if self.run_completed else ("process", sign.per_request)
        since = request_since(self.singles, before) if request else None
        self.keep_first(
            "launcher.completed",
            True,
            line,
            scope=scope,
            tool=sign.tool,
            request=request,
            since=since,
        )

    def on_squeue_pending(self, line: Line) -> None:
        if (job := pending_job(line.text)) is not None:
            self._sign(
                "slurm.pending",
                job.reason,
                line,
                job=job.job,
                partition=job.partition,
                failed_before=failed_before(job.reason),
            )

    def on_engine_dead(self, line: Line) -> None:
        for engine, pattern in ENGINE_DEATHS:
            if m := pattern.search(line.text):
                self._sign("serving.engine_dead", engine, line, says=m.group(0))
                return

    def on_kernel_restart(self, line: Line) -> None:
        if m := _KERNEL_RESTARTER.search(line.text):
            what = "restart failed" if m.group(1) == " failed" else "restarting"
            self._sign("jupyter.kernel_died", what, line)
        elif _KERNEL_UI.search(line.text):
            self._sign("jupyter.kernel_died", "died", line)

    def on_progress(self, line: Line) -> None:
        if PROGRESS.search(line.text):
            self.keep_first("log.progress", True, line)

    def on_training_start(self, line: Line) -> None:
        if TRAINING_START.search(line.text):
            self.keep_first("log.training_start", True, line)

    def on_gc_crash(self, line: Line) -> None:
        if _GC_CRASH.search(line.text):
            self.keep_first("python.gc_crash", True, line)

    def on_container_line(self, line: Line) -> None:
        m = _CONTAINER_LINE.search(line.raw)
        if m is None:
            return
        host = m.group("prompt") or m.group("nccl")
        if host is not None and host.isdigit():
            return  # twelve digits name no container (a container id has hex letters)
        self.keep_first("log.container", m.lastgroup or "container", line)

    def on_exiting(self, line: Line) -> None:
        self._sign("python.exiting", True, line, rank=line.rank)

    def end(self, tail: Sequence[Line], terminated: bool) -> None:
        self.ending = ending_facts(self.path, tail, terminated, PROGRESS)
        self.progress = tail_progress(self.path, tail, PROGRESS)
        # a shell check pasted at the end: the same command as root and as the user
        self.shell = sudo_contrast(self.path, tail)
        # a console session that ends at the shell's next prompt: the command exited
        self.shell += prompt_returned(self.path, tail)
        # each process's own last lines, where every line names its process
        self.ending += process_ends(self.path, tail)

    def death_facts(self) -> list[Fact]:
        """The signs kept, the ending, the progress marks and the shell transcript's facts (a
        sudo contrast, the prompt back); the signals are `self.signals`, listed apart."""
        return [*self.signs, *self.ending, *self.progress, *self.shell, *self.dcgm.end()]

    def finish(self) -> list[Fact]:
        return [*self.death_facts(), *self.signals.facts.values(), *self.singles.values()]


D = DeathSigns  # short, so that the rows fit on one line
# Line-safe (see `Anchor`); the handlers re-check with the precise regexes above.
DEATH_ANCHORS: tuple[Anchor[DeathSigns], ...] = (
    # The line a launcher, trainer or benchmark prints once its run ended well (HF Trainer,
    # Lightning, torchrun's agent, DeepSpeed's launcher, Megatron, ...: the finish signs'
    # catalog): the run finished, earlier tracebacks did not end it.
    Anchor(FINISH_ANCHOR, D.on_completed),
    Anchor(rf"(?:{WORDS}){CORE}[ \t]*$", D.on_shell_word),
    # (the job table's word and what follows it, without the `[1]+`/`zsh: ` before it: that
    # opening made Hyperscan start a check at every `] ` of a line, a third of the whole
    # library's scan time on launcher lines; SHELL_JOB re-checks it)
    Anchor(rf"(?i:(?:{WORDS}|abort){CORE}(?:[ \t][ \t]|[ \t]*$))", D.on_shell_word),
    Anchor(rf"(?:{LINE_WORD}) [0-9]+:[ \t]+[0-9]+[ \t]+(?:{WORDS})", D.on_shell_word),
    # the word printed over the start of a redraw that returned the cursor to column 0, the
    # rest of the redraw after it (shell_words' _OVER_REDRAW)
    Anchor(rf"^[ \t]*(?:{WORDS}){REDRAW_REST}", D.on_shell_word),
    # bash's report of a pipeline's later command (`   134 Killed   | python3 main.py`)
    Anchor(rf"[0-9][ \t]+(?:{WORDS}){CORE}[ \t]+\|[ \t]*[^ \t\n]", D.on_shell_word),
    # a line that shows the job ran in a Docker container
    Anchor(
        r"[-_][0-9]{1,3}[ \t]+\| |@[0-9a-f]{12}:|[0-9a-f]{12}:[0-9]+:[0-9]+ \[[0-9]",
        D.on_container_line,
        settles=("log.container",),
    ),
    # faulthandler's mark of a crash inside the garbage collector
    Anchor(r"Garbage-collecting", D.on_gc_crash, settles=("python.gc_crash",)),
    # the first line of training progress is all that is kept (the last lines' progress is
    # read from the log's tail: `progress.py`)
    Anchor(
        r"[Ee]poch|EPOCH|[Ss]tep|STEP|[Ii]ter|ITER|[Ll]oss|LOSS"
        r"|[0-9]%\|[^|\n]{0,200}\|[ \t]*[0-9]+/[0-9]+[ \t]*\["
        r"|[0-9]/[0-9]{1,5}[ \t]+[0-9.]{1,8}G[ \t]",
        D.on_progress,
        settles=("log.progress",),
    ),
    Anchor(
        r"Running training|Starting training|Spinning the dataloaders"
        r"|before the start of training step|begin training epoch",
        D.on_training_start,
        settles=("log.training_start",),
    ),
    # PyTorch's ProcessGroupNCCL destructor, as the interpreter exits (torch >= 2.4)
    Anchor(r"destroy_process_group\(\) was not called before program exit", D.on_exiting),
    # a terminal's echo of Ctrl-C with the program's own output after it on the line
    Anchor(r"\^C[^ \t\n^]", D.on_interrupt_echo),
    # DCGM's diagnostic table: its header, its section rules and its two-cell rows
    Anchor(r"\| Diagnostic[ \t]+\|[ \t]*Result", D.on_dcgm_header),
    Anchor(r"-----[ \t]+[A-Za-z][A-Za-z ]{0,40}[ \t]+-*\+", D.on_dcgm_section),
    Anchor(r" \| [^|\n]*\|", D.on_dcgm_row),
    # the Intel Fortran runtime's abort on Ctrl-C
    Anchor(
        r"forrtl: error \(200\): program aborting due to control-C event", D.on_fortran_interrupt
    ),
    Anchor(
        r"Program received signal SIG|Program terminated with signal SIG"
        r"|\" received signal SIG",
        D.on_debugger,
    ),
    Anchor(
        r"Fatal Python error: |terminate called |what\(\): |Assertion [`'][^\n]*' failed"
        r"|\*\*\* (?:Error in|stack smashing|buffer overflow)|double free or corruption"
        r"|free\(\): invalid|malloc\(\): [a-z]|corrupted size vs|\(core dump"
        r"|^F[0-9]{4} [0-9:.]+ |\[F[0-9]{4} |Check failed: |[0-9]: F [a-z_/]|^panic: "
        r"|^fatal error: "
        r"|' panicked at"
        r"|current device: [0-9]+, in function |GGML_ASSERT"
        r"|^[ \t]*Aborting(?:\.{1,3})?[ \t]*$|^[ \t]*Result = FAIL[ \t]*$"
        r"|^Error in [A-Za-z_][A-Za-z0-9_.>]* \(line [0-9]+\)[ \t]*$",
        D.on_fatal,
    ),
    Anchor(
        r"0x[0-9a-fA-F]+ \(most recent call first\):|^Timeout \([0-9]+:[0-9]+:[0-9]+",
        D.on_thread_dump,
    ),
    Anchor(
        r"(?i:(?:killed|terminated|died|exited) (?:by|with|from|on|due to) signal"
        r"|(?:got|caught|received) signal:? ?[0-9S]|signal: [a-z]|signaled to shutdown with signal)"
        r"|Signal [0-9]+ \(SIG[A-Z0-9]+\) received by PID|\(signal: [0-9]+, SIG[A-Z]"
        r"|\*\*\* SIG[A-Z0-9]+ (?:received at time=|\(@0x)|^signal \([0-9]{1,2}\): [A-Z]"
        r"|Abnormal termination \(signal [0-9]",
        D.on_by_signal,
    ),
    Anchor(
        r"(?i:exited with (?:exit |status )?code|finished with exit code|exit status|exit code)"
        r":? ?-?[0-9]"
        r"|exitcode=-?[0-9]|a non-zero exit code\. Per user-direction"
        r"|exited with non-zero status|Normal termination \(return value -?[0-9]",
        D.on_exit_wording,
    ),
    Anchor(
        rf"[Rr]eason\"?:[ \t]*\"?(?:{_K8S_REASONS})|^[ \t]*Warning[ \t]+(?:{_K8S_REASONS})"
        r"|Exit Code:[ \t]*[0-9]|exitCode\"?:[ \t]*[0-9]",
        D.on_k8s,
    ),
    Anchor(
        rf"(?:{_SLURM_STATES})[ \t|]+[0-9]|JobState=[A-Z]|^State: [A-Z_]+ \(exit code",
        D.on_slurm_state,
    ),
    # a frame of a crashed process's native stack (abseil, glog, c10, gdb)
    Anchor(_NATIVE_FRAME, D.on_native_frame),
    # PBS's note of the limit a job passed
    Anchor(r"PBS: job killed: [a-z]", D.on_pbs_killed),
    # Hugging Face's ZeroGPU (the `spaces` package) lends a Space a GPU for one call at a time,
    # for at most its `@spaces.GPU(duration=...)` seconds (60 by default), and ends a call that
    # outruns the lease with `gr.Error("GPU task aborted")`: the platform's time limit
    Anchor(r"GPU task aborted", D.on_gpu_lease_end),
    # the machine shut down from outside (`parsers/machine_shutdown.py`)
    Anchor(SHUTDOWN_ANCHOR, D.on_machine_shutdown),
    # an LSF job report's termination reason
    Anchor(r"^[ \t]*TERM_[A-Z_]+: [A-Za-z]", D.on_lsf_term),
    # a serving engine's own death sign (vLLM, SGLang, TGI)
    Anchor(_ENGINE_ANCHOR, D.on_engine_dead),
    # a notebook server's note that its kernel process died
    # (the front ends' wordings are the anchor itself: one list, read in one place)
    Anchor(rf"KernelRestarter: restart|{_KERNEL_UI.pattern}", D.on_kernel_restart),
    # squeue's row for a pending job: `PD`, no time run, the reason in parentheses
    Anchor(r"PD[ \t]+0:00[ \t]+[0-9]+[ \t]+\(", D.on_squeue_pending),
)
del D
