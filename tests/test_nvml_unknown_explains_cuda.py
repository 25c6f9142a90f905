"""CUDA's "unknown error" at initialisation with nvidia-smi failing "Failed to initialize NVML:
Unknown Error" beside it: the GPU device nodes cannot be opened (a container's device cgroup
lost them), a permissions failure. With nvidia-smi working, the same CUDA error stays the
driver's (nvidia_uvm not loaded, a suspended host)."""

from __future__ import annotations

from pathlib import Path

from crashlens.model import Verdict
from mechanism_helpers import report_of

from conftest import ROOT

WORKING_SMI = ROOT / "tests/data/samples/nvidia_smi/table_570.133.20_8xh200_no_processes.txt"

CUDA_UNKNOWN = """\
loading checkpoint shards: done
Traceback (most recent call last):
  File "/app/serve.py", line 31, in <module>
    model = model.cuda()
  File "/usr/local/lib/python3.10/dist-packages/torch/cuda/__init__.py", line 298, in _lazy_init
    torch._C._cuda_init()
RuntimeError: CUDA unknown error - this may be due to an incorrectly set up environment, e.g. \
changing env variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices \
to be zero.
"""


def test_nvml_s_unknown_error_makes_the_cuda_error_a_device_access_failure(
    tmp_path: Path,
) -> None:
    files = {
        "serve.log": CUDA_UNKNOWN,
        "nvidia-smi.txt": "$ nvidia-smi\nFailed to initialize NVML: Unknown Error\n",
    }
    report = report_of(tmp_path / "job", files)
    assert report.verdict is Verdict.PERMISSIONS, [
        (c.category, c.confidence) for c in report.causes
    ]
    rules = {item.rule for item in report.causes[0].evidence}
    assert "permissions-nvml-unknown-error-explains-cuda-init" in rules
    assert any("NVML" in note for note in report.notes)


def test_with_nvidia_smi_working_the_cuda_error_stays_the_driver_s(tmp_path: Path) -> None:
    files = {
        "serve.log": CUDA_UNKNOWN,
        "nvidia-smi.txt": WORKING_SMI.read_text(encoding="utf-8"),
    }
    report = report_of(tmp_path / "job", files)
    assert report.causes[0].category.value == "driver"
    assert not any("NVML" in note for note in report.notes)
