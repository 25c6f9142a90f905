"""LSF job reports: the termination reason says whether the job was stopped or died.

IBM Spectrum LSF appends a job report to the job's output file (or mails it). Its
`TERM_<REASON>:` line is LSF's termination reason; `Exited with exit code N.` follows it. A
run-time limit, an owner's or an administrator's kill and a preemption are stops from outside
(the report's 140 is the run limit's SIGUSR2, 130/143 a bkill's signals): the run is not a
failure. A memory or swap limit is a death, and its cause is host memory.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.mechanism_helpers import ending_of, report_of

from crashlens.model import Ending

TRAINING = (
    "Epoch 3/50\n"
    "step 1200 loss 0.4412 lr 2.0e-04\n"
    "step 1300 loss 0.4390 lr 2.0e-04\n"
    "step 1400 loss 0.4371 lr 2.0e-04\n"
)


def _report(reason: str, code: int) -> str:
    return (
        "\n------------------------------------------------------------\n"
        "Sender: LSF System <lsfadmin@node-01>\n"
        "Subject: Job 8254049: <train> in cluster <dcc> Exited\n\n"
        "Job <train> was submitted from host <login-01> by user <user> in cluster <dcc>\n"
        "Job was executed on host(s) <node-01>, in queue <gpuv100>, as user <user>\n"
        "------------------------------------------------------------\n"
        "# LSBATCH: User input\n"
        "#!/bin/sh\n"
        "#BSUB -q gpuv100\n"
        "#BSUB -W 1000\n"
        "python main.py\n"
        "------------------------------------------------------------\n\n"
        f"{reason}\n"
        f"Exited with exit code {code}.\n\n"
        "Resource usage summary:\n\n"
        "    CPU time :                                   16776.00 sec.\n"
        "    Max Memory :                                 13062 MB\n"
        "    Total Requested Memory :                     25600.00 MB\n\n"
        "The output (if any) is above this job summary.\n"
    )


def _verdict(tmp_path: Path, text: str) -> tuple[str, Ending | None]:
    # LSF names the job's output file <job>.out (bsub -o)
    report = report_of(tmp_path, {"train.out": text})
    return str(report.verdict.value), ending_of(report)


@pytest.mark.parametrize(
    ("reason", "code"),
    [
        ("TERM_RUNLIMIT: job killed after reaching LSF run time limit.", 140),
        ("TERM_OWNER: job killed by owner.", 130),
        ("TERM_ADMIN: job killed by root or LSF administrator.", 143),
        ("TERM_PREEMPT: job killed after preemption.", 143),
    ],
    ids=["runlimit", "owner", "admin", "preempt"],
)
def test_a_job_lsf_stopped_is_no_failure(tmp_path: Path, reason: str, code: int) -> None:
    assert _verdict(tmp_path, TRAINING + _report(reason, code)) == ("none", Ending.STOPPED)


@pytest.mark.parametrize(
    "reason",
    [
        "TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.",
        "TERM_SWAP: job killed after reaching LSF swap usage limit.",
    ],
    ids=["memlimit", "swap"],
)
def test_a_job_lsf_killed_for_memory_died_of_host_memory(tmp_path: Path, reason: str) -> None:
    assert _verdict(tmp_path, TRAINING + _report(reason, 137)) == ("host_oom", Ending.DIED)


def test_the_exit_status_alone_is_still_a_death(tmp_path: Path) -> None:
    # without the reason line the same status is a death sign like any other
    text = TRAINING + _report("", 140).replace("\n\nExited", "\nExited")
    assert _verdict(tmp_path, text)[1] is Ending.DIED


def test_a_failure_before_the_run_limit_is_the_cause(tmp_path: Path) -> None:
    # a run that hit CUDA OOM and then hung until its limit died of the OOM
    oom = (
        "Traceback (most recent call last):\n"
        '  File "/srv/train.py", line 88, in <module>\n'
        "    loss.backward()\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 15.77 GiB of which 1.02 GiB is free.\n"
    )
    text = (
        TRAINING
        + oom
        + _report("TERM_RUNLIMIT: job killed after reaching LSF run time limit.", 140)
    )
    assert _verdict(tmp_path, text) == ("gpu_oom", Ending.DIED)
