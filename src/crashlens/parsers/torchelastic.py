"""The JSON a failed worker writes to TORCHELASTIC_ERROR_FILE (torch `@record` / ErrorHandler).

Layout (docs/formats.md 4.1): `{"message": {"message": "<Type>: <text>", "extraInfo":
{"py_callstack": "<traceback>", "timestamp": "<epoch s>"}, "errorCode": N?}}`; older or
hand-written files have a plain string `message` and a top-level `timestamp`. A truncated file
is read with a tolerant reader that pulls the string fields out one by one.

Fact keys:

* `python.exception`: str "Type: message" (first line, <= 300 chars); attrs type (qualified
  from the callstack's last line when it names the same class), rank (from a `rankN` file name),
  local_rank (from the agent's `attempt_N/<local_rank>/error.json` path), source=error-file.
* `torchelastic.error_code`: int `errorCode` when present.
* `torchelastic.timestamp`: int epoch seconds of the failure.
* `cuda.oom`, `nccl.version`: as the launcher parser emits them, read from the message.
"""

from __future__ import annotations

import json
import re
from typing import Any

from crashlens.model import Fact, InputKind
from crashlens.parsers.base import DocumentParser, DocumentResult, clean_line, fact
from crashlens.parsers.launcher.messages import (
    EXCEPTION_CHARS,
    parse_cuda_oom,
    parse_exception,
    version_facts,
)
from crashlens.text.tolerant_json import loads
from crashlens.text.values import bounded_int, finite_float, int_of_float

_FIELD_START = {
    name: re.compile(rf'"{name}"[ \t\r\n]*:[ \t\r\n]*')
    for name in ("message", "py_callstack", "timestamp", "errorCode")
}
_NUMERIC = frozenset({"timestamp", "errorCode"})
_LOCAL_RANK_PATH = re.compile(r"attempt_[0-9]+[/\\]([0-9]+)[/\\][^/\\]*$")
_RANK_NAME = re.compile(r"rank[_-]?([0-9]+)", re.IGNORECASE)


class TorchElasticErrorParser(DocumentParser):
    """TORCHELASTIC_ERROR_FILE JSON: the worker's exception, written by `@record`."""

    kind = InputKind.TORCHELASTIC_ERROR
    name = "torchelastic error file"
    filenames = ("error.json", "*error*.json")

    @staticmethod
    def sniff(head: str) -> float:
        stripped = head.lstrip("\ufeff \t\r\n")
        if not stripped.startswith("{") or '"message"' not in head or '"apiVersion"' in head:
            return 0.0  # a Kubernetes object (events, pods) has messages too
        if '"py_callstack"' in head or '"extraInfo"' in head:
            return 1.0  # ErrorHandler's own field names: nothing else writes them
        if '"timestamp"' in head or '"errorCode"' in head:
            return 0.6
        return 0.2

    def parse(self, text: str, path: str) -> DocumentResult:
        text = "\n".join(clean_line(line) for line in text.split("\n")).lstrip("\ufeff")
        warnings: list[str] = []
        fields = _strict_fields(text)
        if fields is None:
            fields = _tolerant_fields(text)
            if fields:
                warnings.append("truncated or invalid JSON: read with the tolerant reader")
            elif text.strip():
                warnings.append("not a torchelastic error file: no message field found")
        return DocumentResult(facts=tuple(_facts(fields, path)), warnings=tuple(warnings))


def _strict_fields(text: str) -> dict[str, str] | None:
    """The interesting fields of a well-formed file, flattened; None when it does not load."""
    try:
        data: Any = loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    found: dict[str, str] = {}
    outer = data.get("message")
    if isinstance(outer, dict):
        _take(found, "message", outer.get("message"))
        _take(found, "errorCode", outer.get("errorCode"))
        extra = outer.get("extraInfo")
        if isinstance(extra, dict):
            _take(found, "py_callstack", extra.get("py_callstack"))
            _take(found, "timestamp", extra.get("timestamp"))
    else:
        _take(found, "message", outer)
    _take(found, "timestamp", data.get("timestamp"))
    _take(found, "errorCode", data.get("errorCode"))
    return found


