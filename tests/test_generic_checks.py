"""A rule may say that its category's generic checks do not fit its mechanism
(`[remediation] generic_checks = false`): a cause it leads ends with its own checks only. A
download refused by a model hub is a network cause, but NCCL's logging and the nodes' kernel
logs, which every cause of traffic between ranks ends with, would only send the user astray."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.errors import PatternError
from crashlens.match.rules import parse_rule, shipped_rules
from crashlens.model import Report
from mechanism_helpers import assert_leads, log_report


def _checks_text(report: Report) -> str:
    cause = report.causes[0]
    return " ".join(f"{step.text} {step.command or ''}" for step in cause.next_checks)


def test_a_hub_rate_limit_gets_fetch_checks_not_nccl_ones(tmp_path: Path) -> None:
    report = log_report(
        tmp_path,
        "Loading checkpoint shards from org/model\n"
        "requests.exceptions.HTTPError: 429 Client Error: Too Many Requests for url:"
        " https://huggingface.co/api/models/org/model/revision/main\n",
    )
    assert_leads(report, "network")
    checks = _checks_text(report)
    assert "NCCL_DEBUG" not in checks
    assert "curl -sSIv" in checks


def test_a_collective_timeout_still_ends_with_the_nccl_checks(tmp_path: Path) -> None:
    report = log_report(
        tmp_path,
        "[rank3]:[E ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation"
        " timeout: WorkNCCL(SeqNum=1204, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576,"
        " Timeout(ms)=600000) ran for 600071 milliseconds before timing out.\n",
    )
    assert_leads(report, "network")
    assert "NCCL_DEBUG" in _checks_text(report)


def test_fetch_rules_declare_it_and_the_default_keeps_the_checks() -> None:
    rules = {rule.id: rule for rule in shipped_rules()}
    assert rules["network-http-rate-limited"].generic_checks is False
    assert rules["network-nccl-watchdog-timeout"].generic_checks is True


def test_a_value_that_is_not_a_flag_is_refused() -> None:
    table = {
        "id": "network-example",
        "category": "network",
        "role": "root",
        "weight": 0.5,
        "title": "Example",
        "match": {"any": ["example failure line"]},
        "remediation": {"steps": ["Do the thing."], "generic_checks": "no"},
        "examples": {"match": ["example failure line"], "no_match": ["fine"]},
    }
    with pytest.raises(PatternError, match="generic_checks"):
        parse_rule(table, "network-example.toml", folder="network")


def test_a_gated_model_refused_by_the_hub_gets_no_local_user_checks(tmp_path: Path) -> None:
    report = log_report(
        tmp_path,
        "huggingface_hub.errors.GatedRepoError: 403 Client Error. Cannot access gated repo for"
        " url https://huggingface.co/org/model/resolve/main/config.json.\n",
    )
    assert_leads(report, "permissions")
    checks = _checks_text(report)
    assert "ulimit -a" not in checks
    assert "Authorization: Bearer" in checks
