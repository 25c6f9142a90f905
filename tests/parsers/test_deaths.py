"""The death signs text logs show, as facts: `parsers.launcher.deaths`, `ending` and `tail`.

Every example is written for the mechanism it tests (shell, gdb, faulthandler, glibc, Slurm,
Kubernetes, Open MPI wordings), not copied from a corpus case.
"""

from __future__ import annotations

import pytest

from crashlens.model import Fact, FactValue
from crashlens.parsers.base import collect_text
from crashlens.parsers.launcher import LauncherParser
from crashlens.parsers.launcher.deaths import slurm_state
from crashlens.parsers.launcher.ending import is_cut, last_segment
from crashlens.parsers.launcher.shell_words import shell_signal
from crashlens.parsers.plaintext import PlainTextParser
from crashlens.parsers.tail import TAIL_BYTES, Tail

LAUNCHER = LauncherParser()
PLAIN = PlainTextParser()


def facts(text: str, parser: LauncherParser | PlainTextParser = LAUNCHER) -> list[Fact]:
    return collect_text(parser, text, "run.log")[1]


def values(found: list[Fact], key: str) -> list[FactValue]:
    return [item.value for item in found if item.key == key]


def one(found: list[Fact], key: str) -> Fact:
    matching = [item for item in found if item.key == key]
    assert len(matching) == 1, (key, found)
    return matching[0]


# --- the shell's word, also after a progress bar's \r ----------------------------------------


@pytest.mark.parametrize(
    ("line", "signal"),
    [
        ("Killed", "SIGKILL"),
        ("[rank3]: Killed", "SIGKILL"),
        ("epoch 3:  12%|#2        | 120/1000 [01:02<07:40,  1.9it/s]Killed", "SIGKILL"),
        ("step 10\r 41%|####      | 41/100 [00:03<00:04]\rKilled", "SIGKILL"),
        ("Bus error (core dumped)", "SIGBUS"),
        # bash's report on a script's command: the word, then the command line
        ("run.sh: line 7: 31337 Segmentation fault      (core dumped) python x.py", "SIGSEGV"),
        ("[2]+  Aborted (core dumped)", "SIGABRT"),
        ("Illegal instruction", "SIGILL"),
        ("Floating point exception (core dump)", "SIGFPE"),
        ("[1]+  Killed                  python fit.py --epochs 9", "SIGKILL"),
        ("zsh: segmentation fault  python fit.py", "SIGSEGV"),
        ("eval: 100%|##########| 50/50 [00:03<00:00][2]    4242 abort      ./run.sh", "SIGABRT"),
    ],
)
def test_shell_signal_words(line: str, signal: str | None) -> None:
    assert shell_signal(line) == signal


@pytest.mark.parametrize(
    "line",
    [
        "the data loader worker was Killed",
        "State:          Terminated",
        "Killed process 4242 (python) total-vm:1024kB",
        "kill_and_wait: Killed 3 stale workers",
    ],
)
def test_words_inside_a_sentence_are_not_the_shell(line: str) -> None:
    assert shell_signal(line) is None


def test_killed_after_progress_output_is_a_sigkill_fact_in_plain_text() -> None:
    text = "loading\nLoading shards:  75%|#######5  | 3/4 [00:21<00:07,  7.10s/it]Killed\n"
    found = facts(text, PLAIN)
    signal = one(found, "launcher.signal")
    assert (signal.value, signal.lineno, signal.attr("source")) == ("SIGKILL", 2, "shell")


# --- debuggers, faulthandler, aborts ---------------------------------------------------------


def test_gdb_backtrace_names_the_signal() -> None:
    text = (
        "(gdb) run\n"
        "Program received signal SIGBUS, Bus error.\n"
        "[Switching to Thread 0x7fffd7fff700 (LWP 4242)]\n"
        "0x00007ffff7a5e8f1 in __memmove_avx_unaligned_erms () from /lib64/libc.so.6\n"
        "(gdb) bt\n"
        "#0  0x00007ffff7a5e8f1 in __memmove_avx_unaligned_erms ()\n"
    )
    signal = one(facts(text, PLAIN), "launcher.signal")
    assert (signal.value, signal.attr("source"), signal.lineno) == ("SIGBUS", "debugger", 2)


def test_faulthandler_dump_is_fatal_and_names_the_signal() -> None:
    text = (
        "Fatal Python error: Segmentation fault\n"
        "\n"
        "Current thread 0x00007f3b2a1ff740 (most recent call first):\n"
        '  File "/opt/app/loader.py", line 88 in collate\n'
    )
    found = facts(text)
    assert values(found, "python.fatal_error") == ["Segmentation fault"]
    assert one(found, "launcher.signal").attr("source") == "faulthandler"
    dump = one(found, "python.thread_dump")
    assert dump.attr("after_timeout") is False
    assert values(found, "log.fatal") == ["python-fatal"]


