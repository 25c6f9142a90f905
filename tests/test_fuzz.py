"""A short, deterministic fuzz run of every harness (`tests/fuzz_harnesses.py`) for CI.

The same harnesses run for hours with `python bench/fuzz.py --minutes N`. Here each gets a
fixed number of examples from a derandomized hypothesis (the same inputs on every run, so
CI is stable) and a per-input deadline. A failure already reported to its owner
(`tests/test_fuzz_regressions.py`, `OPEN`) is not failed again here: its own strict xfail
test says when it is fixed.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from fuzz_harnesses import HARNESSES, Harness, deadline, signature
from test_fuzz_regressions import OPEN

EXAMPLES = int(os.environ.get("CRASHLENS_FUZZ_EXAMPLES", "200"))
"""Examples per harness (more with the environment variable, e.g. before a release)."""
DEADLINE_S = 30.0
"""An input that takes longer is a hang (generous: a CI machine may be slow and busy)."""
SLOW = {"pipeline": 4}
"""Harnesses whose one example costs much more get this many times fewer examples."""


def _run(harness: Harness) -> None:
    examples = max(20, EXAMPLES // SLOW.get(harness.name, 1))

    @settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )
    @given(harness.strategy)
    def check(drawn: Any) -> None:
        try:
            with deadline(DEADLINE_S):
                harness.check(drawn)
        except Exception as error:
            if signature(harness.name, error) in OPEN:
                return  # known and handed over: its regression test tracks it
            raise

    check()


@pytest.mark.parametrize("name", sorted(HARNESSES))
def test_fuzz_harness(name: str) -> None:
    _run(HARNESSES[name])
