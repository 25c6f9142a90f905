"""What both Kubernetes forms share: quantities, eviction messages, and the fact builder."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from crashlens.model import Fact, FactValue
from crashlens.parsers.base import fact

REPLICA_LABELS = (
    ("training.kubeflow.org/replica-type", "training.kubeflow.org/replica-index"),
    ("jobset.sigs.k8s.io/replicatedjob-name", "jobset.sigs.k8s.io/job-index"),
    ("pytorch-replica-type", "pytorch-replica-index"),
    ("replica-type", "replica-index"),
)
"""Labels that say which replica a pod is: the Kubeflow training operator's (older operators
wrote the short ones), then JobSet's."""
REPLICA_KEYS = frozenset(
    {"k8s.reason", "k8s.exit_code", "k8s.eviction", "k8s.disruption", "k8s.node"}
)
"""Facts of a pod that carry its replica (`replica`, `replica_index`), so a rule can join them
to the job's `k8s.replica_failed` (`same = ['replica']`)."""
MAX_FACTS = 400
"""Facts kept from one input (a list of thousands of pods or events says no more)."""

_QUANTITY_RE = re.compile(
    r"^([0-9]+(?:\.[0-9]+)?)(?:[eE]([0-9]+))?(Ki|Mi|Gi|Ti|Pi|Ei|k|K|M|G|T|P|E|m)?$"
)
_BINARY = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60}
_DECIMAL = {"k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
MAX_BYTES = 1 << 62
"""A memory quantity above this is no real limit (int64 bounds): not kept."""

_EVICTION_RE = re.compile(
    r"low on resource: \[?([A-Za-z-]+)\]?"
    r"|had condition: \[([A-Za-z]+)\]"
    r"|(ephemeral local storage|local ephemeral storage|EmptyDir volume)"
)


def replica_of(labels: dict[str, object]) -> tuple[str | None, str | None]:
    """(replica type in lower case, index) of a pod from its labels; (None, None) if none."""
    for type_label, index_label in REPLICA_LABELS:
        kind = labels.get(type_label)
        if isinstance(kind, str) and kind:
            index = labels.get(index_label)
            return kind.lower(), str(index) if isinstance(index, str | int) else None
    return None, None


def quantity_bytes(text: object) -> int | None:
    """Bytes of a Kubernetes quantity (`64Gi`, `96G`, `128974848`, `129e6`); None otherwise."""
    if isinstance(text, bool):
        return None
    if isinstance(text, int):
        return text if 0 <= text <= MAX_BYTES else None
    if not isinstance(text, str):
        return None
    found = _QUANTITY_RE.match(text.strip())
    if found is None or len(text) > 40:
        return None
    number, exponent, unit = found.groups()
    try:
        value = float(number) * (10 ** int(exponent) if exponent else 1)
    except OverflowError:  # `1e999`: past any float, so past MAX_BYTES
        return None
    if unit == "m":
        value /= 1000
    elif unit:
        value *= _BINARY.get(unit) or _DECIMAL[unit]
    return int(value) if 0 <= value <= MAX_BYTES else None


def eviction_resource(message: str) -> str | None:
    """The resource an eviction message names (`memory`, `ephemeral-storage`, ...)."""
    found = _EVICTION_RE.search(message)
    if found is None:
        return None
    if found.group(1):
        return found.group(1)
    if found.group(2):
        return found.group(2)
    return "ephemeral-storage"


@dataclass(slots=True)
class FactSink:
    """Facts of one input, bounded, each (key, value, attrs) once."""

    path: str
    facts: list[Fact] = field(default_factory=list)
    seen: set[tuple[str, str, str]] = field(default_factory=set)

    def add(
        self,
        key: str,
        value: FactValue,
        lineno: int | None,
        text: str | None,
        **attrs: FactValue | None,
    ) -> None:
        if len(self.facts) >= MAX_FACTS:
            return
        mark = (key, str(value), repr(sorted((k, v) for k, v in attrs.items() if v is not None)))
        if mark in self.seen:
            return
        self.seen.add(mark)
        self.facts.append(fact(key, value, self.path, lineno, text=text, **attrs))


_AVAILABLE_RE = re.compile(r"([0-9]{1,7})/([0-9]{1,7}) nodes are available: ")
_COUNTED_RE = re.compile(r"([0-9]{1,7}) (.+)")
MAX_MESSAGE = 4000
"""Characters of a scheduler message read (a cluster of thousands of nodes says no more)."""
UNSCHEDULABLE = "k8s.unschedulable"


@dataclass(frozen=True, slots=True)
class Blocker:
    """One reason the scheduler gives for nodes that cannot take a pod."""

    text: str
    """As the scheduler words it, without the node count (`Insufficient nvidia.com/gpu`)."""
    kind: str
    """`resource`, `affinity`, `taint`, `volume` or `other`."""
    nodes: int | None
    """How many nodes it rules out."""


def _blocker_kind(text: str) -> str:
    lowered = text.lower()
    if lowered.startswith("insufficient "):
        return "resource"
    if "taint" in lowered:
        return "taint"
    if "affinity" in lowered or "selector" in lowered:
        return "affinity"
    if "volume" in lowered or "persistentvolumeclaim" in lowered:
        return "volume"
    return "other"


def scheduling_blockers(message: str) -> tuple[int | None, list[Blocker]]:
    """(nodes in the cluster, blockers) of a FailedScheduling message: `0/12 nodes are
    available: 4 Insufficient nvidia.com/gpu, 6 node(s) didn't match Pod's node
    affinity/selector. preemption: ...`; a message of another shape is one blocker."""
    text = message[:MAX_MESSAGE].strip()
    found = _AVAILABLE_RE.search(text)
    if found is None:
        return None, [Blocker(text[:200], _blocker_kind(text), None)] if text else []
    reasons = text[found.end() :].split(" preemption:", 1)[0].strip().rstrip(".")
    blockers = []
    # `, ` before a count starts the next reason; an old taint reads `..., that the pod
    # didn't tolerate` (no count), which stays in its reason.
    for part in re.split(r", (?=[0-9]{1,7} )", reasons):
        counted = _COUNTED_RE.fullmatch(part.strip())
        words = (counted.group(2) if counted else part).strip().rstrip(".")
        words = words.removeprefix("node(s) ")
        if words:
            nodes = int(counted.group(1)) if counted else None
            blockers.append(Blocker(words[:200], _blocker_kind(words), nodes))
    return int(found.group(2)), blockers


def add_unschedulable(
    sink: FactSink, pod: str | None, message: str, lineno: int | None, text: str | None
) -> None:
    """One `k8s.unschedulable` fact per blocker of a pod the scheduler could not place."""
    total, blockers = scheduling_blockers(message)
    for blocker in blockers:
        sink.add(
            UNSCHEDULABLE,
            blocker.text,
            lineno,
            text,
            pod=pod,
            kind=blocker.kind,
            nodes=blocker.nodes,
            total=total,
            message=message[:MAX_MESSAGE],
        )


def add_never_scheduled(sink: FactSink) -> None:
    """`k8s.unschedulable` facts for the FailedScheduling events of pods that the input never
    shows scheduled (no `Scheduled` event, no node): a pod placed later did start."""
    scheduled = {str(f.attr("pod")) for f in sink.facts if f.key == "k8s.node"}
    scheduled |= {
        _pod_of(f.attr("object"))
        for f in sink.facts
        if f.key == "k8s.event" and f.value == "Scheduled"
    }
    for item in list(sink.facts):
        if item.key != "k8s.event" or item.value != "FailedScheduling":
            continue
        pod = _pod_of(item.attr("object"))
        message = item.attr("message")
        if pod not in scheduled and isinstance(message, str):
            add_unschedulable(sink, pod or None, message, item.lineno, item.text)


def _pod_of(value: FactValue | None) -> str:
    """The pod an event is about: `pod/x` (kubectl's table), `Pod/x` (its JSON), or `x`."""
    text = str(value or "")
    return text[4:] if text[:4].lower() == "pod/" else text
