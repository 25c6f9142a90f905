"""An `unknown` verdict's checks name where the launchers that ran the job keep what the logs
lack (`patterns/remedies/checks-tool-*.toml`): Ray's logs of the node, each torchrun rank's own
output, Slurm's accounting. Logs written for the test."""

from __future__ import annotations

from pathlib import Path

from crashlens.decide.remedy import TOOL_CHECKS, launchers_of
from crashlens.model import Action, Fact
from crashlens.parsers.launcher.tools import TOOL_NAMES
from mechanism_helpers import log_report

RAY_ACTOR = (
    "(pid=2231) step 40 reward 0.12\n"
    "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
)
TORCHRUN = """\
step 120 loss 1.93
Traceback (most recent call last):
  File "/opt/env/bin/torchrun", line 8, in <module>
    sys.exit(main())
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-02_10:11:12
  host      : node-01
  rank      : 3 (local_rank: 3)
  exitcode  : 1 (pid: 4411)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def _commands(report_checks: tuple[Action, ...]) -> str:
    return "\n".join(f"{a.text} {a.command or ''}" for a in report_checks)


def test_a_bare_ray_actor_death_asks_for_rays_logs_first(tmp_path: Path) -> None:
    report = log_report(tmp_path / "ray", RAY_ACTOR)
    assert str(report.verdict) == "unknown"
    assert "/tmp/ray/session_latest" in (report.next_checks[0].command or "")


def test_a_torchrun_failure_without_a_cause_asks_for_each_ranks_output(tmp_path: Path) -> None:
    report = log_report(tmp_path / "torchrun", TORCHRUN)
    assert str(report.verdict) == "unknown"
    shown = _commands(report.next_checks)
    assert "--log-dir" in shown
    assert "/tmp/ray" not in shown


def test_a_named_cause_adds_no_launcher_checks(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "oom",
        RAY_ACTOR
        + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a"
        " total capacity of 79.10 GiB of which 1.12 GiB is free.\n",
    )
    assert str(report.verdict) == "gpu_oom"
    assert not report.next_checks
    assert all("/tmp/ray" not in _commands(cause.next_checks) for cause in report.causes)


def test_launchers_are_read_from_the_tool_fact_and_those_it_ran_under() -> None:
    seen = (("seen", "torchrun,slurm"),)
    facts = [Fact("launcher.tool", "torchrun", "a.log", 3, "srun torchrun train.py", attrs=seen)]
    assert launchers_of(facts) == ("torchrun", "slurm")


def test_every_launcher_block_names_a_launcher() -> None:
    assert set(TOOL_CHECKS) <= set(TOOL_NAMES)
    assert {"torchrun", "deepspeed", "mpirun", "slurm", "ray"} <= set(TOOL_CHECKS)
