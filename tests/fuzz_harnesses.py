"""Fuzz harnesses: hostile variants of the real samples, and what must hold for each.

Shared by `tests/test_fuzz.py` (a short deterministic run in CI) and `bench/fuzz.py` (long
runs). Every input starts as a real sample of `tests/data/samples/<kind>/` and is mutated the
way damaged or hostile inputs look: flipped bytes, cuts, splices of two kinds, NULs, invalid
UTF-8, `\\r` and ANSI noise, absurd numbers, very long lines, deeply nested JSON, values of the
wrong JSON type in docker inspect, XML entity tricks in `nvidia-smi -q -x`, and archives or
compressed streams around them (cut or not).

A harness is a hypothesis strategy of inputs plus a check that raises `AssertionError` when an
invariant breaks: no exception escapes, a report with a valid verdict, an input is never
thrown away because of its content, redaction never leaves a learned value in its output,
rendered output is inert. Time per input is bounded by `deadline` (an alarm in the process
that runs the check: a hang is a finding, not a stuck run).
"""

from __future__ import annotations

import gzip
import io
import json
import re
import signal
import tarfile
import tempfile
import time
import traceback
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

SAMPLES_DIR = Path(__file__).resolve().parent / "data" / "samples"
MAX_SAMPLE_BYTES = 64 * 1024
"""Samples are cut to this before mutation, so that one example stays fast."""
MAX_INSERT = 256 * 1024
"""Most bytes one insertion adds (a long line is long well before this)."""


@dataclass(frozen=True)
class Sample:
    kind: str
    name: str
    data: bytes


def _samples() -> tuple[Sample, ...]:
    return tuple(
        Sample(folder.name, file.name, file.read_bytes()[:MAX_SAMPLE_BYTES])
        for folder in sorted(p for p in SAMPLES_DIR.iterdir() if p.is_dir())
        for file in sorted(p for p in folder.iterdir() if p.is_file())
    )


SAMPLES = _samples()

# --- what hostile inputs are made of ---------------------------------------------------------

ANSI_NOISE = (
    b"\x1b[31m",
    b"\x1b[0m",
    b"\x1b[2K\r",
    b"\x1b]52;c;ZWNobyBwd25lZA==\x07",
    b"\x1b]8;;http://evil.example/\x1b\\link\x1b]8;;\x1b\\",
    b"\x1b]0;title\x1b\\",
    b"\x1b]0;unterminated title ",
    b"\x1b]" + b"9" * 3000,
    b"\x1bc",
    b"\x1bP1$qm\x1b\\",
    b"\x1bP" + b"q" * 2000,
    b"\xc2\x9b31m",
    b"\x9b31m",
    b"\x1b[" + b"1;" * 2000,
)
NASTY = (
    b"\x00",
    b"\x00" * 257,
    b"\xff\xfe",
    b"\xc3",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\r",
    b"\r\r\n",
    b"\r" * 500,
    b"\t" * 300,
    b"9" * 5000,
    b"-" + b"7" * 4400,
    b"1e999",
    b"-1e999",
    b"1" * 400 + b".5e308",
    b"NaN",
    b"inf",
    b"0x" + b"f" * 3000,
    b" " * 5000,
    b"A" * 100_000,
    b"[" * 5000,
    b'{"a":' * 3000,
    b"<a>" * 3000,
    b"%" * 2000,
    b":" * 3000,
    b"/dev/shm " * 500,
    b"Xid (PCI:0000:" + b"0" * 3000,
    b"rank" + b"0" * 4500,
    b"\n" * 3000,
    b"\xe2\x80\xae",
    b"`![x](http://evil.example/p.png)` <img src=x onerror=alert(1)> @octocat | [b]x[/]",
)
JSON_VALUES: tuple[Any, ...] = (
    None,
    True,
    -1,
    0,
    10**60,
    1e308,
    -1e308,
    "x" * 5000,
    "9" * 5000,
    "",
    [],
    {},
    [None, {"a": []}],
    {"": None},
    "NaN",
)
XML_TRICKS = (
    b'<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;'
    b'&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;'
    b'&lol2;"><!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">'
    b'<!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">'
    b'<!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">]>',
    b'<!DOCTYPE r [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>',
    b'<!DOCTYPE r [<!ENTITY % p SYSTEM "http://evil.example/x.dtd"> %p;]>',
    b'<!DOCTYPE r SYSTEM "http://evil.example/x.dtd">',
    b"<?xml-stylesheet href='http://evil.example/s.xsl'?>",
)
XML_ENTITY_USES = (b"&lol6;", b"&xxe;", b"&undefined;", b"&#0;", b"&#x110000;", b"&#99999999999;")


