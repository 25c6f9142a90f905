"""Kubernetes objects as `kubectl get -o json` or `-o yaml` prints them (kind `kubectl_json`).

A pod, a `List` of pods (`kubectl get pods -o json`), events (`kubectl get events -o json`,
core `v1` with `involvedObject`/`message` and `events.k8s.io/v1` with `regarding`/`note`),
and the status of a Kubeflow training job (PyTorchJob, TFJob, MPIJob, ...: `conditions`,
`replicaStatuses`) or a JobSet (`conditions`, `replicatedJobsStatus`). A pasted command line
before the document is skipped; truncated JSON is closed (`text.tolerant_json`); YAML is read
by `text.mini_yaml`. kubectl sorts keys, so a `List`'s own `kind` comes after its items: the
sniffer looks for the items' kinds too. The facts are listed in the package docstring; their
line is the first line at or after the object's name that shows the value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from crashlens.model import InputKind
from crashlens.parsers.base import DocumentParser, DocumentResult
from crashlens.parsers.kubernetes.common import (
    REPLICA_KEYS,
    FactSink,
    add_never_scheduled,
    add_unschedulable,
    eviction_resource,
    quantity_bytes,
    replica_of,
)
from crashlens.parsers.kubernetes.volumes import shm_sizes
from crashlens.text.mini_yaml import YamlNode, read_yaml
from crashlens.text.tolerant_json import json_start, read_first_value

JOB_KINDS = frozenset(
    {"PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob", "MXJob", "JobSet"}
)
_KINDS = "Pod|PodList|List|Event|EventList|" + "|".join(sorted(JOB_KINDS))
_JSON_KIND_RE = re.compile(rf'"kind":[ \t]*"(?:{_KINDS})"')
_YAML_KIND_RE = re.compile(rf"^[ \t-]*kind:[ \t]*(?:{_KINDS})[ \t]*$", re.MULTILINE)
_YAML_API_RE = re.compile(r"^[ \t-]*apiVersion:[ \t]*[A-Za-z0-9./-]+[ \t]*$", re.MULTILINE)
_FIRST_FAILED_RE = re.compile(r"(?<![0-9])([0-9]+) ([A-Za-z][A-Za-z0-9-]*) replica\(s\) failed")
_JOBSET_FAILED_RE = re.compile(r"(?:job|Job) ([a-z0-9][a-z0-9.-]*) (?:failed|has failed)")
MAX_ITEMS = 2000
"""Objects of one list read, at most."""


def _plain(node: YamlNode | None) -> Any:
    """A YAML node as the JSON decoder would give it (scalars stay strings)."""
    if node is None:
        return None
    value = node.value
    if isinstance(value, dict):
        return {key: _plain(child) for key, child in value.items()}
    if isinstance(value, list):
        return [_plain(child) for child in value]
    return value


def _int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if -(1 << 31) <= value < (1 << 32) else None
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,10}", value.strip()):
        return int(value)
    return None


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


class _Lines:
    """Finds the line that shows a value, searching forward from an object's first line."""

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")

    def find(self, needle: str | None, after: int = 1) -> int | None:
        if not needle:
            return None
        for index in range(max(after, 1) - 1, len(self.lines)):
            if needle in self.lines[index]:
                return index + 1
        return None

    def text(self, lineno: int | None) -> str | None:
        if lineno is None or not 0 < lineno <= len(self.lines):
            return None
        return self.lines[lineno - 1].strip()[:300]


def load_document(text: str) -> Any:
    """The JSON or YAML value of the input, or None."""
    start = json_start(text)
    if start is not None:
        found = read_first_value(text, start)
        if found is not None:
            return found.value
    if _YAML_API_RE.search(text):
        return _plain(read_yaml(text))
    return None


def objects_of(value: Any) -> Iterable[dict[str, Any]]:
    """The objects of a document: itself, or the items of a list (a bare JSON array too)."""
    if isinstance(value, list):
        items = value
    elif isinstance(value, dict) and isinstance(value.get("items"), list):
        items = value["items"]
    else:
        items = [value]
    for item in items[:MAX_ITEMS]:
        if isinstance(item, dict):
            yield item


