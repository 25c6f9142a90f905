"""ReDoS: no rule pattern or parser regex costs more than linear time on a hostile line.

For every rule pattern (the shipped library, catalog-expanded patterns included, and the
rules' excludes) and every regex of the parser and text modules (found by walking them for
compiled patterns, anchor tables and gates), adversarial lines are built from the pattern
itself: the text that reaches each unbounded repeat, then a long run of what the repeat
accepts, with the closing part left out (so the match fails after trying hard); and the
whole pattern's example repeated, cut short by one character. Each line is matched at 2 KiB
and 32 KiB (8 KiB between, to stop early); a pattern fails when its time grows much faster
than the line. This is a complexity check, not a speed check: a time under `FLOOR` passes
whatever the ratio, and the ratio allowed is `SLACK` times the size ratio (quadratic growth
is 16 times over it).

Each rule pattern is checked as each backend's Python side runs it: the per-line re-check
(`Rule.match_line`, the authority on both backends), the pure-Python scan's search of a
candidate line, and the hyperscan scan of the line with the engine's line bookkeeping.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
import string
import time
from collections.abc import Callable, Iterator
from re import _constants as _sre  # type: ignore[attr-defined]
from re import _parser  # type: ignore[attr-defined]
from typing import Any, NamedTuple

import pytest

import crashlens.parsers
import crashlens.text
from crashlens.match.rules import shipped_rules
from crashlens.match.scan import (
    HyperscanBackend,
    PythonBackend,
    ScanPattern,
    hyperscan_available,
    scan_chunks,
)
from crashlens.match.scan_forms import scan_form
from crashlens.parsers.base import clean_line
from crashlens.text.linear import linear_bytes, linear_text
from crashlens.text.literals import Gate

# Timing checks: coverage's line tracer multiplies their matching time (96 s against 18 s for
# the hyperscan scan's check) and adds noise to the growth ratios they measure; the code they
# drive is measured by the rest of the suite.
pytestmark = pytest.mark.no_cover

SIZES = (2048, 8192, 32768)
FLOOR = 0.01
"""CPU seconds under which a time says nothing about growth (noise, warm-up, cache misses)."""
SLACK = 10.0
"""Allowed growth over linear: time ratio up to SLACK x size ratio. Quadratic growth from
2 KiB to 32 KiB is 16 times linear, cubic 256 times; linear patterns were seen at up to 7
times on a machine busy with other work (allocation and cache effects included)."""
ABSURD = 0.5
"""A single match slower than this at 2 or 8 KiB fails outright (linear takes microseconds)."""

# ---------------------------------------------------------------------------------------------
# adversarial lines

_PALETTE = "".join(
    dict.fromkeys(
        "a0 A_-.:/=,;()[]{}<>\"'\t@#%&*+!?|~^$\\`"
        + "".join(c for c in string.printable if c not in "\n\r\x0b\x0c")
        + "\x1bé"
    )
)
_STYLES = ("a0 ", " a0", "-.:/,;=()a", "0 a", "A")
"""Orders in which a character class's members are tried for examples: a few shapes each."""
_BREAKERS = "\x01!\t #"

_CATEGORY: dict[Any, Callable[[str], bool]] = {
    _sre.CATEGORY_DIGIT: str.isdigit,
    _sre.CATEGORY_NOT_DIGIT: lambda c: not c.isdigit(),
    _sre.CATEGORY_SPACE: str.isspace,
    _sre.CATEGORY_NOT_SPACE: lambda c: not c.isspace(),
    _sre.CATEGORY_WORD: lambda c: c.isalnum() or c == "_",
    _sre.CATEGORY_NOT_WORD: lambda c: not (c.isalnum() or c == "_"),
}
_REPEATS = (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT)
_SINGLE = (_sre.LITERAL, _sre.NOT_LITERAL, _sre.ANY, _sre.IN)


def _in_class(items: list[Any], ch: str, fold: bool) -> bool:
    chars = {ch, ch.lower(), ch.upper()} if fold else {ch}
    negate, hit = False, False
    for op, arg in items:
        if op is _sre.NEGATE:
            negate = True
        elif op is _sre.LITERAL:
            hit |= chr(arg) in chars
        elif op in (_sre.RANGE, _sre.RANGE_UNI_IGNORE):
            hit |= any(arg[0] <= ord(c) <= arg[1] for c in chars)
        elif op is _sre.CATEGORY:
            hit |= _CATEGORY.get(arg, lambda c: False)(ch)
    return hit != negate