def test_a_hang_watchdogs_thread_dump_is_marked() -> None:
    text = (
        "Timeout (0:10:00)!\n"
        "Thread 0x00007f3b2a1ff740 (most recent call first):\n"
        '  File "/opt/app/train.py", line 12 in wait\n'
        "iteration 11\n"
    )
    assert one(facts(text), "python.thread_dump").attr("after_timeout") is True


@pytest.mark.parametrize(
    ("line", "mechanism"),
    [
        ("terminate called after throwing an instance of 'std::runtime_error'", "cpp-terminate"),
        ("python: csrc/ops.cpp:41: int f(): Assertion `n > 0' failed.", "c-assert"),
        ("*** Error in `python': double free or corruption (!prev): 0x01 ***", "glibc-abort"),
        ("F1203 10:01:02.123456  4242 engine.cc:77] Check failed: ok", "glog-fatal"),
        ("panic: runtime error: index out of range [3] with length 3", "panic"),
    ],
)
def test_dying_messages(line: str, mechanism: str) -> None:
    found = facts(f"start\n{line}\nmore output\n")
    assert values(found, "log.fatal") == [mechanism]


# --- exit statuses in every wording ------------------------------------------------------------


def test_agent_line_cut_before_its_pid_still_gives_the_exit_code() -> None:
    text = (
        "torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9) "
        "local_rank: 1 (pid: 12"
    )
    found = facts(text)
    code = one(found, "launcher.exit_code")
    assert (code.value, code.attr("local_rank"), code.attr("pid")) == (-9, 1, None)
    assert one(found, "log.last_line").attr("cut") is True


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ("trainer exited with code 137", 137),
        ("Process finished with exit code 0", 0),
        ("error: exit status 2", 2),
        ("ProcessFailure(local_rank=0, pid=77, exitcode=-7, error_file='<N/A>')", -7),
    ],
)
def test_generic_exit_wordings(line: str, code: int) -> None:
    assert values(facts(line + "\n", PLAIN), "process.exit_code") == [code]


def test_open_mpi_non_zero_status() -> None:
    text = (
        "Primary job  terminated normally, but 1 process returned\n"
        "a non-zero exit code. Per user-direction, the job has been aborted.\n"
    )
    assert values(facts(text, PLAIN), "mpi.nonzero_exit") == [True]


@pytest.mark.parametrize(
    ("line", "signal"),
    [
        ("worker 3 terminated by signal 11", "SIGSEGV"),
        ("child process killed by signal SIGKILL", "SIGKILL"),
        ("message='Signal 6 (SIGABRT) received by PID 4242'", "SIGABRT"),
        ("rank 3 received signal 7, aborting", "SIGBUS"),
        ("job step failed: signal: killed", "SIGKILL"),
        # cargo's report on a test binary or rustc it ran (cargo-util process_error.rs)
        (
            "  process didn't exit successfully: `deps/app-3f1c` (signal: 9, SIGKILL: kill)",
            "SIGKILL",
        ),
        (
            "process didn't exit successfully: `rustc` (signal: 11, SIGSEGV: invalid memory",
            "SIGSEGV",
        ),
    ],
)
def test_signal_wordings(line: str, signal: str) -> None:
    assert values(facts(line + "\n", PLAIN), "launcher.signal") == [signal]


# --- container, pod and scheduler states -------------------------------------------------------


def test_kubectl_describe_pod_states() -> None:
    text = (
        "    State:          Waiting\n"
        "      Reason:       CrashLoopBackOff\n"
        "    Last State:     Terminated\n"
        "      Reason:       OOMKilled\n"
        "      Exit Code:    137\n"
    )
    found = facts(text, PLAIN)
    assert values(found, "k8s.reason") == ["CrashLoopBackOff", "OOMKilled"]
    assert values(found, "k8s.exit_code") == [137]
    assert values(found, "launcher.signal") == []  # `Terminated` is a state here


def test_pod_yaml_and_events() -> None:
    text = (
        "    lastState:\n      terminated:\n        exitCode: 1\n        reason: Error\n"
        "  Warning  Evicted  3m  kubelet  The node was low on resource: memory.\n"
    )
    found = facts(text, PLAIN)
    assert values(found, "k8s.reason") == ["Error", "Evicted"]
    assert values(found, "k8s.exit_code") == [1]


