"""Reads `sacct` tables (parsable or fixed-width) and `scontrol show job` blocks into facts."""

from __future__ import annotations

import re
from collections.abc import Iterator

from crashlens.model import InputKind
from crashlens.parsers.base import DocumentParser, DocumentResult, clean_line
from crashlens.parsers.kubernetes.common import FactSink
from crashlens.parsers.slurm.memory import PEAK_KEY, MemoryRow, node_count, peaks
from crashlens.parsers.slurm.values import exit_of, job_of, size_of, state_attrs, state_of

_RULE_RE = re.compile(r"^[ \t]*-{3,}(?:[ \t]+-{2,})+[ \t]*$")
_HEADER_RE = re.compile(r"^[ \t]*JobID(?:Raw)?\b")
_PARSABLE_HEADER_RE = re.compile(r"^JobID(?:Raw)?\|[^\n]*\b(?:State|ExitCode)\b", re.MULTILINE)
_FIXED_HEADER_RE = re.compile(
    r"^[ \t]*+JobID(?:Raw)?[ \t](?>[^\n]*?\b(?:State|ExitCode)\b)[^\n]*\n[ \t]*-{3,}[ \t]+-{2,}",
    re.MULTILINE,
)
_SCONTROL_RE = re.compile(r"^[ \t]*JobId=[0-9]+[^\n]*$", re.MULTILINE)
# `(?<![A-Za-z])`: a key is read from its first letter (every later one rescanned the word)
_WORD_RE = re.compile(r"(?<![A-Za-z])([A-Za-z][A-Za-z0-9/:_]*)=([^ \t]*(?: by [0-9]+)?)")
_STEP_RE = re.compile(r"^[0-9]+(?:_[0-9\[\]-]+)?(?:\+[0-9]+)?(?:\.[A-Za-z0-9+]+)?\+?$")
MAX_ROWS = 5000


def _cells(line: str, spans: list[tuple[int, int]] | None) -> list[str]:
    if spans is None:
        cells = line.split("|")
        return cells[:-1] if cells and cells[-1] == "" and line.endswith("|") else cells
    return [line[start:end].strip() for start, end in spans]


def _spans(rule: str) -> list[tuple[int, int]]:
    """Column spans from the `----` rule line (each column ends at its dashes' end)."""
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", rule)]
    return [
        (start, spans[i + 1][0] if i + 1 < len(spans) else 10_000)
        for i, (start, _) in enumerate(spans)
    ]


def _count(cell: str | None) -> int | None:
    text = (cell or "").strip()
    return int(text) if text.isdigit() and len(text) <= 9 else None


class _Reader:
    def __init__(self, path: str) -> None:
        self.sink = FactSink(path)
        self.memory: list[MemoryRow] = []

    def row(self, lineno: int, line: str, named: dict[str, str]) -> None:
        step = named.get("JobID") or named.get("JobIDRaw") or ""
        if step and not _STEP_RE.match(step):
            return
        state = state_of(named.get("State", ""))
        code = exit_of(named.get("ExitCode", ""))
        shown = line.strip()
        job = job_of(step) if step else None
        nodes = named.get("NodeList") or None
        if state is not None:
            attrs = state_attrs(state[0], state[1], code, step=step or None, job=job, node=nodes)
            self.sink.add("slurm.state", state[0], lineno, shown, **attrs)
        rss = size_of(named.get("MaxRSS", ""), "K")
        if rss is not None and rss[0] > 0:
            node = named.get("MaxRSSNode") or None
            self.sink.add(
                "slurm.max_rss_bytes", rss[0], lineno, shown, step=step or None, node=node
            )
        req = size_of(named.get("ReqMem", ""), "M")
        if req is not None and req[0] > 0:
            self.sink.add(
                "slurm.req_mem_bytes", req[0], lineno, shown, step=step or None, per=req[1]
            )
        if nodes and nodes not in ("None assigned", "(null)"):
            self.sink.add("slurm.node_list", nodes, lineno, shown, step=step or None)
        if step and job is not None and (rss or req):
            self.memory.append(
                MemoryRow(
                    lineno,
                    shown,
                    step,
                    job,
                    state[0] if state else None,
                    code[0] if code else None,
                    code[1] if code else None,
                    rss[0] if rss else None,
                    req[0] if req else None,
                    req[1] if req else None,
                    _count(named.get("AllocCPUS") or named.get("NCPUS")),
                    _count(named.get("NNodes")) or node_count(nodes),
                )
            )

    def memory_peaks(self) -> None:
        """Each step's MaxRSS against its per-node limit (`memory.py`), once every row is read."""
        for peak in peaks(self.memory):
            row = peak.row
            self.sink.add(PEAK_KEY, peak.percent, row.lineno, row.shown, **peak.attrs())

    def headerless(self, lineno: int, line: str) -> None:
        """A `sacct -n -P` row: the state and the exit code found by their shape."""
        cells = line.split("|")
        state = next((s for c in cells if (s := state_of(c)) is not None), None)
        code = next((e for c in cells if (e := exit_of(c)) is not None), None)
        step = cells[0].strip() if cells and _STEP_RE.match(cells[0].strip()) else None
        if state is not None and step is not None:
            attrs = state_attrs(state[0], state[1], code, step=step, job=job_of(step))
            self.sink.add("slurm.state", state[0], lineno, line.strip(), **attrs)

    def scontrol(self, words: dict[str, tuple[int, str, str]]) -> None:
        def value(key: str) -> str:
            return words[key][1] if key in words else ""

        job = value("JobId") or None
        if "JobState" in words:
            lineno, raw, shown = words["JobState"]
            state = state_of(raw)
            if state is not None:
                reason = value("Reason")
                attrs = state_attrs(
                    state[0],
                    state[1],
                    exit_of(value("ExitCode")),
                    step=job,
                    job=job,
                    reason=reason if reason not in ("", "None") else None,
                    node=value("NodeList") or None,
                )
                self.sink.add("slurm.state", state[0], lineno, shown, **attrs)
        if "Reason" in words and value("Reason") not in ("", "None", "(null)"):
            lineno, raw, shown = words["Reason"]
            self.sink.add("slurm.reason", raw, lineno, shown, job=job)
        if "NodeList" in words and value("NodeList") not in ("", "(null)"):
            lineno, raw, shown = words["NodeList"]
            self.sink.add("slurm.node_list", raw, lineno, shown, step=job)
        for key, per in (("MinMemoryNode", "node"), ("MinMemoryCPU", "cpu")):
            if key in words and (size := size_of(value(key), "M")) is not None and size[0] > 0:
                lineno, _, shown = words[key]
                self.sink.add("slurm.req_mem_bytes", size[0], lineno, shown, step=job, per=per)


