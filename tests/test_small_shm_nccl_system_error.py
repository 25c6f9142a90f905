"""NCCL's bare system error in a container: its own /dev/shm at Docker's 64 MiB default
explains it as shared memory (the report's notes cite the ShmSize); with the host's IPC
namespace (IpcMode host) the ShmSize is never used and explains nothing; with InfiniBand in
use and a small memlock, the locked-memory limit explains it instead."""

from __future__ import annotations

import json
from pathlib import Path

from crashlens.model import Verdict
from mechanism_helpers import report_of

from conftest import ROOT

SAMPLE = (
    ROOT
    / "tests/data/samples/docker_inspect/docker_inspect_gpus_all_default_shm64m_exited1_REPRO.json"
)
SYSTEM_ERROR = (
    "[rank2]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), "
    "NCCL version 2.19.3\n"
    "[rank2]: ncclSystemError: System call (e.g. socket, malloc) or external library call failed "
    "or device error.\n"
)


def _inspect(**host_config: object) -> str:
    document = json.loads(SAMPLE.read_text(encoding="utf-8"))
    document[0]["HostConfig"].update(host_config)
    return json.dumps(document, indent=4)


def _explained_by_shm(notes: tuple[str, ...]) -> bool:
    return any("shm-small-dev-shm-explains-nccl-system-error" in note for note in notes)


def test_the_default_64m_dev_shm_explains_the_system_error(tmp_path: Path) -> None:
    files = {"train.log": SYSTEM_ERROR, "docker_inspect.json": _inspect()}
    report = report_of(tmp_path / "job", files)
    assert report.verdict is Verdict.SHM, [(c.category, c.confidence) for c in report.causes]
    assert _explained_by_shm(report.notes)
    assert any("ShmSize" in note for note in report.notes)


def test_ipc_host_leaves_the_shm_size_unused(tmp_path: Path) -> None:
    files = {"train.log": SYSTEM_ERROR, "docker_inspect.json": _inspect(IpcMode="host")}
    report = report_of(tmp_path / "job", files)
    assert report.verdict is not Verdict.SHM
    assert not _explained_by_shm(report.notes)


def test_a_small_memlock_with_infiniband_explains_it_better(tmp_path: Path) -> None:
    ulimits = [{"Name": "memlock", "Soft": 65536, "Hard": 65536}]
    log = "+ export NCCL_IB_HCA=mlx5_0,mlx5_1\n" + SYSTEM_ERROR
    files = {"train.log": log, "docker_inspect.json": _inspect(Ulimits=ulimits)}
    report = report_of(tmp_path / "job", files)
    assert report.verdict is Verdict.PERMISSIONS, [
        (c.category, c.confidence) for c in report.causes
    ]