def _take(found: dict[str, str], name: str, value: object) -> None:
    wanted = (str, int) if name in _NUMERIC else (str,)
    if name not in found and isinstance(value, wanted) and not isinstance(value, bool):
        found[name] = str(value)


def _tolerant_fields(text: str) -> dict[str, str]:
    """Pull each field out by name: a string value decoded up to where the file stops."""
    found: dict[str, str] = {}
    for name, start in _FIELD_START.items():
        for m in start.finditer(text):
            value = _read_value(text, m.end(), numbers=name in _NUMERIC)
            # `"message": {` opens the wrapper object; the string is the next "message".
            if value is not None:
                found[name] = value
                break
    return found


def _read_value(text: str, pos: int, *, numbers: bool) -> str | None:
    """A JSON string or number starting at pos; a cut-off string is returned as far as it goes."""
    if text[pos : pos + 1] == '"':
        end = _string_end(text, pos + 1)
        if end is not None:
            return _decode(text[pos : end + 1])
        return _unescape_prefix(text[pos + 1 :])
    number = re.match(r"-?[0-9]+", text[pos:]) if numbers else None
    return number.group(0) if number else None


def _string_end(text: str, start: int) -> int | None:
    """Index of the quote closing the JSON string that starts at `start`, or None."""
    escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            return index
    return None


def _decode(quoted: str) -> str | None:
    try:
        value = json.loads(quoted)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _unescape_prefix(rest: str) -> str:
    """Decode as much of a truncated JSON string as possible (a cut can split an escape)."""
    for end in range(len(rest), max(len(rest) - 8, -1), -1):
        value = _decode('"' + rest[:end] + '"')
        if value is not None:
            return value
    return rest.replace("\\n", "\n").replace('\\"', '"')


def _facts(fields: dict[str, str], path: str) -> list[Fact]:
    facts: list[Fact] = []
    rank, local_rank = _ranks_from_path(path)
    message = fields.get("message", "")
    first = message.strip().split("\n", 1)[0] if message.strip() else ""
    parsed = parse_exception(first) if first else None
    if first:
        exc_type = parsed[0] if parsed else None
        exc_type = _qualified(exc_type, fields.get("py_callstack", ""))
        value = parsed[1] if parsed else first[:EXCEPTION_CHARS]
        facts.append(
            fact(
                "python.exception",
                value,
                path,
                text=f"message = {first[:EXCEPTION_CHARS]}",
                rank=rank,
                local_rank=local_rank,
                type=exc_type,
                source="error-file",
            )
        )
    if message and (oom := parse_cuda_oom(message)):
        tried, attrs = oom
        facts.append(
            fact("cuda.oom", tried, path, None, text=f"message = {first}", rank=rank, **attrs)
        )
    for key, version in dict(version_facts(message)).items():
        facts.append(fact(key, version, path, text=f"message = {first}"))
    for name, key in (
        ("errorCode", "torchelastic.error_code"),
        ("timestamp", "torchelastic.timestamp"),
    ):
        number = _int(fields.get(name))
        if number is not None:
            facts.append(fact(key, number, path, text=f"{name} = {number}"))
    return facts


def _qualified(exc_type: str | None, callstack: str) -> str | None:
    """`torch.OutOfMemoryError` from the traceback's last exception line, when it agrees."""
    if exc_type is None:
        return None
    for line in reversed(callstack.strip().split("\n")[-20:]):
        parsed = parse_exception(line)
        if parsed and parsed[0].rsplit(".", 1)[-1] == exc_type.rsplit(".", 1)[-1]:
            return parsed[0]
    return exc_type


def _ranks_from_path(path: str) -> tuple[int | None, int | None]:
    local = _LOCAL_RANK_PATH.search(path)
    name = _RANK_NAME.search(re.split(r"[/\\]", path)[-1])
    return (
        bounded_int(name.group(1)) if name else None,
        bounded_int(local.group(1)) if local else None,
    )


def _int(value: str | None) -> int | None:
    return int_of_float(finite_float(value))
