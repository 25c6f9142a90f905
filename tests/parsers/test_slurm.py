"""Slurm inputs: sacct (parsable and fixed-width) and scontrol show job."""

from __future__ import annotations

import pytest

from crashlens.model import Fact
from crashlens.parsers.base import safe_sniff
from crashlens.parsers.slurm.memory import node_count
from crashlens.parsers.slurm.parser import SlurmJobParser
from crashlens.parsers.slurm.values import size_of, state_of

from conftest import SAMPLES, sample_text

SLURM = SlurmJobParser()


def _facts(name: str) -> list[Fact]:
    return list(SLURM.parse(sample_text(f"slurm_job/{name}"), name).facts)


def _states(facts: list[Fact]) -> list[tuple[object, ...]]:
    return [
        (f.value, f.attr("step"), f.attr("exit_code"), f.attr("signal"))
        for f in facts
        if f.key == "slurm.state"
    ]


@pytest.mark.parametrize("path", sorted((SAMPLES / "slurm_job").iterdir()), ids=lambda p: p.name)
def test_every_sample_sniffs_high(path) -> None:
    assert safe_sniff(SLURM, path.read_text(encoding="utf-8")) >= 0.8


def test_fixed_width_out_of_memory_read_whole() -> None:
    facts = _facts("sacct_fixed_width_out_of_memory_0_125_REPRO.txt")
    assert _states(facts) == [
        ("OUT_OF_MEMORY", "3820411", 0, 125),
        ("OUT_OF_MEMORY", "3820411.bat+", 0, 125),
        ("COMPLETED", "3820411.ext+", 0, 0),
    ]
    rss = next(f for f in facts if f.key == "slurm.max_rss_bytes")
    assert rss.value == 16776904 * 1024 and rss.attr("step") == "3820411.bat+"
    req = next(f for f in facts if f.key == "slurm.req_mem_bytes")
    assert req.value == 16 << 30 and req.attr("per") == "node"


def test_fixed_width_array_task() -> None:
    facts = _facts("sacct_fixed_width_array_task_failed_REPRO.txt")
    assert _states(facts) == [
        ("FAILED", "2681683_420", 1, 0),
        ("FAILED", "2681683_420+", 1, 0),
    ]


def test_parsable2_stop_states_and_cancelling_uid() -> None:
    facts = _facts("sacct_parsable2_states_cancelled_by_uid_REPRO.txt")
    states = [f for f in facts if f.key == "slurm.state"]
    assert [f.value for f in states if "." not in str(f.attr("step"))] == [
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
    ]
    assert states[0].attr("by") == "1234" and states[0].attr("node") == "node-[01-02]"
    assert max(f.value for f in facts if f.key == "slurm.max_rss_bytes") == 201326592 * 1024


def test_parsable_without_header() -> None:
    facts = _facts("sacct_parsable_noheader_trailing_pipe_REPRO.txt")
    assert _states(facts)[-1] == ("OUT_OF_MEMORY", "12346", 0, 125)


def test_scontrol_failed_job() -> None:
    facts = _facts("scontrol_show_job_failed_nonzero_exit_REPRO.txt")
    state = next(f for f in facts if f.key == "slurm.state")
    assert (state.value, state.attr("exit_code"), state.attr("reason")) == (
        "FAILED",
        1,
        "NonZeroExitCode",
    )
    assert "JobState=FAILED" in state.text and state.lineno == 4
    assert [f.value for f in facts if f.key == "slurm.reason"] == ["NonZeroExitCode"]
    assert [f.value for f in facts if f.key == "slurm.node_list"] == ["node-01"]
    assert [f.value for f in facts if f.key == "slurm.req_mem_bytes"] == [int(62.5 * 2**30)]


def test_scontrol_running_job_memory_per_cpu() -> None:
    facts = _facts("scontrol_show_job_running_min_memory_cpu_REPRO.txt")
    assert _states(facts) == [("RUNNING", "10804568", 0, 0)]
    req = next(f for f in facts if f.key == "slurm.req_mem_bytes")
    assert req.value == 4 << 30 and req.attr("per") == "cpu"
    assert not [f for f in facts if f.key == "slurm.reason"]


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("OUT_OF_ME+", ("OUT_OF_MEMORY", None)),
        ("CANCELLED by 41207", ("CANCELLED", "41207")),
        ("CANCELLED+", ("CANCELLED", None)),
        ("NODE_FAIL", ("NODE_FAIL", None)),
        ("BOGUS", None),
        ("C+", None),
    ],
)
def test_states(cell: str, expected: tuple[str, str | None] | None) -> None:
    assert state_of(cell) == expected


