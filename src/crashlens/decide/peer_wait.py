"""A stop of a distributed run that never got past waiting for its peers is a hang.

A user who presses Ctrl-C (or a scheduler's time limit) on a run that printed no training
progress, while its processes were waiting for their peers to join (PyTorch's store-based
barrier, ps-lite's scheduler registering nodes: `PEER_WAIT_RULES`), stopped a rendezvous
that was not going to finish: the peers never joined. That stop is no evidence that the run
went well: the ending is `unknown` and the wait line is cited, so a failure stays possible
(`policy`). A stop after any training progress, or with no such wait in view (a Ctrl-C
during data loading), stays a stop.
"""

from __future__ import annotations

from collections.abc import Sequence

from crashlens.model import Assessment, Ending, Fact, Hit

PEER_WAIT_RULES = frozenset({"network-waiting-for-peers"})
"""Context rules whose lines show processes waiting for their peers to join."""
PROGRESS_KEYS = frozenset({"log.progress", "log.progress_mark"})


def stopped_waiting(facts: Sequence[Fact], hits: Sequence[Hit]) -> Assessment | None:
    """`unknown` when the run was stopped while waiting for peers with no progress, else
    None."""
    if any(f.key in PROGRESS_KEYS for f in facts):
        return None
    waits = [h for h in hits if h.rule_id in PEER_WAIT_RULES and h.lineno is not None]
    if not waits:
        return None
    last = max(waits, key=lambda h: (h.path, h.lineno or 0))
    sign = Fact(key="log.peer_wait", value=True, path=last.path, lineno=last.lineno, text=last.text)
    return Assessment(
        ending=Ending.UNKNOWN,
        sign=sign.cited("the processes were waiting for their peers to join"),
        reason=(
            "The run was stopped from outside before any training progress, while its "
            "processes were waiting for their peers to join: a rendezvous that hung (peers "
            "that never started, or could not reach the master: a firewall, a wrong address "
            "or port), not a run that went well."
        ),
    )