class _Reader:
    """Turns the objects of one input into facts."""

    def __init__(self, text: str, path: str) -> None:
        self.lines = _Lines(text)
        self.sink = FactSink(path)
        self.replica: tuple[str | None, str | None] = (None, None)
        """(replica type, index) of the pod being read, from its labels."""

    def add(self, key: str, value: Any, needle: str | None, after: int, **attrs: Any) -> None:
        lineno = self.lines.find(needle, after) if needle else None
        shown = self.lines.text(lineno) or f"{key} = {value}"
        if key in REPLICA_KEYS and self.replica[0] is not None:
            attrs.setdefault("replica", self.replica[0])
            attrs.setdefault("replica_index", self.replica[1])
        self.sink.add(key, value, lineno, shown, **attrs)

    def read(self, item: dict[str, Any]) -> None:
        # `kind` is compared with a set: a list or an object where kubectl writes a string
        # would be unhashable.
        kind = _str(item.get("kind"))
        meta = _dict(item.get("metadata"))
        name = _str(meta.get("name"))
        after = self.lines.find(name) or 1 if name else 1
        if kind == "Pod" or (kind is None and "containerStatuses" in _dict(item.get("status"))):
            self.replica = replica_of(_dict(meta.get("labels")))
            self.pod(item, name, after)
            self.replica = (None, None)
        elif kind == "Event" or "involvedObject" in item or "regarding" in item:
            self.event(item, after)
        elif kind in JOB_KINDS:
            self.job(item, str(kind), name, after)

    def pod(self, item: dict[str, Any], pod: str | None, after: int) -> None:
        spec, status = _dict(item.get("spec")), _dict(item.get("status"))
        if node := _str(spec.get("nodeName")):
            self.add("k8s.node", node, node, after, pod=pod)
        if phase := _str(status.get("phase")):
            self.add("k8s.phase", phase, phase, after, pod=pod)
        message = _str(status.get("message"))
        if reason := _str(status.get("reason")):
            self.add("k8s.reason", reason, reason, after, pod=pod, state="pod", message=message)
        evicted = status.get("reason") == "Evicted" or "low on resource" in (message or "")
        if message and evicted and (resource := eviction_resource(message)):
            self.add("k8s.eviction", resource, message[:60], after, pod=pod, message=message)
        for condition in _list(status.get("conditions")):
            cond = _dict(condition)
            if cond.get("type") == "DisruptionTarget" and (why := _str(cond.get("reason"))):
                msg = _str(cond.get("message"))
                self.add("k8s.disruption", why, why, after, pod=pod, message=msg)
            unplaced = cond.get("type") == "PodScheduled" and str(cond.get("status")) == "False"
            if unplaced and not spec.get("nodeName") and (msg := _str(cond.get("message"))):
                lineno = self.lines.find(msg[:60], after)
                add_unschedulable(self.sink, pod, msg, lineno, self.lines.text(lineno) or msg)
        for container in _list(spec.get("containers")) + _list(spec.get("initContainers")):
            self.resources(_dict(container), pod, after)
        for shm in shm_sizes(spec):  # volumes.py
            # below the pod's own name line, which may start with the container's name
            json_name = f'"name": "{shm.container}"'
            named = json_name if self.lines.find(json_name, after) else f"name: {shm.container}"
            self.add(
                "k8s.shm_private_bytes",
                shm.size,
                shm.volume or named,
                after + 1,
                pod=pod,
                container=shm.container,
                default=shm.default,
                volume=shm.volume,
            )
        statuses = _list(status.get("containerStatuses")) + _list(
            status.get("initContainerStatuses")
        )
        for entry in statuses:
            self.container_status(_dict(entry), pod, after)

    def resources(self, container: dict[str, Any], pod: str | None, after: int) -> None:
        name = _str(container.get("name"))
        resources = _dict(container.get("resources"))
        for section, key in (
            ("limits", "k8s.memory_limit_bytes"),
            ("requests", "k8s.memory_request_bytes"),
        ):
            raw = _dict(resources.get(section)).get("memory")
            size = quantity_bytes(raw)
            if size is not None:
                start = self.lines.find(section, after) or after
                self.add(
                    key,
                    size,
                    f"memory: {raw}" if not str(raw).isdigit() else str(raw),
                    start,
                    pod=pod,
                    container=name,
                )

    def container_status(self, entry: dict[str, Any], pod: str | None, after: int) -> None:
        name = _str(entry.get("name"))
        start = (
            self.lines.find(f'"name": "{name}"', after)
            or self.lines.find(f"name: {name}", after)
            or after
        )
        restarts = _int(entry.get("restartCount"))
        if restarts is not None:
            self.add("k8s.restart_count", restarts, "restartCount", start, pod=pod, container=name)
        for state_key in ("lastState", "state"):
            state = _dict(entry.get(state_key))
            section = self.lines.find(state_key, start) or start
            terminated = _dict(state.get("terminated"))
            waiting = _dict(state.get("waiting"))
            code = _int(terminated.get("exitCode"))
            if reason := _str(terminated.get("reason")):
                self.add(
                    "k8s.reason",
                    reason,
                    reason,
                    section,
                    pod=pod,
                    container=name,
                    state=state_key,
                    exit_code=code,
                    message=_str(terminated.get("message")),
                )
            if code is not None:
                self.add(
                    "k8s.exit_code",
                    code,
                    "exitCode",
                    section,
                    pod=pod,
                    container=name,
                    state=state_key,
                    reason=_str(terminated.get("reason")),
                )
            if reason := _str(waiting.get("reason")):
                msg = _str(waiting.get("message"))
                self.add(
                    "k8s.reason",
                    reason,
                    reason,
                    section,
                    pod=pod,
                    container=name,
                    state="waiting",
                    message=msg,
                )

    def event(self, item: dict[str, Any], after: int) -> None:
        reason = _str(item.get("reason"))
        if reason is None:
            return
        regarding = _dict(item.get("involvedObject") or item.get("regarding"))
        kind, name = _str(regarding.get("kind")), _str(regarding.get("name"))
        shown = f"{kind}/{name}" if kind and name else name
        message = _str(item.get("message")) or _str(item.get("note"))
        count = _int(item.get("count")) or _int(_dict(item.get("series")).get("count"))
        line = self.lines.find(f'"reason": "{reason}"', after) or self.lines.find(
            f"reason: {reason}", after
        )
        shown_text = self.lines.text(line) or f"{reason}: {message or ''}".strip()
        self.sink.add(
            "k8s.event",
            reason,
            line,
            shown_text,
            type=_str(item.get("type")),
            object=shown,
            count=count,
            message=message,
        )
        if message and reason == "Evicted" and (resource := eviction_resource(message)):
            self.add("k8s.eviction", resource, message[:60], after, pod=name, message=message)

    def job(self, item: dict[str, Any], kind: str, job: str | None, after: int) -> None:
        status = _dict(item.get("status"))
        conditions = [_dict(c) for c in _list(status.get("conditions"))]
        true = [c for c in conditions if str(c.get("status", "True")) == "True" and c.get("type")]
        failed = next((c for c in true if c.get("type") == "Failed"), {})
        failed_message = str(failed.get("message") or "")
        failed_reason = _str(failed.get("reason"))
        if true:
            last = true[-1]
            kind_of = str(last.get("type"))
            message = _str(last.get("message"))
            # A Failed condition is cited at its message, which names the replica that
            # failed first (`1 Worker replica(s) failed`): the report's first failure.
            needle = message[:60] if kind_of == "Failed" and message else kind_of
            self.add(
                "k8s.job_condition",
                kind_of,
                needle,
                self.lines.find("conditions", after) or after,
                kind=kind,
                job=job,
                reason=_str(last.get("reason")),
                message=message,
            )
        first = _FIRST_FAILED_RE.search(failed_message)
        named = first.group(2) if first else None
        jobset = _JOBSET_FAILED_RE.search(failed_message)
        failed_replicas: list[tuple[str, int, bool | None, str]] = []
        for replica, counts in _dict(status.get("replicaStatuses")).items():
            count = _int(_dict(counts).get("failed"))
            if count:
                is_first = named == replica if named else None
                failed_replicas.append((str(replica), count, is_first, "replicaStatuses"))
        for entry in _list(status.get("replicatedJobsStatus")):
            counts = _dict(entry)
            replicated = _str(counts.get("name"))
            count = _int(counts.get("failed"))
            if replicated and count:
                is_first = (replicated in jobset.group(1)) if jobset else None
                failed_replicas.append((replicated, count, is_first, "replicatedJobsStatus"))
        for replica, count, is_first, section in failed_replicas:
            # The first to fail is cited where the Failed condition names it; the others at
            # their own entry under status (the spec names every replica first).
            start = self.lines.find(section, after) or after
            needle = replica
            if is_first and failed_message:
                needle, start = failed_message[:60], self.lines.find("conditions", after) or after
            self.add(
                "k8s.replica_failed",
                replica,
                needle,
                start,
                kind=kind,
                job=job,
                failed=count,
                first=is_first,
                replica=replica.lower(),
                reason=failed_reason if is_first else None,
                message=(failed_message or None) if is_first else None,
            )


class KubectlJsonParser(DocumentParser):
    """Pods, events and training jobs from `kubectl get -o json` / `-o yaml`."""

    kind = InputKind.KUBECTL_JSON
    name = "kubectl get -o json/yaml"
    filenames = ("pod*.json", "pod*.yaml", "pod*.yml", "*pytorchjob*", "*jobset*", "events*.json")

    @staticmethod
    def sniff(head: str) -> float:
        if "apiVersion" not in head or "kind" not in head:
            return 0.0
        if '"apiVersion"' in head and _JSON_KIND_RE.search(head):
            return 0.95
        if _YAML_API_RE.search(head) and _YAML_KIND_RE.search(head):
            return 0.9
        return 0.0

    def parse(self, text: str, path: str) -> DocumentResult:
        value = load_document(text)
        if value is None:
            return DocumentResult(facts=(), warnings=("no Kubernetes object could be read",))
        reader = _Reader(text, path)
        for item in objects_of(value):
            reader.read(item)
        add_never_scheduled(reader.sink)
        return DocumentResult(facts=tuple(reader.sink.facts))
