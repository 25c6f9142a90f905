"""The third outcome of the failure detector (`decide/unended.py`, `decide/last_output.py`): a
run's log with neither a death, a finish nor a stop is never reported healthy unless it shows
the run going on well where it ends; a log that simply stops is `unknown`, cites its last
line, says whether training was in progress and what to collect next."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.decide.classifier import shipped_model
from crashlens.match.rules import shipped_rules
from crashlens.model import Ending, Fact, Report, Role, Verdict
from crashlens.pipeline import analyze_inputs, build_report
from crashlens.render import UNENDED_TEXT
from crashlens.render.json import render_json
from crashlens.render.markdown import render_markdown

# Two ranks' NCCL connection setup, and nothing after it (a hang at the first collective).
NCCL_SETUP_ONLY = (
    "node-a:2521:2528 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via P2P/IPC\n"
    "node-a:2521:2528 [0] NCCL INFO Channel 01 : 0[0] -> 1[1] via P2P/IPC\n"
)
# A data set scan that reached 100 %, then silence.
SCAN_THEN_SILENCE = (
    "AMP: checks passed\n"
    "train: Scanning /data/labels/train... 120000 images, 0 corrupt: 100% 120000/120000\n"
)
TRAINING_THEN_SILENCE = "step 10 loss 2.31\nstep 20 loss 2.12\nstep 30 loss 2.05\n"
WARNING_ONLY = (
    "[W socket.cpp:663] [c10d] The server socket cannot be initialized on [::]:29500 "
    "(errno: 97 - Address family not supported by protocol).\n"
)
REFUSED_THEN_TRAINING = (
    "epoch 1 step 100 loss 0.91\n"
    "Failed to establish a new connection: [Errno 111] Connection refused\n"
    "epoch 1 step 200 loss 0.88\n"
)
NCCL_WARN_THEN_RESULTS = (
    "host-1:100:100 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
    "NCCL version 2.9.6+cuda11.2\n"
    "#       size         count    type   redop     time   algbw   busbw\n"
    "           8             2   float     sum    17.21    0.00    0.00\n"
)


def _report(folder: Path, files: dict[str, str], *, model: bool = False) -> Report:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    rules = shipped_rules()
    return build_report(
        analyze_inputs([str(folder)], rules=rules), rules, shipped_model() if model else None
    )


@pytest.mark.parametrize("model", [False, True], ids=["rules", "shipped-model"])
@pytest.mark.parametrize("text", [NCCL_SETUP_ONLY, SCAN_THEN_SILENCE], ids=["nccl", "scan"])
def test_a_log_that_stops_in_setup_is_never_none(tmp_path: Path, text: str, model: bool) -> None:
    report = _report(tmp_path, {"train.log": text}, model=model)
    assessed = report.assessment
    assert report.verdict is Verdict.UNKNOWN and assessed is not None
    assert assessed.ending is Ending.UNKNOWN and report.failure_seen
    # the last line is cited, and the reason says what the end looks like and what to collect
    assert assessed.sign is not None and assessed.sign.line == 2
    assert assessed.sign.text == text.splitlines()[-1]
    reason = assessed.reason
    assert reason.startswith("The log stops without showing how the run ended")
    assert "before any training progress shows" in reason
    assert "sacct" in reason and "dmesg" in reason and "docker inspect" in reason


def test_a_failure_line_keeps_the_usual_headline(tmp_path: Path) -> None:
    text = TRAINING_THEN_SILENCE + "ConnectionResetError: [Errno 104] Connection reset by peer\n"
    report = _report(tmp_path, {"train.log": text + "step 40 loss 2.01\n"})
    assert report.verdict is Verdict.UNKNOWN and report.causes
    assert UNENDED_TEXT not in render_markdown(report)


def test_a_log_that_stops_mid_training_says_so(tmp_path: Path) -> None:
    report = _report(tmp_path, {"train.log": TRAINING_THEN_SILENCE})
    assert report.verdict is Verdict.UNKNOWN and report.assessment is not None
    assert "while training was in progress" in report.assessment.reason
    assert "the last at line 3" in report.assessment.reason


def test_the_report_headline_and_json_say_the_ending_is_missing(tmp_path: Path) -> None:
    report = _report(tmp_path, {"train.log": NCCL_SETUP_ONLY})
    assert UNENDED_TEXT in render_markdown(report)
    assert "A failure is visible" not in render_markdown(report)
    assert '"ending": "unknown"' in render_json(report)


def test_a_warning_excerpt_is_ongoing_and_none(tmp_path: Path) -> None:
    report = _report(tmp_path, {"job.log": WARNING_ONLY})
    assessed = report.assessment
    assert report.verdict is Verdict.NONE and assessed is not None
    assert assessed.ending is Ending.ONGOING
    assert assessed.sign is not None and "logged a warning" in (assessed.sign.note or "")
    assert '"ending": "ongoing"' in render_json(report)


def test_a_run_that_went_on_past_its_alarming_line_is_ongoing(tmp_path: Path) -> None:
    report = _report(tmp_path, {"train.log": REFUSED_THEN_TRAINING})
    assessed = report.assessment
    assert report.verdict is Verdict.NONE and assessed is not None
    assert assessed.ending is Ending.ONGOING
    (line,) = assessed.harmless
    assert line.startswith(f"{tmp_path / 'train.log'}:2: ") and "went on after it" in line


def test_an_nccl_warn_followed_by_results_is_ongoing(tmp_path: Path) -> None:
    report = _report(tmp_path, {"nccl-tests.log": NCCL_WARN_THEN_RESULTS})
    assert report.verdict is Verdict.NONE and report.assessment is not None
    assert report.assessment.ending is Ending.ONGOING
    assert "NCCL WARN" in report.assessment.harmless[0]


def test_a_failure_line_is_never_ongoing(tmp_path: Path) -> None:
    text = REFUSED_THEN_TRAINING + "RuntimeError: CUDA error: an illegal memory access\nstep 3\n"
    report = _report(tmp_path, {"train.log": text})
    assert report.assessment is not None and report.assessment.ending is not Ending.ONGOING
    assert report.verdict is not Verdict.NONE


@pytest.mark.parametrize(
    "last",
    [
        "Finished.",
        "[rank0] done.",
        "INFO:sleap.nn.training:Finished training loop. [15.9 min]",
        "finished in 00:03:12",
        "Diagnostics complete. Results written to /var/log/diag.tgz",
        "# Avg bus bandwidth    : 84.8558",
        "I0904 08:00:01.004000 21 api.py:946] Done waiting for other agents. Elapsed: 2.4 s",
    ],
)
def test_last_words_of_completion_are_a_finish(tmp_path: Path, last: str) -> None:
    report = _report(tmp_path, {"train.log": TRAINING_THEN_SILENCE + last + "\n"})
    assert report.assessment is not None and report.assessment.ending is Ending.COMPLETED
    assert report.verdict is Verdict.NONE


@pytest.mark.parametrize(
    "last",
    [
        "loading done, starting training",
        "Epoch 3 done: loss 0.2",  # a step of the loop, not the run
    ],
)
def test_other_lines_that_say_done_are_no_finish(tmp_path: Path, last: str) -> None:
    report = _report(tmp_path, {"train.log": TRAINING_THEN_SILENCE + last + "\n"})
    assert report.assessment is not None and report.assessment.ending is Ending.UNKNOWN


def test_exit_chatter_is_a_finish(tmp_path: Path) -> None:
    last = (
        "[rank3]:[W515 07:06:42.915740178 ProcessGroupNCCL.cpp:1117] WARNING: process group "
        "has NOT been destroyed before it is being destructed. On normal program exit, the "
        "application should call destroy_process_group to ensure that any pending NCCL data "
        "transfers have finished in this process.\n"
    )
    report = _report(tmp_path, {"train.log": TRAINING_THEN_SILENCE + last})
    assert report.assessment is not None and report.assessment.ending is Ending.COMPLETED


def test_a_done_after_an_uncaught_error_is_no_finish(tmp_path: Path) -> None:
    text = (
        "step 10 loss 2.3\nTraceback (most recent call last):\n"
        '  File "/srv/train.py", line 9, in <module>\n'
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "done.\n"
    )
    report = _report(tmp_path, {"run.log": text})
    assert report.assessment is not None and report.assessment.ending is not Ending.COMPLETED
    assert report.verdict is not Verdict.NONE


def test_a_forwarded_sighup_is_a_stop(tmp_path: Path) -> None:
    text = TRAINING_THEN_SILENCE + (
        "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 4193 closing "
        "signal SIGHUP\n"
    )
    report = _report(tmp_path, {"launcher.log": text})
    assert report.assessment is not None and report.assessment.ending is Ending.STOPPED
    assert report.verdict is Verdict.NONE


def test_dockers_stop_event_is_a_stop(tmp_path: Path) -> None:
    events = (
        "2026-10-19T08:11:12.5Z container kill 7e0ba3fd1977 (name=sft, signal=15)\n"
        "2026-10-19T08:11:23.0Z container die 7e0ba3fd1977 (name=sft, exitCode=137)\n"
        "2026-10-19T08:11:23.2Z container stop 7e0ba3fd1977 (name=sft)\n"
    )
    report = _report(tmp_path, {"docker_events.txt": events, "train.log": TRAINING_THEN_SILENCE})
    assert report.assessment is not None and report.assessment.ending is Ending.STOPPED


def test_node_records_alone_are_judged_on_what_they_show(tmp_path: Path) -> None:
    dmesg = "[ 12.5] nvidia: loading out-of-tree module taints kernel.\n"
    report = _report(tmp_path, {"dmesg.txt": dmesg})
    assert report.assessment is not None and report.assessment.ending is Ending.UNKNOWN
    assert report.assessment.sign is None and report.verdict is Verdict.NONE


def test_a_running_container_is_cited(tmp_path: Path) -> None:
    inspect = '[{"State": {"Status": "running", "Running": true, "ExitCode": 0}}]'
    report = _report(tmp_path, {"inspect.json": inspect, "train.log": TRAINING_THEN_SILENCE})
    assessed = report.assessment
    assert assessed is not None and assessed.ending is Ending.UNKNOWN
    assert assessed.sign is not None and assessed.sign.path.endswith("inspect.json")
    assert report.verdict is not Verdict.NONE


def test_a_fact_is_cited_with_its_rank_and_host() -> None:
    item = Fact("launcher.signal", "SIGKILL", "run.log", 7, "killed", (("rank", 3), ("host", "n1")))
    cited = item.cited("why")
    assert (cited.path, cited.line, cited.text, cited.note) == ("run.log", 7, "killed", "why")
    assert (cited.rank, cited.host, cited.rule, cited.role) == (3, "n1", None, Role.SYMPTOM)
    flag = Fact("x", 1, "a", None, "x = 1", (("rank", True),))
    assert flag.cited(None).rank is None  # a bool is no rank


# detectron2's train loop announces its start; torch.meshgrid's UserWarning comes with the
# first forward pass (facebookresearch/detectron2#3953), and then the log stops.
D2_START = "[03/09 11:23:45 d2.engine.train_loop]: Starting training from iteration 0\n"
MESHGRID_WARNING = (
    "/usr/local/lib/python3.8/dist-packages/torch/functional.py:445: UserWarning: "
    "torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
    "argument. (Triggered internally at ../aten/src/ATen/native/TensorShape.cpp:2157.)\n"
    "  return _VF.meshgrid(tensors, **kwargs)  # type: ignore[attr-defined]\n"
)


def test_a_warning_after_the_training_loop_began_and_no_step_is_a_stop(tmp_path: Path) -> None:
    report = _report(tmp_path, {"train.log": D2_START + MESHGRID_WARNING})
    assert report.assessment is not None
    assert report.assessment.ending is Ending.UNKNOWN
    assert report.verdict is Verdict.UNKNOWN


def test_the_warning_alone_is_still_an_excerpt_going_on(tmp_path: Path) -> None:
    # no announcement of the loop: an excerpt of the warning, as users paste it
    report = _report(tmp_path, {"train.log": MESHGRID_WARNING})
    assert report.assessment is not None
    assert report.assessment.ending is Ending.ONGOING


@pytest.mark.parametrize("mark", ["...", "[... repeated 120 times ...]", "…", "<snip>"])
def test_an_elision_mark_is_not_output_the_run_went_on_to(tmp_path: Path, mark: str) -> None:
    # a traceback cut at its header, then the reader's elision mark: still a cut traceback
    text = "step 10 loss 2.31\nTraceback (most recent call last):\n" + mark + "\n"
    report = _report(tmp_path, {"train.log": text})
    assert report.assessment is not None
    assert report.assessment.ending is not Ending.ONGOING
    assert report.verdict is not Verdict.NONE


# The Hugging Face Trainer's banner is its plan, not progress: `Num Epochs = 3` and `Total
# optimization steps = 375` are printed before the first step (transformers' trainer.py).
HF_BANNER = (
    "***** Running training *****\n"
    "  Num examples = 1,000\n"
    "  Num Epochs = 3\n"
    "  Instantaneous batch size per device = 8\n"
    "  Gradient Accumulation steps = 1\n"
    "  Total optimization steps = 375\n"
)
HF_WARNING = (
    "[WARNING|logging.py:329] 2024-05-10 09:12:44,118 >> `use_cache=True` is incompatible "
    "with gradient checkpointing. Setting `use_cache=False`.\n"
)


def test_a_trainers_plan_is_no_progress_and_a_warning_after_it_is_a_stop(tmp_path: Path) -> None:
    report = _report(tmp_path, {"train.log": HF_BANNER + HF_WARNING})
    assert report.assessment is not None
    assert report.assessment.ending is Ending.UNKNOWN
    assert "before any training progress" in report.assessment.reason
