"""sacct's MaxRSS against ReqMem as evidence: a step killed at its memory request is a
host OOM; a job whose peak stayed far below its request argues against one."""

from __future__ import annotations

from pathlib import Path

from crashlens.decide.policy import decide
from crashlens.match.rules import shipped_rules
from crashlens.model import Category, Report, Verdict
from crashlens.pipeline import analyze_inputs, build_report

from conftest import sample_text

AT_REQUEST = "host-oom-slurm-sacct-maxrss-at-reqmem"
FAR_BELOW = "host-oom-slurm-sacct-maxrss-far-below-reqmem"
# A job's stdout where srun reports a task Killed: alone, a weak sign of a host OOM.
LOG = (
    "Epoch 3:  41%|####      | 1530/3712 [21:04<30:02,  1.21it/s, loss=2.31]\n"
    "srun: error: node-07: task 0: Killed\n"
)
SACCT = (
    "JobID|JobName|State|ExitCode|AllocCPUS|NNodes|NodeList|ReqMem|MaxRSS\n"
    "5120040|train_lm|FAILED|0:9|16|1|node-07|8000Mc|\n"
    "5120040.batch|batch|FAILED|0:9|16|1|node-07|8000Mc|5242880K\n"
    "5120040.0|python|CANCELLED|0:9|16|1|node-07|8000Mc|{rss}\n"
)


def _report(tmp_path: Path, files: dict[str, str]) -> Report:
    tmp_path.mkdir(exist_ok=True)
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    rules = shipped_rules()
    return build_report(analyze_inputs([str(tmp_path)], rules=rules), rules)


def _rule_ids(report: Report) -> set[str]:
    """The rules the report cites (one per line: the strongest hit of the line)."""
    return {str(item.rule) for cause in report.causes for item in cause.evidence}


def test_the_real_out_of_memory_sample_counts_its_peak(tmp_path: Path) -> None:
    (tmp_path / "sacct.txt").write_text(
        sample_text("slurm_job/sacct_fixed_width_out_of_memory_0_125_REPRO.txt")
    )
    rules = shipped_rules()
    decision = decide(analyze_inputs([str(tmp_path)], rules=rules), rules)
    assert decision.verdict is Verdict.HOST_OOM
    counted = {item.hit.rule_id for item in decision.candidates[0].hits}
    assert AT_REQUEST in counted and FAR_BELOW not in counted


def test_a_sigkill_at_the_memory_request_is_a_host_oom(tmp_path: Path) -> None:
    # 127926272K = 122 GiB of the 16 x 8000M = 125 GiB the step could use on its node
    sacct = SACCT.format(rss="127926272K")
    report = _report(tmp_path, {"slurm-5120040.out": LOG, "sacct.txt": sacct})
    assert report.verdict is Verdict.HOST_OOM
    assert AT_REQUEST in _rule_ids(report)


def test_the_same_sigkill_far_below_the_request_is_not_decided_host_oom(tmp_path: Path) -> None:
    sacct = SACCT.format(rss="20971520K")  # 20 GiB of 125 GiB
    report = _report(tmp_path, {"slurm-5120040.out": LOG, "sacct.txt": sacct})
    assert report.verdict is not Verdict.HOST_OOM
    assert FAR_BELOW in _rule_ids(report) and AT_REQUEST not in _rule_ids(report)
    # it lowers the host_oom that the same SIGKILL gives without sacct
    unseen = _report(tmp_path / "unseen", {"slurm-5120040.out": LOG})
    assert _confidence(report, Category.HOST_OOM) < _confidence(unseen, Category.HOST_OOM)


def _confidence(report: Report, category: Category) -> float:
    return next(c.confidence for c in report.causes if c.category is category)
