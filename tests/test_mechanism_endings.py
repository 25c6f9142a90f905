"""Each batch's learned endings (`LOGS_AND_ENDINGS` of the `test_<batch>_mechanisms` modules: a
name, a log written for the test, the ending the failure detector must read): one test for all
the tables, which stay beside the tests of their batch's other mechanisms. A run that finished,
was stopped on purpose or was still going when its log was taken, with nothing else in its
log, is also reported healthy (a table's logs hold only the lines of their mechanism)."""

from __future__ import annotations

from pathlib import Path

import pytest

import test_cx_mechanisms
import test_cy_mechanisms
import test_cz_mechanisms
import test_db_mechanisms
import test_dd_mechanisms
import test_df_mechanisms
import test_dg_mechanisms
import test_di_mechanisms
import test_dk_mechanisms
import test_dl_mechanisms
from crashlens.model import Ending
from mechanism_helpers import ending_of, log_report

TABLES = {
    "cx": test_cx_mechanisms.LOGS_AND_ENDINGS,
    "cy": test_cy_mechanisms.LOGS_AND_ENDINGS,
    "cz": test_cz_mechanisms.LOGS_AND_ENDINGS,
    "db": test_db_mechanisms.LOGS_AND_ENDINGS,
    "dd": test_dd_mechanisms.LOGS_AND_ENDINGS,
    "df": test_df_mechanisms.LOGS_AND_ENDINGS,
    "dg": test_dg_mechanisms.LOGS_AND_ENDINGS,
    "di": test_di_mechanisms.LOGS_AND_ENDINGS,
    "dk": test_dk_mechanisms.LOGS_AND_ENDINGS,
    "dl": test_dl_mechanisms.LOGS_AND_ENDINGS,
}
CASES = [
    pytest.param(name, text, ending, id=f"{batch}-{name}")
    for batch, table in TABLES.items()
    for name, text, ending in table
]


@pytest.mark.parametrize(("name", "text", "ending"), CASES)
def test_the_log_ends_as_its_mechanism_says(
    tmp_path: Path, name: str, text: str, ending: Ending
) -> None:
    report = log_report(tmp_path / name, text)
    assert ending_of(report) is ending
    if ending in (Ending.STOPPED, Ending.COMPLETED, Ending.ONGOING):
        assert str(report.verdict) == "none"
