"""A job's own log shows it ran in a Docker container (fact `log.container`: docker compose's
prefix, a prompt or NCCL prefix on a host named by a container id), and a data-loading worker's
death there is read as the container's default /dev/shm (shm-container-explains-worker-exit)."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.parsers.base import collect_text
from crashlens.parsers.launcher import LauncherParser
from mechanism_helpers import log_report

WORKER_DIED = "RuntimeError: DataLoader worker (pid(s) 412, 418) exited unexpectedly\n"


def _container(text: str) -> str | None:
    _, facts = collect_text(LauncherParser(), text, "train.log")
    found = [item for item in facts if item.key == "log.container"]
    return str(found[0].value) if found else None


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("trainer_1  | epoch 1 step 10 loss 2.31", "compose"),
        ("trainer-1  | epoch 1 step 10 loss 2.31", "compose"),
        ("root@3f2a9c1b7d4e:/workspace# python train.py", "prompt"),
        ("3f2a9c1b7d4e:118:204 [0] NCCL INFO Bootstrap : Using eth0:172.17.0.2<0>", "nccl"),
    ],
)
def test_the_container_shows_in_the_log(line: str, kind: str) -> None:
    assert _container(line + "\n") == kind


@pytest.mark.parametrize(
    "line",
    [
        "user@node-01:~/work$ python train.py",
        "node-01:118:204 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.11<0>",
        "| epoch | loss | acc |",
        "root@123456789012:/# ls",
    ],
)
def test_a_host_or_a_table_is_no_container(line: str) -> None:
    assert _container(line + "\n") is None


def test_a_worker_death_in_a_compose_service_reads_as_shared_memory(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "compose",
        "trainer_1  | epoch 3 step 120 loss 0.912\n"
        f"trainer_1  | {WORKER_DIED}"
        "trainer_1 exited with code 1\n",
    )
    assert report.causes[0].category.value == "shm"
    assert "shm-container-explains-worker-exit" in {item.rule for item in report.causes[0].evidence}


def test_a_worker_death_outside_a_container_is_not_explained_so(tmp_path: Path) -> None:
    report = log_report(
        tmp_path / "host", "user@node-01:~$ python train.py\nepoch 3 step 120\n" + WORKER_DIED
    )
    assert "shm-container-explains-worker-exit" not in {
        item.rule for cause in report.causes for item in cause.evidence
    }
