"""Site rules (`--rules DIR`, CRASHLENS_RULES): loaded, validated, tested and deciding."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crashlens.cli import app
from crashlens.errors import PatternError
from crashlens.match.rules import shipped_rules
from crashlens.match.site import (
    RULES_ENV,
    check_rule,
    library,
    line_safety_problems,
    load_site_rules,
    site_dirs,
)

RUNNER = CliRunner()

SITE_RULE = """\
id = 'filesystem-site-ckpt-fenced'
category = 'filesystem'
role = 'root'
weight = 0.9
title = 'Checkpoint volume fenced by the storage gateway'
summary = 'The storage gateway fenced the checkpoint volume {volume}.'
inputs = ['logs']

[match]
any = ['storage-gw: volume (?P<volume>[^ \\t\\n]+) fenced']

[remediation]
steps = [
  { text = 'Ask the storage team to unfence the volume.' },
  { use = 'resume-on-healthy-nodes' },
]

[examples]
match = ['Mar 05 10:15:00 node-01 storage-gw: volume /ckpt/run-7 fenced (lease lost)']
no_match = ['Mar 05 10:15:00 node-01 storage-gw: volume /ckpt/run-7 unfenced']
"""

SITE_LOG = (
    "[rank0]: step 1200 loss 1.234\n"
    "Mar 05 10:15:00 node-01 storage-gw: volume /ckpt/run-7 fenced (lease lost)\n"
    "[rank0]: RuntimeError: could not save checkpoint step-1200\n"
    "E0305 10:15:02.620000 2606 torch/distributed/elastic/multiprocessing/api.py:869] failed "
    "(exitcode: 1) local_rank: 0 (pid: 2610) of binary: /usr/bin/python3\n"
)


def _site(tmp_path: Path, text: str = SITE_RULE, name: str = "filesystem-site-ckpt-fenced") -> Path:
    folder = tmp_path / "site"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.toml").write_text(text, encoding="utf-8")
    return folder


def test_a_site_rule_loads_uses_a_shipped_block_and_joins_the_library(tmp_path: Path) -> None:
    folder = _site(tmp_path)
    (rule,) = load_site_rules([folder])
    assert rule.id == "filesystem-site-ckpt-fenced"
    assert len(rule.remediation) > 1  # the shipped block's steps took the `use` item's place
    combined = library([folder])
    assert len(combined) == len(shipped_rules()) + 1
    assert library() is shipped_rules()  # no site folder: the shipped tuple itself


def test_category_subfolders_are_read_like_the_shipped_layout(tmp_path: Path) -> None:
    folder = tmp_path / "site"
    (folder / "filesystem").mkdir(parents=True)
    (folder / "filesystem" / "filesystem-site-ckpt-fenced.toml").write_text(SITE_RULE)
    assert [r.id for r in load_site_rules([folder])] == ["filesystem-site-ckpt-fenced"]
    (folder / "filesystem").rename(folder / "network")
    with pytest.raises(PatternError, match="must equal its folder 'network'"):
        load_site_rules([folder])


def test_an_invalid_site_rule_names_its_file_and_field(tmp_path: Path) -> None:
    folder = _site(tmp_path, SITE_RULE.replace("weight = 0.9", "weigth = 0.9"))
    with pytest.raises(PatternError) as error:
        load_site_rules([folder])
    assert "filesystem-site-ckpt-fenced.toml" in str(error.value)
    assert "weigth" in str(error.value)


def test_a_site_id_clashing_with_a_shipped_rule_names_both_files(tmp_path: Path) -> None:
    shipped = shipped_rules()[0]
    text = SITE_RULE.replace("filesystem-site-ckpt-fenced", shipped.id).replace(
        "category = 'filesystem'", f"category = '{shipped.category.value}'"
    )
    folder = _site(tmp_path, text, name=shipped.id)
    with pytest.raises(PatternError) as error:
        load_site_rules([folder])
    assert f"{shipped.id}.toml" in error.value.path
    assert shipped.source in str(error.value) and "a shipped rule" in str(error.value)


def test_two_site_folders_with_one_id_name_both_files(tmp_path: Path) -> None:
    first = _site(tmp_path)
    second = tmp_path / "other"
    second.mkdir()
    (second / "filesystem-site-ckpt-fenced.toml").write_text(SITE_RULE)
    with pytest.raises(PatternError, match="already a site rule") as error:
        load_site_rules([first, second])
    assert str(first) in str(error.value) and str(second) in error.value.path


def test_a_missing_site_folder_is_an_error_not_silence(tmp_path: Path) -> None:
    with pytest.raises(PatternError, match="does not exist"):
        load_site_rules([tmp_path / "nope"])


def test_site_dirs_read_the_environment_then_the_flags(tmp_path: Path) -> None:
    env = {RULES_ENV: os.pathsep.join(["/etc/crashlens/rules", "", "/opt/rules"])}
    assert site_dirs(["/opt/rules", "/x"], env) == (
        Path("/etc/crashlens/rules"),
        Path("/opt/rules"),
        Path("/x"),
    )
    assert site_dirs((), {}) == ()


def test_line_safety_problems_are_those_of_the_shipped_tests() -> None:
    assert line_safety_problems("storage-gw: volume [^ \\t\\n]+ fenced") == []
    assert any("\\s" in p for p in line_safety_problems("storage-gw:\\svolume"))
    assert any("negated" in p for p in line_safety_problems("volume [^ ]+ fenced"))
    assert any("trailing" in p for p in line_safety_problems("storage-gw: .*"))
    assert any("lookbehind" in p for p in line_safety_problems("(?<=x)fenced"))
    assert any("literal" in p for p in line_safety_problems("a\\d+b"))


def test_a_site_rule_alone_decides_the_verdict_with_the_classifier(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(SITE_LOG)
    folder = _site(tmp_path)
    before = RUNNER.invoke(app, ["analyze", "-f", "json", str(log)])
    after = RUNNER.invoke(app, ["analyze", "-f", "json", "--rules", str(folder), str(log)])
    assert before.exit_code == 0 and after.exit_code == 0, after.output
    assert json.loads(before.stdout)["verdict"] != "filesystem"
    report = json.loads(after.stdout)
    assert report["verdict"] == "filesystem"
    cited = [e["rule"] for e in report["causes"][0]["evidence"]]
    assert "filesystem-site-ckpt-fenced" in cited
    assert "/ckpt/run-7" in report["causes"][0]["summary"]  # its named group filled the summary


def test_crashlens_rules_environment_variable_reaches_analyze(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "train.log"
    log.write_text(SITE_LOG)
    monkeypatch.setenv(RULES_ENV, str(_site(tmp_path)))
    result = RUNNER.invoke(app, ["analyze", "-f", "json", str(log)])
    assert json.loads(result.stdout)["verdict"] == "filesystem"


def test_an_invalid_site_rule_stops_analyze_with_bad_patterns(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(SITE_LOG)
    folder = _site(tmp_path, SITE_RULE.replace("role = 'root'", "role = 'cause'"))
    result = RUNNER.invoke(app, ["analyze", "--rules", str(folder), str(log)])
    assert result.exit_code == 3
    assert "filesystem-site-ckpt-fenced.toml" in result.stderr and "role" in result.stderr


def test_scan_uses_site_rules_in_its_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(RULES_ENV, "")  # restored after the test: the scan command sets it
    root = tmp_path / "archive"
    (root / "job-1").mkdir(parents=True)
    (root / "job-1" / "train.log").write_text(SITE_LOG)
    folder = _site(tmp_path)
    args = ["scan", str(root), "--out", str(tmp_path / "out"), "-j", "2", "--summary", "json"]
    result = RUNNER.invoke(app, [*args, "--rules", str(folder), "--no-cache"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["by_verdict"] == {"filesystem": 1}


def test_rules_list_and_show_see_site_rules(tmp_path: Path) -> None:
    folder = _site(tmp_path)
    listed = RUNNER.invoke(app, ["rules", "list", "--rules", str(folder)])
    assert "filesystem-site-ckpt-fenced" in listed.stdout
    shown = RUNNER.invoke(
        app, ["rules", "show", "filesystem-site-ckpt-fenced", "--rules", str(folder)]
    )
    assert shown.exit_code == 0 and str(folder) in shown.stdout


def test_rules_test_prints_pass_and_fail_per_rule_and_fails_on_one(tmp_path: Path) -> None:
    folder = _site(tmp_path)
    passed = RUNNER.invoke(app, ["rules", "test", str(folder)])
    assert passed.exit_code == 0, passed.output
    assert "PASS  filesystem-site-ckpt-fenced" in passed.stdout
    broken = SITE_RULE.replace(
        "no_match = ['Mar 05",
        "no_match = ['Mar 05 10:15:00 node-01 storage-gw: volume /a fenced', 'Mar 05",
    ).replace("filesystem-site-ckpt-fenced", "filesystem-site-broken")
    (folder / "filesystem-site-broken.toml").write_text(broken)
    failed = RUNNER.invoke(app, ["rules", "test", str(folder)])
    assert failed.exit_code == 1
    assert "FAIL  filesystem-site-broken" in failed.stdout
    assert (
        "should not match: 'Mar 05 10:15:00 node-01 storage-gw: volume /a fenced'" in failed.stdout
    )
    assert "PASS  filesystem-site-ckpt-fenced" in failed.stdout
    assert "1 passed, 1 failed" in failed.stdout


def test_rules_test_checks_line_safety_like_the_shipped_suite(tmp_path: Path) -> None:
    unsafe = SITE_RULE.replace("[^ \\t\\n]+", "[^ ]+")
    assert unsafe != SITE_RULE
    folder = _site(tmp_path, unsafe)
    (rule,) = load_site_rules([folder])
    assert any("negated" in problem for problem in check_rule(rule).problems)


def test_rules_new_writes_a_skeleton_that_loads_and_passes_once_filled(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    made = RUNNER.invoke(
        app, ["rules", "new", "network-site-ib-link-flap", "--category", "network", "-o", str(out)]
    )
    assert made.exit_code == 0, made.output
    path = out / "network-site-ib-link-flap.toml"
    (rule,) = load_site_rules([out])  # the skeleton loads as written
    assert rule.category.value == "network"
    unfilled = RUNNER.invoke(app, ["rules", "test", str(out)])
    assert unfilled.exit_code == 1 and "no [examples] match line" in unfilled.stdout
    text = path.read_text()
    text = text.replace(
        "any = ['EDIT: a distinctive literal part of the line']",
        "any = ['ib_port_state: port [0-9]+ went DOWN']",
    )
    text = text.replace(
        "match = []\nno_match = []",
        "match = ['[ 812.1] ib_port_state: port 1 went DOWN']\n"
        "no_match = ['[ 812.1] ib_port_state: port 1 went ACTIVE']",
    )
    path.write_text(text)
    filled = RUNNER.invoke(app, ["rules", "test", str(out)])
    assert filled.exit_code == 0, filled.output
    assert "PASS  network-site-ib-link-flap" in filled.stdout


def test_rules_new_refuses_a_bad_id_a_bad_category_and_overwriting(tmp_path: Path) -> None:
    bad_id = RUNNER.invoke(
        app, ["rules", "new", "Bad_Id", "--category", "shm", "-o", str(tmp_path)]
    )
    assert bad_id.exit_code == 2
    bad_cat = RUNNER.invoke(
        app, ["rules", "new", "x-rule", "--category", "disk", "-o", str(tmp_path)]
    )
    assert bad_cat.exit_code == 2 and "unknown" in bad_cat.stderr
    RUNNER.invoke(app, ["rules", "new", "x-rule", "--category", "shm", "-o", str(tmp_path)])
    again = RUNNER.invoke(app, ["rules", "new", "x-rule", "--category", "shm", "-o", str(tmp_path)])
    assert again.exit_code == 2 and "not overwritten" in again.stderr


def test_site_rule_files_carried_elsewhere_build_the_same_library(tmp_path: Path) -> None:
    """What a Dask worker does with the files its driver read: the folder is not needed."""
    import shutil

    from crashlens.match.site import carried_library, carrying, read_site_files

    folder = _site(tmp_path)
    files = read_site_files([folder])
    expected = [rule.id for rule in library([folder])]
    shutil.rmtree(folder)
    assert [rule.id for rule in carried_library(files)] == expected
    assert files[0].source == str(folder / "filesystem-site-ckpt-fenced.toml")
    with carrying(files) as rules:
        assert library() is rules and "filesystem-site-ckpt-fenced" in {r.id for r in rules}
    assert library() is shipped_rules()  # only while carried, and only in this thread
    broken = (replace(files[0], text=files[0].text.replace("'root'", "'cause'")),)
    with pytest.raises(PatternError, match="filesystem-site-ckpt-fenced.toml"):
        carried_library(broken)


def test_rules_coverage_counts_site_rules_and_refuses_an_invalid_one(tmp_path: Path) -> None:
    """`coverage` reads `--rules` like `list` and `show`; an invalid site rule is an exit with
    the reason (BAD_PATTERNS), not a traceback."""
    folder = _site(tmp_path)
    counted = RUNNER.invoke(app, ["rules", "coverage", "--rules", str(folder)])
    assert counted.exit_code == 0, counted.output
    assert "errno" in counted.stdout
    (tmp_path / "broken").mkdir()
    broken = _site(tmp_path / "broken", SITE_RULE.replace("role = 'root'", "role = 'cause'"))
    refused = RUNNER.invoke(app, ["rules", "coverage", "--rules", str(broken)])
    assert refused.exit_code == 3
    assert "invalid pattern library" in refused.stderr and "Traceback" not in refused.output
