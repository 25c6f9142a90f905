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

from mechanism_helpers import (
    assert_each_entry_recognised_once,
    assert_leads,
    log_report,
    rules_hitting,
)

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
    hits = rules_hitting(line)
    assert hits == ["driver-cuda-toolchain-error"]
    plain = "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if"
    hits = rules_hitting(plain)
    assert hits == ["hardware-cuda-programming-error"]


def test_every_entry_is_recognised_by_exactly_one_rule(shipped_coverage: dict[str, Any]) -> None:
    assert_each_entry_recognised_once("cuda_library_status", shipped_coverage)