def _scontrol_blocks(lines: list[str]) -> Iterator[dict[str, tuple[int, str, str]]]:
    """One dict per job: key -> (line number, value, the line), a block starting at `JobId=`."""
    block: dict[str, tuple[int, str, str]] = {}
    for lineno, line in enumerate(lines, start=1):
        for found in _WORD_RE.finditer(line):
            key, value = found.group(1), found.group(2)
            if key == "JobId" and block:
                yield block
                block = {}
            block.setdefault(key, (lineno, value, line.strip()))
    if block:
        yield block


_HEADERLESS_RE = re.compile(
    r"^[0-9]+(?:_[0-9]+)?(?:\.[a-z0-9]+)?\|(?:[^|\n]*\|)*?[A-Z_]{4,}(?: by [0-9]+)?\|"
)


def _headerless(head: str) -> bool:
    """`sacct -n -P` rows only: every line a step id, then cells, one of them a state."""
    rows = [line for line in head.split("\n")[:50] if line.strip()]
    return len(rows) >= 2 and all(
        _HEADERLESS_RE.match(row) and any(state_of(cell) for cell in row.split("|")) for row in rows
    )


class SlurmJobParser(DocumentParser):
    """`sacct` (parsable or fixed-width) and `scontrol show job`."""

    kind = InputKind.SLURM_JOB
    name = "Slurm sacct / scontrol show job"
    filenames = ("sacct*", "scontrol*")

    @staticmethod
    def sniff(head: str) -> float:
        if "JobID" in head and (_PARSABLE_HEADER_RE.search(head) or _FIXED_HEADER_RE.search(head)):
            return 0.95
        if "JobId=" in head and "JobState=" in head and _SCONTROL_RE.search(head):
            return 0.95
        if "|" in head and _headerless(head):
            return 0.8
        return 0.0

    def parse(self, text: str, path: str) -> DocumentResult:
        lines = [clean_line(raw) for raw in text.split("\n")]
        reader = _Reader(path)
        if "JobState=" in text and "JobId=" in text:
            for block in _scontrol_blocks(lines):
                reader.scontrol(block)
        header: list[str] | None = None
        spans: list[tuple[int, int]] | None = None
        rows = 0
        for index, line in enumerate(lines):
            lineno = index + 1
            if _HEADER_RE.match(line):
                following = lines[index + 1] if index + 1 < len(lines) else ""
                if "|" in line:
                    header, spans = [cell.strip() for cell in _cells(line, None)], None
                elif _RULE_RE.match(following):
                    spans = _spans(following)
                    header = _cells(line, spans)
                continue
            if header is None or _RULE_RE.match(line) or not line.strip() or rows > MAX_ROWS:
                if header is None and "|" in line and rows <= MAX_ROWS:
                    reader.headerless(lineno, line)
                continue
            if spans is None and "|" not in line:
                continue
            rows += 1
            # A cell wider than its column pushes the others aside: when the words are as
            # many as the columns (no empty cell, no `CANCELLED by N`), the words are the cells.
            words = line.split()
            cells = words if spans is not None and len(words) == len(header) else None
            reader.row(lineno, line, dict(zip(header, cells or _cells(line, spans), strict=False)))
        reader.memory_peaks()
        return DocumentResult(facts=tuple(reader.sink.facts))
