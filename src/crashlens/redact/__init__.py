"""Redaction: replace personal and secret values in a report with stable pseudonyms.

`redact_report(report)` is a pure `Report -> Report` transform (renderers stay pure): every
string of the report (evidence text, context lines, paths, summaries, remediation, notes,
input reasons) goes through one `Redactor`, so the same value gets the same pseudonym in every
file of the report and the evidence still reads as a story (`host-1` fails, `host-2` times out
talking to `ip-1:29500`).

What is replaced, and by what:

* host names -> `host-N`: the `host` of every evidence line, NCCL `host:pid:tid`, pdsh and
  syslog prefixes (not a tool's name: `nccl-tests:`), `hostname=`/`MASTER_ADDR=`/
  `--master_addr`/torchelastic `host :`, scheduler variables (`SLURM_SUBMIT_HOST`,
  `SLURM_TOPOLOGY_ADDR`, nodelists such as `node-[01-04]`, expanded), database clients' `-h`,
  `user@host`, `name:port`, `[name]:port`, connection strings' `Server=`, fully qualified names
  under private or country suffixes (not Python names such as `threading.local`), AWS
  `ip-10-0-0-1` names. A host learned anywhere is replaced everywhere it appears as a token, and
  a numbered one (`trn-h100-031`) also inside `-`/`_`-joined names (`env-trn-h100-031.txt`).
* IPv4 and IPv6 addresses -> `ip-N` (loopback and the unspecified address are kept, and so
  are four-part versions: `cuDNN 8.9.2.26`, `cu12-12.1.3.1`); an IPv6 zone or the interface
  before an address (`ib0:fe80::1%ib0`) stays. MAC and InfiniBand hardware addresses and
  InfiniBand node/port GUIDs -> `mac-N`.
* user names and home directories -> `user-N` (`/home/alice`, `/users/alice`, `USER=`,
  `uid=1000(alice)`, `ls -l` owners, `alice@host`, connection strings' `User ID=`, W&B users and
  entities); system accounts such as root are kept.
* e-mail addresses -> `email-N`.
* cloud account, project and instance ids -> `account-N`, `instance-N` (AWS account ids in
  ARNs, ECR registries and bucket names, the customer's label of a cloud service host name
  (`<storage account>.blob.core.windows.net`, `<bucket>.s3.amazonaws.com`), GCP project and
  client ids (in escaped JSON too), Azure subscription/tenant/client ids (`--tenant`,
  `login.microsoftonline.com/<tenant>`), scheduler accounts, `i-0abc...`).
* GPU UUIDs -> `gpu-uuid-N`; board and system serial numbers -> `serial-N`.
* secrets -> `secret-N`: Hugging Face, OpenAI, GitHub, AWS, GCP, W&B and Slack tokens, JWTs,
  private key blocks and their base64 bodies, `password=` / `token=` / `api_key:` values (env,
  JSON, escaped JSON, YAML, CLI flags, .netrc, `PGPASSWORD=`), connection strings' keys
  (`AccountKey=`, `SharedAccessKey=`), database passwords on command lines (`mysql -pX`,
  `redis-cli -a X`), `Authorization:` header values, credentials and signed query parameters in
  URLs.

Kept as they are: category and rule ids, roles, numbers (sizes, exit codes, Xid codes, pids),
versions, PCI bus ids, interface and device names, tool names, Python names, ids that are
already blanked (`0000000000000`), public domains (github.com, huggingface.co, ...).

The package: `vocabulary` (word lists, kept in `vocabulary.toml`), `patterns` (the shapes of
secrets, personal values and hosts), `replacements` (the ordered table of what each shape
becomes, each row with its gate), `gates` (one multi-pattern pass that hands each row only the
lines it can touch), `substitute` (a row's search on one line, cut short where the row's shape
allows), `anchors` (a row tried only where its gate's match ends say a match starts),
`redactor` (`Redactor`: the mapping, what it has learned, `learn()` then
`text()`/`name()`). This module applies one Redactor to a whole report.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterable, Iterator
from enum import Enum
from typing import TypeVar

from crashlens.model import Report
from crashlens.redact.patterns import KINDS, PSEUDONYM_RE
from crashlens.redact.redactor import Redactor

T = TypeVar("T")

# --- the report transform ---------------------------------------------------------------------

_KEPT_FIELDS = frozenset({"rule", "lang", "crashlens_version", "kind"})
"""String fields that are identifiers of crashlens itself, never personal: left as they are."""
_PATH_FIELDS = frozenset({"path"})
"""Fields that hold a file name: redacted with `Redactor.name` (hosts joined by `-` too)."""


def _strings(value: object, field: str = "") -> Iterator[tuple[str, str]]:
    """Every (field, string) of a report value, walking dataclasses, tuples and lists."""
    if isinstance(value, Enum) or field in _KEPT_FIELDS:
        return
    if isinstance(value, str):
        yield field, value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for item in dataclasses.fields(value):
            yield from _strings(getattr(value, item.name), item.name)
    elif isinstance(value, tuple | list):
        for element in value:
            yield from _strings(element, field)


def _map(value: T, fn: Callable[[str, str], str], field: str = "") -> T:
    """`value` with every string passed through `fn(field, text)` (enums and ids kept)."""
    if isinstance(value, Enum) or field in _KEPT_FIELDS:
        return value
    if isinstance(value, str):
        return fn(field, value)  # type: ignore[return-value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            item.name: _map(getattr(value, item.name), fn, item.name)
            for item in dataclasses.fields(value)
            if item.init
        }
        return dataclasses.replace(value, **changes)
    if isinstance(value, tuple):
        return tuple(_map(element, fn, field) for element in value)  # type: ignore[return-value]
    if isinstance(value, list):
        return [_map(element, fn, field) for element in value]  # type: ignore[return-value]
    return value


def _evidence_hosts(report: Report) -> list[str]:
    hosts: list[str] = []
    items = [e for c in report.causes for e in c.evidence]
    if report.first_failure is not None:
        items.insert(0, report.first_failure)
    if report.assessment is not None and report.assessment.sign is not None:
        items.append(report.assessment.sign)
    for item in items:
        if item.host and item.host not in hosts:
            hosts.append(item.host)
    return hosts


def redact_report(
    report: Report, redactor: Redactor | None = None, *, learn_from: Iterable[str] = ()
) -> Report:
    """The report with every string redacted; `redactor` keeps the mapping for the caller.

    Learning comes first, then one replacement pass: the texts of `learn_from` (the inputs
    themselves, when the caller can read them again), then every string of the report, context
    lines included; so every renderer gets the same redacted report, and a host named only in
    an input's file name or on a line the report does not cite is still known. Every string
    field is redacted (a field added to the model later is too), except crashlens's own ids.
    Pseudonyms are numbered in order of first appearance.
    """
    redactor = redactor if redactor is not None else Redactor()
    for host in _evidence_hosts(report):
        redactor.learn_host(host)
    for text in learn_from:
        redactor.learn(text)
    for _, text in _strings(report):
        redactor.learn(text)

    def redact(field: str, text: str) -> str:
        return redactor.name(text) if field in _PATH_FIELDS else redactor.text(text)

    return _map(report, redact)


def mapping_json(redactor: Redactor) -> str:
    """The mapping as JSON text, pseudonym -> original, for the user's eyes only."""
    return json.dumps(redactor.mapping(), indent=2, ensure_ascii=False) + "\n"


def write_mapping(redactor: Redactor, path: str | os.PathLike[str]) -> None:
    """Write the mapping to `path`, readable by its owner only (it holds the originals)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
        stream.write(mapping_json(redactor))


__all__ = ["KINDS", "PSEUDONYM_RE", "Redactor", "mapping_json", "redact_report", "write_mapping"]