def _accepts(node: tuple[Any, Any], ch: str, fold: bool) -> bool:
    op, arg = node
    if op is _sre.LITERAL:
        return ch == chr(arg) or (fold and ch.lower() == chr(arg).lower())
    if op is _sre.NOT_LITERAL:
        return ch not in (chr(arg), "\n")
    if op is _sre.ANY:
        return ch != "\n"
    return op is _sre.IN and _in_class(arg, ch, fold)


def _frozen(value: Any) -> Any:
    """`value` with its lists as tuples, so a class's items can key a cache."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(item) for item in value)
    return value


@functools.cache
def _first_accepted(op: Any, arg: Any, style: str, fold: bool) -> str:
    """The first character of `style`, then the palette, that the single node accepts.

    Cached: the same classes recur across a thousand patterns and five styles, and the
    walk of the palette was most of the time spent building attacks."""
    return next((c for c in style + _PALETTE if _accepts((op, arg), c, fold)), "")


def _example(items: list[Any], style: str, fold: bool, depth: int = 0) -> str:
    """A short string the sequence matches (as far as a plain walk of it can tell)."""
    out: list[str] = []
    for op, arg in items:
        if op in _SINGLE:
            out.append(_first_accepted(op, _frozen(arg), style, fold))
        elif op is _sre.SUBPATTERN:
            out.append(_example(list(arg[-1]), style, fold, depth + 1))
        elif op is _sre.ATOMIC_GROUP:
            out.append(_example(list(arg), style, fold, depth + 1))
        elif op is _sre.BRANCH:
            out.append(_example(list(arg[1][0]), style, fold, depth + 1))
        elif op in _REPEATS:
            times = min(max(arg[0], 1 if depth < 6 else 0), 64)
            out.append(_example(list(arg[2]), style, fold, depth + 1) * times)
        elif op is _sre.GROUPREF_EXISTS:
            out.append(_example(list(arg[1]), style, fold, depth + 1))
    return "".join(out)


class Attack(NamedTuple):
    """A line shape: `prefix`, then `pump` repeated to the wanted size, then `suffix`."""

    prefix: str
    pump: str
    suffix: str

    def line(self, size: int) -> str:
        times = max(1, (size - len(self.prefix) - len(self.suffix)) // len(self.pump))
        return self.prefix + self.pump * times + self.suffix


def _repeats(items: list[Any], before: list[Any], found: list[tuple[list[Any], list[Any], int]]):
    """Every unbounded (or long) repeat, with the nodes a match passes before reaching it."""
    for index, (op, arg) in enumerate(items):
        preceding = [*before, *items[:index]]
        if op in _REPEATS:
            if arg[1] is _sre.MAXREPEAT or arg[1] >= 32:
                found.append((preceding, items, index))
            _repeats(list(arg[2]), preceding, found)
        elif op is _sre.SUBPATTERN:
            _repeats(list(arg[-1]), preceding, found)
        elif op is _sre.ATOMIC_GROUP:
            _repeats(list(arg), preceding, found)
        elif op is _sre.BRANCH:
            for branch in arg[1]:
                _repeats(list(branch), preceding, found)


def attacks(pattern: str, flags: int = 0, limit: int = 48) -> list[Attack]:
    """Adversarial line shapes for `pattern` (see the module doc), at most `limit`.

    The shapes of the whole match and of each repeat are taken in turn (the first of each,
    then the second of each, ...), so a cap never leaves a later alternative's repeats
    untried: cut in order, 48 shapes of the first alternative of an XML tokenizer hid a
    quadratic tag name in its fifth."""
    parsed = _parser.parse(pattern, flags)
    fold = bool((parsed.state.flags | flags) & re.IGNORECASE)
    top = list(parsed)
    groups: list[list[Attack]] = []
    whole_shapes: list[Attack] = []
    for style in _STYLES:
        whole = _example(top, style, fold)
        if whole:
            whole_shapes.append(Attack("", whole, ""))
            if len(whole) > 1:  # the whole match repeated, its closing character left out
                whole_shapes.append(Attack("", whole[:-1], ""))
                whole_shapes.append(Attack("", whole[:-1] + " ", ""))
    groups.append(whole_shapes)
    repeats: list[tuple[list[Any], list[Any], int]] = []
    _repeats(top, [], repeats)
    for preceding, sequence, index in repeats:
        shapes: list[Attack] = []
        body = list(sequence[index][1][2])
        for style in _STYLES:
            prefix, unit = _example(preceding, style, fold), _example(body, style, fold)
            if not unit:
                continue
            shapes.append(Attack(prefix, unit, ""))
            following = ""
            for extra in sequence[index + 1 : index + 4]:  # the repeat and what comes next
                following += _example([extra], style, fold)
                if following:
                    shapes.append(Attack(prefix, unit + following, ""))
            singles = [node for node in body if node[0] in _SINGLE]
            breaker = next(
                (b for b in _BREAKERS if not any(_accepts(n, b, fold) for n in singles)), None
            )
            if breaker is not None:
                shapes.append(Attack(prefix, unit, breaker))
        groups.append(shapes)
    in_turn = (group[i] for i in range(max(map(len, groups))) for group in groups if i < len(group))
    return list(dict.fromkeys(a for a in in_turn if a.pump))[:limit]


def test_attacks_reach_the_repeat_without_the_closing_part() -> None:
    shapes = attacks(r"^[ \t]*Filesystem[ \t]+(.*?)[ \t]*Mounted[ \t]+on[ \t]*$")
    lines = [a.line(200) for a in shapes]
    assert any("Filesystem " in line[:12] and "Mounted" not in line for line in lines)
    assert any(line.count("Filesystem") > 2 for line in lines)  # the whole line repeated
    assert all(150 <= len(line) <= 260 for line in lines)


# ---------------------------------------------------------------------------------------------
# measuring growth


def _once(run: Callable[[], object]) -> float:
    """CPU seconds of this thread that one call of `run` took."""
    start = time.thread_time()
    run()
    return time.thread_time() - start


def _seconds(run: Callable[[], object], repeat: int = 1) -> float:
    """The best of `repeat` timings of `run`, in CPU seconds of this thread; a fast one is
    timed over enough calls to take a millisecond, so a small line's time is not lost in the
    clock's noise.

    CPU time, not wall time: on a machine shared with other work, time spent waiting for a
    core is not the pattern's (a loaded machine made linear patterns look super-linear)."""
    best = float("inf")
    for _ in range(repeat):
        calls, start = 0, time.thread_time()
        while True:
            run()
            calls += 1
            spent = time.thread_time() - start
            if spent > 0.001 or calls >= 64:
                break
        best = min(best, spent / calls)
    return best


