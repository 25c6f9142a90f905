"""The work budget of one input: its head and tail matched in full, its middle's repeats counted.

A log no longer than the head and the tail is read exactly as before; a longer one keeps every
line of its two ends and, in between, each pattern's first lines, and the report says what was
counted rather than parsed. Limits are lowered through the environment so the logs stay small;
`bench/hostile_inputs.py` measures the defaults on a 1 GiB log.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from crashlens.match import engine, scan
from crashlens.match.budget import Region, Regions, WorkBudget, WorkLimits, work_limits
from crashlens.match.site import library
from crashlens.model import InputAnalysis, InputKind
from crashlens.parsers import get_parser
from crashlens.parsers.base import LogParser
from crashlens.pipeline import AnalyzeOptions, analyze, analyze_inputs

KIB = 1024
WATCHDOG = (
    "[rank{r}]:[E ProcessGroupNCCL.cpp:475] [Rank {r}] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum={s}, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600012 ms"
)
BUS_ERROR = (
    "RuntimeError: DataLoader worker (pid 8127) is killed by signal: Bus error. It is possible "
    "that dataloader's workers are out of shared memory."
)
OOM = "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB."
BACKENDS = ["python", pytest.param("hyperscan", marks=pytest.mark.skipif(
    not scan.hyperscan_available(), reason="no hyperscan wheel here"))]  # fmt: skip


def _write_log(path: Path, middle: int) -> list[str]:
    """Start-up lines, `middle` watchdog timeouts with one Bus error among them, an OOM last."""
    lines = [f"step {i} loss 1.{i % 97:04d} lr 3e-4" for i in range(400)]
    timeouts = [WATCHDOG.format(r=i % 8, s=i) for i in range(middle)]
    timeouts.insert(middle // 2, BUS_ERROR)
    lines += timeouts
    lines += [f"step {i} loss 2.{i % 89:04d}" for i in range(400)] + [OOM]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return lines


@pytest.fixture
def small_budget(monkeypatch: pytest.MonkeyPatch) -> WorkLimits:
    """A 64 KiB head and tail and 10 lines per pattern in between."""
    monkeypatch.setenv("CRASHLENS_FULL_HEAD_MB", str(64 / 1024))
    monkeypatch.setenv("CRASHLENS_FULL_TAIL_MB", str(64 / 1024))
    monkeypatch.setenv("CRASHLENS_MIDDLE_LINES", "10")
    return work_limits()


def _analysis(path: Path, backend: str = "auto") -> InputAnalysis:
    [analysis] = analyze_inputs([str(path)], AnalyzeOptions(backend=backend), library())
    return analysis


def _budgeted_scan(path: Path, backend: str, limits: WorkLimits) -> tuple[WorkBudget, int]:
    """Scan `path` as a launcher log under `limits`; the budget and the lines fed."""
    parser = get_parser(InputKind.LAUNCHER)
    assert isinstance(parser, LogParser)
    matcher = engine.build_matcher(library(), backend)
    collector = parser.collector(str(path))
    budget = WorkBudget(limits)
    data = path.read_bytes()
    fed = 0
    for line, anchors in engine._scan(
        [data], str(path), InputKind.LAUNCHER, parser, matcher, engine._HitBuffer(),
        collector.settled, budget,
    ):  # fmt: skip
        collector.feed(line, anchors)
        fed += 1
    return budget, fed


def _watchdogs_between(path: Path, start: int, end: int) -> int:
    data = path.read_bytes()[start:end]
    return sum(
        b"Watchdog caught collective operation timeout" in line for line in data.split(b"\n")
    )


def test_limits_come_from_the_environment_and_bad_values_keep_the_defaults() -> None:
    assert work_limits({}) == WorkLimits()
    chosen = work_limits(
        {
            "CRASHLENS_FULL_HEAD_MB": "0.5",
            "CRASHLENS_FULL_TAIL_MB": " 2 ",
            "CRASHLENS_MIDDLE_LINES": "1000",
        }
    )
    assert chosen == WorkLimits(head_bytes=512 * KIB, tail_bytes=2 * 1024 * KIB, middle_lines=1000)
    for bad in ("", "x", "-1", "0", "nan", "inf"):
        assert work_limits({"CRASHLENS_MIDDLE_LINES": bad}) == WorkLimits()


def _chunks(data: bytes, size: int) -> Iterator[bytes]:
    """Newline-cut chunks of about `size` bytes, as `read.iter_chunks` gives them."""
    start = 0
    while start < len(data):
        cut = data.find(b"\n", start + size - 1)
        end = len(data) if cut < 0 else cut + 1
        yield data[start:end]
        start = end


def test_regions_pass_every_byte_once_cut_at_lines_and_say_where_the_middle_is() -> None:
    data = b"".join(b"line %d of the log\n" % i for i in range(20_000))
    entered: list[tuple[Region, int]] = []
    regions = Regions(WorkLimits(head_bytes=50_000, tail_bytes=30_000), lambda r: None)
    regions.on_enter = lambda region: entered.append((region, regions.offset))
    passed = [(regions.region, chunk) for chunk in regions.split(_chunks(data, 7000))]
    assert b"".join(chunk for _, chunk in passed) == data
    assert all(chunk.endswith(b"\n") for _, chunk in passed)
    assert regions.middle is not None
    start, end = regions.middle
    assert entered == [(Region.MIDDLE, start), (Region.TAIL, end)]
    assert 50_000 <= start < 50_000 + 30 and data[start - 1 : start] == b"\n"
    assert 30_000 <= len(data) - end < 30_000 + 30 and data[end - 1 : end] == b"\n"
    head = b"".join(c for r, c in passed if r is Region.HEAD)
    middle = b"".join(c for r, c in passed if r is Region.MIDDLE)
    assert (len(head), len(head) + len(middle)) == (start, end)


def test_an_input_no_longer_than_head_and_tail_passes_untouched() -> None:
    data = b"".join(b"line %d\n" % i for i in range(10_000))
    chunks = list(_chunks(data, 9000))
    regions = Regions(WorkLimits(head_bytes=40_000, tail_bytes=len(data)), lambda r: None)
    regions.on_enter = lambda region: pytest.fail(f"entered {region}")
    passed = list(regions.split(iter(chunks)))
    assert b"".join(passed) == data and regions.middle is None
    # Cut once, where the head ends (in the fifth chunk); the others are passed as they came.
    assert len(passed) == len(chunks) + 1
    assert all(p is c for p, c in zip(passed[6:], chunks[5:], strict=True))


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_middle_repeats_are_counted_exactly_while_the_search_reports_them(
    tmp_path: Path, backend: str
) -> None:
    path = tmp_path / "train.log"
    _write_log(path, 6000)
    limits = WorkLimits(head_bytes=64 * KIB, tail_bytes=64 * KIB, middle_lines=10)
    budget, fed = _budgeted_scan(path, backend, limits)
    assert budget.regions.middle is not None
    start, end = budget.regions.middle
    skipped = budget.skipped()
    search = engine.build_matcher(library(), backend).scan_for(InputKind.LAUNCHER)
    names = [engine._pattern_name(search, s.pattern) for s in skipped]
    assert any("Watchdog caught collective operation timeout" in n for n in names), names
    [watchdog] = [s for s, n in zip(skipped, names, strict=True) if "Watchdog" in n]
    assert watchdog.exact
    assert watchdog.lines == _watchdogs_between(path, start, end) - limits.middle_lines
    _, fed_in_full = _budgeted_scan(path, backend, WorkLimits(head_bytes=1 << 40))
    assert fed < fed_in_full - 5000  # the work was spared, not just counted


def test_where_the_search_left_a_pattern_out_its_lines_are_estimated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Narrowed after a few matches, the search counts on one piece in `SAMPLE_EVERY` only."""
    pytest.importorskip("hyperscan")
    monkeypatch.setattr(scan, "_pieces", functools.partial(scan._pieces, size=8 * KIB))
    monkeypatch.setattr(scan, "NARROW_AFTER", 500)
    monkeypatch.setattr(scan, "SAMPLE_EVERY", 4)
    path = tmp_path / "train.log"
    _write_log(path, 20_000)
    limits = WorkLimits(head_bytes=64 * KIB, tail_bytes=64 * KIB, middle_lines=10)
    budget, _ = _budgeted_scan(path, "hyperscan", limits)
    assert budget.regions.middle is not None
    truth = _watchdogs_between(path, *budget.regions.middle) - limits.middle_lines
    search = engine.build_matcher(library(), "hyperscan").scan_for(InputKind.LAUNCHER)
    [watchdog] = [
        s for s in budget.skipped() if "Watchdog" in engine._pattern_name(search, s.pattern)
    ]
    assert budget.tally.counted < budget.tally.searched * 0.5  # most of it was not counted
    assert not watchdog.exact
    assert abs(watchdog.lines - truth) < truth * 0.1
    note = budget.note(functools.partial(engine._pattern_name, search)) or ""
    said = re.search(r"the most repeated: about ([0-9,]+) more lines", note)
    assert said is not None, note
    assert abs(int(said.group(1).replace(",", "")) - watchdog.lines) < watchdog.lines * 0.01


