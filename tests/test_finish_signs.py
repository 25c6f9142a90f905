"""The finish signs' catalog (`tables/finish_signs.toml`, `parsers/launcher/finish_signs.py`).

Every entry's example is read as the run's finish (the collectors' `launcher.completed`, then
the failure detector's `completed`); a death after a finish line still counts as the scope of
its entry says; a nonzero exit status is no finish; a malformed table is refused with its field;
`crashlens rules coverage` counts the table by what the failure detector reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from crashlens.cli import app
from crashlens.decide.failure import assess
from crashlens.errors import PatternError
from crashlens.library import tables_dir
from crashlens.match.catalogs import finish_coverage
from crashlens.match.rules import shipped_rules
from crashlens.model import Assessment, Ending, Verdict
from crashlens.parsers.base import collect_text
from crashlens.parsers.launcher import LauncherParser
from crashlens.parsers.launcher.finish_signs import (
    FINISH_SIGNS,
    FinishSign,
    finish_sign,
    load_finish_table,
    parse_finish_table,
)
from crashlens.parsers.plaintext import PlainTextParser
from crashlens.pipeline import analyze_inputs, build_report

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
EZPZ_CASE = "none-aurora-ezpz-test-dist-24-xpu-operator-override-and-ccl-warn-run-finishes-0"


def _assessed(tmp_path: Path, text: str) -> Assessment:
    (tmp_path / "train.log").write_text(text, encoding="utf-8")
    return assess(analyze_inputs([str(tmp_path)]))


def _sign(sign_id: str) -> FinishSign:
    return next(sign for sign in FINISH_SIGNS if sign.id == sign_id)


# --- every entry -------------------------------------------------------------------------------


def test_the_shipped_table_loads_and_covers_the_tools() -> None:
    table = load_finish_table()
    assert table.signs == FINISH_SIGNS
    tools = " ".join(sign.tool for sign in FINISH_SIGNS)
    for tool in ("Hugging Face", "Lightning", "torchrun", "DeepSpeed", "Megatron", "ezpz"):
        assert tool in tools
    assert {sign.scope for sign in FINISH_SIGNS} == {"run", "process"}


@pytest.mark.parametrize("sign", FINISH_SIGNS, ids=[sign.id for sign in FINISH_SIGNS])
@pytest.mark.parametrize("parser", [LauncherParser(), PlainTextParser()], ids=["launcher", "text"])
def test_each_example_is_collected_as_the_runs_completion(sign: FinishSign, parser: Any) -> None:
    assert finish_sign(sign.example) is sign
    _, facts = collect_text(parser, f"step 10 loss 0.31\n{sign.example}\n", "train.log")
    completed = [f for f in facts if f.key == "launcher.completed"]
    assert [(f.lineno, f.attr("scope"), f.attr("tool")) for f in completed] == [
        (2, sign.scope, sign.tool)
    ]


@pytest.mark.parametrize("sign", FINISH_SIGNS, ids=[sign.id for sign in FINISH_SIGNS])
def test_each_example_ends_the_run_as_completed(tmp_path: Path, sign: FinishSign) -> None:
    found = _assessed(tmp_path, f"step 10 loss 0.31\n{sign.example}\n")
    assert found.ending is Ending.COMPLETED
    assert found.sign is not None and found.sign.line == 2


# --- deaths after a finish line ----------------------------------------------------------------


def test_an_uncaught_error_after_a_run_finish_still_fails(tmp_path: Path) -> None:
    text = (
        "iteration      100/     100 | lm loss: 2.1E+00 |\n"
        f"{_sign('megatron-after-training-is-done').example}\n"
        "saving checkpoint at iteration     100 to /ckpt\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/pretrain_gpt.py", line 80, in <module>\n'
        "OSError: [Errno 28] No space left on device\n"
    )
    found = _assessed(tmp_path, text)
    assert found.ending is Ending.DIED
    assert found.sign is not None and found.sign.line == 6


def test_a_crash_at_exit_after_a_run_finish_is_teardown(tmp_path: Path) -> None:
    text = (
        f"step 93 loss 0.4\n{_sign('ms-swift-end-time-of-running-main').example}\n"
        "Segmentation fault (core dumped)\n"
    )
    found = _assessed(tmp_path, text)
    assert found.ending is Ending.COMPLETED
    assert any("teardown" in line for line in found.harmless)


@pytest.mark.parametrize(
    ("sign_id", "death"),
    [
        (
            "torchelastic-local-worker-group-succeeded",
            "[2024-03-12 08:23:30,101] torch.distributed.elastic.multiprocessing.api: [ERROR] "
            "failed (exitcode: -9) local_rank: 0 (pid: 4242) of binary: /usr/bin/python3",
        ),
        ("ezpz-execution-finished-with-0", "Segmentation fault (core dumped)"),
        (
            "deepspeed-launch-process-exits-successfully",
            "[2023-08-01 12:00:02,004] [ERROR] [launch.py:322:sigkill_handler] ['python', "
            "'fit.py', '--local_rank=1'] exits with return code = -11",
        ),
    ],
)
def test_a_death_after_a_process_finish_is_the_ending(
    tmp_path: Path, sign_id: str, death: str
) -> None:
    """One process's or one node's clean exit finishes nothing when another process died."""
    assert _sign(sign_id).scope == "process"
    found = _assessed(tmp_path, f"step 5 loss 1.2\n{_sign(sign_id).example}\n{death}\n")
    assert found.ending is Ending.DIED
    assert found.sign is not None and found.sign.line == 3


@pytest.mark.parametrize(
    "line",
    [
        "[2025-03-14 18:02:11,417503][I][launch/ezpz:467:launch] Execution finished with 1.",
        "[2025-03-14 18:02:11,417503][I][launch/ezpz:467:launch] Execution finished with 137.",
        "[2024-03-12 08:22:56,574] torch.distributed.elastic.agent.server.api: [INFO] Local "
        "worker group finished (WorkerState.FAILED). Waiting 300 seconds for other agents",
        "# Out of bounds values : 12 FAILED",
        "Training completed after 3 iterations",
        # LLaMA-Factory's log record one step before the last
        '{"current_steps": 300, "total_steps": 310, "epoch": 4.84, "percentage": 96.77, '
        '"elapsed_time": "0:15:37", "remaining_time": "0:00:31"}',
        # wandb's exit hook after a traceback: the status it reports is 1
        "wandb: Waiting for W&B process to finish... (failed 1). Press Control-C to abort syncing.",
    ],
)
def test_a_failed_status_is_no_finish(tmp_path: Path, line: str) -> None:
    assert finish_sign(line) is None
    _, facts = collect_text(LauncherParser(), f"{line}\n", "train.log")
    assert not [f for f in facts if f.key == "launcher.completed"]


def test_a_progress_bar_is_a_finish_only_at_its_full_count(tmp_path: Path) -> None:
    # tqdm prints 199/200 as `100%`: the counts decide. The `\r` updates of one line are all
    # read, so a bar whose last update is full finishes the run.
    bar = _sign("verl-training-progress-bar-full")
    assert bar.found_in("Training Progress: 100%|##########| 200/200 [3:01:10<00:00, 54.3s/it]")
    assert not bar.found_in("Training Progress: 100%|#########9| 199/200 [3:01:10<00:54, 54.3s/it]")
    assert not bar.found_in("Training Progress:   0%|          | 0/0")
    updates = (
        "Training Progress:  50%|#####     | 1/2 [00:05<00:05]"
        "\rTraining Progress: 100%|##########| 2/2"
    )
    assert bar.found_in(updates)
    rounded_up = "Training Progress: 100%|#########9| 199/200 [3:01:10<00:54, 54.3s/it]\n"
    assert _assessed(tmp_path, rounded_up).ending is not Ending.COMPLETED
    assert _assessed(tmp_path, updates + "\n").ending is Ending.COMPLETED


def test_the_ezpz_launcher_case_reads_finished(tmp_path: Path) -> None:
    logs = CORPUS / EZPZ_CASE / "logs"
    rules = shipped_rules()
    report = build_report(analyze_inputs([str(logs)], rules=rules), rules)
    assert report.verdict is Verdict.NONE
    assert report.assessment is not None and report.assessment.ending is Ending.COMPLETED
    sign = report.assessment.sign
    assert sign is not None and "Execution finished with 0." in sign.text


# --- the table's checks -------------------------------------------------------------------------


def _table(**changes: object) -> dict[str, Any]:
    entry: dict[str, object] = {
        "id": "tool-finished",
        "tool": "A tool",
        "pattern": r"Run finished in [0-9]+ s",
        "scope": "run",
        "source": "https://example.org/tool/train.py",
        "example": "Run finished in 12 s",
    }
    entry.update(changes)
    return {
        "catalog": {
            "name": "finish_signs",
            "title": "t",
            "sources": ["https://example.org/tool"],
        },
        "entry": [{k: v for k, v in entry.items() if v is not None}],
    }


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"pattern": "Run finished ("}, "does not compile"),
        ({"pattern": r"Run finished\s+in"}, "line-safe"),
        ({"pattern": r"Run finished[^.]*done"}, "line-safe"),
        ({"pattern": r"^Run finished"}, "line-safe"),
        ({"pattern": r"Run finished|All done"}, "one wording"),
        ({"pattern": r"[0-9]+ ok", "example": "3 ok"}, "literal"),
        ({"example": "Run stopped in 12 s"}, "example"),
        ({"scope": "node"}, "scope"),
        ({"source": "http://example.org/x"}, "https://"),
        ({"tool": None}, "tool"),
        ({"meaning": "extra"}, "unknown fields"),
        ({"full_count": "yes"}, "full_count"),
        ({"full_count": True}, "groups"),
        ({"per_request": "yes"}, "per_request"),
        # a run's finish is no request's summary: only a process-scope line may be one
        ({"per_request": True}, "per_request"),
        # a request's opening line belongs to an entry that sums up requests
        ({"opens": "Run started"}, "opens"),
        ({"scope": "process", "per_request": True, "opens": r"got\s+prompt"}, "opens"),
    ],
)
def test_a_bad_entry_names_its_field(changes: dict[str, object], field: str) -> None:
    with pytest.raises(PatternError, match=field):
        parse_finish_table(_table(**changes), "finish_signs.toml")


def test_ids_and_patterns_are_unique() -> None:
    table = _table()
    table["entry"] = [table["entry"][0], {**table["entry"][0], "pattern": "Run finished in"}]
    with pytest.raises(PatternError, match="`id` listed twice"):
        parse_finish_table(table, "finish_signs.toml")
    table["entry"][1]["id"] = "other"
    table["entry"][1]["pattern"] = table["entry"][0]["pattern"]
    with pytest.raises(PatternError, match="`pattern` listed twice"):
        parse_finish_table(table, "finish_signs.toml")
    assert [s.id for s in parse_finish_table(_table(), "finish_signs.toml").signs] == [
        "tool-finished"
    ]


# --- coverage ------------------------------------------------------------------------------------


def test_coverage_counts_the_examples_the_failure_detector_reads(tmp_path: Path) -> None:
    shipped = finish_coverage(tables_dir() / "finish_signs.toml")
    assert (shipped.covered, shipped.entries, shipped.missing) == (
        len(FINISH_SIGNS),
        len(FINISH_SIGNS),
        (),
    )
    # a table of a wording the detector does not know: listed as missing
    path = tmp_path / "finish_signs.toml"
    path.write_text(
        '[catalog]\nname = "finish_signs"\ntitle = "t"\nsources = ["https://example.org/t"]\n'
        '[[entry]]\nid = "tool-finished"\ntool = "A tool"\npattern = "Run finished in"\n'
        'scope = "run"\nsource = "https://example.org/t.py"\nexample = "Run finished in 3 s"\n',
        encoding="utf-8",
    )
    assert finish_coverage(path).missing == ("tool-finished",)
    result = CliRunner().invoke(app, ["rules", "coverage"])
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if line.startswith("finish_signs"))
    assert row.split()[1] == f"{len(FINISH_SIGNS)}/{len(FINISH_SIGNS)}"


def test_lightnings_test_table_drawn_by_rich_is_the_same_finish(tmp_path: Path) -> None:
    # the table's header row as rich draws it, then a metric row and the closing rule
    table = (
        "┏━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━┓\n"
        "┃        Test metric        ┃       DataLoader 0        ┃\n"
        "┡━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━┩\n"
        "│         test_acc          │    0.9123000502586365     │\n"
        "└───────────────────────────┴───────────────────────────┘\n"
    )
    assert finish_sign(table.splitlines()[1]) is _sign("lightning-test-results-table")
    assert _assessed(tmp_path, "Epoch 9: 100%|██████████| 50/50\n" + table).ending is (
        Ending.COMPLETED
    )