@pytest.mark.parametrize(
    ("line", "state", "attrs"),
    [
        ("77001        train   gpu   8  OUT_OF_ME+    0:125", "OUT_OF_MEMORY", {"exit_code": 0}),
        ("77001|train|gpu|CANCELLED by 1234|0:0|00:10:00", "CANCELLED", {"by": "1234"}),
        ("77001.0      python        8     FAILED      1:0", "FAILED", {"exit_code": 1}),
        ("   JobState=TIMEOUT Reason=TimeLimit Dependency=(null)", "TIMEOUT", {}),
        ("State: COMPLETED (exit code 0)", "COMPLETED", {"exit_code": 0}),
    ],
)
def test_slurm_states(line: str, state: str, attrs: dict[str, FactValue]) -> None:
    found = slurm_state(line)
    assert found is not None
    assert found[0] == state
    assert attrs.items() <= found[1].items()
    assert values(facts(line + "\n", PLAIN), "slurm.state") == [state]


# --- how the log ends --------------------------------------------------------------------------

TRACEBACK = (
    "epoch 1 loss 0.3\n"
    "Traceback (most recent call last):\n"
    '  File "/srv/train.py", line 40, in <module>\n'
    "    main()\n"
)


def ending(text: str) -> tuple[FactValue, int | None, FactValue] | None:
    found = [f for f in facts(text) if f.key == "log.ends_with"]
    if not found:
        return None
    return found[0].value, found[0].lineno, found[0].attr("teardown")


def test_a_traceback_as_the_last_output() -> None:
    assert ending(TRACEBACK + "ValueError: shapes (3,) and (4,) not aligned\n") == (
        "traceback",
        5,
        None,
    )


def test_an_exception_message_continued_below_its_line() -> None:
    text = (
        TRACEBACK + "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
        "unhandled system error\n"
        "ncclSystemError: System call (e.g. socket, malloc) or external library call failed.\n"
        "Last error:\n"
        "socketPollConnect: connect returned Connection refused\n"
    )
    assert ending(text) == ("traceback", 5, None)


def test_output_after_the_traceback_means_the_run_went_on() -> None:
    text = TRACEBACK + "OSError: [Errno 111] Connection refused\nepoch 2 loss 0.2\nepoch 3\n"
    assert ending(text) is None


@pytest.mark.parametrize(
    ("header", "teardown"),
    [
        ("Exception in thread Thread-7:", "thread"),
        ("Exception ignored in: <function Pool.__del__ at 0x7f00>", "finalizer"),
    ],
)
def test_tracebacks_python_goes_on_from(header: str, teardown: str) -> None:
    text = (
        f"done\n{header}\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/pool.py", line 9, in __del__\n'
        "AttributeError: 'NoneType' object has no attribute 'close'\n"
    )
    assert ending(text) == ("traceback", 5, teardown)


def test_an_error_raised_while_the_interpreter_shuts_down() -> None:
    text = (
        "saved\nTraceback (most recent call last):\n"
        '  File "/srv/cache.py", line 3, in flush\n'
        "ImportError: sys.meta_path is None, Python is likely shutting down\n"
    )
    assert ending(text) == ("traceback", 4, "shutdown")


@pytest.mark.parametrize(
    ("last", "kind"),
    [
        (
            "ResourceExhaustedError (see above for traceback): OOM when allocating tensor",
            "exception",
        ),
        ("During handling of the above exception, another exception occurred:", "traceback"),
        ("[C]: in ?", "traceback"),
        ("[C]: at 0x00404a10", "traceback"),
        ("docker: Error response from daemon: could not select device driver.", "error"),
        ("Segmentation fault (core dumped)", "fatal"),
    ],
)
def test_last_lines_that_show_a_death(last: str, kind: str) -> None:
    found = ending(f"step 1\nstep 2\n{last}\n")
    assert found is not None
    assert found[0] == kind


def test_an_ordinary_last_line_is_only_the_last_line() -> None:
    found = facts("step 1\nstep 2 loss 0.1\n")
    last = one(found, "log.last_line")
    assert (last.value, last.lineno, last.attr("cut")) == ("step 2 loss 0.1", 2, False)
    assert values(found, "log.ends_with") == []


def test_last_segment_and_cut() -> None:
    assert last_segment("a\r 10%|#\r 20%|##  ") == "20%|##"
    assert is_cut("[2024-01-01 10:00:00] failed (exitcode: -9) local_rank: 0 (pid: 4")
    assert not is_cut("step 3 (of 10) done")


# --- the tail, kept while the log streams past ------------------------------------------------


