"""Every shipped shell command reads right at 80 columns, with no word cut in two.

The terminal report breaks a command only between shell words (`render.fit.shell_lines`); a
single word longer than the room a line leaves cannot be broken, and the terminal would fold
it mid-word, so a pasted command would carry the break. Checked on every step and next check
of every shipped rule (shared blocks included, as the loader expands them) and on every block
of `patterns/remedies/` (the generic checks of an unknown verdict use those directly).
"""

from __future__ import annotations

from collections.abc import Iterator

from rich.cells import cell_len

from crashlens.library import default_pattern_dir
from crashlens.match.rules import Step, load_remedies, shipped_rules
from crashlens.render.fit import CONTINUATION, shell_lines, shell_words
from crashlens.render.terminal import _COMMAND_PROMPT, _CONTINUED

WIDTH = 80
FIRST = WIDTH - len(_COMMAND_PROMPT)
"""The room a command's first line leaves behind its `$` prompt."""
REST = WIDTH - len(_CONTINUED)
"""The room each continuation line leaves behind its indentation."""


def _shell_commands() -> Iterator[tuple[str, str]]:
    """(where it is shipped, command) for every shell command of the library."""
    for rule in shipped_rules():
        for step in (*rule.remediation, *rule.next_checks):
            yield from _shell(rule.id, step)
    for name, remedy in load_remedies(default_pattern_dir()).items():
        for step in remedy.steps:
            yield from _shell(f"remedies/{name}", step)


def _shell(where: str, step: Step) -> Iterator[tuple[str, str]]:
    if step.command and step.lang == "shell":
        yield where, step.command


def _too_wide(command: str) -> list[str]:
    """The words of each row of `command`'s layout that is wider than its room."""
    found = []
    for number, row in enumerate(shell_lines(command, FIRST, REST)):
        room = FIRST if number == 0 else REST
        if cell_len(row) > room:
            words = shell_words(row.removesuffix(CONTINUATION))
            widest = max(words, key=cell_len) if words else row
            found.append(f"{cell_len(row)} > {room} cells, word {widest!r}")
    return found


def test_the_library_has_shell_commands() -> None:
    assert sum(1 for _ in _shell_commands()) > 500


def test_every_shipped_command_fits_80_columns_without_cutting_a_word() -> None:
    # A shared block's command shows under every rule that uses it: one entry per word.
    offending: dict[str, set[str]] = {}
    for where, command in _shell_commands():
        for problem in _too_wide(command):
            offending.setdefault(problem, set()).add(where)
    listing = [
        f"{problem} in {', '.join(sorted(places))}" for problem, places in sorted(offending.items())
    ]
    assert not listing, f"{len(listing)} rows too wide:\n" + "\n".join(listing)


def test_the_check_catches_a_word_too_long_for_any_line() -> None:
    long_word = "python -c " + '"' + "x" * REST + '"'
    assert _too_wide(long_word)
    assert not _too_wide("echo " + " ".join(["word"] * 40))


def test_a_command_that_fits_only_without_its_operator_keeps_the_operator_behind() -> None:
    # `&& python -c "..."` is one cell too wide for a line of its own; `python -c "..."` is not.
    # The operator ends the line before (`a && \`), so the program keeps its `-c` argument.
    second = 'python -c "import torch as t; print(t.cuda.get_device_capability())"'
    first = 'python -c "import torch as t; print(t.cuda.get_arch_list())"'
    rows = shell_lines(f"{first} && {second}", FIRST, len(second) + len(CONTINUATION))
    assert rows == [f"{first} &&{CONTINUATION}", second]


def test_a_segment_that_fits_a_line_of_its_own_still_starts_with_its_operator() -> None:
    rows = shell_lines("echo one two three && echo four", 24, 24)
    assert rows == [f"echo one two three{CONTINUATION}", "&& echo four"]
