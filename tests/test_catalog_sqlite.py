"""SQLite's result codes of a failing disk, file or permission, read through their catalog
(patterns/tables/sqlite_errors.toml), and NumPy's short write of an array file. Every line here
is one Python 3.11's sqlite3 or NumPy 2.4 raised on this machine on a real failure (a full tmpfs,
a database overwritten with noise, a read-only connection, a missing folder), in a log written
for the tests:

* a tuning study whose SQLite store fills its disk, and an array saved onto a full disk, name
  `filesystem`; a store the job user may not write names `permissions`;
* SQLite's own lock contention and a wrong file name no cause;
* every entry of the table is recognised, by exactly one rule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mechanism_helpers import (
    assert_each_entry_recognised_once,
    assert_leads,
    log_report,
    rules_hitting,
)

STUDY_HEAD = (
    "[I 2026-12-08 01:20:11,402] A new study created in RDB with name: lr-sweep\n"
    "[I 2026-12-08 01:24:53,118] Trial 0 finished with value: 0.412 and parameters:"
    " {'lr': 0.0003}. Best is trial 0 with value: 0.412.\n"
    "Traceback (most recent call last):\n"
    '  File "/home/user/tune.py", line 61, in <module>\n'
    "    study.optimize(objective, n_trials=100)\n"
)


def test_a_study_whose_store_fills_the_disk_names_the_filesystem(tmp_path: Path) -> None:
    report = log_report(
        tmp_path, STUDY_HEAD + "sqlite3.OperationalError: database or disk is full\n"
    )
    assert_leads(report, "filesystem")


def test_a_store_the_job_user_may_not_write_names_permissions(tmp_path: Path) -> None:
    report = log_report(
        tmp_path, STUDY_HEAD + "sqlite3.OperationalError: attempt to write a readonly database\n"
    )
    assert_leads(report, "permissions")


def test_an_array_saved_onto_a_full_disk_names_the_filesystem(tmp_path: Path) -> None:
    report = log_report(
        tmp_path,
        "epoch 12: saving embeddings to /scratch/user/emb/epoch12.npy\n"
        "Traceback (most recent call last):\n"
        '  File "/home/user/export.py", line 88, in <module>\n'
        "    np.save(path, embeddings)\n"
        "OSError: 1000000 requested and 32752 written\n",
    )
    assert_leads(report, "filesystem")


@pytest.mark.parametrize(
    "line",
    [
        "sqlite3.OperationalError: database is locked",
        "sqlite3.DatabaseError: file is not a database",
    ],
)
def test_lock_contention_and_a_wrong_file_are_not_the_tables(line: str) -> None:
    assert not [rule for rule in rules_hitting(line) if "sqlite" in rule]


def test_every_entry_is_recognised_by_exactly_one_rule(shipped_coverage: dict[str, Any]) -> None:
    assert_each_entry_recognised_once("sqlite_errors", shipped_coverage)
