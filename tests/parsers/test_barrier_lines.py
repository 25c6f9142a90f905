"""PyTorch's store-based barrier counting more processes than the job has: the store holds keys
of another run (a reused `file://` init file, a master port shared with another job), a
rendezvous fault; a barrier still filling up (fewer joined than the world size) is not one.
Logs written for the test, in the barrier's two wordings."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.pipeline import analyze, analyze_inputs

WAITING = (
    "2023-03-14 09:12:44,107 INFO Added key: store_based_barrier_key:1 to store for rank: 0\n"
    "2023-03-14 09:12:54,118 INFO Waiting in store based barrier to initialize process group for"
    " rank: 0, key: store_based_barrier_key:1 (world_size={world}, worker_count={joined},"
    " timeout=0:30:00)\n"
)
TIMED_OUT = (
    "torch.distributed.DistStoreError: Timed out initializing process group in store based"
    " barrier on rank 1, for key: store_based_barrier_key:1 (world_size={world},"
    " num_workers_joined={joined}, timeout=0:30:00 error=Wait timeout)\n"
)


def _overcounts(tmp_path: Path, text: str) -> list[tuple[object, object, object]]:
    path = tmp_path / "train.log"
    path.write_text(text, encoding="utf-8")
    [analysis] = analyze_inputs([str(path)])
    return [
        (f.value, f.attr("world_size"), f.attr("joined"))
        for f in analysis.facts
        if f.key == "rendezvous.overcount"
    ]


@pytest.mark.parametrize("template", [WAITING, TIMED_OUT])
def test_a_count_above_the_world_size_is_read(tmp_path: Path, template: str) -> None:
    assert _overcounts(tmp_path, template.format(world=8, joined=13)) == [(5, 8, 13)]


@pytest.mark.parametrize("template", [WAITING, TIMED_OUT])
def test_a_barrier_still_filling_up_is_not_an_overcount(tmp_path: Path, template: str) -> None:
    assert _overcounts(tmp_path, template.format(world=8, joined=3)) == []
    assert _overcounts(tmp_path, template.format(world=8, joined=8)) == []


def test_a_reused_store_is_the_rendezvous(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text(WAITING.format(world=4, joined=40), encoding="utf-8")
    report = analyze([str(path)])
    assert str(report.verdict) == "network", [(c.category, c.confidence) for c in report.causes]
    rules = {item.rule for cause in report.causes for item in cause.evidence}
    assert "network-rendezvous-store-reused" in rules
