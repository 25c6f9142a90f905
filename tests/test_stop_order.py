"""A stop that follows a failure is that failure's teardown (`decide.stop_order`).

Each run is a small log written for the mechanism (not a corpus or batch case): a launcher,
runtime or scheduler ends the processes after one failed (SIGTERM, `srun ... Terminated`,
`docker stop`'s exit 143, slurmstepd's `CANCELLED AT` after its memory-limit kill), and the run
died of the failure. An explicit stop from outside (Ctrl-C, `CANCELLED by <uid>`, a time
limit, a preemption) that comes first, or with no failure before it, stays a stop.
"""

from __future__ import annotations

import json
from pathlib import Path

from crashlens.decide.failure import assess
from crashlens.match.rules import shipped_rules
from crashlens.model import Assessment, Ending, Verdict
from crashlens.pipeline import analyze_inputs, build_report

STEPS = "".join(f"step {n} loss {3.2 - n / 100:.3f}\n" for n in range(40, 44))


def _run(tmp_path: Path, files: dict[str, str]) -> tuple[Assessment, Verdict]:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    rules = shipped_rules()
    analyses = analyze_inputs([str(tmp_path)], rules=rules)
    return assess(analyses, rules), build_report(analyses, rules).verdict


def test_srun_terminating_the_tasks_after_a_shm_bus_error_is_its_teardown(tmp_path: Path) -> None:
    log = (
        STEPS + "ERROR: Unexpected bus error encountered in worker. This might be caused by "
        "insufficient shared memory (shm).\n"
        "srun: error: gpu-node-3: task 0: Terminated\n"
        "srun: Force Terminated StepId=8812.0\n"
    )
    assessment, verdict = _run(tmp_path, {"slurm-8812.out": log})
    assert assessment.ending is Ending.DIED
    assert assessment.sign is not None and assessment.sign.line == 5
    assert "teardown" in assessment.reason
    assert verdict is Verdict.SHM


def test_slurmstepd_cancelling_a_step_it_found_over_its_memory_limit(tmp_path: Path) -> None:
    # the step's form of the kill (the job's is the same mechanism); no `by <uid>`
    log = (
        STEPS + "slurmstepd: error: Step 90211.0 exceeded memory limit (70123456 > 65536000), "
        "being killed\n"
        "slurmstepd: error: *** STEP 90211.0 ON gpu-12 CANCELLED AT 2025-05-02T10:00:00 ***\n"
    )
    assessment, verdict = _run(tmp_path, {"job.out": log})
    assert assessment.ending is Ending.DIED
    assert assessment.sign is not None and "exceeded memory limit" in assessment.sign.text
    assert verdict is Verdict.HOST_OOM


def test_docker_stop_after_the_disk_filled_is_its_teardown(tmp_path: Path) -> None:
    # The container's record (exit 143, SIGTERM) is written after every line of its log.
    log = (
        STEPS + "ERROR checkpoint: could not write /ckpt/step_43.pt: [Errno 28] No space left on "
        "device\n"
        "INFO waiting 60 s before retrying the save\n"
    )
    inspect = [
        {
            "Id": "4f2a9c0d1e7b",
            "Name": "/trainer",
            "State": {"Status": "exited", "ExitCode": 143, "OOMKilled": False},
            "HostConfig": {"ShmSize": 17179869184},
        }
    ]
    files = {"train.log": log, "docker_inspect.json": json.dumps(inspect, indent=2)}
    assessment, verdict = _run(tmp_path, files)
    assert assessment.ending is Ending.DIED
    assert verdict is Verdict.FILESYSTEM


def test_a_sigterm_with_no_failure_before_it_stays_a_stop(tmp_path: Path) -> None:
    log = STEPS + "srun: error: gpu-node-3: task 0: Terminated\n"
    assessment, verdict = _run(tmp_path, {"slurm-8812.out": log})
    assert assessment.ending is Ending.STOPPED
    assert verdict is Verdict.NONE


def test_errors_after_a_ctrl_c_are_the_stop_s_own_teardown(tmp_path: Path) -> None:
    log = (
        STEPS + "W0301 10:00:00.000000 140 torch/distributed/elastic/agent/server/api.py:704] "
        "Received Signals.SIGINT death signal, shutting down workers\n"
        "[rank1]: Error while creating shared memory segment /dev/shm/nccl-Xy12ab (size 9637888)\n"
        "srun: error: gpu-node-3: task 1: Terminated\n"
    )
    assessment, verdict = _run(tmp_path, {"train.log": log})
    assert assessment.ending is Ending.STOPPED
    assert verdict is Verdict.NONE