def test_a_long_log_keeps_its_ends_and_its_rare_lines_and_says_what_it_counted(
    tmp_path: Path, small_budget: WorkLimits, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "train.log"
    lines = _write_log(path, 6000)
    thinned = _analysis(path)
    monkeypatch.setenv("CRASHLENS_FULL_HEAD_MB", "1024")
    full = _analysis(path)
    assert full.status.reason is None
    # Rule hits: every rule keeps its earliest lines (the Bus error in the middle, the OOM
    # at the end) as in the full reading.
    assert sorted((h.rule_id, h.lineno) for h in thinned.hits) == sorted(
        (h.rule_id, h.lineno) for h in full.hits
    )
    bus = [h for h in thinned.hits if "Bus error" in h.text]
    assert bus and bus[0].lineno == lines.index(BUS_ERROR) + 1
    assert any(h.lineno == len(lines) for h in thinned.hits)  # the OOM on the last line
    # The log's last line keeps its number: the tail takes the scan's count of newlines, not a
    # count of its own, and the thinned middle is still counted.
    [last] = [f.lineno for f in thinned.facts if f.key == "log.last_line"]
    assert last == len(lines)
    # The parser's facts: it keeps the first 200 timeouts, all of them in the head here.
    assert thinned.facts == full.facts
    reason = thinned.status.reason or ""
    assert "counted, not parsed" in reason and "CRASHLENS_MIDDLE_LINES" in reason
    assert "first 64 KiB and last 64 KiB" in reason
    assert "Watchdog caught collective operation timeout" in reason
    most = re.search(r"the most repeated: (about )?([0-9,]+) more lines", reason)
    assert most is not None and int(most.group(2).replace(",", "")) > 5000


def test_a_long_log_of_rare_lines_is_read_in_full(tmp_path: Path, small_budget: WorkLimits) -> None:
    """No pattern repeats past its budget: nothing is counted, nothing is said."""
    path = tmp_path / "train.log"
    steps = [f"step {i} loss 1.{i % 97:04d} lr 3e-4" for i in range(30_000)]
    steps.insert(15_000, BUS_ERROR)
    path.write_text("\n".join(steps) + "\n", encoding="utf-8")
    analysis = _analysis(path)
    assert analysis.status.reason is None
    assert any("Bus error" in h.text for h in analysis.hits)


def test_the_report_decides_as_on_the_full_reading_and_says_what_was_counted(
    tmp_path: Path, small_budget: WorkLimits, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "train.log"
    _write_log(path, 6000)
    report = analyze([str(path)])
    monkeypatch.setenv("CRASHLENS_FULL_HEAD_MB", "1024")
    full = analyze([str(path)])
    assert (report.verdict, report.causes) == (full.verdict, full.causes)
    [status] = report.inputs
    assert status.status == "analyzed" and "counted, not parsed" in (status.reason or "")
