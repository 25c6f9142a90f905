"""Mechanisms learned from the batch-f first-sight misses, decided end to end on logs of their
own (never the batch's text): each folder is what a user would hand over, analyzed as
`crashlens analyze` does.

* The NVIDIA kernel module's API-mismatch message in every driver generation's wording.
* An NVIDIA device node that does not exist because its kernel module is not loaded.
* A serving stack's own check that its shared-memory region does not fit in /dev/shm.
* A DataLoader worker that exited unexpectedly in a container whose /dev/shm is Docker's
  64 MiB default (docker inspect, df inside the container): shared memory, not a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from crashlens.pipeline import analyze


@dataclass(frozen=True)
class Scenario:
    name: str
    files: dict[str, str]
    verdict: str
    rule: str | None = None
    """The rule the top cause must cite (None: the verdict is no cause)."""


SCENARIOS = (
    Scenario(
        "nvrm-api-mismatch-client-named-version-on-the-next-line",
        {
            "dmesg.txt": "[ 1201.334512] NVRM: API mismatch: the client 'nvidia-smi' (pid 9120)\n"
            "[ 1201.334515] NVRM: has the version 560.35.03, but this kernel module has\n"
            "[ 1201.334516] NVRM: the version 550.90.07.  Please make sure that this\n"
            "[ 1201.334517] NVRM: kernel module and all NVIDIA driver components\n"
            "[ 1201.334518] NVRM: have the same version.\n",
        },
        "driver",
        "driver-nvrm-api-mismatch",
    ),
    Scenario(
        "nvrm-api-mismatch-versions-redacted",
        {
            "kern.log": "Mar  3 09:12:44 gpu07 kernel: NVRM: API mismatch: the client has the "
            "version <VERSION>, but\n"
            "Mar  3 09:12:44 gpu07 kernel: NVRM: this kernel module has the version "
            "<VERSION>.  Please\n",
        },
        "driver",
        "driver-nvrm-api-mismatch",
    ),
    Scenario(
        "uvm-device-node-missing-when-a-container-starts",
        {
            "run.log": "$ docker run --rm --device /dev/nvidia0 --device /dev/nvidiactl "
            "--device /dev/nvidia-uvm trainer:3.1 python train.py\n"
            "docker: Error response from daemon: error gathering device information while "
            'adding custom device "/dev/nvidia-uvm": no such file or directory.\n',
        },
        "driver",
        "driver-nvidia-device-node-missing",
    ),
    Scenario(
        "uvm-device-node-missing-in-a-shell-check",
        {
            "check.txt": "$ python -c 'import torch; print(torch.cuda.is_available())'\n"
            "False\n"
            "$ ls -l /dev/nvidia-uvm\n"
            "ls: cannot access '/dev/nvidia-uvm': No such file or directory\n",
        },
        "driver",
        "driver-nvidia-device-node-missing",
    ),
)


WORKER_EXIT = (
    "Epoch 1/30\n"
    "  8%|8         | 41/512 [00:31<05:58,  1.31it/s]\n"
    "Traceback (most recent call last):\n"
    '  File "/workspace/fit.py", line 212, in <module>\n'
    "    for images, targets in loader:\n"
    "RuntimeError: DataLoader worker (pid(s) 5121, 5127) exited unexpectedly\n"
)


def _inspect(shm: int, ipc: str) -> str:
    return (
        '[{"Id": "b71c", "State": {"Status": "exited", "Running": false, "ExitCode": 1},'
        f' "HostConfig": {{"ShmSize": {shm}, "IpcMode": "{ipc}"}}}}]'
    )


SHM_SCENARIOS = (
    Scenario(
        "triton-python-backend-region-does-not-fit",
        {
            "tritonserver.log": "I0412 08:15:01.902114 1 python_be.cc:2127] "
            "TRITONBACKEND_ModelInstanceInitialize: tokenizer_0 (CPU device 0)\n"
            "E0412 08:15:02.119240 1 model_lifecycle.cc:621] failed to load 'tokenizer' "
            "version 1: Internal: Unable to initialize shared memory key "
            "'triton_python_backend_shm_region_1' to requested size (1048576 bytes). If you "
            "are running Triton inside docker, use '--shm-size' flag to control the shared "
            "memory region size. Each Python backend model instance requires at least 1 MB "
            "of shared memory. Error: No space left on device\n",
        },
        "shm",
        "shm-serving-stack-shared-memory-too-small",
    ),
    Scenario(
        "worker-exit-with-dockers-default-shm",
        {"train.log": WORKER_EXIT, "docker_inspect.json": _inspect(67108864, "private")},
        "shm",
        "shm-small-dev-shm-explains-worker-exit",
    ),
    Scenario(
        "worker-exit-with-a-64m-dev-shm-in-df",
        {
            "train.log": WORKER_EXIT,
            "df.txt": "Filesystem      Size  Used Avail Use% Mounted on\n"
            "overlay         1.8T  402G  1.3T  24% /\n"
            "shm              64M     0   64M   0% /dev/shm\n",
        },
        "shm",
        "shm-small-dev-shm-explains-worker-exit",
    ),
)


def _folder(tmp_path: Path, scenario: Scenario) -> Path:
    folder = tmp_path / scenario.name
    folder.mkdir()
    for name, text in scenario.files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.mark.parametrize("scenario", SCENARIOS + SHM_SCENARIOS, ids=lambda s: s.name)
def test_scenario_verdict(tmp_path: Path, scenario: Scenario) -> None:
    report = analyze([str(_folder(tmp_path, scenario))])
    assert str(report.verdict) == scenario.verdict, [
        (c.category, c.confidence) for c in report.causes
    ]
    if scenario.rule is not None:
        assert scenario.rule in {item.rule for item in report.causes[0].evidence}
    else:
        assert not report.causes


def test_missing_node_is_not_called_a_permission_problem(tmp_path: Path) -> None:
    folder = tmp_path / "open-failed"
    folder.mkdir()
    (folder / "app.log").write_text(
        "failed to open /dev/nvidia-uvm: No such file or directory\n"
        "RuntimeError: No CUDA GPUs are available\n",
        encoding="utf-8",
    )
    report = analyze([str(folder)])
    assert all(c.category != "permissions" for c in report.causes)
    assert report.causes[0].category == "driver"


def test_worker_exit_with_the_hosts_shared_memory_is_not_explained(tmp_path: Path) -> None:
    # --ipc=host: the 64 MiB ShmSize is not the job's /dev/shm, so nothing decides shm
    scenario = Scenario(
        "worker-exit-ipc-host",
        {"train.log": WORKER_EXIT, "docker_inspect.json": _inspect(67108864, "host")},
        "unknown",
    )
    report = analyze([str(_folder(tmp_path, scenario))])
    assert str(report.verdict) != "shm"
    cited = {item.rule for cause in report.causes for item in cause.evidence}
    assert "shm-small-dev-shm-explains-worker-exit" not in cited
