"""NVML's return codes, read through their catalog (patterns/tables/nvml_errors.toml) end to end,
on logs in the shapes the programs print (pynvml's `NVMLError_<Name>: <message>`, nvidia-smi's
`Failed to initialize NVML:` and device-handle lines, C callers' constant names), built from
NVML's reference and public reports, not from any one corpus case; hosts and paths changed:

* the driver not loaded, or its library missing in a container, names `driver`;
* NVML's own version-mismatch text (pynvml's spelling of code 18) names `driver`;
* a lost GPU and a GPU needing a reset name `hardware`, as does nvidia-smi's device-handle
  failure for one GPU quoted without its reason;
* a control device blocked by the operating system (a cgroup) names `permissions`;
* an unsupported query in a GPU monitor, in a run that trained on to the end, is no failure;
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
)

LOGS = {
    "pynvml-driver-not-loaded": (
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.10/site-packages/pynvml/nvml.py", line 1971, in'
        " nvmlInit\n"
        "    _nvmlCheckReturn(ret)\n"
        '  File "/opt/conda/lib/python3.10/site-packages/pynvml/nvml.py", line 899, in'
        " _nvmlCheckReturn\n"
        "    raise NVMLError(ret)\n"
        "pynvml.nvml.NVMLError_DriverNotLoaded: Driver Not Loaded\n",
        "driver",
    ),
    "container-without-runtime": (
        "$ docker run --rm -it trainer:latest python -m gpustat\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.11/site-packages/pynvml.py", line 2248, in'
        " _LoadNvmlLibrary\n"
        '    nvmlLib = CDLL("libnvidia-ml.so.1")\n'
        "OSError: libnvidia-ml.so.1: cannot open shared object file: No such file or directory\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "pynvml.NVMLError_LibraryNotFound: NVML Shared Library Not Found\n",
        "driver",
    ),
    "pynvml-rm-mismatch": (
        "INFO:root:probing GPUs before launch\n"
        "pynvml.nvml.NVMLError_LibRmVersionMismatch: RM has detected an NVML/RM version"
        " mismatch.\n",
        "driver",
    ),
    "smi-gpu-lost": (
        "$ nvidia-smi\n"
        "Unable to determine the device handle for GPU 0000:3B:00.0: GPU is lost.  Reboot the"
        " system to recover this GPU\n",
        "hardware",
    ),
    # the device-handle line quoted with its NVML reason cut (a ticket, a status note)
    "smi-handle-reason-cut": (
        "$ nvidia-smi\nUnable to determine the device handle for GPU1\n",
        "hardware",
    ),
    "monitor-reset-required": (
        "[rank0]: step 5400 loss 1.913\n"
        "gpu-monitor: pynvml.nvml.NVMLError_ResetRequired: GPU requires restart\n"
        "[rank0]: RuntimeError: CUDA error: unspecified launch failure\n",
        "hardware",
    ),
    "cgroup-blocked": (
        "pynvml.nvml.NVMLError_OperatingSystem: The operating system has blocked the request.\n",
        "permissions",
    ),
}


@pytest.mark.parametrize("name", sorted(LOGS))
def test_log_names_the_cause(tmp_path: Path, name: str) -> None:
    text, category = LOGS[name]
    assert_leads(log_report(tmp_path / name, text), category)


def test_unsupported_query_in_a_run_that_trained_to_the_end_is_no_failure(tmp_path: Path) -> None:
    text = (
        "gpu-monitor: pynvml.nvml.NVMLError_NotSupported: Not Supported\n"
        + "".join(
            f"{{'loss': 0.{40 - epoch}1, 'learning_rate': 1e-05, 'epoch': {epoch}.0}}\n"
            for epoch in (1, 2, 3)
        )
        + "{'train_runtime': 812.4, 'train_samples_per_second': 61.5, 'train_loss': 0.38,"
        " 'epoch': 3.0}\n"
    )
    report = log_report(tmp_path / "monitor-noise", text)
    assert str(report.verdict) in ("none", "unknown"), report.verdict
    assert not report.causes or report.causes[0].category.value != "driver"


def test_every_entry_is_recognised_by_exactly_one_rule(shipped_coverage: dict[str, Any]) -> None:
    assert_each_entry_recognised_once("nvml_errors", shipped_coverage)