def super_linear(run: Callable[[str], object], shapes: list[Attack]) -> str | None:
    """How `run` grew faster than linear on one of `shapes`, or None when it never did."""
    for shape in shapes:
        lines = [shape.line(size) for size in SIZES]
        base = 0.0
        for size, line in zip(SIZES, lines, strict=True):
            # One call first: a line done under the floor says nothing about growth, and
            # timing each of some 40,000 lines to a millisecond was most of this module's time.
            spent = _once(lambda line=line: run(line))
            if spent > FLOOR:  # worth a closer look: the best of three
                spent = _seconds(lambda line=line: run(line), 3)
            if size == SIZES[0]:
                base = spent
            elif spent > FLOOR:
                if base < FLOOR:
                    base = _seconds(lambda first=lines[0]: run(first), 5)
                if spent / max(base, 1e-6) > SLACK * size / SIZES[0]:
                    # confirm: a pause of the machine (other work, a GC pass) is not growth
                    base = _seconds(lambda first=lines[0]: run(first), 5)
                    spent = _seconds(lambda line=line: run(line), 5)
                    if spent > FLOOR and spent / max(base, 1e-6) > SLACK * size / SIZES[0]:
                        return _described(shape, base, size, spent)
            if size < SIZES[-1] and spent > ABSURD:
                return _described(shape, base, size, spent)
            if size == SIZES[1] and spent < FLOOR / 16:
                break  # 8 KiB in well under a millisecond: 32 KiB cannot reach the floor
    return None


