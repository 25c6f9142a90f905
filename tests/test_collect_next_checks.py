"""An `unknown` verdict's checks name where the launchers and platforms that ran the job keep
what the logs lack (`patterns/remedies/checks-with-*.toml`): Ray's logs of the node, each
torchrun rank's own output, Slurm's accounting, a container's own output, a Hugging Face Space's
own logs and hardware tier. Logs written for the test; the container record is a shipped
sample."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.decide.remedy import SOURCE_CHECKS, sources_of
from crashlens.model import Action, Fact, InputAnalysis, InputKind, InputState, InputStatus
from crashlens.parsers.launcher.tools import PLATFORM_NAMES, TOOL_NAMES
from crashlens.pipeline import analyze_inputs
from mechanism_helpers import log_report, report_of

SAMPLES = Path(__file__).parent / "data" / "samples"

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


def test_a_container_record_asks_for_the_containers_own_output(tmp_path: Path) -> None:
    record = (
        SAMPLES / "docker_inspect" / "docker_inspect_gpus_all_default_shm64m_exited1_REPRO.json"
    )
    report = report_of(
        tmp_path / "docker",
        {"train.log": "step 10 loss 2.1\nKilled\n", "inspect.json": record.read_text()},
    )
    assert str(report.verdict) == "unknown"
    assert "docker logs" in _commands(report.next_checks)


def test_sources_are_the_launchers_seen_then_the_kinds_read() -> None:
    seen = (("seen", "torchrun,slurm"),)
    tool = Fact("launcher.tool", "torchrun", "a.log", 3, "srun torchrun train.py", attrs=seen)
    analyses = [
        InputAnalysis(InputStatus("a.log", InputKind.LAUNCHER, InputState.ANALYZED), facts=(tool,)),
        InputAnalysis(InputStatus("pod.json", InputKind.KUBECTL_JSON, InputState.ANALYZED)),
        InputAnalysis(InputStatus("x.json", InputKind.DOCKER_INSPECT, InputState.SKIPPED, "bad")),
    ]
    assert sources_of(analyses) == ("torchrun", "slurm", "launcher", "kubectl_json")


def test_every_block_names_a_launcher_a_platform_or_an_input_kind() -> None:
    known = set(TOOL_NAMES) | set(PLATFORM_NAMES) | {kind.value for kind in InputKind}
    assert set(SOURCE_CHECKS) <= known
    wanted = {"torchrun", "deepspeed", "mpirun", "slurm", "ray", "kubectl_json"}
    wanted |= {"hf-spaces", "colab", "kaggle"}
    assert wanted <= set(SOURCE_CHECKS)


def test_a_spaces_status_alone_asks_for_the_spaces_own_logs(tmp_path: Path) -> None:
    # a Space's page after its container was restarted: the status, nothing of the app
    report = log_report(
        tmp_path / "space",
        "Runtime error\nSpace not healthy: restarting\n"
        "launch timed out, space was not healthy after 30 min\n",
    )
    assert report.verdict.value == "unknown"
    assert "Logs button" in report.next_checks[0].text
    # the ending's own advice names the Space's log, not a scheduler or a node it does not have
    assert report.assessment is not None
    assert "Logs button" in report.assessment.reason
    assert "sacct" not in report.assessment.reason


def test_a_spaces_lines_name_the_platform_in_any_log(tmp_path: Path) -> None:
    frames = (
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.10/site-packages/spaces/zero/wrappers.py", line 256, in'
        " thread_wrapper\n"
        "    res = future.result()\n"
    )
    for name, text in (("frames.log", frames), ("status.txt", "Memory limit exceeded (30Gi)\n")):
        folder = tmp_path / name
        folder.mkdir()
        (folder / name).write_text(text, encoding="utf-8")
        assert "hf-spaces" in sources_of(analyze_inputs([str(folder)])), name


def test_a_run_without_a_spaces_line_names_no_platform(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text(TORCHRUN, encoding="utf-8")
    assert "hf-spaces" not in sources_of(analyze_inputs([str(tmp_path)]))


_COLAB_STOP = (
    "steps:  12%|#2        | 1210/10000 [1:02:11<7:31:40,  3.08s/it, loss=0.211]\n"
    "Traceback (most recent call last):\n"
    '  File "/content/sd-scripts/train_network.py", line 1012, in <module>\n'
    "    trainer.train(args)\n"
    "FileNotFoundError: Caught FileNotFoundError in DataLoader worker process 0.\n"
)


def test_a_colab_run_asks_about_its_drive_mount_and_runtime(tmp_path: Path) -> None:
    report = log_report(tmp_path / "colab", _COLAB_STOP)
    assert report.verdict.value == "unknown"
    assert "Google Drive mount" in report.next_checks[0].text


@pytest.mark.parametrize(
    ("line", "platform"),
    [
        ("Mounted at /content/drive\n", "colab"),
        (
            '  File "/usr/local/lib/python3.11/dist-packages/google/colab/_shell.py", line 9\n',
            "colab",
        ),
        (
            "FileNotFoundError: [Errno 2] No such file: '/content/drive/MyDrive/data/x.npy'\n",
            "colab",
        ),
        ("Saving checkpoint to /kaggle/working/ckpt/step-500\n", "kaggle"),
        ("Loading images from /kaggle/input/cassava/train_images\n", "kaggle"),
    ],
)
def test_a_notebook_platforms_lines_name_it(tmp_path: Path, line: str, platform: str) -> None:
    (tmp_path / "notebook.log").write_text(line, encoding="utf-8")
    assert platform in sources_of(analyze_inputs([str(tmp_path)]))


@pytest.mark.parametrize(
    "line",
    [
        # a container's or a host's own /content folder, named outside a traceback's frames
        "Copying outputs to /content/results\n",
        "kaggle competitions download -c titanic\n",
    ],
)
def test_a_path_alone_names_no_notebook_platform(tmp_path: Path, line: str) -> None:
    (tmp_path / "train.log").write_text(line, encoding="utf-8")
    assert not {"colab", "kaggle"} & set(sources_of(analyze_inputs([str(tmp_path)])))


def test_a_colab_log_that_stops_asks_for_the_runtimes_state(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "colab-stops",
        "Loading dataset from /content/drive/MyDrive/ds\n"
        "epoch 3:  41%|####1     | 205/500 [01:02<01:30,  3.27it/s]\n",
    )
    assert report.assessment is not None
    assert "View resources" in report.assessment.reason
    assert "sacct" not in report.assessment.reason
