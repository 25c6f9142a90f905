"""Mechanisms learned from the batch-w first-sight misses, decided end to end on logs of their
own (never the batch's text), analyzed as `crashlens analyze` does.

* MIOpen's SQLite user database it cannot read or write ('Internal error while accessing
  SQLite database: disk I/O error'): the job's rights on the database folder
  (`permissions-miopen-user-db-sqlite-io-error`).
* A job `squeue` shows pending never started (`tests/test_slurm_pending.py` has the details).
"""

from __future__ import annotations

from pathlib import Path

from crashlens.model import Ending, Verdict
from crashlens.pipeline import analyze
from mechanism_helpers import report_of, write_folder

MIOPEN_DB_FAILS = (
    "+ srun python conv_check.py\n"
    "torch 2.3.1+rocm6.0 device: AMD Instinct MI210\n"
    "MIOpen(HIP): Warning [FindDataGemmSolutions] /long_pathname_so_that_rpms_can_package_the_"
    "debug_info/src/extlibs/MLOpen/src/sqlite_db.cpp:221: Internal error while accessing "
    "SQLite database: disk I/O error\n"
    "MIOpen(HIP): Warning [FindWinogradSolutions] /long_pathname_so_that_rpms_can_package_the_"
    "debug_info/src/extlibs/MLOpen/src/sqlite_db.cpp:221: Internal error while accessing "
    "SQLite database: disk I/O error\n"
    "MIOpen Error: /long_pathname_so_that_rpms_can_package_the_debug_info/src/extlibs/MLOpen/"
    "src/sqlite_db.cpp:116: Internal error while accessing SQLite database: disk I/O error\n"
    "Traceback (most recent call last):\n"
    '  File "/work/user/conv_check.py", line 9, in <module>\n'
    "    y = conv(x)\n"
    "RuntimeError: miopenStatusInternalError\n"
)

MIOPEN_SYSTEM_DB_MISSING = (
    "MIOpen(HIP): Warning [SQLiteBase] Missing system database file: gfx90a6e.kdb Performance "
    "may degrade. Please follow instructions to install: "
    "https://github.com/ROCmSoftwarePlatform/MIOpen#installing-miopen-kernels-package\n"
    "epoch 1 step 100 loss: 2.913\n"
    "epoch 1 step 200 loss: 2.402\n"
    "Training completed. Do not forget to share your model on huggingface.co/models =)\n"
)


def test_miopen_user_db_it_cannot_write_is_permissions(tmp_path: Path) -> None:
    report = analyze([str(write_folder(tmp_path, "miopen-db", {"slurm-77.out": MIOPEN_DB_FAILS}))])
    assert str(report.verdict) == "permissions", [(c.category, c.confidence) for c in report.causes]
    cause = report.causes[0]
    assert "permissions-miopen-user-db-sqlite-io-error" in {e.rule for e in cause.evidence}


def test_miopen_missing_system_db_is_no_failure(tmp_path: Path) -> None:
    report = report_of(tmp_path, {"train.log": MIOPEN_SYSTEM_DB_MISSING})
    assert report.verdict is Verdict.NONE
    assert report.assessment is not None and report.assessment.ending is Ending.COMPLETED
