"""Mechanisms learned from blind batch v (Huawei Ascend, Moore Threads MUSA, MindSpore, ms-swift),
end to end on lines that are not the cases' own (other values of the same messages, as their
programs print them, or another report's lines):

* Ascend NPU device memory exhausted, as CANN's runtime (EL0004, rtMalloc's driver reason),
  MindSpore's memory manager and torch_npu's allocator print it: gpu_oom.
* CANN refusing a path (EK0001): filesystem.
* A missing Ascend CANN or MUSA user-space library, torch_musa's failed device count, CANN's
  operator environment failing to initialise, MindSpore's collective library failing to load,
  and an NVIDIA library older than the binary's symbol version: driver.
* Open MPI's UCX layer never receiving a peer's address, and c10d's `connect() timed out`
  after a full-width colon (through the scan backend, which reads bytes): network.
* MindSpore's dataset saying it is short of shm, and a DataLoader batch hand-off failing in
  rebuild_storage_fd (its `Connection refused` is the worker gone, not the network): shm.
* CANN's plog line `GetInputConstDataOut: ErrorNo: -1(failed)` is output a run goes on from.
* The Hugging Face Trainer's logged dict (`{'loss': 0.41, ...}`) is training progress.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from crashlens.match.rules import shipped_rules
from crashlens.model import Ending
from crashlens.parsers.launcher.deaths import PROGRESS
from crashlens.pipeline import analyze
from mechanism_helpers import (
    Scenario,
    assert_scenario_verdict,
    ending_of,
    log_report,
    write_folder,
)

_TORCH_NPU_OOM = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 88, in <module>\n'
    "    loss.backward()\n"
    "RuntimeError: NPU out of memory. Tried to allocate 1.50 GiB (NPU 3; 29.50 GiB total"
    " capacity; 27.10 GiB already allocated; 27.10 GiB current active; 402.00 MiB free;"
    " 27.61 GiB reserved in total by PyTorch)\n"
)

SCENARIOS = (
    Scenario(
        "mindspore-start-up-card-held-by-another-process",
        {
            "train.log": "[EXCEPTION] DEVICE(2211,ffff8a1b01e0,python):2023-04-02-10:11:12.100.200"
            " [mindspore/ccsrc/runtime/device/ascend/ascend_memory_manager.cc:62]"
            " MallocDeviceMemory] Malloc device memory failed, size[31138512896], ret[207001],"
            " Device 2 may be other processes occupying this card, check as: ps -ef|grep python\n"
        },
        "gpu_oom",
        "gpu-oom-ascend-npu-memory-exhausted",
    ),
    Scenario(
        "torch-npu-allocator-oom",
        {"train.log": _TORCH_NPU_OOM},
        "gpu_oom",
        "gpu-oom-ascend-npu-memory-exhausted",
    ),
    Scenario(
        "cann-runtime-driver-out-of-memory",
        {
            "train.log": "RuntimeError: The Inner error as above.\n"
            "EL0004: Failed to allocate memory.\n"
            "        Possible Cause: Available memory is insufficient.\n"
            "        Solution: Close applications not in use.\n"
            "        TraceBack (most recent call last):\n"
            "        rtMalloc execute failed, reason=[driver error:out of memory]"
            "[FUNC:FuncErrorReason][FILE:error_message_manage.cc][LINE:50]\n"
        },
        "gpu_oom",
        "gpu-oom-ascend-npu-memory-exhausted",
    ),
    Scenario(
        "cann-dump-path-refused",
        {
            "train.log": "EK0001: Path [/data/dump out] for [dump_path] is invalid or does not"
            " exist. The Path name can only contain A-Za-z0-9-_.\n"
            "RuntimeError: Failed to call aclmdlInitDump function.\n"
        },
        "filesystem",
        "filesystem-ascend-cann-path-invalid",
    ),
    Scenario(
        "cann-environment-not-sourced",
        {
            "train.log": "Traceback (most recent call last):\n"
            '  File "train.py", line 3, in <module>\n'
            "    import torch_npu\n"
            "ImportError: libhccl.so: cannot open shared object file: No such file or directory\n"
        },
        "driver",
        "driver-accelerator-runtime-library-missing",
    ),
    Scenario(
        "older-cublaslt-than-torch-needs",
        {
            "train.log": "Traceback (most recent call last):\n"
            '  File "train.py", line 1, in <module>\n'
            "    import torch\n"
            "ImportError: /usr/local/lib/python3.8/dist-packages/torch/lib/libtorch_cuda.so:"
            " symbol cublasLtGetStatusString version libcublasLt.so.11 not defined in file"
            " libcublasLt.so.11 with link time reference\n"
        },
        "driver",
        "driver-nvidia-library-symbol-version-missing",
    ),
    Scenario(
        "mindspore-dataset-shm-check",
        {
            "train.log": "RuntimeError: Insufficient shared memory available. Required:"
            " 3932160000, Available: 67108864. The required memory can't exceed 80% of the"
            " available shared memory.\n"
        },
        "shm",
        "shm-mindspore-dataset-insufficient-shm",
    ),
    Scenario(
        "c10d-store-timeout-full-width-colon",
        {"train.log": "RuntimeError：connect() timed out. Original timeout was 1800000 ms.\n"},
        "network",
        "network-connect-timed-out",
    ),
    Scenario(
        "openmpi-ucx-address-exchange-lost",
        {
            "train.log": "[node-03:40211] pml_ucx.c:178  Error: Failed to receive UCX worker"
            " address: Not found (-13)\n"
            "[node-03:40211] pml_ucx.c:477  Error: Failed to resolve UCX endpoint for rank 5\n"
            "[node-03:40211] *** An error occurred in MPI_Allgather\n"
        },
        "network",
        "network-openmpi-ucx-peer-address-not-received",
    ),
)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_batch_v_mechanism(tmp_path: Path, scenario: Scenario) -> None:
    assert_scenario_verdict(tmp_path, scenario)


def test_a_batch_hand_off_refused_is_the_worker_gone_not_the_network(tmp_path: Path) -> None:
    """Python 3's resource-sharer form of the traceback: shm leads, network does not."""
    log = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 61, in <module>\n'
        "    for images, labels in loader:\n"
        '  File "/opt/conda/lib/python3.8/multiprocessing/queues.py", line 116, in get\n'
        "    return _ForkingPickler.loads(res)\n"
        '  File "/opt/conda/lib/python3.8/site-packages/torch/multiprocessing/reductions.py",'
        " line 295, in rebuild_storage_fd\n"
        "    fd = df.detach()\n"
        '  File "/opt/conda/lib/python3.8/multiprocessing/resource_sharer.py", line 57, in detach\n'
        "    with _resource_sharer.get_connection(self._id) as conn:\n"
        "ConnectionRefusedError: [Errno 111] Connection refused\n"
    )
    report = analyze([str(write_folder(tmp_path, "handoff", {"train.log": log}))])
    assert report.causes[0].category.value == "shm"
    assert str(report.verdict) != "network"