# --- mutations ---------------------------------------------------------------------------------

Op = tuple[Any, ...]


def _at(data: bytes, fraction: float) -> int:
    return min(len(data), int(fraction * (len(data) + 1)))


def _json_paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _json_paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:50]):
            yield from _json_paths(item, (*prefix, index))


def _json_retyped(data: bytes, fraction: float, value: Any) -> bytes:
    """One value somewhere in a JSON document replaced by `value` (of any type)."""
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        return data
    paths = list(_json_paths(document))
    path = paths[min(len(paths) - 1, int(fraction * len(paths)))]
    if not path:
        return json.dumps(value).encode()
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    try:
        return json.dumps(document, indent=2).encode()
    except (ValueError, RecursionError):
        return data


def _xml_tricked(data: bytes, trick: bytes, use: bytes, fraction: float) -> bytes:
    declaration = re.match(rb"\s*<\?xml[^>]*\?>", data)
    cut = declaration.end() if declaration else 0
    body = data[cut:]
    spot = _at(body, fraction)
    closing = body.find(b">", spot)
    spot = closing + 1 if closing >= 0 else spot
    return data[:cut] + trick + body[:spot] + use + body[spot:]


def mutate(data: bytes, ops: list[Op]) -> bytes:
    """Apply the drawn operations in order."""
    for op in ops:
        name = op[0]
        if name == "flip":
            if data:
                spot = min(len(data) - 1, _at(data, op[1]))
                data = data[:spot] + bytes([data[spot] ^ op[2]]) + data[spot + 1 :]
        elif name == "cut":
            data = data[: _at(data, op[1])]
        elif name == "drop":
            start = _at(data, op[1])
            data = data[:start] + data[start + op[2] :]
        elif name == "insert":
            spot = _at(data, op[1])
            times = max(1, min(op[3], MAX_INSERT // len(op[2])))
            data = data[:spot] + op[2] * times + data[spot:]
        elif name == "splice":
            other: bytes = op[1].data
            data = data[: _at(data, op[2])] + other[_at(other, op[3]) :]
        elif name == "lines":
            lines = data.split(b"\n")
            if lines:
                index = min(len(lines) - 1, int(op[1] * len(lines)))
                # bounded like an insertion: a long line repeated 3000 times (after an earlier
                # insertion made it long) ran the fuzzing worker itself out of memory
                times = max(1, min(op[2], MAX_INSERT // (len(lines[index]) + 1)))
                lines[index:index] = [lines[index]] * times
                data = b"\n".join(lines)
        elif name == "newlines":
            data = data.replace(b"\n", op[1])
        elif name == "json":
            data = _json_retyped(data, op[1], op[2])
        elif name == "nest":
            data = b"[" * op[1] + data + b"]" * op[1]
        elif name == "xml":
            data = _xml_tricked(data, op[1], op[2], op[3])
    return data


fractions = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
noise = st.sampled_from(ANSI_NOISE + NASTY) | st.binary(min_size=1, max_size=40)
operations = st.one_of(
    st.tuples(st.just("flip"), fractions, st.integers(1, 255)),
    st.tuples(st.just("cut"), fractions),
    st.tuples(st.just("drop"), fractions, st.integers(1, 4000)),
    st.tuples(st.just("insert"), fractions, noise, st.integers(1, 40)),
    st.tuples(st.just("splice"), st.sampled_from(SAMPLES), fractions, fractions),
    st.tuples(st.just("lines"), fractions, st.integers(1, 3000)),
    st.tuples(st.just("newlines"), st.sampled_from([b"\r\n", b"\r", b"\x00\n", b"\n\n"])),
    st.tuples(st.just("json"), fractions, st.sampled_from(JSON_VALUES)),
    st.tuples(st.just("nest"), st.integers(100, 20_000)),
    st.tuples(
        st.just("xml"), st.sampled_from(XML_TRICKS), st.sampled_from(XML_ENTITY_USES), fractions
    ),
)


MAX_INPUT = 1024 * 1024
"""Inputs are cut to this after mutation: big enough for long lines and many of them, small
enough that a linear parser takes well under the deadline (a hang is super-linear work)."""


@st.composite
def hostile_inputs(draw: st.DrawFn) -> tuple[Sample, bytes]:
    """A real sample and a mutation of it (sometimes left as it is)."""
    sample = draw(st.sampled_from(SAMPLES))
    ops = draw(st.lists(operations, max_size=5))
    return sample, mutate(sample.data, ops)[:MAX_INPUT]


@st.composite
def parser_inputs(draw: st.DrawFn) -> tuple[Sample, bytes, str]:
    """A hostile input and the parser to feed it to: its own kind's, or any other (a parser
    meets any text in the wild: detection can be wrong, or forced with `--kind`)."""
    from crashlens.parsers import PARSERS

    sample, data = draw(hostile_inputs())
    kinds = [parser.kind.value for parser in PARSERS]
    own = sample.kind if sample.kind in kinds else kinds[-1]
    kind = draw(st.just(own) | st.sampled_from(kinds))
    return sample, data, kind


def hostile_text(data: bytes) -> str:
    """How the tools decode bytes they read (undecodable bytes replaced)."""
    return data.decode("utf-8", errors="replace")


# --- bounded time ------------------------------------------------------------------------------


class Hang(AssertionError):
    """An input took longer than the deadline: a finding like any exception."""


WALL_CAP = 10
"""How many times the deadline the block may take in wall time on a loaded machine."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Interrupt the block once it has spent `seconds` of this process's CPU time (regex
    matching included), or `WALL_CAP` times that in wall time whatever it spent.

    CPU time, not wall time: a long fuzz run is niced and shares the machine's cores with
    whatever else runs, and a 1.3 s input once took over 10 s of wall time under a test
    suite's load (fuzz seed 7901), a hang only of the machine. The wall-time timer stays the
    alarm, so a block that waits without computing still ends, at the cap."""
    cpu_start, wall_start = time.process_time(), time.monotonic()

    def expired(signum: int, frame: object) -> None:
        spent = time.process_time() - cpu_start
        if spent < seconds and time.monotonic() - wall_start < seconds * WALL_CAP:
            # the machine was busy, not the block: wait for the rest of its CPU time
            signal.setitimer(signal.ITIMER_REAL, max(seconds - spent, 0.05))
            return
        raise Hang(f"over {seconds:g} s of CPU time" if spent >= seconds else "wall-time cap")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def signature(harness: str, error: BaseException) -> str:
    """A failure's identity: harness, exception type, the parser it met (a note), and the
    innermost crashlens function it was raised in (file and function, not line: those move)."""
    frames = traceback.extract_tb(error.__traceback__)
    ours = [f for f in frames if "/crashlens/" in f.filename] or frames
    where = f"{Path(ours[-1].filename).stem}.{ours[-1].name}" if ours else "?"
    notes = "".join(f"-{note.split()[-1]}" for note in getattr(error, "__notes__", ()))
    return f"{harness}-{type(error).__name__}{notes}-{where}".replace("/", "_").replace("<", "")


# --- invariants of output ----------------------------------------------------------------------

RAW_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
"""What must never reach a terminal or a file from an input (tab and newline are layout)."""
RICH_STYLE = re.compile(r"\x1b\[[0-9;]*m")
"""The colour sequences rich itself writes on a terminal (not from the input)."""


def assert_inert(text: str, where: str) -> None:
    found = RAW_CONTROLS.search(text)
    assert found is None, f"{where}: raw {found.group(0)!r} at {found.start()}"


# --- the harnesses -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Harness:
    name: str
    strategy: st.SearchStrategy[Any]
    check: Callable[[Any], None]


def check_sniff(drawn: tuple[Sample, bytes]) -> None:
    from crashlens.parsers import PARSERS

    head = hostile_text(drawn[1][: 64 * 1024])
    for parser in PARSERS:
        try:
            score = parser.sniff(head)
        except BaseException as error:
            error.add_note(f"parser {parser.kind}")
            raise
        assert 0.0 <= float(score) <= 1.0 or score != score, f"{parser.kind}: score {score}"


def check_detect(drawn: tuple[Sample, bytes]) -> None:
    from crashlens.inputs.detect import detect
    from crashlens.model import InputKind

    sample, data = drawn
    detection = detect(hostile_text(data[: 64 * 1024]), sample.name)
    assert isinstance(detection.kind, InputKind)


def check_parse(drawn: tuple[Sample, bytes, str]) -> None:
    """One parser on the input: facts from a document, or every line through a collector."""
    from crashlens.parsers import PARSERS
    from crashlens.parsers.base import DocumentParser, LogParser, collect_text

    sample, data, kind = drawn
    text = hostile_text(data)
    parser = next(p for p in PARSERS if p.kind.value == kind)
    try:
        if isinstance(parser, DocumentParser):
            result = parser.parse(text, "input")
            assert isinstance(result.facts, tuple)
        elif isinstance(parser, LogParser):
            collect_text(parser, text, "input")
    except BaseException as error:
        error.add_note(f"parser {parser.kind}")
        raise


_WRAPS = ("plain", "plain", "plain", "gz", "zip", "tar.gz", "zst", "nested-zip")


@st.composite
def packed_inputs(draw: st.DrawFn) -> tuple[Sample, bytes, str, float]:
    """A hostile input, perhaps inside an archive or compressed stream (perhaps cut)."""
    sample, data = draw(hostile_inputs())
    wrap = draw(st.sampled_from(_WRAPS))
    cut = draw(st.sampled_from([1.0, 1.0, 1.0]) | fractions)
    return sample, data, wrap, cut


def _zip(name: str, data: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(name, data)
    return out.getvalue()


def _pack(sample: Sample, data: bytes, wrap: str, cut: float) -> tuple[str, bytes]:
    name = sample.name
    if wrap == "gz":
        name, data = name + ".gz", gzip.compress(data, mtime=0)
    elif wrap == "zip":
        name, data = "job.zip", _zip(name, data)
    elif wrap == "nested-zip":
        name, data = "job.zip", _zip("inner.zip", _zip(name, data))
    elif wrap == "tar.gz":
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w:gz") as archive:
            member = tarfile.TarInfo(f"job/{name}")
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
        name, data = "job.tar.gz", out.getvalue()
    elif wrap == "zst":
        import zstandard

        name, data = name + ".zst", zstandard.ZstdCompressor().compress(data)
    if wrap != "plain":
        data = data[: max(1, int(len(data) * cut))]
    return name, data


def check_pipeline(drawn: tuple[Sample, bytes, str, float]) -> None:
    """Discover, read, detect, scan, parse, decide: one report, the input never lost."""
    from crashlens.model import InputState, Report, Verdict
    from crashlens.pipeline import AnalyzeOptions, analyze

    sample, data, wrap, cut = drawn
    name, packed = _pack(sample, data, wrap, cut)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(packed)
        report = analyze([str(path)], AnalyzeOptions(backend=_BACKEND[0]))
    assert isinstance(report, Report)
    assert isinstance(report.verdict, Verdict)
    assert report.inputs, "no input listed"
    for item in report.inputs:
        assert item.status in (InputState.ANALYZED, InputState.SKIPPED)
        if item.status is InputState.SKIPPED:
            assert item.reason, f"{item.path} skipped without a reason"
            if wrap == "plain":  # nothing to be corrupt but the content: it must be read
                assert "could not be read" not in item.reason, item.reason
    _render_all(report)


_BACKEND = ["auto"]
"""The scan backend the pipeline harness uses (`bench/fuzz.py --backend`)."""


def check_redact(drawn: tuple[Sample, bytes]) -> None:
    """Redaction learns over the whole text first, then writes: nothing learned stays."""
    from crashlens.redact import Redactor

    text = hostile_text(drawn[1])
    redactor = Redactor()
    redactor.text(text)
    out = redactor.text(text)
    for pseudonym, original in redactor.mapping().items():
        if not pseudonym.startswith("host-") or len(original) < 3:
            continue
        # a host is replaced as a whole token ([\w-] on neither side), whatever its case
        leaked = re.search(rf"(?<![\w-]){re.escape(original.lower())}(?![\w-])", out.lower())
        assert leaked is None, f"learned host {original!r} ({pseudonym}) left in the output"


def _render_all(report: Any) -> None:
    from rich.console import Console

    from crashlens.render.html import render_html
    from crashlens.render.json import render_json
    from crashlens.render.markdown import render_markdown
    from crashlens.render.terminal import render_terminal

    json.loads(render_json(report))
    render_markdown(report).encode("utf-8")
    render_html(report).encode("utf-8")
    plain = io.StringIO()
    render_terminal(report, Console(file=plain, width=80, color_system=None))
    plain.getvalue().encode("utf-8")


def _inert_renders(report: Any) -> None:
    from rich.console import Console

    from crashlens.render.html import render_html
    from crashlens.render.json import render_json
    from crashlens.render.markdown import render_markdown
    from crashlens.render.terminal import render_terminal

    as_json = render_json(report)
    assert_inert(as_json, "json")
    for value in _strings(json.loads(as_json)):  # what `jq -r` would print
        assert_inert(value, "json string")
    assert_inert(render_markdown(report), "markdown")
    assert_inert(render_html(report), "html")
    styled = io.StringIO()
    render_terminal(report, Console(file=styled, width=80, force_terminal=True))
    assert_inert(RICH_STYLE.sub("", styled.getvalue()), "terminal")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


# Reports with hostile strings in every field, for the renderers on their own.
hostile_chars = st.characters(codec=None) | st.sampled_from(
    list("\x1b\x9b\x07\x00\r\n\t`|<>[]@!\\*_#~&\u202e\u2028\udcff\x85\x90\x9c")
)
hostile_strings = st.text(hostile_chars, max_size=60)


@st.composite
def hostile_reports(draw: st.DrawFn) -> Any:
    from crashlens.model import (
        Action,
        Assessment,
        Category,
        Cause,
        Ending,
        Evidence,
        InputKind,
        InputState,
        InputStatus,
        Report,
        Role,
        Verdict,
    )

    text = hostile_strings
    maybe = st.none() | text

    def evidence() -> Evidence:
        return Evidence(
            path=draw(text),
            line=draw(st.none() | st.integers(0, 10**6)),
            text=draw(text),
            rule=draw(maybe),
            role=draw(st.sampled_from(Role)),
            note=draw(maybe),
            host=draw(maybe),
            context=tuple(draw(st.lists(st.tuples(st.integers(1, 10**6), text), max_size=2))),
        )

    def action() -> Action:
        lang = draw(st.sampled_from(["shell", "yaml", "python", "conf"]))
        return Action(text=draw(text), command=draw(maybe), lang=lang)

    causes = [
        Cause(
            category=draw(st.sampled_from(Category)),
            confidence=draw(st.floats(0.0, 1.0)),
            summary=draw(text),
            evidence=tuple(evidence() for _ in range(draw(st.integers(0, 2)))),
            remediation=tuple(action() for _ in range(draw(st.integers(0, 2)))),
            next_checks=tuple(action() for _ in range(draw(st.integers(0, 1)))),
            demoted_because=draw(maybe),
        )
        for _ in range(draw(st.integers(0, 2)))
    ]
    inputs = tuple(
        InputStatus(
            path=draw(text),
            kind=draw(st.none() | st.sampled_from(InputKind)),
            status=draw(st.sampled_from(InputState)),
            reason=draw(maybe),
        )
        for _ in range(draw(st.integers(0, 3)))
    )
    assessment = None
    if draw(st.booleans()):
        assessment = Assessment(
            ending=draw(st.sampled_from(Ending)),
            sign=evidence() if draw(st.booleans()) else None,
            reason=draw(text),
            harmless=tuple(draw(st.lists(text, max_size=2))),
        )
    return Report(
        verdict=draw(st.sampled_from(Verdict)),
        causes=tuple(causes),
        inputs=inputs,
        next_checks=tuple(action() for _ in range(draw(st.integers(0, 1)))),
        first_failure=evidence() if draw(st.booleans()) else None,
        notes=tuple(draw(st.lists(text, max_size=2))),
        assessment=assessment,
    )


def check_render(report: Any) -> None:
    _render_all(report)
    _inert_renders(report)


HARNESSES: dict[str, Harness] = {
    harness.name: harness
    for harness in (
        Harness("sniff", hostile_inputs(), check_sniff),
        Harness("detect", hostile_inputs(), check_detect),
        Harness("parse", parser_inputs(), check_parse),
        Harness("pipeline", packed_inputs(), check_pipeline),
        Harness("redact", hostile_inputs(), check_redact),
        Harness("render", hostile_reports(), check_render),
    )
}
"""Every harness by name, in the order `bench/fuzz.py` cycles through them."""
