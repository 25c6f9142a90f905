"""The signs of how a run ended, and the alarming lines of a run judged to have ended well or to
have been stopped: what `decide.failure` reads its facts into and lists as harmless.

`Sign`: one fact that shows an ending, with what it shows. `completed` and `stop_harmless` say
why each alarming line of a finished or stopped run was no failure (at most `MAX_HARMLESS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from crashlens.model import Assessment, Ending, Fact, Hit, Role
from crashlens.text.clip import shortened

MAX_HARMLESS = 8
"""Alarming lines listed as harmless, at most (then a count)."""


@dataclass(frozen=True, slots=True)
class Sign:
    """One fact that shows how the run ended."""

    ending: Ending
    kind: str
    """For a death: one of `decide.failure.DEATH_SIGNS`; for a finish or a stop: what it is."""
    fact: Fact
    says: str
    """What the line shows, as a clause (`the process was killed by SIGBUS`)."""


def position(sign: Sign) -> tuple[str, int]:
    """Where a sign's line is: its input and line number."""
    return (sign.fact.path, sign.fact.lineno or 0)


@dataclass(frozen=True, slots=True)
class Alarm:
    """An alarming line of a run judged to have ended well: where, and what it shows."""

    path: str
    lineno: int | None
    says: str


def alarms(signs: Sequence[Sign], hits: Sequence[Hit]) -> list[Alarm]:
    """The death signs and the failure lines the rules matched, once per line, in order."""
    found = [Alarm(s.fact.path, s.fact.lineno, s.says) for s in signs]
    found += [
        Alarm(h.path, h.lineno, f"`{shortened(h.text.strip(), 80)}` ({h.rule_id})")
        for h in hits
        if h.role is not Role.CONTEXT and not h.against
    ]
    kept: dict[tuple[str, int | None], Alarm] = {}
    for alarm in found:
        kept.setdefault((alarm.path, alarm.lineno), alarm)
    return sorted(kept.values(), key=lambda a: (a.path, a.lineno or 0))


def completed(finishes: Sequence[Sign], alarms: Sequence[Alarm]) -> Assessment:
    """A finished run's assessment: its last finish cited, and each alarming line (but the
    finish's own) listed as harmless with why (before the finish, after it, or elsewhere)."""
    best = max(finishes, key=position)
    harmless = []
    for alarm in alarms:
        if (alarm.path, alarm.lineno) == (best.fact.path, best.fact.lineno):
            continue
        ends = [f.fact.lineno or 0 for f in finishes if f.fact.path == alarm.path and f.fact.lineno]
        if ends and (alarm.lineno or 0) > max(ends):
            why = "after the run had finished: teardown (finalizers, interpreter exit)"
        elif ends and alarm.lineno is not None:
            why = "before the run finished: the run went on from it"
        else:
            why = "the run's own output says it finished: teardown or another process"
        harmless.append(f"{place(alarm.path, alarm.lineno)}: {alarm.says}; {why}.")
    more = len(harmless) - MAX_HARMLESS
    listed = harmless[:MAX_HARMLESS] + ([f"... and {more} more such lines."] if more > 0 else [])
    return Assessment(
        ending=Ending.COMPLETED,
        sign=best.fact.cited(best.says),
        reason=f"The run finished normally: {best.says}.",
        harmless=tuple(listed),
    )


def alarming(stops: Sequence[Sign]) -> list[Sign]:
    """The stop signs that look like a failure (a kill after the grace period); the stop's
    own lines (`CANCELLED`, SIGTERM) need no excuse."""
    return [s for s in stops if s.kind not in ("scheduler", "interrupt")]


def stop_harmless(alarms: Sequence[Alarm], best: Sign) -> list[str]:
    """The alarming lines of a stopped run (but the stop's own), listed as part of the stop."""
    listed = [
        f"{place(a.path, a.lineno)}: {a.says}; part of the stop or before it, not a failure."
        for a in alarms
        if (a.path, a.lineno) != (best.fact.path, best.fact.lineno)
    ]
    more = len(listed) - MAX_HARMLESS
    return listed[:MAX_HARMLESS] + ([f"... and {more} more such lines."] if more > 0 else [])


def place(path: str, lineno: int | None) -> str:
    """`path:lineno`, or the path where no line is known."""
    return f"{path}:{lineno}" if lineno is not None else path
