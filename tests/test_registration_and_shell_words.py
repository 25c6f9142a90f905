"""Two mechanisms the rules read from what software prints, whatever the wording around it.

* The shell's `Killed` in every locale the failure detector knows is the same SIGKILL for the
  rules, in each place bash prints it: alone, after a job prefix, glued to a progress bar's
  last redraw, over the start of a redraw that returned the cursor to column 0, and in a
  script's report (`line N: PID <word> command`).
* Memory registration for RDMA that fails with ENOMEM (verbs, mlx5 direct verbs, libfabric,
  UCX) is the locked-memory limit, a permissions failure, before it is host memory; a small
  limit written anywhere in the inputs backs it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.match.rules import Rule, shipped_rules
from crashlens.model import Category, Verdict
from crashlens.parsers.launcher.signals import LOCALE_SIGNAL_WORDS
from crashlens.pipeline import analyze_inputs, build_report


def _rule(rule_id: str) -> Rule:
    return next(rule for rule in shipped_rules() if rule.id == rule_id)


KILL_WORDS = sorted(word for word, signum in LOCALE_SIGNAL_WORDS.items() if signum == 9)


@pytest.mark.parametrize("word", KILL_WORDS)
@pytest.mark.parametrize(
    "shape",
    [
        "{w}",
        "[rank3]: {w}",
        "Epoch 4:  61%|██████    | 305/500 [03:02<01:57,  1.66it/s]{w}",
        "./launch.sh: line 12: 40417 {w}                  python train.py --cfg a.yaml",
        # printed over the start of a redraw that returned the cursor to column 0
        "{w}3/500 [00:07<19:41,  2.38s/it]",
    ],
)
def test_every_translated_kill_word_is_the_shell_s_kill_for_the_rules(
    word: str, shape: str
) -> None:
    assert _rule("host-oom-shell-killed").match_line(shape.format(w=word)) is not None


@pytest.mark.parametrize("word", KILL_WORDS)
def test_the_word_inside_a_sentence_is_not_the_shell_s_report(word: str) -> None:
    assert (
        _rule("host-oom-shell-killed").match_line(f"worker {word} at step 4 was restarted") is None
    )


def _verdict(tmp_path: Path, files: dict[str, str]) -> tuple[Verdict, list[Category]]:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    rules = shipped_rules()
    report = build_report(analyze_inputs([str(tmp_path)], rules=rules), rules)
    return report.verdict, [cause.category for cause in report.causes]


@pytest.mark.parametrize(
    "line",
    [
        "[1712034411.201877] [node-3:3321 :0]      ib_md.c:293  UCX  ERROR mlx5_1: "
        "mlx5dv_devx_umem_reg(size=262144 access=0xf) failed: Cannot allocate memory",
        "libfabric:8812:efa:mr:efa_mr_reg_impl():916<warn> Unable to register MR: fi_mr_reg "
        "returned -12 (ENOMEM)",
    ],
)
def test_a_registration_enomem_points_at_the_memlock_limit(tmp_path: Path, line: str) -> None:
    log = f"init process group\n{line}\nError: Failed to create UCP worker\n"
    verdict, causes = _verdict(tmp_path, {"run.log": log})
    assert causes and causes[0] is Category.PERMISSIONS
    assert verdict in (Verdict.PERMISSIONS, Verdict.UNKNOWN)


def test_a_small_limit_in_a_pasted_limits_row_backs_it(tmp_path: Path) -> None:
    log = (
        "[1712034411.201877] [node-3:3321 :0]      ib_md.c:293  UCX  ERROR mlx5_1: "
        "mlx5dv_devx_umem_reg(size=262144 access=0xf) failed: Cannot allocate memory\n"
    )
    limits = "Max locked memory         65536                65536                bytes\n"
    verdict, causes = _verdict(tmp_path, {"run.log": log, "daemon_limits.txt": limits})
    assert verdict is Verdict.PERMISSIONS
    assert causes[0] is Category.PERMISSIONS
