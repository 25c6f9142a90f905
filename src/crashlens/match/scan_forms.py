"""What the buffer scan searches for each pattern: its scan form, and a disk cache of them.

A rule or anchor regex is searched in big buffers by Hyperscan (or the pure-Python backend),
which only has to find the lines that may match; the exact regex re-checks each such line.
So the scan searches a superset that costs fewer match callbacks: the pattern without its line
anchors and with its tail cut short (`scan_form`). Working that out for the ~1,100 patterns of
a kind took 0.3-0.6 s (a `re.compile` of each cut form, to catch a cut that broke an escape),
a quarter of `crashlens analyze` on a small job folder; the forms of a pattern list are kept
in the disk cache beside the Hyperscan databases, keyed by the patterns and this module's own
source (a change to the cutting rules gives new entries).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from crashlens.match.diskcache import read_entry, write_entry
from crashlens.text.linear import split_top

_FORMS: dict[str, str] = {}
"""Each regex's scan form, as worked out or read from the cache in this process."""
_CACHE_FROM = 32
"""Patterns without a known form from which a list's forms are read from (or written to) the
disk cache: fewer cost less to work out than the cache's read."""


def scan_form(regex: str) -> str:
    """What the buffer scan searches for: `unanchored(regex)` with its tail cut short.

    Hyperscan reports *every* end offset of a match, and each one costs a Python callback:
    `-{20,}` on a 60-dash border line reports 41 ends, `\\[[0-9]+\\]:[ \\t]*` two. The scan
    only needs to know which lines hold a match, so a trailing optional atom is dropped and a
    trailing repeat keeps its minimum (also inside a final group's alternatives). Each step
    gives a superset on every line; the per-line re-check with the full regex stays exact.
    """
    form = _FORMS.get(regex)
    if form is None:
        form = _FORMS[regex] = _form(regex)
    return form


def scan_forms(regexes: Sequence[str]) -> list[str]:
    """`scan_form` of each regex, those not yet known read from the disk cache when many."""
    missing = list(dict.fromkeys(r for r in regexes if r not in _FORMS))
    if len(missing) >= _CACHE_FROM:
        name = _cache_name(missing)
        cached = _read(name, len(missing))
        if cached is not None:
            _FORMS.update(zip(missing, cached, strict=True))
        else:
            forms = [scan_form(regex) for regex in missing]
            write_entry(name, json.dumps(forms).encode("utf-8"))
    return [scan_form(regex) for regex in regexes]


@cache
def _code_digest() -> bytes:
    """This module's source: the cutting rules the cached forms were made by."""
    return hashlib.sha256(Path(__file__).read_bytes()).digest()


def _cache_name(regexes: Sequence[str]) -> str:
    digest = hashlib.sha256(_code_digest())
    for regex in regexes:
        digest.update(regex.encode("utf-8", "surrogatepass") + b"\0")
    return f"scanforms-{digest.hexdigest()[:24]}.json"


def _read(name: str, count: int) -> list[str] | None:
    """The cached forms under `name`, or None (missing, damaged, or not `count` strings)."""
    data = read_entry(name)
    if data is None:
        return None
    try:
        forms = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(forms, list) or len(forms) != count:
        return None
    if not all(isinstance(form, str) and form for form in forms):
        return None
    return forms


_LEADING_CARET = re.compile(r"^((?:\(\?[a-zA-Z]+\))?)\^")
_TRAILING_DOLLAR = re.compile(r"(?<!\\)\$$")


def unanchored(regex: str) -> str:
    """The pattern without a leading `^` / trailing `$`: a superset, for the buffer scan.

    Line anchors are checked by the per-line re-check anyway, and Hyperscan was seen to drop
    matches of one `^`-anchored pattern when compiled beside another (a launcher report field
    line next to a `====` border), so the scan never relies on them.
    """
    return _TRAILING_DOLLAR.sub("", _LEADING_CARET.sub(r"\1", regex))


# A last atom (class, escape or plain character) and its quantifier, at the end of a pattern.
_TAIL_REPEAT = re.compile(
    r"(\[(?:\\.|[^\]\\])*\]|\\.|[^\\()|\[\]*+?{}])(\*|\?|\+|\{[0-9]+(?:,[0-9]*)?\})$"
)


