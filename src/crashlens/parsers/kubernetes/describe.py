"""`kubectl describe pod` and `kubectl get events` text (kind `kubectl_text`).

`describe pod` prints `Key:  value` rows, indented two spaces per level: the pod's `Node:`
(`name/address`), `Status:` (the phase), `Reason:` and `Message:` at the top (an eviction's),
then each container under `Containers:` / `Init Containers:` with `State:` and `Last State:`
(`Terminated`, `Waiting`, `Running`) whose `Reason:` and `Exit Code:` follow one level deeper,
`Restart Count:`, `Limits:` and `Requests:`; then `Conditions:` and the `Events:` table
(`Type  Reason  Age  From  Message`, a `----` rule under it). Old kubectl separated keys from
values with tabs; both are read. A whole `kubectl get events` table has a `LAST SEEN ... TYPE
REASON OBJECT MESSAGE` header (`-A` adds `NAMESPACE`), whose columns are cut at the header's
word positions. `describe` does not print a `DisruptionTarget` condition's reason, so
`k8s.disruption` comes only from the JSON/YAML form. Facts: the package docstring.
"""

from __future__ import annotations

import re

from crashlens.model import InputKind
from crashlens.parsers.base import DocumentParser, DocumentResult, clean_line
from crashlens.parsers.kubernetes.common import (
    REPLICA_KEYS,
    FactSink,
    add_never_scheduled,
    eviction_resource,
    quantity_bytes,
    replica_of,
)

# The value's trailing blanks are stripped in Python: a lazy `(.*?)[ \t]*$` retries the blanks
# at every character of a long run of them that does not end the line (quadratic).
_ROW_RE = re.compile(r"^( *)([A-Z][A-Za-z ]*[a-z]|[a-z][a-z0-9.-/]*):[ \t]*(.*)$")
_CONTAINER_RE = re.compile(r"^  ([a-z0-9][a-z0-9-.]*):[ \t]*$")
_LABEL_RE = re.compile(r"^(?:Labels:)?[ \t]+([A-Za-z0-9][A-Za-z0-9._/-]*)=([^ \t]*)[ \t]*$")
_EVENT_HEADER_RE = re.compile(r"^[ \t]*Type[ \t]+Reason[ \t]+Age[ \t]+From[ \t]+Message[ \t]*$")
_EVENT_ROW_RE = re.compile(
    r"^[ \t]+(Normal|Warning)[ \t]+([A-Za-z][A-Za-z0-9]*)[ \t]+"
    r"([^ \t]+(?: \(x([0-9]+) over [^ \t)]+\))?)[ \t]+"
    r"([^ \t,]+(?:, [^ \t]+)?)[ \t]+(.*)$"
)
# possessive spaces and the first REASON only (MESSAGE after a later one is after it too):
# linear, where three repeats sharing a run of spaces were cubic
_GET_EVENTS_RE = re.compile(
    r"^(?:NAMESPACE[ \t]++)?LAST SEEN[ \t]++(?>.*?\bREASON\b).*\bMESSAGE[ \t]*+$"
)
_DESCRIBE_KEYS = (
    "Name:",
    "Namespace:",
    "Node:",
    "Status:",
    "Containers:",
    "Events:",
    "Conditions:",
    "QoS Class:",
    "Controlled By:",
    "Start Time:",
)
_DESCRIBE_KEY_RE = re.compile(
    r"^(?:Name|Namespace|Node|Status|Containers|Events|Conditions|QoS Class|Controlled By"
    r"|Start Time|Priority|Service Account|IPs?):",
    re.MULTILINE,
)


