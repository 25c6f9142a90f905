"""The verdict and the printed confidences cannot disagree.

With the shipped classifier, a report names the top printed cause exactly when that cause's
printed confidence reaches the threshold stored with the model; below it the verdict is
`unknown` and no printed cause reaches it; `none` prints no cause. Checked on every corpus case
and on random mixes of real rules' hits and death facts, then on the calibration itself.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from crashlens.decide.classifier import (
    Calibration,
    Model,
    final_verdict,
    shipped_model,
)
from crashlens.decide.policy import VERDICT_THRESHOLD
from crashlens.lab.corpus import load_cases
from crashlens.match.rules import Rule, shipped_rules
from crashlens.model import (
    Fact,
    Hit,
    InputAnalysis,
    InputKind,
    InputState,
    InputStatus,
    Report,
    Role,
    Verdict,
)
from crashlens.pipeline import analyze, build_report
from crashlens.render import NEAR_CERTAIN, likelihood
from crashlens.render.markdown import render_markdown

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def _model() -> Model:
    model = shipped_model()
    assert model is not None, "no shipped model: run `crashlens train corpus/`"
    return model


def _assert_agrees(report: Report, threshold: float, where: str) -> None:
    if report.verdict is Verdict.NONE:
        assert report.causes == (), where
        return
    for cause in report.causes:
        sure = likelihood(cause, report.verdict) in ("likely", "near-certain")
        assert sure == (Verdict.of(cause.category) is report.verdict), where
    printed = [cause.confidence for cause in report.causes]
    if report.verdict is Verdict.UNKNOWN:
        assert all(confidence < threshold for confidence in printed), (where, printed)
        return
    top = report.causes[0]
    assert Verdict.of(top.category) is report.verdict, where
    assert top.confidence >= threshold, (where, top.confidence)
    assert top.confidence == max(printed), where


# Over the whole corpus (cost grows with it); coverage's tracer would double it, and the code
# it drives is measured by the rest of the suite.
@pytest.mark.no_cover
def test_every_corpus_report_agrees_with_its_confidences() -> None:
    threshold = _model().calibration.threshold
    for case in load_cases(CORPUS):
        _assert_agrees(analyze([str(case.logs)]), threshold, case.case_id)


def _hit(rule: Rule, line: int, path: str) -> Hit:
    return Hit(
        rule_id=rule.id,
        category=rule.category,
        role=rule.role,
        weight=rule.weight,
        path=path,
        lineno=line,
        text=rule.title,
        also=rule.also,
    )


DEATH_FACTS = (
    ("launcher.exit_code", -9),
    ("launcher.exit_code", -7),
    ("launcher.exit_code", 1),
    ("launcher.signal", "SIGKILL"),
    ("launcher.signal", "SIGBUS"),
    ("docker.exit_code", 137),
    ("launcher.exit_code", 0),
)


def _mix(rng: random.Random, rules: tuple[Rule, ...]) -> list[InputAnalysis]:
    analyses = []
    for index in range(rng.randint(1, 2)):
        path = f"input{index}.log"
        chosen = rng.sample(rules, rng.randint(0, 4))
        hits = tuple(_hit(rule, 10 + n, path) for n, rule in enumerate(chosen))
        facts = tuple(
            Fact(key, value, path, 99, f"{key} {value}")
            for key, value in rng.sample(DEATH_FACTS, rng.randint(0, 2))
        )
        status = InputStatus(path, InputKind.LAUNCHER, InputState.ANALYZED)
        analyses.append(InputAnalysis(status=status, hits=hits, facts=facts))
    return analyses


def test_random_evidence_mixes_agree_with_their_confidences() -> None:
    model = _model()
    rules = shipped_rules()
    failure_rules = tuple(r for r in rules if r.role is not Role.CONTEXT)
    rng = random.Random(13)
    for trial in range(400):
        pool = failure_rules if trial % 2 else rules
        analyses = _mix(rng, pool)
        report = build_report(analyses, rules, model)
        _assert_agrees(report, model.calibration.threshold, f"trial {trial}")


def test_rules_alone_keep_the_same_contract_at_their_own_threshold() -> None:
    rules = shipped_rules()
    rng = random.Random(7)
    for trial in range(200):
        report = build_report(_mix(rng, rules), rules, None)
        _assert_agrees(report, VERDICT_THRESHOLD, f"trial {trial}")


def test_a_bare_sigkill_is_likely_host_oom_with_what_would_confirm_it(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        "torch.distributed.elastic.multiprocessing.api:[ERROR] failed (exitcode: -9) "
        "local_rank: 0 (pid: 1234) of binary: /usr/bin/python\n"
    )
    report = analyze([str(log)])
    threshold = _model().calibration.threshold
    assert report.verdict is Verdict.HOST_OOM
    top = report.causes[0]
    assert threshold <= top.confidence < NEAR_CERTAIN  # indirect evidence: likely, not sure
    checks = " ".join(f"{c.text} {c.command or ''}" for c in top.next_checks)
    assert "dmesg" in checks
    assert f"**host_oom** ({top.confidence:.0%}, likely)" in render_markdown(report)


def test_the_threshold_is_stored_with_the_model_not_hard_coded() -> None:
    calibration = _model().calibration
    assert 0.5 <= calibration.threshold < 1.0
    assert calibration.thin_temperature >= calibration.temperature > 0.0


# final_verdict itself, on made-up numbers: what each rule of the decision does.
LABELS = ("host_oom", "shm", "none")
SURE = {"host_oom": 0.96, "shm": 0.02, "none": 0.02}


def test_thin_rule_evidence_lowers_the_probability_itself() -> None:
    calibration = Calibration(temperature=1.0, thin_temperature=4.0, threshold=0.7)
    direct = final_verdict({"host_oom": 0.9}, False, True, SURE, calibration)
    thin = final_verdict({"host_oom": 0.35}, False, True, SURE, calibration)
    assert direct.verdict is Verdict.HOST_OOM and not direct.thin
    assert thin.thin and thin.confidences["host_oom"] < direct.confidences["host_oom"]
    assert thin.verdict is Verdict.UNKNOWN
    assert thin.confidences["host_oom"] < calibration.threshold


@pytest.mark.parametrize("threshold", [0.55, 0.6, 0.7])
def test_the_verdict_is_decided_on_the_rounded_confidence(threshold: float) -> None:
    calibration = Calibration(temperature=1.0, thin_temperature=1.0, threshold=threshold)
    for share in (threshold - 0.0004, threshold + 0.0004, threshold - 0.002):
        rest = (1.0 - share) / 2
        probabilities = {"host_oom": share, "shm": rest, "none": rest}
        # the rules' support is equal for every label, so the product keeps these numbers
        answer = final_verdict({"host_oom": 0.0}, False, True, probabilities, calibration)
        printed = answer.confidences["host_oom"]
        assert (answer.verdict is Verdict.HOST_OOM) == (printed >= threshold), share


def test_a_failure_is_never_talked_away_as_none() -> None:
    calibration = Calibration(temperature=1.0, thin_temperature=1.0, threshold=0.6)
    leaning_none = {"host_oom": 0.3, "shm": 0.05, "none": 0.65}
    failed = final_verdict({}, False, True, leaning_none, calibration)
    assert failed.ranking[0] == "none" and failed.verdict is Verdict.UNKNOWN
    healthy = final_verdict({}, True, False, leaning_none, calibration)
    assert healthy.verdict is Verdict.NONE
