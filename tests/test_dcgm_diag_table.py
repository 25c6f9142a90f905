"""DCGM's diagnostic table (`dcgmi diag -r N`) read from a log: its wrapped messages joined and
looked up in DCGM's catalog, its failed tests kept (parsers/launcher/dcgm_diag.py), and the
rules that read them."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.library import tables_dir
from crashlens.match.catalogs import CatalogEntry, load_catalog
from crashlens.model import Fact
from crashlens.parsers.base import collect_text
from crashlens.parsers.launcher import LauncherParser
from crashlens.parsers.plaintext import PlainTextParser
from mechanism_helpers import report_of

DATA = Path(__file__).parent / "data" / "dcgm"
TABLE = load_catalog(tables_dir() / "dcgm_errors.toml")
PIECE = 45
"""The characters of a message DCGM 3.x puts on one row of its 80-column table."""


def _row(name: str, cell: str) -> str:
    return f"| {name:<26}| {cell:<46} |"


def _message_rows(kind: str, text: str) -> list[str]:
    """A message as DCGM wraps it: cut every 45 characters, wherever that falls."""
    pieces = [text[i : i + PIECE] for i in range(0, len(text), PIECE)]
    return [_row(kind if i == 0 else "", piece.rstrip()) for i, piece in enumerate(pieces)]


def _table(*rows: str) -> str:
    rule = "+" + "-" * 27 + "+" + "-" * 48 + "+"
    head = [
        "Successfully ran diagnostic for group.",
        rule,
        _row("Diagnostic", "Result"),
        "+" + "=" * 27 + "+" + "=" * 48 + "+",
    ]
    return "\n".join([*head, *rows, rule]) + "\n"


def _section(name: str) -> str:
    return f"+-----  {name}  " + "-" * (27 - 9 - len(name)) + "+" + "-" * 48 + "+"


def _facts(
    text: str, key: str, parser: LauncherParser | PlainTextParser | None = None
) -> list[Fact]:
    _, facts = collect_text(parser or LauncherParser(), text, "dcgmi.txt")
    return [item for item in facts if item.key == key]


def test_a_real_tables_wrapped_warning_is_joined_whole() -> None:
    text = (DATA / "dcgmi-diag-r3-cuda-context-busy.txt").read_text()
    (message,) = _facts(text, "dcgm.diag_message")
    assert message.attr("message") == (
        "GPU 0 Error using CUDA API cuCtxCreate Check DCGM and system logs for errors. Reset"
        " GPU. Restart DCGM. Rerun diagnostics. Unable to create CUDA context: 'CUDA-capable"
        " device(s) is/are busy or unavailable'."
    )
    assert message.value == "unlisted"
    assert (message.attr("test"), message.attr("section")) == ("GPU Memory", "Hardware")
    (failed,) = _facts(text, "dcgm.test_failed")
    assert (failed.value, failed.attr("gpus"), failed.lineno) == ("GPU Memory", "0", 23)


@pytest.mark.parametrize("entry", TABLE.entries, ids=[entry.id for entry in TABLE.entries])
def test_each_catalog_message_is_found_however_it_wraps(entry: CatalogEntry) -> None:
    # a prefix of each length shifts where the cuts fall
    for shift in range(0, PIECE, 7):
        text = _table(
            _section("Hardware"),
            _row("Memtest", "Fail - GPU: 3"),
            *_message_rows("Warning", "x" * shift + " " + entry.example),
        )
        (message,) = _facts(text, "dcgm.diag_message")
        assert message.value == f"{entry.category}/{entry.role.value}", (shift, message)
        assert message.attr("id") == entry.id


def test_dcgm4_per_gpu_results_and_the_plain_text_parser() -> None:
    text = _table(
        _section("Hardware"),
        _row("memory", "Fail"),
        _row("", "GPU0: Pass"),
        _row("", "GPU1: Fail"),
    )
    for parser in (LauncherParser(), PlainTextParser()):
        gpus = {item.attr("gpus") for item in _facts(text, "dcgm.test_failed", parser)}
        assert gpus == {"All", "1"}


def test_rows_outside_a_diagnostic_table_are_not_read() -> None:
    # two-cell rows with no `| Diagnostic | Result |` header above them, none a DCGM test's
    rows = [_row("Epoch", "Fail - GPU: 0"), _row("Warning", "GPU 0 had uncorrectable memory")]
    assert _facts("\n".join(rows) + "\n", "dcgm.test_failed") == []
    assert _facts("\n".join(rows) + "\n", "dcgm.diag_message") == []
    # and a table whose rows stopped: a later row, far below, that names no test, is not its
    ended = _table(_section("Hardware"), _row("GPU Memory", "Pass - All")) + "loading data\n" * 5
    assert _facts(ended + _row("Loss", "Fail - GPU: 0") + "\n", "dcgm.test_failed") == []


def test_a_failing_tests_rows_quoted_without_the_header_are_read() -> None:
    """Users quote only the failing test's rows: the test's name gives its section."""
    rows = [
        _row("GPU Memory", "Pass - GPUs: 1, 2, 3"),
        _row("", "Fail - GPU: 0"),
        *_message_rows(
            "Warning", "GPU 0 had uncorrectable memory errors and row remapping failed."
        ),
    ]
    (failed,) = _facts("\n".join(rows) + "\n", "dcgm.test_failed")
    assert (failed.value, failed.attr("section"), failed.attr("gpus")) == (
        "GPU Memory",
        "Hardware",
        "0",
    )
    (message,) = _facts("\n".join(rows) + "\n", "dcgm.diag_message")
    assert message.attr("test") == "GPU Memory"


def _job(dcgm: str) -> dict[str, str]:
    return {
        "train.log": (
            "step 1200 loss 2.113\n"
            "[rank3]:[E1104 02:11:09.553401 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught"
            " collective operation timeout: WorkNCCL(SeqNum=90311, OpType=ALLREDUCE, NumelIn=1,"
            " NumelOut=1, Timeout(ms)=600000) ran for 600042 milliseconds before timing out.\n"
        ),
        "dcgmi-diag.txt": dcgm,
    }


def test_a_wrapped_row_remap_failure_decides_a_collective_timeout(tmp_path: Path) -> None:
    table = _table(
        _section("Hardware"),
        _row("GPU Memory", "Pass - GPU: 0"),
        _row("", "Fail - GPU: 3"),
        *_message_rows(
            "Warning",
            "GPU 3 had uncorrectable memory errors and row remapping failed. Drain the GPU"
            " and reset it or reboot the node.",
        ),
    )
    report = report_of(tmp_path / "job", _job(table))
    assert str(report.verdict) == "hardware"
    assert "hardware-dcgm-diag-gpu-fault" in {item.rule for item in report.causes[0].evidence}


def test_a_test_that_could_not_get_the_gpu_says_nothing_of_the_hardware(tmp_path: Path) -> None:
    table = (DATA / "dcgmi-diag-r3-cuda-context-busy.txt").read_text()
    report = report_of(tmp_path / "busy", _job(table))
    assert str(report.verdict) != "hardware"
    assert any("hardware-dcgm-diag-test-failed" in note for note in report.notes)