def test_the_cann_plog_const_data_line_is_a_run_going_on(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "plog",
        "[ERROR] GE(31377,python):2023-08-01-09:12:45.221.904 [op_desc.cc:1208]31377"
        " GetInputConstDataOut: ErrorNo: -1(failed)\n",
    )
    assert ending_of(report) is Ending.ONGOING
    assert str(report.verdict) == "none"


def test_an_npu_oom_after_the_plog_line_still_shows(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "plog-then-oom",
        "[ERROR] GE(31377,python):2023-08-01-09:12:45.221.904 [op_desc.cc:1208]31377"
        " GetInputConstDataOut: ErrorNo: -1(failed)\n" + _TORCH_NPU_OOM,
    )
    assert str(report.verdict) == "gpu_oom"


@pytest.mark.parametrize(
    "line",
    [
        "{'loss': 0.4121, 'learning_rate': 1.2e-05, 'epoch': 2.99}",
        '{"loss": 1.873, "grad_norm": 3.1, "learning_rate": 2e-05, "epoch": 0.01}',
        "{'loss': 0.0， 'grad_norm': 0.0， 'global_step/max_steps': '2/1052'}",
    ],
)
def test_the_trainer_logged_dict_is_training_progress(line: str) -> None:
    assert PROGRESS.search(line)


@pytest.mark.parametrize(
    "line",
    ["{'loss_scale': 1024.0}", "'eval_loss': nan", "Map:   4%|▍ | 9000/203823 [02:18<50:34]"],
)
def test_a_loss_scale_or_a_loading_bar_is_no_training_progress(line: str) -> None:
    assert not PROGRESS.search(line)


def test_a_log_of_garbled_trainer_dicts_stops_in_training(tmp_path: Path) -> None:
    """A Trainer dict retyped with full-width commas is no metrics line the ending detector
    reads, yet its `'loss': <n>` shows training: the log stops in training, not in set-up."""
    report = log_report(
        tmp_path / "dicts",
        "".join(
            f"{{'loss': 0.{n}， 'grad_norm': 0.3， 'learning_rate': 1e-05， 'epoch': 0.0{n}}}\n"
            for n in range(1, 4)
        ),
    )
    assert report.assessment is not None
    assert "before any training progress" not in report.assessment.reason


_CLASS = re.compile(r"\[(?:\\.|[^\]\\])*\]")


def test_no_rule_pattern_puts_a_non_ascii_character_in_a_class() -> None:
    """The scan backend matches UTF-8 bytes: a class holding `：` would match one byte of it,
    so the line is never proposed. Such a character goes in an alternation (`(?::|：)`)."""
    found = [
        (rule.id, cls)
        for rule in shipped_rules()
        for pattern in rule.patterns
        for cls in _CLASS.findall(pattern)
        if not cls.isascii()
    ]
    assert not found