def test_sizes() -> None:
    assert size_of("61240388K") == (61240388 * 1024, None)
    assert size_of("120Gn") == (120 << 30, "node")
    assert size_of("4000Mc") == (4000 << 20, "cpu")
    assert size_of("", "K") is None
    assert size_of("9" * 40) is None


def test_truncated_and_garbage_never_raise() -> None:
    for path in sorted((SAMPLES / "slurm_job").iterdir()):
        text = path.read_text(encoding="utf-8")
        assert len(SLURM.parse(text[: len(text) // 2], "x").facts) <= len(
            SLURM.parse(text, "x").facts
        )
    for garbage in ("", "JobID|", "JobId=", "|||\n|||", "\x00" * 10, "JobID\n-----  ----\n x"):
        assert isinstance(SLURM.parse(garbage, "x").facts, tuple)


def _peaks(facts: list[Fact]) -> dict[object, Fact]:
    return {f.attr("step"): f for f in facts if f.key == "slurm.mem_peak_percent"}


def test_peak_at_the_request_of_an_out_of_memory_step() -> None:
    """ReqMem `16Gn` (per node), MaxRSS 16776904K: the batch step used all it asked for."""
    peaks = _peaks(_facts("sacct_fixed_width_out_of_memory_0_125_REPRO.txt"))
    batch = peaks["3820411.bat+"]
    assert batch.value == 100.0 and batch.lineno == 4
    assert (batch.attr("killed"), batch.attr("peak"), batch.attr("per")) == ("yes", "yes", "node")
    assert batch.attr("limit_bytes") == 16 << 30
    # the extern step's 880K is no peak, and it completed
    assert (peaks["3820411.ext+"].attr("peak"), peaks["3820411.ext+"].attr("killed")) == (
        "no",
        "no",
    )


def test_peak_against_a_request_without_suffix_is_shared_over_the_nodes() -> None:
    """Slurm 21.08+ prints ReqMem without `n`/`c`, on the job's row only: the job's total,
    here 240G over `node-[01-02]`; the steps take it from their job's row."""
    peaks = _peaks(_facts("sacct_parsable2_states_cancelled_by_uid_REPRO.txt"))
    step = peaks["5120033.0"]
    assert step.attr("limit_bytes") == 120 << 30 and step.attr("per") == "job"
    assert step.value == round(100 * 98765432 * 1024 / (120 << 30), 1)
    assert step.attr("peak") == "yes" and peaks["5120033.batch"].attr("peak") == "no"
    assert peaks["5120034.batch"].value == 80.0
    # cancelled and timed out with SIGTERM (0:15): no step was killed
    assert {f.attr("killed") for f in peaks.values()} == {"no"}


def test_peak_against_memory_per_cpu_counts_the_cpus_of_a_node() -> None:
    text = (
        "JobID|State|ExitCode|AllocCPUS|NNodes|NodeList|ReqMem|MaxRSS\n"
        "77|FAILED|0:9|32|2|gpu[1-2]|4000Mc|\n"
        "77.batch|FAILED|137:0|16|1|gpu1|4000Mc|2048K\n"
        "77.0|CANCELLED|0:9|32|2|gpu[1-2]|4000Mc|63000M\n"
    )
    peaks = _peaks(list(SLURM.parse(text, "sacct.txt").facts))
    step = peaks["77.0"]
    assert step.attr("limit_bytes") == 16 * 4000 << 20 and step.attr("per") == "cpu"
    assert step.value == round(100 * 63000 / 64000, 1)
    assert step.attr("killed") == "yes" and peaks["77.batch"].attr("killed") == "yes"


@pytest.mark.parametrize(
    ("node_list", "count"),
    [
        ("node-07", 1),
        ("node-[01-02]", 2),
        ("dgx-b[07-08,11],login3", 4),
        ("None assigned", None),
        ("node-[a-b]", None),
        ("", None),
    ],
)
def test_node_count(node_list: str, count: int | None) -> None:
    assert node_count(node_list) == count