class _Describe:
    """Reads `describe pod` rows in order, keeping where it is (pod, container, state)."""

    def __init__(self, path: str) -> None:
        self.sink = FactSink(path)
        self.pod: str | None = None
        self.section = ""
        self.container: str | None = None
        self.state: str | None = None
        self.state_value = ""
        self.resource: str | None = None
        self.in_events = False
        self.get_events: list[tuple[str, int]] | None = None
        self.labels: dict[str, object] = {}

    def add(
        self, key: str, value: str | int, lineno: int, shown: str, **attrs: str | int | None
    ) -> None:
        """A fact; a pod's own facts carry its replica (its labels come before them)."""
        if key in REPLICA_KEYS:
            replica, index = replica_of(self.labels)
            if replica is not None:
                attrs.setdefault("replica", replica)
                attrs.setdefault("replica_index", index)
        self.sink.add(key, value, lineno, shown, **attrs)

    def feed(self, lineno: int, line: str) -> None:
        if self.get_events is not None:
            self.get_events_row(lineno, line)
            return
        if _GET_EVENTS_RE.match(line):
            self.get_events = [
                (m.group(0), m.start()) for m in re.finditer(r"[A-Z]+(?: [A-Z]+)?", line)
            ]
            return
        if _EVENT_HEADER_RE.match(line):
            self.in_events = True
            return
        if self.in_events and (row := _EVENT_ROW_RE.match(line)):
            self.event(
                lineno, line, row.group(1), row.group(2), row.group(4), row.group(5), row.group(6)
            )
            return
        if not line.startswith(" ") and line.strip():
            self.in_events = False
        self.describe_row(lineno, line)

    def describe_row(self, lineno: int, line: str) -> None:
        expanded = line.replace("\t", "  ") if "\t" in line else line
        if (line.startswith("Labels:") or self.section == "Labels") and (
            label := _LABEL_RE.match(expanded)
        ):
            self.section = "Labels"
            self.labels[label.group(1)] = label.group(2)
            return
        if self.section in ("Containers", "Init Containers") and (
            c := _CONTAINER_RE.match(expanded)
        ):
            self.container, self.state = c.group(1), None
            return
        row = _ROW_RE.match(expanded)
        if row is None:
            return
        indent, key, value = len(row.group(1)), row.group(2), row.group(3).rstrip(" \t")
        shown = line.strip()
        add = self.add
        if indent == 0:
            self.section, self.container = key, None
            if key == "Name" and value and self.pod is None:
                self.pod = value
            elif key == "Node" and value and value != "<none>":
                add("k8s.node", value.split("/", 1)[0], lineno, shown, pod=self.pod)
            elif key == "Status" and value:
                add("k8s.phase", value, lineno, shown, pod=self.pod)
            elif key == "Reason" and value:
                add("k8s.reason", value, lineno, shown, pod=self.pod, state="pod")
            elif key == "Message" and value and (resource := eviction_resource(value)):
                add("k8s.eviction", resource, lineno, shown, pod=self.pod, message=value)
            return
        if self.container is None:
            return
        if key in ("State", "Last State"):
            self.state = "state" if key == "State" else "lastState"
            self.state_value = value
            self.resource = None
        elif key == "Reason" and self.state and value:
            state = "waiting" if self.state_value == "Waiting" else self.state
            add(
                "k8s.reason",
                value,
                lineno,
                shown,
                pod=self.pod,
                container=self.container,
                state=state,
            )
        elif key == "Exit Code" and self.state and re.fullmatch(r"-?[0-9]{1,10}", value):
            add(
                "k8s.exit_code",
                int(value),
                lineno,
                shown,
                pod=self.pod,
                container=self.container,
                state=self.state,
            )
        elif key == "Restart Count" and value.isdigit() and len(value) < 10:
            add(
                "k8s.restart_count",
                int(value),
                lineno,
                shown,
                pod=self.pod,
                container=self.container,
            )
        elif key in ("Limits", "Requests"):
            self.resource, self.state = key, None
        elif key == "memory" and self.resource and (size := quantity_bytes(value)) is not None:
            name = (
                "k8s.memory_limit_bytes"
                if self.resource == "Limits"
                else "k8s.memory_request_bytes"
            )
            add(name, size, lineno, shown, pod=self.pod, container=self.container)
        elif indent <= 4:
            self.resource = None
            if key not in ("Reason", "Exit Code", "Message", "Signal", "Started", "Finished"):
                self.state = None

    def event(
        self,
        lineno: int,
        line: str,
        kind: str,
        reason: str,
        count: str | None,
        source: str,
        message: str,
    ) -> None:
        self.sink.add(
            "k8s.event",
            reason,
            lineno,
            line.strip(),
            type=kind,
            object=self.pod,
            count=int(count) if count and len(count) < 10 else None,
            source=source,
            message=message.strip() or None,
        )
        if reason == "Evicted" and (resource := eviction_resource(message)):
            self.add(
                "k8s.eviction",
                resource,
                lineno,
                line.strip(),
                pod=self.pod,
                message=message.strip(),
            )

    def get_events_row(self, lineno: int, line: str) -> None:
        columns = self.get_events or []
        cells: dict[str, str] = {}
        for index, (name, start) in enumerate(columns):
            end = columns[index + 1][1] if index + 1 < len(columns) else len(line)
            cells[name] = line[start:end].strip() if name != "MESSAGE" else line[start:].strip()
        reason, kind = cells.get("REASON", ""), cells.get("TYPE", "")
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", reason) or kind not in ("Normal", "Warning"):
            return
        message = cells.get("MESSAGE", "")
        count = cells.get("COUNT", "")
        self.sink.add(
            "k8s.event",
            reason,
            lineno,
            line.strip(),
            type=kind,
            object=cells.get("OBJECT") or cells.get("NAME") or None,
            count=int(count) if count.isdigit() and len(count) < 10 else None,
            message=message or None,
        )
        if reason == "Evicted" and (resource := eviction_resource(message)):
            obj = cells.get("OBJECT", "").removeprefix("pod/") or None
            self.sink.add("k8s.eviction", resource, lineno, line.strip(), pod=obj, message=message)


class KubectlTextParser(DocumentParser):
    """`kubectl describe pod` and `kubectl get events` tables."""

    kind = InputKind.KUBECTL_TEXT
    name = "kubectl describe / get events"
    filenames = ("*describe*.txt", "kubectl*.txt", "events*.txt")

    @staticmethod
    def sniff(head: str) -> float:
        if ":" not in head and "LAST SEEN" not in head:
            return 0.0
        score = 0.0
        if _GET_EVENTS_RE.search(head.split("\n", 3)[0]) or re.search(
            r"^(?:NAMESPACE[ \t]+)?LAST SEEN[ \t]+(?:TYPE|FIRST SEEN)[^\n]*REASON[^\n]*MESSAGE",
            head,
            re.MULTILINE,
        ):
            score = 0.9
        if re.search(
            r"^[ \t]*Type[ \t]+Reason[ \t]+Age[ \t]+From[ \t]+Message[ \t]*\n[ \t]*----",
            head,
            re.MULTILINE,
        ):
            score = max(score, 0.9)
        keys = {m.group(0) for m in _DESCRIBE_KEY_RE.finditer(head)}
        if len(keys) >= 3 and ("Name:" in keys or "Containers:" in keys):
            score = max(score, 0.95)
        return score

    def parse(self, text: str, path: str) -> DocumentResult:
        reader = _Describe(path)
        for lineno, raw in enumerate(text.split("\n"), start=1):
            reader.feed(lineno, clean_line(raw))
        add_never_scheduled(reader.sink)
        return DocumentResult(facts=tuple(reader.sink.facts))
