"""A failure line the run went on from in mid-training is no cause of a later stop: the
parsers read the progress lines among a log's last lines (`log.progress_mark`), and
`decide.stop_order` reads whether training went on after the line. A line followed by only
a step or two (other ranks finishing their step) still reads as the stop's cause."""

from __future__ import annotations

from pathlib import Path

from crashlens.decide.failure import assess
from crashlens.match.rules import shipped_rules
from crashlens.model import Assessment, Ending, Fact, Verdict
from crashlens.parsers.base import TAIL_LINES
from crashlens.pipeline import analyze_inputs, build_report


def steps(first: int, last: int, rank: str = "") -> str:
    return "".join(f"{rank}step {n} loss {3.2 - n / 1000:.4f}\n" for n in range(first, last))


WARNING = (
    "ERROR checkpoint: could not write /ckpt/step_120.pt: [Errno 28] No space left on device\n"
)
"""A save that failed; the loop goes on (the next save goes to a cleaned disk)."""
TERMINATED = "srun: error: gpu-node-3: task 0: Terminated\n"


def _run(tmp_path: Path, text: str) -> tuple[Assessment, Verdict, list[Fact]]:
    (tmp_path / "slurm-77.out").write_text(text, encoding="utf-8")
    rules = shipped_rules()
    analyses = analyze_inputs([str(tmp_path)], rules=rules)
    facts = [f for a in analyses for f in a.facts]
    return assess(analyses, rules), build_report(analyses, rules).verdict, facts


def test_a_failure_with_an_hour_of_training_after_it_is_not_the_stops_cause(
    tmp_path: Path,
) -> None:
    assessment, verdict, _ = _run(
        tmp_path, steps(100, 121) + WARNING + steps(121, 400) + TERMINATED
    )
    assert assessment.ending is Ending.STOPPED
    assert verdict is Verdict.NONE


def test_the_same_failure_right_before_the_stop_is_its_cause(tmp_path: Path) -> None:
    assessment, verdict, _ = _run(tmp_path, steps(100, 121) + WARNING + TERMINATED)
    assert assessment.ending is Ending.DIED and "teardown" in assessment.reason
    assert verdict is Verdict.FILESYSTEM


def test_a_step_or_two_after_the_failure_do_not_excuse_it(tmp_path: Path) -> None:
    assessment, _, _ = _run(tmp_path, steps(100, 121) + WARNING + steps(121, 123) + TERMINATED)
    assert assessment.ending is Ending.DIED


def test_steps_of_other_ranks_do_not_excuse_a_ranks_failure(tmp_path: Path) -> None:
    text = (
        steps(100, 110, "[rank1]: ")
        + "[rank0]: "
        + WARNING
        + steps(110, 130, "[rank1]: ")
        + TERMINATED
    )
    assessment, _, facts = _run(tmp_path, text)
    assert {f.attr("rank") for f in facts if f.key == "log.progress_mark"} == {1}
    assert assessment.ending is Ending.DIED
    own = text.replace("[rank1]: ", "[rank0]: ")
    assessment, _, _ = _run(tmp_path, own)
    assert assessment.ending is Ending.STOPPED


def test_a_long_run_keeps_only_the_progress_of_its_last_lines(tmp_path: Path) -> None:
    assessment, _, facts = _run(tmp_path, steps(0, 300) + WARNING + steps(300, 600) + TERMINATED)
    marks = [f for f in facts if f.key == "log.progress_mark"]
    assert 3 <= len(marks) <= TAIL_LINES
    assert marks[-1].lineno == 601 and marks[-1].value == len(marks)
    assert assessment.ending is Ending.STOPPED


def test_a_stop_whose_last_lines_show_no_progress_keeps_the_failure_as_its_cause(
    tmp_path: Path,
) -> None:
    teardown = "".join(f"W0502 worker {n}: received SIGTERM, shutting down\n" for n in range(60))
    assessment, _, _ = _run(
        tmp_path, steps(100, 121) + WARNING + steps(121, 400) + teardown + TERMINATED
    )
    assert assessment.ending is Ending.DIED
