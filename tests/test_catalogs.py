"""Catalog tables: every shipped table is valid and recognised, and a bad one is refused."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crashlens.cli import app
from crashlens.errors import PatternError
from crashlens.library import tables_dir
from crashlens.match.catalogs import (
    CATEGORIES,
    MIN_TEXT,
    PATTERN_BUDGET,
    Catalog,
    CatalogEntry,
    CoverageRow,
    catalog_coverage,
    catalog_patterns,
    coverage,
    literal_pattern,
    load_catalog,
    load_catalogs,
    parse_catalog,
    referenced_entries,
)
from crashlens.match.rules import Rule, parse_rule, shipped_rules

CATALOGS = load_catalogs()
ENTRIES = [(catalog, entry) for catalog in CATALOGS for entry in catalog.entries]


def _rules_referencing() -> dict[tuple[str, str], list[Rule]]:
    """(table, entry id) -> the shipped rules whose `catalog` selects that entry."""
    found: dict[tuple[str, str], list[Rule]] = {}
    for rule in shipped_rules():
        data = tomllib.loads(Path(rule.source).read_text(encoding="utf-8"))
        spec = data.get("match", {}).get("catalog")
        references = spec if isinstance(spec, list) else [spec] if spec else []
        for reference in references:
            for entry in referenced_entries(reference, rule.source):
                found.setdefault((reference["table"], entry.id), []).append(rule)
    return found


REFERENCING = _rules_referencing()


def _good_table(**entry_changes: object) -> dict[str, object]:
    entry: dict[str, object] = {
        "id": "cudaErrorMemoryAllocation",
        "code": 2,
        "texts": ["cudaErrorMemoryAllocation", "CUDA error: out of memory"],
        "category": "gpu_oom",
        "meaning": "The device ran out of memory.",
        "source": "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html",
        "example": "RuntimeError: CUDA error: out of memory",
    }
    entry.update(entry_changes)
    return {
        "catalog": {
            "name": "fixture",
            "title": "A fixture",
            "sources": ["https://docs.nvidia.com/cuda/"],
        },
        "entry": [{k: v for k, v in entry.items() if v is not None}],
    }


def test_shipped_tables_load() -> None:
    names = {catalog.name for catalog in CATALOGS}
    assert names == {Path(p).stem for p in tables_dir().glob("*.toml")} - {"xid", "finish_signs"}
    assert {"cuda_errors", "nccl", "signals", "torch_checkpoint"} <= names
    for catalog in CATALOGS:
        assert catalog.entries, catalog.path
        assert Path(catalog.path).stem == catalog.name


@pytest.mark.parametrize(
    ("catalog", "entry"), ENTRIES, ids=[f"{c.name}:{e.id}" for c, e in ENTRIES]
)
def test_entry_is_sound_and_recognised(catalog: Catalog, entry: CatalogEntry) -> None:
    assert entry.category in CATEGORIES
    assert any(text in entry.example for text in entry.texts)
    for text in entry.texts:
        assert len(text) >= MIN_TEXT and "\n" not in text and "\r" not in text
    rules = REFERENCING.get((catalog.name, entry.id), [])
    assert rules, f"{catalog.path}: no rule references {entry.id}"
    assert any(rule.match_line(entry.example) is not None for rule in rules), (
        f"{catalog.path}: no rule referencing {entry.id} hits its example {entry.example!r}"
    )


def test_each_entry_has_one_owning_rule() -> None:
    """Two rules selecting one entry would count the same line twice (twins)."""
    twins = {key: [r.id for r in rules] for key, rules in REFERENCING.items() if len(rules) > 1}
    assert not twins


def test_a_rule_argues_for_a_cause_its_entries_can_mean() -> None:
    """A cause entry is owned by a rule of its category, an ambiguous one by one of its `also`."""
    for (table, entry_id), rules in REFERENCING.items():
        entry = next(e for c in CATALOGS if c.name == table for e in c.entries if e.id == entry_id)
        if entry.category in ("application", "noise"):
            continue
        allowed = {entry.category} | {category.value for category, _ in entry.also}
        for rule in rules:
            assert rule.category.value in allowed, f"{rule.id} owns {table}:{entry_id}"


def test_rules_coverage_command_prints_every_table() -> None:
    result = CliRunner().invoke(app, ["rules", "coverage"])
    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line.split()[1] for line in result.output.splitlines()}
    for row in coverage(shipped_rules()):
        assert lines[row.table] == f"{row.covered}/{row.entries}"


def test_ids_and_texts_are_unique_per_table() -> None:
    for catalog in CATALOGS:
        ids = [entry.id for entry in catalog.entries]
        assert len(ids) == len(set(ids)), catalog.path
        texts = [text for entry in catalog.entries for text in entry.texts]
        assert len(texts) == len(set(texts)), catalog.path


def test_literal_pattern_matches_texts_literally_and_prefers_the_longest() -> None:
    pattern = re.compile(literal_pattern(["a.b(c)", "x|y*z", "a.b(c) more"]))
    assert pattern.search("see a.b(c) more here")[0] == "a.b(c) more"  # type: ignore[index]
    assert pattern.search("x|y*z") is not None
    assert pattern.search("aXb(c)") is None
    assert pattern.search("xy") is None


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"texts": ["oom"]}, "texts"),
        ({"texts": []}, "texts"),
        ({"texts": ["two\nlines"]}, "texts"),
        ({"category": "gpu"}, "category"),
        ({"category": "ambiguous"}, "also"),
        ({"also": {"gpu": 0.1}}, "also"),
        ({"also": {"host_oom": 2}}, "also.host_oom"),
        ({"example": "nothing from the texts"}, "example"),
        ({"source": "http://example.com"}, "source"),
        ({"code": "2"}, "code"),
        ({"role": "cause"}, "role"),
        ({"meaning": None}, "meaning"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_entry_names_file_and_field(changes: dict[str, object], field: str) -> None:
    with pytest.raises(PatternError) as caught:
        parse_catalog(_good_table(**changes), "tables/fixture.toml")
    assert caught.value.path == "tables/fixture.toml"
    assert "entry[0] (cudaErrorMemoryAllocation)" in str(caught.value)
    assert f"`{field}`" in str(caught.value) or field in str(caught.value)


def test_bad_header_and_duplicates_are_refused(tmp_path: Path) -> None:
    table = _good_table()
    table["entry"] = [table["entry"][0], dict(table["entry"][0])]  # type: ignore[index]
    with pytest.raises(PatternError, match=r"field `id` is listed twice"):
        parse_catalog(table, "fixture.toml")
    with pytest.raises(PatternError, match=r"catalog: field `name`"):
        parse_catalog(_good_table(), "tables/other.toml")
    path = tmp_path / "fixture.toml"
    path.write_text("[catalog\nname = 1\n", encoding="utf-8")
    with pytest.raises(PatternError, match="not valid TOML") as caught:
        load_catalog(path)
    assert caught.value.path == str(path)


def _library(tmp_path: Path) -> Path:
    """A one-table library: three entries, two of them gpu_oom, one application."""
    tables = tmp_path / "tables"
    tables.mkdir()
    (tables / "fixture.toml").write_text(
        """
