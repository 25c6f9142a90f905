"""One command run with and without `sudo`, failing only without it: a permissions fact.

A report often ends with the check its author ran at a shell: the same command as root and as
the user (`sudo .../python -c "import torch; print(torch.cuda.is_available())"` prints True,
the same without sudo prints False; `sudo nvidia-smi` lists the GPUs, `nvidia-smi` says
Insufficient Permissions). Root may open what the user may not (a device node of a group the
user is not in, a root-owned directory), so when only the unprivileged run fails, the failure
is one of permissions, whatever the error's own wording. The transcript is read where it
sits, among the log's last lines (`parsers.base.TAIL_LINES`): a prompt line (`$ `, `# `,
`user@host:~$ `, `(venv) user@host:~> `, `[user@host dir]$ `), then the command's output up to
the next prompt.

Fact (at most one per command):

* `shell.sudo_contrast`: str the command, as run without sudo; attrs `with_sudo` and
  `without_sudo` (the first line of each run's output), at the unprivileged run's prompt line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from crashlens.model import Fact, Line
from crashlens.parsers.base import fact

KEY = "shell.sudo_contrast"
PROMPT_ENV = r"^(?:\([^()\n]{1,40}\)[ \t]*)?"
"""A prompt's opening: a virtualenv or conda environment, if any."""
PROMPT_WHO = (
    r"(?:\[[^\]\n]{1,80}\]|[A-Za-z0-9_.-]{1,64}@[A-Za-z0-9_.-]{1,64}(?::[^ \t\n$#>%]{0,200})?)"
)
"""A prompt's `[user@host dir]` or `user@host:~/dir`."""
PROMPT = re.compile(PROMPT_ENV + PROMPT_WHO + r"?[ \t]?[$#>%][ \t]+(?P<command>[^ \t\n].*)$")
_SUDO = re.compile(r"^sudo(?P<flags>(?:[ \t]+-[A-Za-z]+)*)[ \t]+(?P<command>[^ \t\n-].*)$")
_OTHER_USER = re.compile(r"[ \t]-[A-Za-z]*[ug]")
"""sudo's `-u user` / `-g group` run the command as someone else, not as root."""
FAILED = re.compile(
    r"^False$|[Pp]ermission denied|[Ii]nsufficient [Pp]ermissions|[Oo]peration not permitted"
    r"|\bE(?:ACCES|PERM)\b|no CUDA-capable device|[Nn]o devices were found|[Ff]ailed to"
    r"|[Ee]rror|[Uu]nable to|[Cc]annot |[Cc]ould not "
)
"""What an unprivileged run prints when it could not do what root could."""
MAX_OUTPUT = 200


@dataclass
class _Run:
    command: str
    sudo: bool
    line: Line
    output: list[str] = field(default_factory=list)


def _runs(tail: Sequence[Line]) -> list[_Run]:
    runs: list[_Run] = []
    for line in tail:
        text = line.text.rstrip()
        if m := PROMPT.match(text):
            command = m.group("command").strip()
            sudo = _SUDO.match(command)
            if sudo is not None and _OTHER_USER.search(sudo.group("flags") or ""):
                runs.append(_Run(command, False, line))
            elif sudo is not None:
                runs.append(_Run(sudo.group("command").strip(), True, line))
            else:
                runs.append(_Run(command, False, line))
        elif runs and text.strip():
            runs[-1].output.append(text.strip()[:MAX_OUTPUT])
    return runs


def sudo_contrast(path: str, tail: Sequence[Line]) -> list[Fact]:
    """A `shell.sudo_contrast` fact for each command of the transcript in `tail` that failed
    without sudo and did not with it."""
    runs = _runs(tail)
    as_root = {run.command: run for run in runs if run.sudo and run.output}
    found: dict[str, Fact] = {}
    for run in runs:
        root = as_root.get(run.command)
        if run.sudo or root is None or run.command in found or not run.output:
            continue
        failed = any(FAILED.search(text) for text in run.output)
        root_failed = any(FAILED.search(text) for text in root.output)
        if failed and not root_failed:
            found[run.command] = fact(
                KEY,
                run.command[:MAX_OUTPUT],
                path,
                run.line.lineno,
                text=run.line.raw,
                with_sudo=root.output[0],
                without_sudo=run.output[0],
            )
    return list(found.values())
