"""OpenCL's error codes (patterns/tables/opencl_errors.toml): each entry's example is read by the
rule of its kind, PyOpenCL's names without `CL_` are read as the codes they name, and an
OpenCL job that found no platform is decided a driver failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashlens.library import tables_dir
from crashlens.match.catalogs import CatalogEntry, load_catalog
from mechanism_helpers import report_of, rules_hitting

TABLE = load_catalog(tables_dir() / "opencl_errors.toml")
RULE_OF_ENTRY = {
    "CL_PLATFORM_NOT_FOUND_KHR": "driver-opencl-runtime-unavailable",
    "CL_DEVICE_NOT_FOUND": "driver-opencl-runtime-unavailable",
    "CL_COMPILER_NOT_AVAILABLE": "driver-opencl-runtime-unavailable",
    "CL_LINKER_NOT_AVAILABLE": "driver-opencl-runtime-unavailable",
    "CL_DEVICE_NOT_AVAILABLE": "driver-opencl-device-not-available",
    "CL_MEM_OBJECT_ALLOCATION_FAILURE": "gpu-oom-opencl-mem-object-allocation-failure",
    "CL_OUT_OF_RESOURCES": "gpu-oom-opencl-out-of-resources",
    "CL_OUT_OF_HOST_MEMORY": "host-oom-gpu-runtime-out-of-host-memory",
    "CL_BUILD_PROGRAM_FAILURE": "driver-opencl-program-build-failed",
    "CL_COMPILE_PROGRAM_FAILURE": "driver-opencl-program-build-failed",
    "CL_LINK_PROGRAM_FAILURE": "driver-opencl-program-build-failed",
}
CALL_REJECTED = "driver-gpu-library-call-rejected"
SYCL_OUT_OF_RESOURCES = (
    "RuntimeError: Native API failed. Native API returns: -5 (CL_OUT_OF_RESOURCES)"
    " -5 (CL_OUT_OF_RESOURCES)"
)
SYCL_BUILD_FAILED = (
    "RuntimeError: Native API failed. Native API returns: -11 (PI_ERROR_BUILD_PROGRAM_FAILURE)"
    " -11 (PI_ERROR_BUILD_PROGRAM_FAILURE)"
)


def _rule_of(entry: CatalogEntry) -> str:
    if entry.category == "application":
        return CALL_REJECTED
    return RULE_OF_ENTRY[entry.id]


@pytest.mark.parametrize("entry", TABLE.entries, ids=[entry.id for entry in TABLE.entries])
def test_each_code_is_read_by_the_rule_of_its_kind(entry: CatalogEntry) -> None:
    hit = rules_hitting(entry.example)
    assert _rule_of(entry) in hit, (entry.id, hit)


def test_every_cause_bearing_entry_has_a_rule_of_its_own() -> None:
    named = {entry.id for entry in TABLE.entries if entry.category != "application"}
    assert named == set(RULE_OF_ENTRY)


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        # OpenCV's printer: the name and the number
        (
            "OpenCL error CL_OUT_OF_RESOURCES (-5) during call: clFinish",
            "gpu-oom-opencl-out-of-resources",
        ),
        # PyOpenCL drops the CL_ prefix
        (
            "pyopencl._cl.MemoryError: create_buffer failed: MEM_OBJECT_ALLOCATION_FAILURE",
            "gpu-oom-opencl-mem-object-allocation-failure",
        ),
        (
            "pyopencl._cl.LogicError: clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR",
            "driver-opencl-runtime-unavailable",
        ),
    ],
)
def test_printed_forms_are_read(line: str, rule: str) -> None:
    assert rule in rules_hitting(line)


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        # SYCL prints OpenCL's name of -5 in its own layout: the Intel runtime's rule reads it
        (SYCL_OUT_OF_RESOURCES, "gpu-oom-opencl-out-of-resources"),
        # the Intel runtime's build failure is its own driver rule's
        (SYCL_BUILD_FAILED, "driver-opencl-program-build-failed"),
        # a bad call's INVALID_* word without CL_ is not OpenCL's
        ("cudaMemcpy failed: INVALID_VALUE", CALL_REJECTED),
    ],
)
def test_other_runtimes_lines_are_left_to_their_rules(line: str, rule: str) -> None:
    assert rule not in rules_hitting(line)


def test_sycl_out_of_resources_stays_the_intel_rules() -> None:
    assert "gpu-oom-intel-gpu-out-of-resources" in rules_hitting(SYCL_OUT_OF_RESOURCES)


def test_an_opencl_job_without_a_platform_is_a_driver_failure(tmp_path: Path) -> None:
    """A container job whose OpenCL ICD loader finds no platform dies at start-up."""
    report = report_of(
        tmp_path / "job",
        {
            "train.log": (
                "Loading dataset from /data/train ...\n"
                "Traceback (most recent call last):\n"
                '  File "/app/train.py", line 41, in <module>\n'
                "    ctx = cl.create_some_context(interactive=False)\n"
                "pyopencl._cl.LogicError: clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR\n"
            ),
        },
    )
    assert str(report.verdict) == "driver"
    assert "driver-opencl-runtime-unavailable" in {item.rule for item in report.causes[0].evidence}