def test_a_user_s_cancel_recorded_by_sacct_stands(tmp_path: Path) -> None:
    # sacct's row has no order against the log's lines: the user's own cancel is believed
    log = (
        STEPS + "[rank0]: Error while creating shared memory segment /dev/shm/nccl-Qw34er "
        "(size 9637888)\n"
        "srun: error: gpu-node-3: task 0: Terminated\n"
    )
    sacct = (
        "JobID|JobName|State|ExitCode\n"
        "7001|train|CANCELLED by 1000|0:15\n"
        "7001.batch|batch|CANCELLED|0:15\n"
    )
    assessment, verdict = _run(tmp_path, {"train.log": log, "sacct.txt": sacct})
    assert assessment.ending is Ending.STOPPED
    assert verdict is Verdict.NONE


def _describe(state_reason: str, event: str) -> str:
    return (
        "Name:             trainer-0\nNamespace:        default\n"
        "Node:             node-7/10.1.2.3\n"
        "Status:           Pending\nContainers:\n  trainer:\n    Image:         train:latest\n"
        f"    State:          Waiting\n      Reason:       {state_reason}\n"
        "    Ready:          False\n    Restart Count:  0\n    Limits:\n      memory:  16Mi\n"
        "Events:\n  Type     Reason     Age   From     Message\n"
        "  ----     ------     ----  ----     -------\n"
        "  Normal   Scheduled  60s   default-scheduler  Successfully assigned default/trainer-0\n"
        f"  Warning  Failed     12s (x3 over 40s)  kubelet  {event}\n"
    )


def test_a_kubelet_failed_event_with_runc_s_init_oom_kill_is_host_oom(tmp_path: Path) -> None:
    event = (
        "Error: failed to create containerd task: failed to create shim task: OCI runtime "
        "create failed: runc create failed: unable to start container process: container init "
        "was OOM-killed (memory limit too low?): unknown"
    )
    files = {"describe.txt": _describe("RunContainerError", event)}
    assessment, verdict = _run(tmp_path, files)
    assert assessment.ending is Ending.DIED
    assert verdict is Verdict.HOST_OOM


def test_a_kubelet_failed_event_is_a_death_whatever_its_error(tmp_path: Path) -> None:
    event = (
        'Error: failed to create containerd task: OCI runtime create failed: exec: "python": '
        "executable file not found in $PATH: unknown"
    )
    assessment, verdict = _run(tmp_path, {"describe.txt": _describe("RunContainerError", event)})
    assert assessment.ending is Ending.DIED
    assert verdict is not Verdict.NONE


def test_a_connect_retry_the_run_got_past_is_not_why_it_was_cancelled(tmp_path: Path) -> None:
    # start-up retries, then training, then the user's scancel (a bare `CANCELLED AT`)
    log = (
        "[W socket.cpp:663] [c10d] The client socket has failed to connect to [node-0]:29500 "
        "(errno: 101 - Network is unreachable).\n"
        "[W socket.cpp:601] [c10d] The client socket has failed to connect to [node-0]:29500 "
        "(errno: 111 - Connection refused).\n"
        + STEPS
        + "slurmstepd: error: *** JOB 5521 ON gpu-2 CANCELLED AT 2025-06-01T12:00:00 ***\n"
    )
    assessment, verdict = _run(tmp_path, {"slurm-5521.out": log})
    assert assessment.ending is Ending.STOPPED
    assert verdict is Verdict.NONE


def test_the_same_failure_during_training_is_why_the_job_ended(tmp_path: Path) -> None:
    log = (
        STEPS
        + "[W socket.cpp:663] [c10d] The client socket has failed to connect to [node-0]:29500 "
        "(errno: 101 - Network is unreachable).\n"
        "slurmstepd: error: *** JOB 5521 ON gpu-2 CANCELLED AT 2025-06-01T12:00:00 ***\n"
    )
    assessment, verdict = _run(tmp_path, {"slurm-5521.out": log})
    assert assessment.ending is Ending.DIED
    assert verdict is Verdict.NETWORK
