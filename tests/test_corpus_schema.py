"""Schema checks for the labelled corpus under corpus/ (one folder per case).

Every case folder holds `case.toml` and a non-empty `logs/`. The checks here are about the
format only; whether crashlens names the right cause is measured elsewhere.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from crashlens.model import InputKind

CORPUS = Path(__file__).resolve().parents[1] / "corpus"

CATEGORIES = frozenset(
    {"shm", "gpu_oom", "host_oom", "hardware", "driver", "filesystem", "permissions", "network"}
)
LABELS = CATEGORIES | {"none"}
DIFFICULTIES = frozenset({"easy", "medium", "hard"})
INPUT_KINDS = frozenset(kind.value for kind in InputKind)
REQUIRED = ("label", "also_ok", "source", "label_evidence", "difficulty", "inputs")
MIN_CASES = 20
MAX_CASE_BYTES = 200 * 1024

CONSTRUCTED = CORPUS / "constructed"
"""Constructed twin pairs: scored apart (`crashlens eval corpus/constructed`), never in the real
figures, which is why they sit one level down where `crashlens eval corpus/` does not look."""
REAL_DIRS = sorted(p for p in CORPUS.iterdir() if p.is_dir() and p != CONSTRUCTED)
TWIN_DIRS = sorted(p for p in CONSTRUCTED.iterdir() if p.is_dir()) if CONSTRUCTED.is_dir() else []
CASE_DIRS = REAL_DIRS + TWIN_DIRS


def _load(case_dir: Path) -> dict[str, Any]:
    with (case_dir / "case.toml").open("rb") as fh:
        return tomllib.load(fh)


def test_corpus_has_enough_cases() -> None:
    assert len(REAL_DIRS) >= MIN_CASES, f"only {len(REAL_DIRS)} cases in {CORPUS}"


@pytest.mark.parametrize("case_dir", TWIN_DIRS, ids=lambda p: p.name)
def test_a_constructed_case_says_so_and_names_its_twin(case_dir: Path) -> None:
    meta = _load(case_dir)
    assert meta.get("constructed") is True
    twin = meta.get("twin")
    assert isinstance(twin, str) and (CONSTRUCTED / twin).is_dir(), twin
    assert _load(CONSTRUCTED / twin).get("twin") == case_dir.name, "twins name each other"


@pytest.mark.parametrize("case_dir", REAL_DIRS, ids=lambda p: p.name)
def test_a_real_case_is_not_marked_constructed(case_dir: Path) -> None:
    assert "constructed" not in _load(case_dir)


def test_case_ids_unique_ignoring_case() -> None:
    # Folder names are the case ids; a case-insensitive filesystem would merge these.
    lowered = [p.name.lower() for p in CASE_DIRS]
    assert len(lowered) == len(set(lowered))


@pytest.mark.parametrize("case_dir", CASE_DIRS, ids=lambda p: p.name)
def test_case_schema(case_dir: Path) -> None:
    assert (case_dir / "case.toml").is_file(), "case.toml is missing"
    meta = _load(case_dir)
    for key in REQUIRED:
        assert key in meta, f"{key} is missing"

    assert meta["label"] in LABELS, meta["label"]
    also_ok = meta["also_ok"]
    assert isinstance(also_ok, list)
    assert all(isinstance(x, str) and x in LABELS for x in also_ok), also_ok
    assert meta["label"] not in also_ok, "also_ok repeats the label"

    source = meta["source"]
    assert isinstance(source, str) and source.startswith("https://"), source
    assert " " not in source

    evidence = meta["label_evidence"]
    assert isinstance(evidence, str) and len(evidence.strip()) >= 20, "label_evidence too short"

    assert meta["difficulty"] in DIFFICULTIES, meta["difficulty"]

    inputs = meta["inputs"]
    assert isinstance(inputs, list) and inputs, "inputs must be a non-empty list"
    assert all(k in INPUT_KINDS for k in inputs), inputs
    assert len(inputs) == len(set(inputs)), "inputs repeats a kind"


@pytest.mark.parametrize("case_dir", CASE_DIRS, ids=lambda p: p.name)
def test_case_logs(case_dir: Path) -> None:
    logs = case_dir / "logs"
    assert logs.is_dir(), "logs/ is missing"
    files = [p for p in logs.rglob("*") if p.is_file()]
    assert files, "logs/ is empty"
    assert all(p.stat().st_size > 0 for p in files), "an input file is empty"
    total = sum(p.stat().st_size for p in case_dir.rglob("*") if p.is_file())
    assert total < MAX_CASE_BYTES, f"case is {total} bytes"
