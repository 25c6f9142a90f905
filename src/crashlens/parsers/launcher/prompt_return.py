"""The shell prompt back after a command's output: the command exited.

A pasted console session often ends with the shell's next prompt (`(env) [user@host dir]$`,
`user@host:~/run$`): the command it ran before has exited. How is not said, but the ways a
run dies leave words before that prompt: a signal's strsignal text from the shell (`Killed`,
`Bus error (core dumped)`), Python's traceback, a library's fatal message. When none of them
is there, the command most likely ended as it meant to (Lightning's early stopping, a script
that printed its result), so the failure detector reads the prompt as an exit that names no
failure, and drops it once a failure is in view.

Fact (at most one per log):

* `shell.prompt_returned`: str the command the earlier prompt ran, at the bare prompt's line
  (the log's last non-blank line), when that command printed output before the prompt came
  back.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from crashlens.model import Fact, Line
from crashlens.parsers.base import fact
from crashlens.parsers.launcher.sudo_contrast import PROMPT, PROMPT_ENV, PROMPT_WHO

KEY = "shell.prompt_returned"
# the user and host are required here: a bare `$` or `>` alone is too common in output
BARE_PROMPT = re.compile(PROMPT_ENV + PROMPT_WHO + r"[ \t]?[$#%>]$")
"""A prompt with nothing typed after it: the shell waiting for the next command."""


def prompt_returned(path: str, tail: Sequence[Line]) -> list[Fact]:
    """The `shell.prompt_returned` fact of `tail` (the log's last lines), if it ends so."""
    shown = [line for line in tail if line.text.strip()]
    if len(shown) < 3 or BARE_PROMPT.match(shown[-1].text.rstrip()) is None:
        return []
    for index in range(len(shown) - 2, -1, -1):
        if (m := PROMPT.match(shown[index].text.rstrip())) is not None:
            if index == len(shown) - 2:
                return []  # the command printed nothing: no run to speak of
            last = shown[-1]
            return [fact(KEY, m.group("command").strip()[:200], path, last.lineno, text=last.raw)]
    return []