def _form(regex: str) -> str:
    """`scan_form` worked out (its docstring says how)."""
    whole = unanchored(regex)
    trimmed = _trim_tail(whole)
    try:
        re.compile(trimmed)
    except re.error:  # an escape cut in half (`\\x1b*`): keep the pattern whole
        return whole
    return trimmed if trimmed else whole


def _trim_tail(regex: str, free: bool = True) -> str:
    """`free`: what comes before `regex` may start anywhere (true at the top: the scan is
    unanchored), which is what lets a run be found by its end alone."""
    while True:
        if regex[-2:] in (")?", ")*") and regex[-3:-2] != "\\":
            group = _final_group(regex[:-1])
            if group is None:
                return regex
            regex = regex[: group[0]]  # an optional group at the end: drop it
            continue
        if regex.endswith(")+") and regex[-3:-2] != "\\":
            regex = regex[:-1]
        if regex.endswith(")") and not regex.endswith("\\)"):
            group = _final_group(regex)
            if group is None:
                return regex
            start, opener = group
            body = regex[start + len(opener) : -1]
            inner = free and _matches_empty(regex[:start])
            branches = [_trim_tail(b, inner) for b in split_top(body, "|")]
            return regex[:start] + opener + "|".join(branches) + ")"
        match = _TAIL_REPEAT.search(regex)
        if match is None:
            return regex
        atom, quantifier = match.group(1), match.group(2)
        head = regex[: match.start()]
        if quantifier in ("*", "?") or quantifier.startswith("{0"):
            regex = head  # zero repeats allowed: drop it and look at what precedes
            continue
        if quantifier == "+":
            return head + atom
        least = quantifier[1:-1].split(",")[0]
        if least == "1":
            return head + atom
        # `={20}` alone still ends at every `=` from the 20th on in a 60-`=` border; asking
        # for the end of the run (a character that is not the atom, or the line's end) leaves
        # one end per run and still finds every line with such a run.
        other = _other_than(atom) if free and _matches_empty(head) else None
        run_end = f"(?:{other}|$)" if other is not None else ""
        return head + atom + "{" + least + "}" + run_end


def _matches_empty(regex: str) -> bool:
    """Whether `regex` (a prefix of a pattern) can match nothing, so a match may start later."""
    try:
        return re.fullmatch(regex, "") is not None
    except re.error:
        return False


def _other_than(atom: str) -> str | None:
    """A class matching one character of the line that `atom` does not match, if simple."""
    if atom.startswith("[") and not atom.startswith("[^"):
        return "[^" + atom[1:-1] + "\\n]"
    if atom.startswith("\\") and (not atom[1].isalnum() or atom[1] in "dsw"):
        return "[^" + atom + "\\n]"
    if len(atom) == 1 and atom != ".":
        return "[^" + ("\\" + atom if atom in "]\\^-" else atom) + "\\n]"
    return None


def _final_group(regex: str) -> tuple[int, str] | None:
    """(start, opener) of the group that closes at the end of `regex`, if it is plain or named.

    Read forwards, so that escapes and character classes (`[0-9]`, `[^)]`) are skipped as
    units: a bracket or parenthesis inside them opens or closes nothing.
    """
    opened: list[int] = []
    start = closed = -1
    index = 0
    length = len(regex)
    while index < length:
        char = regex[index]
        if char == "\\":
            index += 2
            continue
        if char == "[":
            index = _class_end(regex, index)
            continue
        if char == "(":
            opened.append(index)
        elif char == ")":
            if not opened:
                return None
            start, closed = opened.pop(), index
        index += 1
    if opened or closed != length - 1:
        return None
    named = _NAMED_OPENER.match(regex, start)
    if named is not None:
        # A named group matches what its body does: a rule's capture at the end of its pattern
        # (`Timeout\\(ms\\)=(?P<timeout_ms>[0-9]+)`) otherwise cost a callback per digit.
        return start, named.group()
    if regex.startswith("(?:", start):
        return start, "(?:"
    if regex.startswith("(?", start):
        return None  # lookaround or flag group: keep as is
    return start, "("


def _class_end(regex: str, index: int) -> int:
    """The index after the character class opening at `index` (`]` first in it is literal)."""
    index += 1
    if index < len(regex) and regex[index] == "^":
        index += 1
    if index < len(regex) and regex[index] == "]":
        index += 1
    while index < len(regex) and regex[index] != "]":
        index += 2 if regex[index] == "\\" else 1
    return index + 1


_NAMED_OPENER = re.compile(r"\(\?P<[A-Za-z_][A-Za-z0-9_]*>")
