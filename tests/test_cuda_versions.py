"""A CUDA runtime newer than the driver (`decide/cuda_versions.py`): the fact two inputs show
together, and the driver verdict it gives a version-blind CUDA failure."""

from __future__ import annotations

from pathlib import Path

from crashlens.decide.cuda_versions import (
    NEWER,
    cuda_version,
    driver_table,
    driver_version,
    runtime_newer_than_driver,
)
from crashlens.model import Fact
from crashlens.parsers.base import fact
from mechanism_helpers import report_of

from conftest import sample_text


def _runtime(version: str, line: int = 7) -> Fact:
    return fact(
        "cuda.version", version, "train.log", line, text=f"NCCL version 2.18.1+cuda{version}"
    )


def _smi(cuda: str | None, driver: str | None) -> list[Fact]:
    found = []
    if driver is not None:
        found.append(fact("nvidia_smi.driver_version", driver, "smi.txt", 3))
    if cuda is not None:
        found.append(fact("nvidia_smi.cuda_version", cuda, "smi.txt", 3))
    return found


def test_versions_are_read_as_numbers() -> None:
    assert cuda_version("12.1.105") == (12, 1)
    assert cuda_version(" 11.8 ") == (11, 8)
    assert cuda_version("twelve") is None
    assert driver_version("515.43.04") == (515, 43, 4)
    assert driver_version("570.26") == (570, 26)
    assert driver_version("N/A") is None


def test_the_table_gives_the_newest_cuda_a_driver_runs() -> None:
    table = driver_table()
    assert table.cuda_of((515, 43, 4)) == (11, 7)
    assert table.cuda_of((520, 61, 5)) == (11, 8)
    assert table.cuda_of((384, 66)) == (8, 0)
    assert table.cuda_of((300, 1)) is None
    # as new as the newest release listed: it may run a newer one the table does not know
    assert table.cuda_of(table.releases[0][1]) is None
    assert table.cuda_of((999, 1)) is None
    # newest first, every release needing a newer driver than the one before it
    drivers = [driver for _cuda, driver in table.releases]
    assert drivers == sorted(drivers, reverse=True)


def test_a_newer_major_runtime_is_a_fact_citing_the_driver() -> None:
    derived = runtime_newer_than_driver([_runtime("12.1"), *_smi("11.4", "470.82.01")])
    assert [(f.key, f.value, f.path) for f in derived] == [(NEWER, "12.1", "smi.txt")]
    only = derived[0]
    assert only.attr("gap") == "major"
    assert only.attr("driver_cuda") == "11.4"
    assert only.attr("runtime_at") == "train.log:7"
    assert "470.82.01" in only.text


def test_minor_and_legacy_gaps_are_told_apart() -> None:
    minor = runtime_newer_than_driver([_runtime("11.8"), *_smi("11.7", "515.43.04")])
    assert [f.attr("gap") for f in minor] == ["minor"]
    # no CUDA version printed (old nvidia-smi): the driver version is read against the table
    legacy = runtime_newer_than_driver([_runtime("10.2"), *_smi(None, "410.79")])
    assert [(f.attr("gap"), f.attr("driver_cuda")) for f in legacy] == [("legacy", "10.0")]


def test_a_runtime_the_driver_runs_is_no_fact() -> None:
    assert runtime_newer_than_driver([_runtime("11.7"), *_smi("11.7", "515.43.04")]) == []
    assert runtime_newer_than_driver([_runtime("11.8"), *_smi("12.2", "535.54.03")]) == []
    # either side alone says nothing
    assert runtime_newer_than_driver([_runtime("12.4")]) == []
    assert runtime_newer_than_driver(_smi("11.4", "470.82.01")) == []
    # a driver newer than the table knows is never said to be too old
    assert runtime_newer_than_driver([_runtime("13.1"), *_smi(None, "590.48.01")]) == []


NCCL_FAILURE = (
    "node-01:4121:4121 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.11<0>\n"
    "node-01:4121:4121 [0] NCCL INFO NCCL version 2.18.1+cuda12.1\n"
    "Traceback (most recent call last):\n"
    '  File "train.py", line 41, in <module>\n'
    "    dist.all_reduce(tensor)\n"
    "torch.distributed.DistBackendError: NCCL error in: "
    "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, unhandled cuda error (run with "
    "NCCL_DEBUG=INFO for details), NCCL version 2.18.1\n"
)


def test_nccl_cuda_error_with_a_runtime_newer_than_the_driver_is_driver(tmp_path: Path) -> None:
    smi = sample_text("nvidia_smi/table_470.82.01_p100_legacy_layout_no_processes.txt")
    report = report_of(tmp_path / "job", {"train.log": NCCL_FAILURE, "nvidia-smi.txt": smi})
    assert str(report.verdict) == "driver"
    cause = report.causes[0]
    assert cause.evidence[0].rule == "driver-cuda-runtime-newer-than-driver"
    assert any("CUDA 12.1 runtime" in note and "11.4" in note for note in report.notes)


def test_the_same_failure_on_a_driver_new_enough_is_not_explained(tmp_path: Path) -> None:
    smi = sample_text("nvidia_smi/table_550.90.07_8xh100_no_processes.txt")
    report = report_of(tmp_path / "job", {"train.log": NCCL_FAILURE, "nvidia-smi.txt": smi})
    rules = {item.rule for cause in report.causes for item in cause.evidence}
    assert "driver-cuda-runtime-newer-than-driver" not in rules


def test_the_gpu_class_says_whether_forward_compatibility_could_bridge_the_gap() -> None:
    def named(name: str) -> Fact:
        return fact("gpu.name", name, "smi.txt", 9, index=0)

    runtime, smi = _runtime("12.4"), _smi("12.2", "535.161.07")
    consumer = runtime_newer_than_driver([runtime, *smi, named("NVIDIA GeForce RTX 3090")])
    datacenter = runtime_newer_than_driver([runtime, *smi, named("NVIDIA H100 80GB HBM3")])
    unnamed = runtime_newer_than_driver([runtime, *smi])
    assert [f.attr("gpu_class") for f in consumer] == ["other"]
    assert [f.attr("gpu_class") for f in datacenter] == ["datacenter"]
    assert [f.attr("gpu_class") for f in unnamed] == ["unknown"]


CUDA_UNKNOWN_AT_START = (
    "PyTorch version: 2.3.0+cu121\n"
    "Traceback (most recent call last):\n"
    '  File "train.py", line 12, in <module>\n'
    "    model = model.cuda()\n"
    "RuntimeError: CUDA error: unknown error\n"
)


def test_a_consumer_gpu_gets_the_stronger_reading(tmp_path: Path) -> None:
    smi = sample_text("nvidia_smi/table_470.82.01_p100_legacy_layout_no_processes.txt")
    consumer = smi.replace("Tesla P100-PCIE...", "GeForce GTX 1080")
    assert consumer != smi
    strong = report_of(tmp_path / "a", {"train.log": CUDA_UNKNOWN_AT_START, "smi.txt": consumer})
    weak = report_of(tmp_path / "b", {"train.log": CUDA_UNKNOWN_AT_START, "smi.txt": smi})
    assert strong.causes[0].evidence[0].rule == "driver-cuda-runtime-newer-than-driver"
    assert weak.causes[0].evidence[0].rule == "driver-cuda-runtime-newer-than-driver"
    assert strong.causes[0].confidence > weak.causes[0].confidence
    assert any("cuda-compat" in note for note in weak.notes)
