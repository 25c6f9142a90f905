"""Shared test fixtures: where the sample inputs live."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# Test modules import names from the shared Dask/S3 fixture plugin before pytest loads it as a
# plugin; registered here, it is rewritten on that first import, so a file run alone collects.
pytest.register_assert_rewrite("service_helpers")

# Tests never write to the user's cache: compiled scan databases go to a throwaway folder.
os.environ.setdefault("CRASHLENS_CACHE_DIR", tempfile.mkdtemp(prefix="crashlens-test-cache-"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        help="rewrite tests/data/golden/ from the current output instead of comparing with it",
    )


ROOT = Path(__file__).resolve().parents[1]
SAMPLES = Path(__file__).resolve().parent / "data" / "samples"
"""Real outputs of every format crashlens reads, one folder per input kind (provenance in
SOURCES.md): `tests/data/samples/<kind>/`, where `<kind>` is an `InputKind` value."""


def sample(relative: str) -> Path:
    """Path of a file under tests/data/samples (`relative` starts with its kind's folder)."""
    path = SAMPLES / relative
    assert path.exists(), f"sample {relative} is missing from tests/data/samples"
    return path


def sample_text(relative: str) -> str:
    """A sample decoded as crashlens reads it (UTF-8 with replacement)."""
    return sample(relative).read_bytes().decode("utf-8", errors="replace")


@pytest.fixture(scope="session")
def shipped_coverage() -> dict[str, object]:
    """`crashlens rules coverage`'s rows for the shipped library, by table: each row tries
    every rule on every catalog example (several seconds), and a dozen tests read them."""
    from crashlens.match.catalogs import coverage
    from crashlens.match.rules import shipped_rules

    return {row.table: row for row in coverage(shipped_rules())}


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Tests marked `no_cover` run with no line tracer, on xdist workers too.

    pytest-cov pauses its measurement around such a test (its own wrapper runs outside this
    one), but on an xdist worker stopping its collector resumes the collector below it on
    coverage's stack, which goes on tracing: the timing suites ran 4x slower for it. Inside
    that wrapper, whatever tracer is still installed is taken off for the call and put back
    (coverage's C tracer reinstalls its fast path when set again)."""
    if item.get_closest_marker("no_cover") is None:
        yield
        return
    tracer = sys.gettrace()
    sys.settrace(None)
    try:
        yield
    finally:
        sys.settrace(tracer)