[catalog]
name = "fixture"
title = "Fixture"
sources = ["https://docs.nvidia.com/cuda/"]

[[entry]]
id = "oom"
texts = ["CUDA error: out of memory", "cudaErrorMemoryAllocation"]
category = "gpu_oom"
meaning = "Out of device memory."
source = "https://docs.nvidia.com/cuda/"
example = "RuntimeError: CUDA error: out of memory"

[[entry]]
id = "cublas-alloc"
texts = ["CUBLAS_STATUS_ALLOC_FAILED"]
category = "gpu_oom"
meaning = "cuBLAS could not allocate."
source = "https://docs.nvidia.com/cuda/cublas/"
example = "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"

[[entry]]
id = "invalid-value"
texts = ["cudaErrorInvalidValue"]
category = "application"
meaning = "A bad argument."
source = "https://docs.nvidia.com/cuda/"
example = "cudaErrorInvalidValue: invalid argument"
""",
        encoding="utf-8",
    )
    (tmp_path / "gpu_oom").mkdir()
    return tmp_path


def _rule(library: Path, catalog: object) -> Rule:
    data = {
        "id": "gpu-oom-fixture",
        "category": "gpu_oom",
        "role": "root",
        "weight": 0.9,
        "title": "fixture",
        "match": {"catalog": catalog},
        "remediation": {"steps": [{"text": "Use less memory."}]},
        "examples": {"match": ["x"], "no_match": ["y"]},
    }
    return parse_rule(data, str(library / "gpu_oom" / "gpu-oom-fixture.toml"), "gpu_oom")


def test_rule_reference_expands_the_selected_texts(tmp_path: Path) -> None:
    library = _library(tmp_path)
    by_category = _rule(library, {"table": "fixture", "category": "gpu_oom"})
    assert by_category.match_line("[rank0]: RuntimeError: CUDA error: out of memory") is not None
    assert by_category.match_line("CUBLAS_STATUS_ALLOC_FAILED when calling") is not None
    assert by_category.match_line("cuda error: OUT OF MEMORY") is None  # texts are exact
    assert by_category.match_line("cudaErrorInvalidValue") is None
    by_id = _rule(library, {"table": "fixture", "ids": ["invalid-value"]})
    assert by_id.match_line("cudaErrorInvalidValue: invalid argument") is not None
    assert by_id.match_line("CUDA error: out of memory") is None
    both = [{"table": "fixture", "ids": ["oom"]}, {"table": "fixture", "ids": ["invalid-value"]}]
    assert len(_rule(library, both).patterns) == 1


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ({"table": "missing", "category": "gpu_oom"}, "no table 'missing'"),
        ({"table": "fixture"}, "exactly one of"),
        ({"table": "fixture", "category": "gpu_oom", "ids": ["oom"]}, "exactly one of"),
        ({"table": "fixture", "category": "network"}, "has no 'network' entry"),
        ({"table": "fixture", "category": "gpu"}, "not a category"),
        ({"table": "fixture", "ids": ["nope"]}, "fixture has no nope"),
        ({"table": "fixture", "ids": ["oom"], "flavour": 1}, "unknown fields: flavour"),
        ({"table": "xid", "category": "hardware"}, "other than xid"),
        ("fixture", "each reference is a table"),
    ],
)
def test_bad_reference_names_the_rule_file(tmp_path: Path, reference: object, message: str) -> None:
    library = _library(tmp_path)
    with pytest.raises(PatternError, match=re.escape(message)) as caught:
        _rule(library, reference)
    assert caught.value.path.endswith("gpu-oom-fixture.toml")
    assert "match.catalog" in str(caught.value)


def test_coverage_counts_entries_whose_example_a_rule_hits(tmp_path: Path) -> None:
    library = _library(tmp_path)
    catalog = load_catalog(library / "tables" / "fixture.toml")
    oom_only = _rule(library, {"table": "fixture", "ids": ["oom"]})
    row = catalog_coverage(catalog, [oom_only])
    assert (row.table, row.entries, row.covered, row.missing) == (
        "fixture",
        3,
        1,
        ("cublas-alloc", "invalid-value"),
    )
    all_oom = _rule(library, {"table": "fixture", "category": "gpu_oom"})
    assert catalog_coverage(catalog, [oom_only, all_oom]).covered == 2
    assert catalog_coverage(catalog, []).covered == 0
    rows = coverage([all_oom], library / "tables")
    assert [(r.table, r.covered) for r in rows] == [("fixture", 2)]


def test_shipped_coverage_lists_every_table_with_the_xid_table(
    shipped_coverage: dict[str, CoverageRow],
) -> None:
    rows = tuple(shipped_coverage.values())
    names = [row.table for row in rows]
    assert names == sorted({catalog.name for catalog in CATALOGS} | {"xid", "finish_signs"})
    for row in rows:
        assert 0 <= row.covered <= row.entries
        assert len(row.missing) == row.entries - row.covered
    assert catalog_patterns(None, str(tables_dir())) == ()


def test_a_shell_word_list_is_checked() -> None:
    entry = {
        "id": "SIGKILL",
        "code": 9,
        "texts": ["Signal 9 (SIGKILL)"],
        "shell": ["Killed", " padded "],
        "category": "ambiguous",
        "also": {"host_oom": 0.35},
        "meaning": "killed",
        "source": "https://man7.org/linux/man-pages/man7/signal.7.html",
        "example": "Signal 9 (SIGKILL) received by PID 7",
    }
    table = {"catalog": {"name": "t", "title": "t", "sources": ["https://x.example"]}}
    with pytest.raises(PatternError, match="shell"):
        parse_catalog({**table, "entry": [entry]}, "t.toml")
    entry["shell"] = ["Killed", "已杀死"]
    parsed = parse_catalog({**table, "entry": [entry]}, "t.toml")
    assert parsed.entries[0].shell == ("Killed", "已杀死")


# Printed forms: one message, every way programs print it.


def _printed_table(*forms: str, **entry_changes: object) -> dict[str, object]:
    table = _good_table(message="out of memory", **entry_changes)
    table["catalog"]["printed"] = list(forms)  # type: ignore[index]
    return table


def test_printed_forms_give_an_entry_its_message_as_each_program_prints_it() -> None:
    forms = ("Cuda failure {code} '{message}'", "CUDA runtime error: {message}")
    entry = parse_catalog(_printed_table(*forms), "tables/fixture.toml").entries[0]
    assert entry.texts[:2] == ("cudaErrorMemoryAllocation", "CUDA error: out of memory")
    assert "Cuda failure 2 'out of memory'" in entry.texts
    assert "CUDA runtime error: out of memory" in entry.texts
    # a form with the code is left out for an entry without one; the others stay
    codeless = parse_catalog(_printed_table(*forms, code=None), "tables/fixture.toml")
    assert codeless.entries[0].texts[-1] == "CUDA runtime error: out of memory"
    assert not any(text.startswith("Cuda failure") for text in codeless.entries[0].texts)
    # without a message an entry keeps its own texts
    plain = _printed_table(*forms)
    del plain["entry"][0]["message"]  # type: ignore[index]
    assert len(parse_catalog(plain, "tables/fixture.toml").entries[0].texts) == 2


@pytest.mark.parametrize(
    "form", ["CUDA error", "Cuda failure {code}", "{message} at {file}", "two\n{message}"]
)
def test_a_printed_form_without_its_message_is_refused(form: str) -> None:
    with pytest.raises(PatternError, match=r"catalog: field `printed`"):
        parse_catalog(_printed_table(form), "tables/fixture.toml")


@pytest.mark.parametrize(
    ("line", "rule_id"),
    [
        # FasterTransformer's and TurboMind's check_cuda_error (not the NCCL form of the rule)
        (
            "[FT][ERROR] CUDA runtime error: out of memory /workspace/FasterTransformer/src/"
            "fastertransformer/utils/allocator.h:181",
            "gpu-oom-cuda-error-out-of-memory",
        ),
        ("RuntimeError: CUDA failed with error out of memory", "gpu-oom-cuda-error-out-of-memory"),
        (
            "misc/strongstream.cc:310 NCCL WARN Cuda failure 2 'out of memory'",
            "gpu-oom-cuda-error-out-of-memory",
        ),
        (
            "GPUassert: no kernel image is available for execution on the device kernel.cu 42",
            "driver-no-kernel-image",
        ),
        (
            "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=50 error=35 : "
            "CUDA driver version is insufficient for CUDA runtime version",
            "driver-cuda-driver-insufficient",
        ),
        (
            "include/alloc.h:48 NCCL WARN Cuda failure 'an illegal memory access was encountered'",
            "hardware-cuda-illegal-memory-access",
        ),
    ],
)
def test_shipped_cuda_errors_are_known_in_every_printed_form(line: str, rule_id: str) -> None:
    rule = next(rule for rule in shipped_rules() if rule.id == rule_id)
    assert rule.match_line(line) is not None


def test_a_rule_of_many_entries_gets_patterns_within_the_budget() -> None:
    # the programming-error rule selects every `application` CUDA error in every printed form
    rule = next(rule for rule in shipped_rules() if rule.id == "hardware-cuda-programming-error")
    assert len(rule.patterns) > 1
    assert all(len(pattern) <= PATTERN_BUDGET + 200 for pattern in rule.patterns)
    assert rule.match_line("GPUassert: invalid configuration argument kernel.cu 42") is not None
    assert rule.match_line("CUDA runtime error: invalid argument") is not None
