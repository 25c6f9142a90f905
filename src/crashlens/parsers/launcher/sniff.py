"""How much a file's first 64 KiB look like launcher output.

Sniffing runs on every file of a scan, so each marker family is a `Gate`: its regex runs only
when one of the literals derived from it is in the head. The families answer "is this a
launcher log at all", not "which launcher" (`tools.py`): a bare `srun` or a traceback is
common in other text, a torchelastic report header or a `[rank3]:` prefix is not.
"""

from __future__ import annotations

import re

from crashlens.text.literals import Gate

_FAMILIES: tuple[Gate, ...] = (
    Gate(
        r"torch\.distributed\.(?:elastic|run|launch)|ChildFailedError"
        r"|Root Cause \(first observed failure\)"
    ),
    # `.py` inside each branch, so the gate's literals are the file names, not `.py:`.
    Gate(
        r"\[(?:launch\.py|runner\.py|multinode_runner\.py|real_accelerator\.py|engine\.py"
        r"|utils\.py|config\.py):[0-9]+:|deepspeed\.launcher|ds_accelerator"
    ),
    Gate(r"accelerate launch|accelerate/commands/|bin/accelerate\b"),
    Gate(r"llamafactory|llama_factory"),
    Gate(r"NCCL (?:INFO|WARN|TRACE) |NCCL version [0-9]|ProcessGroupNCCL"),
    Gate(r"\[(?:rank|default)[0-9]+\]:"),
    Gate(r"slurmstepd: error: |srun: (?:error|Terminating|Force)|oom[-_]kill event"),
    Gate(r"mpirun noticed|mpirun detected|Primary job +terminated"),
)
_SNIFF_GLOG = re.compile(r"[IWEF][0-9]{4} [0-9:]{8}\.[0-9]{6} +[0-9]+ [^ \]\n]+:[0-9]+\]")
"""glog prefixes (torch >= 2.4 elastic agent), matched at line starts only."""
_SNIFF_LINES = 200
"""Lines looked at for line-start markers (glog prefixes, kernel timestamps)."""
_SNIFF_PYTHON = (
    "Traceback (most recent call last)",
    "CUDA out of memory",
    "DataLoader worker",
    "CalledProcessError",
    "torchrun",
    "deepspeed",
)
_SNIFF_EXCEPTION = ("Error: ", "Exception: ")
_EXCEPTION_PREFIX = re.compile(r"(?:\[[a-z]+[0-9]+\]: ?)?[A-Za-z_][A-Za-z0-9_.]*")
_JSON_LIST = re.compile(r"\[[ \t\r\n]*[{\"\]]")
_YAML_COMPOSE = re.compile(r"^services:[ \t]*$", re.MULTILINE)
_KERNEL_PREFIX = re.compile(r"(?:<[0-9]>)?\[ *[0-9]+\.[0-9]+\]|kern +:")
_KERNEL_STAMP = re.compile(r"\[ *[0-9]+\.[0-9]+\]")
"""In every line `_KERNEL_PREFIX` matches without `kern`; a leading literal, so `re` skips fast."""


def sniff_launcher(head: str) -> float:
    """Launcher markers (torchrun, deepspeed, NCCL, rank prefixes, slurm) -> >= 0.65."""
    stripped = head.lstrip("\ufeff \t\r\n")
    if not stripped:
        return 0.0
    lines = head.split("\n", _SNIFF_LINES)[:_SNIFF_LINES]
    score = _marker_score(head, lines)
    compose = "services:" in head and _YAML_COMPOSE.search(head)
    if stripped[0] == "{" or _JSON_LIST.match(stripped) or compose:
        # JSON (a torchelastic error file, docker inspect) or a compose file quoting a command
        return min(score, 0.1)
    kernel = 0
    if "kern" in head or _KERNEL_STAMP.search(head):  # most launcher logs have neither
        kernel = sum(1 for line in lines if "kernel: " in line or _KERNEL_PREFIX.match(line))
    if kernel * 4 > len(lines):
        score *= 0.4  # mostly a kernel log that mentions a launcher or a traceback
    return min(score, 0.95)


def _exception_line(head: str, marker: str) -> bool:
    """`Error: ` / `Exception: ` as the end of an exception type opening its line
    (`torch.OutOfMemoryError: `), not inside a kernel message (`Graphics Exception: ESR`)."""
    at = head.find(marker)
    while at >= 0:
        line_start = head.rfind("\n", 0, at) + 1
        if _EXCEPTION_PREFIX.fullmatch(head, line_start, at) is not None:
            return True
        at = head.find(marker, at + len(marker))
    return False


def _marker_score(head: str, lines: list[str]) -> float:
    """0.65 for one launcher family, more for each other family; 0.5-0.65 for Python alone."""
    families = sum(1 for family in _FAMILIES if family.search(head) is not None)
    families += any(_SNIFF_GLOG.match(line) for line in lines)
    python = sum(1 for marker in _SNIFF_PYTHON if marker in head)
    python += any(_exception_line(head, marker) for marker in _SNIFF_EXCEPTION)
    if families:
        score = 0.65 + 0.07 * (families - 1) + (0.05 if python else 0.0)
    elif python:
        score = 0.45 + 0.05 * min(python, 4)
    else:
        score = 0.0
    return score
