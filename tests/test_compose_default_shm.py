"""A compose service that sets neither shm_size nor ipc gets Docker's 64 MiB /dev/shm.

Written for the mechanism (a trainer service with GPU reservations and a DataLoader crash),
not copied from a corpus case.
"""

from __future__ import annotations

from pathlib import Path

from crashlens.match.rules import shipped_rules
from crashlens.model import Category
from crashlens.pipeline import analyze_inputs, build_report

COMPOSE = """services:
  trainer:
    image: registry.example/trainer:2.3
    command: torchrun --nproc_per_node 4 train.py
    deploy:
      resources:
        reservations:
          devices:
            - driver: nvidia
              count: 4
              capabilities: [gpu]
"""
LOG = (
    "epoch 0 step 10 loss 2.31\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.11/multiprocessing/shared_memory.py", line 115, in __init__\n'
    "OSError: [Errno 28] No space left on device\n"
)


def _hits(tmp_path: Path, compose: str) -> list[str]:
    (tmp_path / "docker-compose.yml").write_text(compose, encoding="utf-8")
    (tmp_path / "train.log").write_text(LOG, encoding="utf-8")
    rules = shipped_rules()
    analyses = analyze_inputs([str(tmp_path)], rules=rules)
    report = build_report(analyses, rules)
    assert report.causes and report.causes[0].category is Category.SHM
    return [hit.rule_id for a in analyses for hit in a.hits]


def test_a_service_without_shm_size_gets_the_default(tmp_path: Path) -> None:
    assert "shm-compose-default-64m" in _hits(tmp_path, COMPOSE)


def test_a_service_with_shm_size_or_the_hosts_ipc_does_not(tmp_path: Path) -> None:
    for name, setting in (("sized", "shm_size: '16gb'"), ("shared", "ipc: host")):
        folder = tmp_path / name
        folder.mkdir()
        compose = COMPOSE.replace("    command:", f"    {setting}\n    command:")
        assert "shm-compose-default-64m" not in _hits(folder, compose)
