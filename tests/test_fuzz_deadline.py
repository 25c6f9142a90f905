"""The fuzz harnesses' deadline counts the input's CPU time, so a loaded machine is no hang, and
still ends a block that only waits, at its wall-time cap."""

from __future__ import annotations

import time

import pytest

from fuzz_harnesses import WALL_CAP, Hang, deadline


def test_a_busy_block_is_stopped_after_its_cpu_time() -> None:
    started = time.process_time()
    with pytest.raises(Hang, match="CPU time"), deadline(0.2):
        while True:
            pass
    assert time.process_time() - started >= 0.2


def test_a_block_that_waits_less_than_the_cap_is_let_finish() -> None:
    # 0.5 s of wall time and no CPU: what a block looks like whose process the machine starves
    with deadline(0.2):
        time.sleep(0.5)


def test_a_block_that_only_waits_ends_at_the_wall_cap() -> None:
    started = time.monotonic()
    with pytest.raises(Hang, match="wall-time cap"), deadline(0.05):
        time.sleep(0.05 * WALL_CAP * 20)
    assert time.monotonic() - started < 0.05 * WALL_CAP * 20
