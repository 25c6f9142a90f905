"""The failure detector (`decide.failure`) and how the decision and the report obey it.

Each case is a small log written for the mechanism it tests (not a corpus case): the
assessment says how the run ended, the verdict follows the contract (a dead run is never
`none`; a finished or stopped one is `none` whatever it printed), and the report names the
line that shows it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crashlens.decide.failure import assess
from crashlens.match.rules import shipped_rules
from crashlens.model import Assessment, Ending, Report, Verdict
from crashlens.pipeline import analyze_inputs, build_report
from crashlens.render.json import render_json
from crashlens.render.markdown import render_markdown


def write(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def assessed(tmp_path: Path, files: dict[str, str]) -> Assessment:
    return assess(analyze_inputs([str(write(tmp_path, files))]))


def report(tmp_path: Path, files: dict[str, str]) -> Report:
    rules = shipped_rules()
    return build_report(analyze_inputs([str(write(tmp_path, files))], rules=rules), rules)


# --- died ------------------------------------------------------------------------------------

DEATHS = {
    "killed after a progress bar": (
        "epoch 1\ntokenizing:  63%|######3   | 630/1000 [00:41<00:24, 15.2it/s]Killed\n",
        2,
    ),
    "a debugger's SIGBUS": (
        "Starting program: /usr/bin/python3 fit.py\n"
        'Thread 7 "pt_data_worker" received signal SIGBUS, Bus error.\n'
        "0x00007ffff7e1b2c5 in __memcpy_avx512 () from /lib/x86_64-linux-gnu/libc.so.6\n",
        2,
    ),
    "faulthandler": (
        "iter 300\nFatal Python error: Aborted\n\nThread 0x00007f00aa (most recent call first):\n",
        2,
    ),
    "a traceback as the last output": (
        "step 9\nTraceback (most recent call last):\n"
        '  File "/srv/fit.py", line 3, in <module>\n'
        "KeyError: 'labels'\n",
        4,
    ),
    "a launcher line cut mid-write": (
        "[2025-02-01 11:00:00,000] torch.distributed.elastic.multiprocessing.api: [WARNING] "
        'Sending process 90 closing signal SIGTERM\n[2025-02-01 11:00:01,000] {"name": "rank',
        2,
    ),
    "a CUDA error printed as the last output": (
        "init\nsample_kernel.cu(42): cuda check failed: an illegal memory access was encountered\n",
        2,
    ),
    "a line naming a cause as the last output": (
        "saving step 400\ntar: ./ckpt/step_400.pt: Cannot write: No space left on device\n",
        2,
    ),
    "an uncaught C++ exception": (
        "loading\nterminate called after throwing an instance of 'c10::Error'\n"
        "  what():  invalid device ordinal\n",
        2,
    ),
}


@pytest.mark.parametrize("name", sorted(DEATHS))
def test_death_signs(tmp_path: Path, name: str) -> None:
    text, line = DEATHS[name]
    found = assessed(tmp_path, {"train.log": text})
    assert found.ending is Ending.DIED
    assert found.sign is not None and found.sign.line == line
    assert found.reason.startswith("The run failed")


def test_a_container_and_a_pod_that_died(tmp_path: Path) -> None:
    found = assessed(
        tmp_path,
        {"pod.txt": "  Last State:  Terminated\n    Reason:  OOMKilled\n    Exit Code:  137\n"},
    )
    assert found.ending is Ending.DIED
    assert "OOMKilled" in found.reason


def test_one_process_exiting_cleanly_does_not_finish_the_run(tmp_path: Path) -> None:
    text = (
        "[2025-01-01 10:00:00,000] [INFO] [launch.py:351:main] Process 11 exits successfully.\n"
        "[2025-01-01 10:00:02,000] [ERROR] [launch.py:322:sigkill_handler] ['python', "
        "'fit.py', '--local_rank=1'] exits with return code = -11\n"
    )
    found = assessed(tmp_path, {"ds.log": text})
    assert found.ending is Ending.DIED
    assert found.sign is not None and found.sign.line == 2


_DS_KILLS = (
    "[2025-01-01 10:00:00,000] [INFO] [utils.py:792:see_memory_usage] MA 0.0 GB Max_MA 0.0 GB\n"
    "[2025-01-01 10:00:05,000] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 4100\n"
    "[2025-01-01 10:00:05,000] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 4101\n"
)


def test_deepspeeds_launcher_killing_its_processes_ends_the_run(tmp_path: Path) -> None:
    # Its sigkill_handler runs when a process failed; the log may end before it says which.
    found = assessed(tmp_path, {"ds.log": _DS_KILLS})
    assert found.ending is Ending.DIED
    assert found.sign is not None and found.sign.line == 2
    assert "killing its processes" in found.reason


def test_deepspeeds_launcher_killing_its_processes_on_a_signal_is_a_stop(tmp_path: Path) -> None:
    text = _DS_KILLS + (
        "[2025-01-01 10:00:06,000] [INFO] [launch.py:328:sigkill_handler] Main process received "
        "SIGINT, exiting\n"
    )
    assert assessed(tmp_path, {"ds.log": text}).ending is Ending.STOPPED


# --- completed ------------------------------------------------------------------------------


def test_teardown_after_the_finish_is_harmless(tmp_path: Path) -> None:
    text = (
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total "
        "capacity; 13.10 GiB already allocated; 1.02 GiB free; 13.50 GiB reserved in total by "
        "PyTorch)\n"
        "retrying the batch with half the size\n"
        "{'train_runtime': 1234.5, 'train_samples_per_second': 8.1, 'epoch': 3.0}\n"
        "Exception ignored in: <function Writer.__del__ at 0x7f01>\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/log.py", line 20, in __del__\n'
        "TypeError: 'NoneType' object is not callable\n"
        "Segmentation fault (core dumped)\n"
    )
    found = assessed(tmp_path, {"train.log": text})
    assert found.ending is Ending.COMPLETED
    assert found.sign is not None and found.sign.line == 3
    notes = "\n".join(found.harmless)
    assert "before the run finished" in notes  # the recovered OOM message
    assert "after the run had finished" in notes  # the finalizer and the crash at exit


def test_an_uncaught_error_after_the_finish_line_still_fails(tmp_path: Path) -> None:
    text = (
        "{'train_runtime': 10.0, 'epoch': 1.0}\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/fit.py", line 80, in <module>\n'
        "    trainer.save_model(out)\n"
        "OSError: [Errno 28] No space left on device\n"
    )
    assert assessed(tmp_path, {"train.log": text}).ending is Ending.DIED


def test_a_cause_named_as_the_last_output_after_the_finish_line_still_fails(
    tmp_path: Path,
) -> None:
    # A memory monitor killed the process while it saved the model after its final metrics:
    # the kill is the log's last output, no traceback follows (SIGKILL leaves none).
    kill = (
        "(raylet) [2025-04-02 15:02:00,117 E 135782 135782] (raylet) node_manager.cc:3069: "
        "1 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due "
        "to other reasons at node (ID: 351e406b196f66bb45eaad02a3b8b4725babfa8cc12949432f7ad7d8, "
        "IP: 10.0.0.11) over the last time period.\n"
    )
    metrics = "{'train_runtime': 10.0, 'epoch': 1.0}\nSaving model checkpoint to /out\n"
    found = assessed(tmp_path, {"train.log": metrics + kill})
    assert found.ending is Ending.DIED
    assert found.sign is not None and found.sign.line == 3
    # The same line before the finish is something the run went on from.
    assert assessed(tmp_path, {"train.log": kill + metrics}).ending is Ending.COMPLETED


def test_a_running_containers_exit_code_says_nothing(tmp_path: Path) -> None:
    inspect = '[{"State": {"Status": "%s", "Running": %s, "OOMKilled": false, "ExitCode": 0}}]'
    running = assessed(tmp_path, {"inspect.json": inspect % ("running", "true")})
    assert running.ending is Ending.UNKNOWN
    exited = assessed(tmp_path, {"inspect.json": inspect % ("exited", "false")})
    assert exited.ending is Ending.COMPLETED


EXIT_WARNING = (
    "[rank1]:[W301 09:12:44.120 ProcessGroupNCCL.cpp:1250] Warning: WARNING: "
    "destroy_process_group() was not called before program exit, which can leak resources.\n"
)


def test_a_process_groups_exit_warning_is_a_finish(tmp_path: Path) -> None:
    found = assessed(tmp_path, {"train.log": "epoch 2 loss 0.1\n" + EXIT_WARNING})
    assert found.ending is Ending.COMPLETED


def test_the_exit_warning_after_an_exception_is_no_finish(tmp_path: Path) -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/srv/fit.py", line 3, in <module>\n'
        "ValueError: bad batch\n" + EXIT_WARNING
    )
    assert assessed(tmp_path, {"train.log": text}).ending is not Ending.COMPLETED


# --- stopped --------------------------------------------------------------------------------


def test_a_user_scancel(tmp_path: Path) -> None:
    text = (
        "epoch 4\n"
        "slurmstepd: error: *** JOB 991 ON gpu-3 CANCELLED AT 2025-03-02T10:00:00 ***\n"
        "srun: error: gpu-3: task 0: Terminated\n"
    )
    found = assessed(tmp_path, {"slurm-991.out": text})
    assert found.ending is Ending.STOPPED
    assert found.sign is not None and found.sign.line == 2


def test_a_time_limits_kill_after_the_grace_period_is_the_stop(tmp_path: Path) -> None:
    text = (
        "slurmstepd: error: *** STEP 12.0 ON n1 CANCELLED AT 2025-03-02T10:00:00 DUE TO TIME "
        "LIMIT ***\nsrun: error: n1: task 0: Killed\n"
    )
    assert assessed(tmp_path, {"slurm-12.out": text}).ending is Ending.STOPPED


def test_an_oom_kill_with_a_cancel_is_a_death(tmp_path: Path) -> None:
    text = (
        "slurmstepd: error: Detected 1 oom_kill event in StepId=12.0. Some of the step tasks "
        "have been OOM Killed.\n"
        "slurmstepd: error: *** STEP 12.0 ON n1 CANCELLED AT 2025-03-02T10:00:00 ***\n"
        "srun: error: n1: task 0: Out Of Memory\n"
    )
    assert assessed(tmp_path, {"slurm-12.out": text}).ending is Ending.DIED


def test_ctrl_c(tmp_path: Path) -> None:
    text = (
        "step 3\n^CTraceback (most recent call last):\n"
        '  File "/srv/fit.py", line 9, in <module>\n'
        "KeyboardInterrupt\n"
    )
    assert assessed(tmp_path, {"train.log": text}).ending is Ending.STOPPED


# --- unknown --------------------------------------------------------------------------------


def test_a_log_that_simply_stops(tmp_path: Path) -> None:
    found = assessed(tmp_path, {"train.log": "epoch 1 loss 0.5\nepoch 2 loss 0.4\n"})
    assert found.ending is Ending.UNKNOWN
    # the last line is cited: nothing after it shows how the run ended
    assert found.sign is not None and found.sign.line == 2
    assert found.sign.text == "epoch 2 loss 0.4"
    assert "stops without showing how the run ended" in found.reason
    assert "training was in progress" in found.reason


def test_a_threads_exception_does_not_end_the_process(tmp_path: Path) -> None:
    text = (
        "epoch 9\nException in thread Thread-3:\nTraceback (most recent call last):\n"
        '  File "/usr/lib/python3.10/threading.py", line 1016, in _bootstrap_inner\n'
        "queue.Empty: timed out\n"
    )
    assert assessed(tmp_path, {"train.log": text}).ending is Ending.UNKNOWN


# --- the decision and the report obey it ----------------------------------------------------


def test_a_dead_run_without_any_rule_is_never_none(tmp_path: Path) -> None:
    found = report(tmp_path, DEATHS_ONLY)
    assert found.verdict is not Verdict.NONE
    assert found.assessment is not None and found.assessment.ending is Ending.DIED
    assert found.first_failure is not None and found.first_failure.line == 2


DEATHS_ONLY = {"run.log": "starting\nProgram terminated with signal SIGILL, Illegal instruction.\n"}


def test_a_completed_run_is_none_and_the_report_says_why(tmp_path: Path) -> None:
    text = (
        "[W socket.cpp:663] [c10d] The client socket has failed to connect to [node-1]:29500 "
        "(errno: 101 - Network is unreachable).\n"
        "{'loss': 0.4, 'epoch': 1.0}\n"
        "Training completed. Do not forget to share your model on huggingface.co/models =)\n"
    )
    found = report(tmp_path, {"train.log": text})
    assert found.verdict is Verdict.NONE
    assert found.causes == ()
    assert found.assessment is not None and found.assessment.ending is Ending.COMPLETED
    data = json.loads(render_json(found))
    assert data["ending"]["ending"] == "completed"
    assert data["ending"]["sign"]["line"] == 3
    assert "Judged harmless" in render_markdown(found)


def test_json_keeps_every_field_and_adds_the_ending(tmp_path: Path) -> None:
    data = json.loads(render_json(report(tmp_path, DEATHS_ONLY)))
    assert list(data) == [
        "schema_version",
        "crashlens_version",
        "verdict",
        "causes",
        "inputs",
        "next_checks",
        "first_failure",
        "notes",
        "ending",
    ]
    assert set(data["ending"]) == {"ending", "sign", "reason", "harmless"}


def test_the_first_failure_belongs_to_the_failure(tmp_path: Path) -> None:
    text = (
        "[W socket.cpp:663] [c10d] The client socket has failed to connect to [node-1]:29500 "
        "(errno: 101 - Network is unreachable).\n"
        + "".join(f"step {n} loss 0.{n}\n" for n in range(1, 40))
        + "ERROR: Unexpected bus error encountered in worker. This might be caused by "
        "insufficient shared memory (shm).\n"
        "torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -7) "
        "local_rank: 0 (pid: 812) of binary: /usr/bin/python\n"
    )
    found = report(tmp_path, {"train.log": text})
    assert found.verdict is Verdict.SHM
    assert found.first_failure is not None
    assert found.first_failure.line == 41  # the Bus error, not the connect retry at line 1


# --- endings the trainers print, teardown crashes (issue 13) --------------------------------

TRAINER_FINISHES = {
    "DeepSpeech": "I FINISHED optimization in 1:02:03.123456\n",
    "Ultralytics": "\n100 epochs completed in 2.417 hours.\n",
    "fairseq": "2024-01-02 10:00:00 | INFO | fairseq_cli.train | done training in 5123.4 seconds\n",
    "detectron2": (
        "[d2.utils.events]: Overall training speed: 89998 iterations in 7:41:02 (0.3 s / it)\n"
    ),
}


@pytest.mark.parametrize("name", sorted(TRAINER_FINISHES))
def test_a_trainers_last_line_then_a_crash_at_exit(tmp_path: Path, name: str) -> None:
    text = "epoch 3 loss 0.12\n" + TRAINER_FINISHES[name] + "Segmentation fault (core dumped)\n"
    found = assessed(tmp_path, {"train.log": text})
    assert found.ending is Ending.COMPLETED
    assert any("teardown" in line for line in found.harmless)


def test_a_crash_after_a_finalizer_found_its_modules_torn_down(tmp_path: Path) -> None:
    text = (
        "episode 500 reward 12.0\n"
        "Exception ignored in: <function Renderer.__del__ at 0x7f21a0c3e8b0>\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/sim/render.py", line 210, in __del__\n'
        "AttributeError: 'NoneType' object has no attribute 'disconnect'\n"
        "Segmentation fault (core dumped)\n"
    )
    assert assessed(tmp_path, {"train.log": text}).ending is Ending.COMPLETED


def test_a_crash_before_the_interpreter_exits_still_fails(tmp_path: Path) -> None:
    text = (
        "episode 500 reward 12.0\n"
        "Segmentation fault (core dumped)\n"
        "Exception ignored in: <function Renderer.__del__ at 0x7f21a0c3e8b0>\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/sim/render.py", line 210, in __del__\n'
        "AttributeError: 'NoneType' object has no attribute 'disconnect'\n"
    )
    assert assessed(tmp_path, {"train.log": text}).ending is Ending.DIED


def test_a_finalizers_ordinary_error_is_no_exit(tmp_path: Path) -> None:
    text = (
        "Exception ignored in: <function Pool.__del__ at 0x7f21a0c3e8b0>\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/pool.py", line 40, in __del__\n'
        "ValueError: pool not running\n"
        "step 200 loss 0.4\n"
        "Segmentation fault (core dumped)\n"
    )
    assert assessed(tmp_path, {"train.log": text}).ending is Ending.DIED


def test_a_silent_log_from_a_running_container_is_never_none(tmp_path: Path) -> None:
    inspect = (
        '[{"Id": "9f3c", "State": {"Status": "running", "Running": true, "ExitCode": 0},'
        ' "HostConfig": {"ShmSize": 67108864, "IpcMode": "private"}}]'
    )
    files = {"train.log": "epoch 1 batch 10\nepoch 1 batch 20\n", "docker_inspect.json": inspect}
    found = report(tmp_path, files)
    assert found.assessment is not None and "still running" in found.assessment.reason
    assert found.verdict is not Verdict.NONE
    exited = inspect.replace('"running", "Running": true', '"exited", "Running": false')
    other = tmp_path / "exited"
    other.mkdir()
    assert report(other, {**files, "docker_inspect.json": exited}).verdict is not Verdict.UNKNOWN


def test_faulthandlers_crash_in_the_collector(tmp_path: Path) -> None:
    text = (
        "Fatal Python error: Segmentation fault\n\n"
        "Current thread 0x00007f1c2a4b5740 (most recent call first):\n"
        "  Garbage-collecting\n"
        '  File "/srv/model.py", line 88 in forward\n'
    )
    analyses = analyze_inputs([str(write(tmp_path, {"run.log": text}))])
    crash = [f for a in analyses for f in a.facts if f.key == "python.gc_crash"]
    assert [f.lineno for f in crash] == [4]
