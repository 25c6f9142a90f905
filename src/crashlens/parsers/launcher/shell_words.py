"""The shell's report that a command died of a signal, in every form a log keeps it.

bash's and zsh's words for a dying command (`Killed`, `Bus error (core dumped)`, their
translations from the signals catalog), at the end of a line or of a progress bar's last `\r`
redraw, in a job table, or in a non-interactive bash's `<script>: line N: <pid> <word>` report
(with `line` in the user's locale); `shell_signal` names the signal. The death-sign collector
(`deaths`) anchors on these and records `launcher.signal` with source `shell`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from crashlens.parsers.launcher.signals import (
    ENGLISH_SIGNAL_WORDS,
    LOCALE_SIGNAL_WORDS,
    SIGNAL_WORDS,
    SIGNALS,
)
from crashlens.text.values import bounded_int

_SPECIAL = re.compile(r"([\\.^$*+?{}\[\]|()])")


def _alternatives(words: Iterable[str]) -> str:
    """`words` as regex alternatives, longest first (only metacharacters escaped: `re.escape`
    would escape spaces too, which the scan's literal prefilter reads differently)."""
    ordered = sorted(words, key=lambda word: (-len(word), word))
    return "|".join(_SPECIAL.sub(r"\\\1", word) for word in ordered)


WORDS = f"{_alternatives(ENGLISH_SIGNAL_WORDS)}|{_alternatives(LOCALE_SIGNAL_WORDS)}"
"""The shell's words for a dying command: the signals catalog's `shell` lists (the C locale's
and glibc's translations), longest first."""
CORE = (
    # macOS's strsignal adds the signal's BSD number (`Killed: 9`, `Segmentation fault: 11`);
    # bash's `(core dumped)` and its translations (zh_CN new and old, de, ja, es, ru); Japanese
    # strsignal texts end in です before it
    r"(?:: [0-9]{1,2})?(?:です)?(?:[ \t]?\((?:core dump(?:ed)?|核心已转储|吐核"
    r"|Speicherabzug geschrieben|コアダンプ|`core' generado|стек памяти сброшен на диск)\))?"
)
SHELL_WORD = re.compile(
    # At the start of the redraw (after bracketed prefixes such as `[rank0]:`, a job number
    # `[1]+` or `line 12: 4242`), or glued to a progress bar's last character.
    # (at most 8 bracketed prefixes: unbounded, every `]` of a long line of them was a start
    # that rescanned all the ones after it)
    r"(?:^|[\]|%)>])[ \t]*(?:(?:\[[^\]\n]*\][ \t:+-]*){0,8}(?:[0-9]+[ \t]+)?)"
    rf"({WORDS}){CORE}[ \t]*$"
)
"""The shell's report that a command died of a signal, ending a line or its last redraw."""
SHELL_JOB = re.compile(
    # bash's and zsh's job table (`[1]+  Killed   python x.py`, `[1]    4242 killed   python`,
    # `zsh: killed   python x.py`): the word, then the command, also after a progress bar.
    r"(?:^|[\]|%)>])[ \t]*(?:zsh: |\[[0-9]+\][+-]?[ \t]+(?:[0-9]+[ \t]+)?)"
    # (or the word ends the line: the command cut from a paste)
    rf"({WORDS}|abort){CORE}(?:[ \t]{{2,}}[^ \t\n]|[ \t]*$)",
    re.IGNORECASE,
)
LINE_WORD = (
    r"行|строка|рядок|\b(?:line|Zeile|ligne|riga|línea|línia|linha|linia|regel|rad|řádek|riadok"
    r"|rivi|linje|sor|satır)"
)
"""`line` in bash's `%s: line %d: ` in the user's locale (zh_CN/ja, de, fr, it, es, ca, pt, pl/ro,
nl, sv, cs, sk, fi, da/nb, hu, tr, ru, uk): bash translates the word, while the signal's word
may stay English (`riga 24:  8612 Killed`). A locale missing here reads as no death line, never
as a wrong one. (The Cyrillic and CJK words stand before `\b`: Hyperscan's word boundary is
ASCII; the rule library's `host-oom-shell-killed` lists the same words.)"""
SHELL_SCRIPT = re.compile(
    # a non-interactive bash's report on a script's command (`run.sh: line 28:  8156 Killed
    # python3 main.py`, `invoke.sh: riga 24:  8612 Killed  python ...`)
    rf"(?:{LINE_WORD}) [0-9]+:[ \t]+([0-9]+)[ \t]+"
    rf"({WORDS}){CORE}[ \t]+[^ \t\n]"
)
SHELL_PIPELINE = re.compile(
    # the same report for a later command of a pipeline, on the line below the first's:
    # `test.sh: line 2:   133 Broken pipe   yes` then `   134 Killed   | python3 main.py`
    rf"^[ \t]+([0-9]+)[ \t]+({WORDS}){CORE}[ \t]+\|[ \t]*[^ \t\n]"
)
PROGRESS_MARK = re.compile(
    # what a progress bar's redraw holds: tqdm's rate (`1.84s/it]`, `3.27it/s]`), Keras'
    # `ETA: 365s` and `54ms/step`, mmcv's `ETA:  2621s`, a percentage, a bar drawn in `=>`
    # (the bar's first `=>#` is found by a class without them, so no run is tried two ways)
    r"\bETA\b|[0-9](?:it|s|B)/s\b|s/it\b|/step\b|[0-9]%|\[[.-]*[=>#][=>#. -]*\]"
)
_GLUED_WORD = re.compile(
    # the word right after the redraw's last character (a number and its unit, `2621s`, a
    # bracket or a bar's block), or after the blanks a redraw pads with behind a number
    rf"(?:[0-9][A-Za-z]{{0,2}}|[^ \t\w]|[0-9][ \t]+)({WORDS}){CORE}[ \t]*$"
)
"""The shell's word printed where the cursor stood: after a progress redraw that ended
without a newline, glued to its last character (`... - ETA: 365s - loss: 2.1371Killed`)."""
REDRAW_REST = r"(?:[0-9/%|\[=>#]|█|▉|▊|▋|▌|▍|▎|▏|━)"
"""What starts the rest of a redraw the shell's word was printed over: a digit or a bar's
character, never prose (the blocks in an alternation: the scan matches UTF-8 bytes, and a
class would hold their bytes; `deaths` anchors on it)."""
_OVER_REDRAW = re.compile(
    # a redraw that ends with its `\r` (`print(..., end="\r")`) leaves the cursor at the
    # line's start: the word is printed over the redraw's first characters and, on a terminal
    # copied into a report, the rest of the redraw follows it (`Killed96160`, `Killed3/10 loss`,
    # `Killed██▌ | 305/500`)
    rf"^(?:{WORDS})(?={REDRAW_REST})"
)
"""The shell's word printed over the start of a redraw that returned the cursor to column 0."""


def shell_signal(text: str) -> str | None:
    """The signal a shell's word at the end of a line (or its last redraw) names, or None."""
    segment = text.rsplit("\r", 1)[-1] if "\r" in text else text
    m = SHELL_WORD.search(segment.rstrip()) or SHELL_JOB.search(segment)
    if m is None and (m := SHELL_SCRIPT.search(segment) or SHELL_PIPELINE.search(segment)):
        return _signal_of(m.group(2))
    if m is None and (over := _OVER_REDRAW.match(segment.lstrip(" \t"))):
        return _signal_of(over.group(0))
    if m is None and (glued := _GLUED_WORD.search(segment)):
        # only after a progress redraw: elsewhere a word ending a line is prose
        # (`... and the worker was Killed`), whose blank before the word is not the redraw's
        redraw = PROGRESS_MARK.search(segment[: glued.start(1)])
        return _signal_of(glued.group(1)) if redraw else None
    return _signal_of(m.group(1)) if m is not None else None


def _signal_of(word: str) -> str | None:
    signum = SIGNAL_WORDS.get(word.lower(), LOCALE_SIGNAL_WORDS.get(word))
    return SIGNALS.get(signum) if signum is not None else None


def signal_name(value: str) -> str | None:
    """`SIGBUS` or `7` -> `SIGBUS` (Linux numbering); None for what names no signal."""
    if value.isdigit():
        number = bounded_int(value)
        return SIGNALS.get(number) if number is not None else None
    return value if value in SIGNALS.values() else None
