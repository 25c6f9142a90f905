"""GPU profiling refusals, the NVIDIA container hook refused by a rootless runtime, and Windows'
disk-full and access-denied codes, read through their catalogs
(patterns/tables/cupti_errors.toml, windows_errors.toml) end to end, on logs in the shapes the
programs print (built from the vendors' headers and docs and public reports, not from any one
corpus case; hosts, paths and numbers changed):

* Nsight Compute's and nvprof's ERR_NVGPUCTRPERM and TensorFlow's CUPTI tracer refused with
  CUPTI_ERROR_INSUFFICIENT_PRIVILEGES name `permissions`; a TensorFlow run whose profiler was
  refused but that trained on to the end is no failure;
* nvidia-container-cli refused the device cgroup under a rootless or unprivileged runtime names
  `permissions`, not the toolkit (`driver`);
* Windows' ERROR_DISK_FULL in Python's, Rust's (localised) and LMDB's forms names `filesystem`;
  Linux's errno 112 in Rust's form (Host is down) does not;
* every entry of the two tables is recognised, by exactly one rule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from crashlens.library import tables_dir
from crashlens.match.catalogs import load_catalog
from mechanism_helpers import assert_leads, log_report

LOGS = {
    "ncu-counters-refused": (
        "$ ncu --set full -o profile python bench_matmul.py\n"
        "==PROF== Connected to process 48213 (/usr/bin/python3.10)\n"
        "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU"
        " Performance Counters on the target device 0. For instructions on enabling permissions"
        " and to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM\n"
        "==PROF== Disconnected from process 48213\n"
        "==WARNING== No kernels were profiled.\n",
        "permissions",
    ),
    "tf-cupti-refused-then-crash": (
        "2024-05-02 10:01:12.004417: I tensorflow/core/profiler/lib/profiler_session.cc:131]"
        " Profiler session initializing.\n"
        "2024-05-02 10:01:12.004460: I tensorflow/core/profiler/lib/profiler_session.cc:146]"
        " Profiler session started.\n"
        "2024-05-02 10:01:12.011893: E tensorflow/core/profiler/internal/gpu/cupti_tracer.cc:1415]"
        " function cupti_interface_->Subscribe( &subscriber_, (CUpti_CallbackFunc)ApiCallback,"
        " this)failed with error CUPTI_ERROR_INSUFFICIENT_PRIVILEGES\n"
        "2024-05-02 10:01:12.012004: E tensorflow/core/profiler/internal/gpu/cupti_tracer.cc:1447]"
        " function cupti_interface_->ActivityRegisterCallbacks( AllocCuptiActivityBuffer,"
        " FreeCuptiActivityBuffer)failed with error CUPTI_ERROR_INSUFFICIENT_PRIVILEGES\n"
        "Traceback (most recent call last):\n"
        '  File "profile_step.py", line 41, in <module>\n'
        "    tf.profiler.experimental.stop()\n"
        "tensorflow.python.framework.errors_impl.UnavailableError: Cannot export profiling"
        " results. No profiler is running.\n",
        "permissions",
    ),
    "lxc-hook-devices-allow": (
        "$ docker run --rm --runtime=nvidia -e NVIDIA_VISIBLE_DEVICES=all nvidia/cuda:12.2.0-base"
        "-ubuntu22.04 nvidia-smi\n"
        "docker: Error response from daemon: failed to create shim task: OCI runtime create"
        " failed: runc create failed: unable to start container process: error during container"
        " init: error running hook #0: error running hook: exit status 1, stdout: , stderr:"
        " nvidia-container-cli: mount error: failed to add device rules: open failed:"
        " /sys/fs/cgroup/devices/devices.allow: permission denied: unknown.\n",
        "permissions",
    ),
    "python-winerror-112": (
        "Downloading model.safetensors:  71%|#######   | 2.31G/3.25G [01:12<00:29, 32.1MB/s]\n"
        "Traceback (most recent call last):\n"
        '  File "C:\\\\Users\\\\user\\\\proj\\\\infer.py", line 12, in <module>\n'
        "    model = AutoModel.from_pretrained(name)\n"
        "OSError: [WinError 112] There is not enough space on the disk:"
        " 'C:\\\\Users\\\\user\\\\.cache\\\\huggingface\\\\hub"
        "\\\\models--org--model\\\\blobs\\\\tmp9f2k1'\n",
        "filesystem",
    ),
    "rust-localised-112": (
        "Error: download failed\n"
        "\n"
        "Caused by:\n"
        "    Auf dem Datenträger ist nicht genügend Speicherplatz vorhanden. (os error 112)\n",
        "filesystem",
    ),
}


@pytest.mark.parametrize("name", sorted(LOGS))
def test_log_names_the_cause(tmp_path: Path, name: str) -> None:
    text, category = LOGS[name]
    assert_leads(log_report(tmp_path / name, text), category)


def test_profiler_refused_in_a_run_that_trained_to_the_end_is_no_failure(tmp_path: Path) -> None:
    text = (
        "2024-05-02 10:01:12.011893: E tensorflow/core/profiler/internal/gpu/cupti_tracer.cc:1415]"
        " function cupti_interface_->Subscribe( &subscriber_, (CUpti_CallbackFunc)ApiCallback,"
        " this)failed with error CUPTI_ERROR_INSUFFICIENT_PRIVILEGES\n"
        + "".join(
            f"Epoch {epoch}/3\n1875/1875 [==============================] - 6s 3ms/step - loss:"
            f" 0.{30 - epoch}12 - accuracy: 0.9{epoch}1\n"
            for epoch in (1, 2, 3)
        )
        + "Training finished.\n"
    )
    report = log_report(tmp_path / "tf-went-on", text)
    assert str(report.verdict) in ("none", "unknown"), report.verdict
    assert not report.causes or report.causes[0].category.value != "permissions"


def test_linux_errno_112_in_rusts_form_is_not_a_full_disk(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "ehostdown",
        "Error: failed to mount share\n\nCaused by:\n    Host is down (os error 112)\n",
    )
    assert not report.causes or report.causes[0].category.value != "filesystem"


@pytest.mark.parametrize("table", ["cupti_errors", "windows_errors"])
def test_the_new_tables_are_fully_covered(table: str, shipped_coverage: dict[str, Any]) -> None:
    catalog = load_catalog(tables_dir() / f"{table}.toml")
    row = shipped_coverage[catalog.name]
    assert row.covered == row.entries == len(catalog.entries)