def test_tail_keeps_line_numbers_across_chunks() -> None:
    lines = [f"line {n}" for n in range(1, 5001)]
    data = ("\n".join(lines) + "\n").encode()
    chunks = [data[:20000], data[20000:40000], data[40000:]]
    # chunks are cut at newlines, as the reader cuts them
    cut = [c[: c.rfind(b"\n") + 1] for c in chunks]
    cut[1] = chunks[0][len(cut[0]) :] + cut[1]
    cut[2] = data[len(cut[0]) + len(cut[1]) :]
    tail = Tail()
    assert b"".join(tail.watch(cut)) == data
    got = tail.lines(PLAIN, "run.log")
    assert tail.terminated
    assert [(line.lineno, line.raw) for line in got[-2:]] == [
        (4999, "line 4999"),
        (5000, "line 5000"),
    ]
    assert len(tail.before) <= TAIL_BYTES


def test_tail_of_an_unterminated_log() -> None:
    tail = Tail()
    list(tail.watch([b"a\nb\n", b"c\nhalf a li"]))
    assert not tail.terminated
    assert [(line.lineno, line.raw) for line in tail.lines(PLAIN, "x")] == [
        (1, "a"),
        (2, "b"),
        (3, "c"),
        (4, "half a li"),
    ]


def test_tail_of_nothing() -> None:
    tail = Tail()
    list(tail.watch([]))
    assert tail.lines(PLAIN, "x") == ()


# --- training progress ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "Epoch 3/100",
        "[Epoch 12] train acc 0.91",
        "step: 200, lr 3e-4",
        "iter 4000 | 0.31 s/it",
        "Iteration 15, loss = 0.742",
        "train loss: 0.42",
        # the Hugging Face Trainer's bare bar and an Ultralytics training row
        " 45%|####5     | 450/1000 [02:13<02:43,  3.37it/s]",
        "      26/99      2.57G    0.01833    0.01442    0.07007        10        832",
    ],
)
def test_the_first_progress_line(line: str) -> None:
    for parser in (LAUNCHER, PLAIN):
        found = facts(f"loading data\n{line}\nepoch 4\n", parser)
        assert one(found, "log.progress").lineno == 2


@pytest.mark.parametrize(
    "line",
    [
        "Loading checkpoint shards:  50%|#####     | 2/4 [00:03<00:03,  1.6s/it]",
        "Initializing model from scratch",
        "Step into the container with docker exec",
        "No of filters first layer: 32",
        "Map (num_proc=8): 100%|##########| 1000/1000 [00:01<00:00, 912.31 examples/s]",
        "Using 2/8 GPUs on this node",
    ],
)
def test_no_progress(line: str) -> None:
    assert values(facts(f"{line}\nSegmentation fault (core dumped)\n"), "log.progress") == []


# --- InfiniBand asked for, none found ----------------------------------------------------------


def test_infiniband_asked_for_and_not_found() -> None:
    text = (
        "gpu-7:88:120 [0] NCCL INFO NCCL_IB_HCA set to mlx5_2,mlx5_3\n"
        "gpu-7:88:120 [0] NCCL INFO NET/IB : No device found.\n"
        "gpu-7:88:120 [0] NCCL INFO NET/Socket : Using [0]bond0:10.1.0.7<0>\n"
    )
    found = one(facts(text), "nccl.ib_unavailable")
    assert (found.value, found.lineno) == ("NCCL_IB_HCA", 2)


def test_no_infiniband_found_without_asking_is_no_fact() -> None:
    text = (
        "gpu-7:88:120 [0] NCCL INFO NET/IB : No device found.\n"
        "gpu-7:88:120 [0] NCCL INFO NET/Socket : Using [0]eth0:10.1.0.7<0>\n"
    )
    assert values(facts(text), "nccl.ib_unavailable") == []


def test_tensorflows_fatal_log_line_is_a_dying_message() -> None:
    text = (
        "Loading checkpoint models/ckpt\n"
        "2021-03-02 11:20:05.104421: F tensorflow/core/kernels/conv_ops.cc:1115] Check "
        "failed: stream->parent()->GetConvolveAlgorithms(...)\n"
    )
    found = facts(text)
    assert values(found, "log.fatal") == ["glog-fatal"]
    assert values(found, "log.ends_with") == ["fatal"]
    plain = "2021-03-02 11:20:05.104421: F tensorflow/core/common_runtime/bfc_allocator.cc:459] x\n"
    assert values(facts(plain), "log.fatal") == ["glog-fatal"]
    info = "2021-03-02 11:20:05.104421: I tensorflow/core/platform/cpu_feature_guard.cc:142] AVX\n"
    assert values(facts(info), "log.fatal") == []
