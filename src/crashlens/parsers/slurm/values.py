"""Slurm's cell values: states, exit codes, memory sizes."""

from __future__ import annotations

import re

from crashlens.model import FactValue

STATES = (
    "OUT_OF_MEMORY",
    "NODE_FAIL",
    "BOOT_FAIL",
    "CANCELLED",
    "COMPLETED",
    "COMPLETING",
    "DEADLINE",
    "FAILED",
    "PREEMPTED",
    "TIMEOUT",
    "RUNNING",
    "PENDING",
    "REQUEUED",
    "RESIZING",
    "REVOKED",
    "SUSPENDED",
)
_STATE_RE = re.compile(r"^([A-Z_]+)\+?(?: by ([0-9]+))?$")
_EXIT_RE = re.compile(r"^([0-9]{1,3}):([0-9]{1,3})$")
_SIZE_RE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([KMGTP]?)([nc]?)$")
_POWERS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5}
MAX_BYTES = 1 << 60


def state_of(cell: str) -> tuple[str, str | None] | None:
    """(state, uid that cancelled) of a State cell; a cut state (`OUT_OF_ME+`) read whole."""
    found = _STATE_RE.match(cell.strip())
    if found is None:
        return None
    word = found.group(1)
    if word not in STATES:
        if not cell.strip().endswith("+") or len(word) < 4:
            return None
        whole = [state for state in STATES if state.startswith(word)]
        if len(whole) != 1:
            return None
        word = whole[0]
    return word, found.group(2)


def exit_of(cell: str) -> tuple[int, int] | None:
    """(exit status, signal) of an ExitCode cell (`0:125`)."""
    found = _EXIT_RE.match(cell.strip())
    return (int(found.group(1)), int(found.group(2))) if found else None


def size_of(cell: str, default_unit: str = "") -> tuple[int, str | None] | None:
    """(bytes, `node`/`cpu` or None) of a MaxRSS / ReqMem cell (`61240388K`, `120Gn`, `4G`)."""
    found = _SIZE_RE.match(cell.strip())
    if found is None:
        return None
    number, unit, per = found.groups()
    size = float(number) * 1024 ** _POWERS[unit or default_unit]
    if not 0 <= size <= MAX_BYTES:
        return None
    return int(size), {"n": "node", "c": "cpu"}.get(per)


def job_of(step: str) -> str:
    """The job id of a step id (`4471920.batch` -> `4471920`, `12_3.0` -> `12_3`)."""
    return step.split(".", 1)[0].rstrip("+")


def state_attrs(
    state: str, by: str | None, code: tuple[int, int] | None, **more: FactValue | None
) -> dict[str, FactValue | None]:
    """The attrs of a `slurm.state` fact, as the launcher collector writes them."""
    attrs: dict[str, FactValue | None] = {
        "exit_code": code[0] if code else None,
        "signal": code[1] if code else None,
        "by": by,
    }
    attrs.update(more)
    return attrs
