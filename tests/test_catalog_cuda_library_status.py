"""cuDNN 9's status codes and the remaining codes of cuBLAS, cuRAND, cuSOLVER and cuSPARSE, read
through their catalog (patterns/tables/cuda_library_status.toml) end to end, on logs in the shapes
PyTorch and its users print (built from the libraries' references and public reports, not from a
corpus case; paths changed):

* a cuDNN 9 sub-library that cannot be loaded (a second cuDNN earlier on the library path)
  names `driver`;
* cuDNN 9's NOT_SUPPORTED_ARCH_MISMATCH names `driver`, although it holds NOT_SUPPORTED, which
  alone is the job's own unsupported configuration;
* the sub-codes of a family go to their own rule, and every entry of the table is recognised
  by exactly one rule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from crashlens.library import tables_dir
from crashlens.match.catalogs import load_catalog
from crashlens.match.rules import shipped_rules
from mechanism_helpers import assert_leads, log_report

_CONV_FRAMES = (
    "Traceback (most recent call last):\n"
    '  File "/srv/asr/decode.py", line 57, in <module>\n'
    "    out = model(batch)\n"
    '  File "/srv/asr/.venv/lib/python3.12/site-packages/torch/nn/modules/conv.py", line 549,'
    " in _conv_forward\n"
    "    return F.conv2d(\n"
)


def test_sublibrary_loading_failed_names_the_installation(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "sublibrary",
        _CONV_FRAMES + "RuntimeError: cuDNN error: CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED\n",
    )
    assert_leads(report, "driver")


def test_arch_mismatch_sub_code_is_not_the_jobs_own_configuration() -> None:
    line = "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH"
    hits = [rule.id for rule in shipped_rules() if rule.match_line(line) is not None]
    assert hits == ["driver-cuda-toolchain-error"]
    plain = "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if"
    hits = [rule.id for rule in shipped_rules() if rule.match_line(plain) is not None]
    assert hits == ["hardware-cuda-programming-error"]


def test_every_entry_is_recognised_by_exactly_one_rule(shipped_coverage: dict[str, Any]) -> None:
    catalog = load_catalog(tables_dir() / "cuda_library_status.toml")
    row = shipped_coverage[catalog.name]
    assert row.covered == row.entries == len(catalog.entries)
    rules = shipped_rules()
    for entry in catalog.entries:
        hits = [rule.id for rule in rules if rule.match_line(entry.example) is not None]
        assert len(hits) == 1, (entry.id, hits)
