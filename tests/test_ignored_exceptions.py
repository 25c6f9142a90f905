"""An exception the process reported and went on from is no failure evidence (`decide.ignored`).

The logs are written for the mechanism: a network-looking exception raised in a `__del__`
(CPython's `Exception ignored in:` report) or in a finalizer multiprocessing runs at exit, with
the run going on or exiting; against it, the same exception uncaught, and a thread's (whose
thread is gone).
"""

from __future__ import annotations

from pathlib import Path

from crashlens.match.rules import shipped_rules
from crashlens.model import Category, Report, Verdict
from crashlens.pipeline import analyze_inputs, build_report

RESET = "ConnectionResetError: [Errno 104] Connection reset by peer\n"
FRAMES = (
    '  File "/opt/conda/lib/python3.10/multiprocessing/connection.py", line 383, in _recv\n'
    "    chunk = read(handle, remaining)\n"
)


def _report(tmp_path: Path, text: str) -> Report:
    (tmp_path / "train.log").write_text(text, encoding="utf-8")
    rules = shipped_rules()
    return build_report(analyze_inputs([str(tmp_path)], rules=rules), rules)


def test_a_finalizer_s_connection_reset_mid_run_is_no_failure(tmp_path: Path) -> None:
    log = (
        "epoch 2 iter 1200 loss 0.533\n"
        "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f1b2>\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py", '
        "line 1479, in __del__\n"
        "    self._shutdown_workers()\n" + FRAMES + RESET + "epoch 2 iter 1300 loss 0.529\n"
    )
    report = _report(tmp_path, log)
    assert report.verdict is Verdict.NONE
    assert Category.NETWORK not in [cause.category for cause in report.causes]


def test_a_finalizer_run_by_multiprocessing_at_exit_is_no_failure(tmp_path: Path) -> None:
    # multiprocessing's util._run_finalizers catches a finalizer's exception and prints it
    log = (
        "epoch 9 iter 9000 loss 0.301\nsaved final model to /out/model.pt\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.10/multiprocessing/util.py", line 300, '
        "in _run_finalizers\n"
        "    finalizer()\n" + FRAMES + RESET
    )
    assert _report(tmp_path, log).verdict is Verdict.NONE


def test_the_same_exception_uncaught_is_still_evidence(tmp_path: Path) -> None:
    log = (
        "epoch 2 iter 1200 loss 0.533\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/train.py", line 88, in <module>\n'
        "    batch = store.get(key)\n" + FRAMES + RESET
    )
    report = _report(tmp_path, log)
    assert report.verdict is not Verdict.NONE
    assert Category.NETWORK in [cause.category for cause in report.causes]


def test_a_thread_s_exception_is_still_evidence(tmp_path: Path) -> None:
    log = (
        "epoch 2 iter 1200 loss 0.533\n"
        "Exception in thread Thread-3 (_pin_memory_loop):\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.10/threading.py", line 1016, in _bootstrap_inner\n'
        "    self.run()\n" + FRAMES + RESET
    )
    report = _report(tmp_path, log)
    assert Category.NETWORK in [cause.category for cause in report.causes]