def test_the_growth_check_tells_quadratic_from_linear() -> None:
    """The check times each size once and looks closer only past the floor: a quadratic cost
    (about 60 ms at 32 KiB) is still caught, a linear one of the same size still passes.

    Quadratic growth from 2 KiB to 32 KiB is 256 times, the slack allows 160: on a busy 2-core
    machine (the suite's two workers) the 2 KiB time alone can double, when a neighbour shares
    the core, and hide the growth in one try of four. So the quadratic cost must be caught in
    one of three tries; the linear one must pass every try."""

    def quadratic(line: str) -> None:
        for _ in range((len(line) // 16) ** 2):
            pass

    def linear(line: str) -> None:
        for _ in range(len(line) * 32):
            pass

    shape = [Attack("", "a", "")]
    assert any(super_linear(quadratic, shape) is not None for _ in range(3))
    assert all(super_linear(linear, shape) is None for _ in range(3))


def _described(shape: Attack, base: float, size: int, spent: float) -> str:
    return (
        f"{SIZES[0] // 1024} KiB {base * 1e3:.2f} ms, {size // 1024} KiB {spent * 1e3:.1f} ms"
        f" on {shape.prefix[:30]!r} + {shape.pump[:30]!r} x n + {shape.suffix!r}"
    )


# ---------------------------------------------------------------------------------------------
# what is checked

RULES = shipped_rules()


def rule_patterns() -> list[tuple[str, str, int]]:
    """(where, pattern, flags) of every rule pattern and exclude, once each."""
    seen: dict[tuple[str, int], str] = {}
    for rule in RULES:
        for pattern in (*rule.patterns, *rule.excludes):
            seen.setdefault((pattern, rule.flags), rule.id)
    return [(where, pattern, flags) for (pattern, flags), where in seen.items()]


def _walk(value: object, where: str, found: dict[tuple[str, int], str], depth: int = 0) -> None:
    if depth > 4:
        return
    if isinstance(value, re.Pattern):
        if isinstance(value.pattern, str):
            found.setdefault((value.pattern, value.flags), where)
    elif isinstance(value, Gate):
        for pattern in value.patterns:
            _walk(pattern, where, found, depth + 1)
    elif isinstance(value, tuple | list | set | frozenset):
        for item in value:
            _walk(item, where, found, depth + 1)
    elif isinstance(value, dict):
        for item in (*value.keys(), *value.values()):
            _walk(item, where, found, depth + 1)
    elif hasattr(value, "__dataclass_fields__") or hasattr(type(value), "_fields"):
        names = getattr(value, "__dataclass_fields__", None) or type(value)._fields  # type: ignore[attr-defined]
        for name in names:
            item = getattr(value, name, None)
            if name == "pattern" and isinstance(item, str):  # an anchor table entry
                _walk(re.compile(item), where + ANCHOR, found, depth + 1)
            else:
                _walk(item, where, found, depth + 1)


def parser_regexes() -> list[tuple[str, str, int]]:
    """(where, pattern, flags) of every compiled regex of the parser and text modules."""
    found: dict[tuple[str, int], str] = {}
    for package in (crashlens.parsers, crashlens.text):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                where = f"{info.name}.{name}"
                if isinstance(value, type) and value.__module__ == module.__name__:
                    for attr, item in vars(value).items():
                        if attr == "anchors" and isinstance(item, tuple):
                            for anchor in item:
                                _walk(re.compile(anchor), f"{where}.{attr}{ANCHOR}", found)
                            continue
                        _walk(item, f"{where}.{attr}", found)
                else:
                    _walk(value, where, found)
    return [(where, pattern, flags) for (pattern, flags), where in found.items()]


ANCHOR = " (anchor)"
"""Marks a parser's scan anchor: the engine searches it with its linear pre-check."""
RULE_PATTERNS = rule_patterns()
PARSER_REGEXES = parser_regexes()


def test_every_pattern_is_collected() -> None:
    assert len(RULE_PATTERNS) >= 500, "the rule library's patterns are missing"
    assert len(PARSER_REGEXES) >= 300, "the parser modules' regexes are missing"
    wheres = {where for where, _, _ in PARSER_REGEXES}
    for expected in ("parsers.ulimit._BASH_RE", "parsers.base.ANSI_RE", "parsers.df._HEADER_RE"):
        assert any(where.endswith(expected) for where in wheres), expected
    assert any(".anchors" in where or "ANCHORS" in where for where in wheres)


@functools.cache
def _attacks_of(pattern: str, flags: int) -> list[Attack]:
    """`attacks`, built once per worker: four checks walk the same rule patterns."""
    return attacks(pattern, flags)


def _failures(items: list[tuple[str, str, int]], make: Callable[[str, int], Any]) -> list[str]:
    failed = []
    for where, pattern, flags in items:
        run = make(pattern, flags)
        problem = super_linear(run, _attacks_of(pattern, flags))
        if problem:
            failed.append(f"{where}: {pattern[:120]!r}: {problem}")
    return failed


def test_parser_regexes_are_linear() -> None:
    regexes = [item for item in PARSER_REGEXES if not item[0].endswith(ANCHOR)]
    failed = _failures(regexes, lambda p, f: re.compile(p, f).search)
    assert not failed, "super-linear parser regexes:\n" + "\n".join(failed)


def test_parser_anchors_are_linear() -> None:
    """Anchors as the engine's line re-check searches them (`text.linear`)."""
    anchors = [item for item in PARSER_REGEXES if item[0].endswith(ANCHOR)]
    assert len(anchors) >= 50
    failed = _failures(anchors, lambda p, f: linear_text(p, f).search)
    assert not failed, "super-linear parser anchors:\n" + "\n".join(failed)


def test_rule_recheck_is_linear() -> None:
    """`Rule.match_line`'s search, which decides every hit on both backends."""
    failed = _failures(RULE_PATTERNS, lambda p, f: linear_text(p, f).search)
    assert not failed, "super-linear rule patterns (per-line re-check):\n" + "\n".join(failed)


def test_rule_match_line_uses_the_linear_search() -> None:
    rule = next(r for r in RULES if any("[^\\n]*" in p for p in r.patterns))
    pattern = next(p for p in rule.patterns if "[^\\n]*" in p)
    head = pattern.split("[^\\n]*", 1)[0]
    example = next(iter(attacks(head, rule.flags)), Attack("", "x", ""))
    line = (example.line(64) + " ") * 2000
    assert _seconds(lambda: rule.match_line(line)) < 0.5


def _python_scan(pattern: str, flags: int) -> Callable[[str], object]:
    linear = linear_bytes(scan_form(pattern), re.MULTILINE | flags)

    def run(line: str) -> object:
        data = line.encode("utf-8")
        return linear.possible(data) and linear.pattern.search(data)

    return run


def test_rule_patterns_are_linear_in_the_python_scan() -> None:
    """The pure-Python backend's search of a candidate line (Linux aarch64, no hyperscan)."""
    failed = _failures(RULE_PATTERNS, _python_scan)
    assert not failed, "super-linear rule patterns (python scan):\n" + "\n".join(failed)


def _whole_scan(backend_of: Callable[[list[ScanPattern]], Any]) -> Callable[[str, int], Any]:
    """A scan of the line by `backend` holding the pattern, then the engine's re-check.

    One database per pattern, not one of the whole library: the library's scan of a line
    costs the sum of what each of its patterns costs there (its matches, their bookkeeping,
    its re-check), and a sum of linear terms is linear. Scanning every pattern's attacks
    through the whole library measured each line against a thousand patterns (9.5 million
    match callbacks for 150 patterns' attacks) and took most of this module's time."""

    def make(pattern: str, flags: int) -> Callable[[str], object]:
        backend = backend_of([ScanPattern(pattern, bool(flags & re.IGNORECASE))])
        recheck = linear_text(pattern, flags)

        def run(line: str) -> object:
            hits = 0
            for candidate in scan_chunks([line.encode("utf-8")], backend):
                text = clean_line(candidate.line.decode("utf-8", "replace"))
                hits += sum(1 for _ in candidate.patterns if recheck.search(text))
            return hits

        return run

    return make


@pytest.mark.skipif(not hyperscan_available(), reason="hyperscan has no wheel on this platform")
def test_rule_patterns_are_linear_through_the_hyperscan_scan() -> None:
    """Hyperscan's scan of the line, the line bookkeeping and the re-check of its candidates."""
    failed = _failures(RULE_PATTERNS, _whole_scan(HyperscanBackend))
    assert not failed, "super-linear on the hyperscan path:\n" + "\n".join(failed)


@pytest.mark.parametrize("backend_of", [PythonBackend, HyperscanBackend], ids=["python", "hs"])
def test_a_long_line_of_matches_is_found_in_linear_time(backend_of: Callable[..., Any]) -> None:
    """The scan loop once searched back to the line's start for every match of a long line
    (hyperscan reports each one): a 2 MB line took 18 s."""
    if backend_of is HyperscanBackend and not hyperscan_available():
        pytest.skip("hyperscan has no wheel on this platform")
    backend = backend_of([ScanPattern("Bus error")])
    list(scan_chunks([b"Bus error\n"], backend))  # imports and first-call costs

    def run(line: str) -> object:
        return list(scan_chunks([line.encode()], backend))

    assert super_linear(run, [Attack("", "Bus error ", "")]) is None
    assert _seconds(lambda: run("Bus error " * 200_000)) < 1.0  # 2 MB


def iter_failures(items: list[tuple[str, str, int]]) -> Iterator[str]:  # pragma: no cover
    """For `python -m tests.test_redos`-style exploration: every failure, as it is found."""
    for where, pattern, flags in items:
        problem = super_linear(re.compile(pattern, flags).search, attacks(pattern, flags))
        if problem:
            yield f"{where}: {problem}"
