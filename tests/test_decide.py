"""The decision policy: noisy-OR, explained-away symptoms, knock-on demotion, first rank."""

from __future__ import annotations

from datetime import UTC, datetime

from crashlens.decide.policy import decide, noisy_or
from crashlens.decide.when import FailureTime, failure_time
from crashlens.match.rules import parse_rule
from crashlens.model import (
    Category,
    Clock,
    Fact,
    Hit,
    InputAnalysis,
    InputKind,
    InputState,
    InputStatus,
    Role,
    Verdict,
)


def _rule(rule_id: str, category: str, role: str, weight: float, **extra: object):
    data = {
        "id": rule_id,
        "category": category,
        "role": role,
        "weight": weight,
        "title": rule_id,
        "match": {"any": [rule_id]},
        **extra,
    }
    return parse_rule(data, f"{rule_id}.toml")


def _hit(rule, line: int, rank: int | None = None, path: str = "train.log") -> Hit:
    return Hit(
        rule_id=rule.id,
        category=rule.category,
        role=rule.role,
        weight=rule.weight,
        path=path,
        lineno=line,
        text=rule.id,
        rank=rank,
        also=rule.also,
    )


def _analysis(hits: list[Hit], facts: tuple[Fact, ...] = ()) -> InputAnalysis:
    status = InputStatus("train.log", InputKind.LAUNCHER, InputState.ANALYZED)
    return InputAnalysis(status=status, hits=tuple(hits), facts=facts)


BUS = _rule("bus-error", "shm", "symptom", 0.7, also={"hardware": 0.1})
SHM64 = _rule("shm-64m", "shm", "context", 0.4)
MCE = _rule("mce-uncorrected", "hardware", "root", 0.9)
XID79 = _rule("xid-79", "hardware", "root", 0.95)
WATCHDOG = _rule("nccl-watchdog", "network", "symptom", 0.6, knock_on=True)
SIGKILL = _rule("exit-sigkill", "host_oom", "symptom", 0.35)
OOM_KILLER = _rule("oom-killer", "host_oom", "root", 0.92)
CUDA_OOM = _rule("cuda-oom", "gpu_oom", "root", 0.95)
RULES = [BUS, SHM64, MCE, XID79, WATCHDOG, SIGKILL, OOM_KILLER, CUDA_OOM]


def test_noisy_or() -> None:
    assert noisy_or([]) == 0.0
    assert abs(noisy_or([0.5, 0.5]) - 0.75) < 1e-9


def test_bus_error_with_small_shm_is_shm() -> None:
    decision = decide([_analysis([_hit(BUS, 10), _hit(SHM64, 1)])], RULES)
    assert decision.verdict == "shm"
    assert decision.candidates[0].score > 0.8


def test_context_alone_is_not_a_failure() -> None:
    decision = decide([_analysis([_hit(SHM64, 1)])], RULES)
    assert decision.verdict is Verdict.NONE
    assert decision.candidates == ()


def test_machine_check_explains_the_bus_error_away() -> None:
    hits = [_hit(BUS, 10), _hit(SHM64, 1), _hit(MCE, 3, path="dmesg.txt")]
    decision = decide([_analysis(hits)], RULES)
    assert decision.verdict == "hardware"
    shm = next(c for c in decision.candidates if c.category is Category.SHM)
    assert shm.confidence < decision.candidates[0].confidence


def test_watchdog_on_every_rank_is_a_knock_on_of_the_xid() -> None:
    hits = [_hit(WATCHDOG, 100 + r, rank=r) for r in range(8)]
    hits.append(_hit(XID79, 5, path="dmesg.txt"))
    decision = decide([_analysis(hits)], RULES)
    assert decision.verdict == "hardware"
    network = next(c for c in decision.candidates if c.category is Category.NETWORK)
    assert network.demoted_because is not None
    assert "knock-on" in network.demoted_because
    assert any("network" in note for note in decision.notes)


def test_bare_sigkill_is_unknown_and_oom_killer_makes_it_host_oom() -> None:
    alone = decide([_analysis([_hit(SIGKILL, 9)])], RULES)
    assert alone.verdict is Verdict.UNKNOWN
    assert alone.candidates[0].category is Category.HOST_OOM
    both = decide([_analysis([_hit(SIGKILL, 9), _hit(OOM_KILLER, 2, path="dmesg")])], RULES)
    assert both.verdict == "host_oom"


def test_first_failed_rank_outranks_later_ranks() -> None:
    first = Fact("launcher.first_failure", 3, "train.log", 50, "rank 3")
    hits = [_hit(CUDA_OOM, 40, rank=3)] + [_hit(WATCHDOG, 60 + r, rank=r) for r in (0, 1, 2)]
    decision = decide([_analysis(hits, (first,))], RULES)
    assert decision.verdict == "gpu_oom"
    assert decision.first_failure_rank == 3
    assert decision.first_failure is not None and decision.first_failure.rank == 3


def test_confidences_are_probabilities() -> None:
    hits = [_hit(BUS, 1), _hit(MCE, 2), _hit(CUDA_OOM, 3), _hit(WATCHDOG, 4)]
    decision = decide([_analysis(hits)], RULES)
    assert all(0.0 <= c.confidence <= 1.0 for c in decision.candidates)
    assert sum(c.confidence for c in decision.candidates) <= 1.0 + 1e-9


def _timed(stamp: float, clock: Clock, role: Role = Role.SYMPTOM) -> Hit:
    return Hit("r", Category.SHM, role, 0.9, "train.log", 1, "x", timestamp=stamp, clock=clock)


GLOG_DEC_31 = datetime(2000, 12, 31, 23, 59, tzinfo=UTC).timestamp()  # a placeholder year
JAN_2_2025 = datetime(2025, 1, 2, tzinfo=UTC).timestamp()


def test_a_yearless_failure_time_takes_the_year_of_a_dated_line() -> None:
    yearless = _timed(datetime(2000, 1, 1, 8, tzinfo=UTC).timestamp(), Clock.YEARLESS)
    when = failure_time(yearless, [yearless, _timed(JAN_2_2025, Clock.WALL)], [], Category.SHM)
    assert when.at == datetime(2025, 1, 1, 8, tzinfo=UTC).timestamp()
    assert when.yearless_year == 2025
    # Dec 31 cannot come after Jan 2 of the dated line: it is the year before.
    late = _timed(GLOG_DEC_31, Clock.YEARLESS)
    when = failure_time(late, [late, _timed(JAN_2_2025, Clock.WALL)], [], Category.SHM)
    assert when.at == datetime(2024, 12, 31, 23, 59, tzinfo=UTC).timestamp()


def test_boot_times_never_date_a_failure_and_a_hint_dates_a_yearless_one() -> None:
    boot = _timed(1234.5, Clock.BOOT)
    assert failure_time(boot, [boot], [], Category.SHM) == FailureTime(None, None)
    late = _timed(GLOG_DEC_31, Clock.YEARLESS)
    assert failure_time(late, [late], [], Category.SHM).at is None  # no year known
    hinted = failure_time(late, [late], [], Category.SHM, year_hint=JAN_2_2025)
    assert hinted == FailureTime(datetime(2024, 12, 31, 23, 59, tzinfo=UTC).timestamp(), 2025)
