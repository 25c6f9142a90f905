"""Redaction: replace personal and secret values in a report with stable pseudonyms.

`redact_report(report)` is a pure `Report -> Report` transform (renderers stay pure): every
string of the report (evidence text, context lines, paths, summaries, remediation, notes,
input reasons) goes through one `Redactor`, so the same value gets the same pseudonym in every
file of the report and the evidence still reads as a story (`host-1` fails, `host-2` times out
talking to `ip-1:29500`).

What is replaced, and by what:

* host names -> `host-N`: the `host` of every evidence line, NCCL `host:pid:tid`, pdsh and
  syslog prefixes, `hostname=`/`MASTER_ADDR=`/`--master_addr`/torchelastic `host :`, `user@host`,
  `name:port`, `[name]:port`, fully qualified names under private or country suffixes, AWS
  `ip-10-0-0-1` names. A host learned anywhere is replaced everywhere it appears as a token.
* IPv4 and IPv6 addresses -> `ip-N` (loopback and the unspecified address are kept);
  MAC and InfiniBand hardware addresses -> `mac-N`.
* user names and home directories -> `user-N` (`/home/alice` -> `/home/user-1`, `USER=`,
  `uid=1000(alice)`, `ls -l` owners, `alice@host`); system accounts such as root are kept.
* e-mail addresses -> `email-N`.
* cloud account, project and instance ids -> `account-N`, `instance-N` (AWS account ids in
  ARNs and ECR registries, GCP project ids, Azure subscription/tenant/VM ids, `i-0abc...`).
* GPU UUIDs -> `gpu-uuid-N`; board and system serial numbers -> `serial-N`.
* secrets -> `secret-N`: Hugging Face, OpenAI, GitHub, AWS, GCP, W&B and Slack tokens, JWTs,
  private key blocks and their base64 bodies, `password=` / `token=` / `api_key:` values (env,
  JSON, YAML, CLI flags, .netrc), `Authorization:` header values, credentials and signed
  query parameters in URLs.

Kept as they are: category and rule ids, roles, numbers (sizes, exit codes, Xid codes, pids),
PCI bus ids, interface and device names, public domains (github.com, huggingface.co, ...).

The package: `vocabulary` (word lists, kept in `vocabulary.toml`), `patterns` (the shapes of
secrets, personal values and hosts), `replacements` (the ordered table of what each shape
becomes), `redactor` (`Redactor`: the mapping and what it has learned). This module applies
one Redactor to a whole report.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable

from crashlens.model import Action, Assessment, Cause, Evidence, InputStatus, Report
from crashlens.redact.patterns import KINDS, PSEUDONYM_RE
from crashlens.redact.redactor import Redactor

# --- the report transform ---------------------------------------------------------------------


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


def _map_report(report: Report, fn: Callable[[str], str]) -> Report:
    def opt(value: str | None) -> str | None:
        return fn(value) if value is not None else None

    def evidence(item: Evidence) -> Evidence:
        context = getattr(item, "context", None)
        changes: dict[str, object] = {
            "path": fn(item.path),
            "text": fn(item.text),
            "note": opt(item.note),
            "host": opt(item.host),
        }
        if context:
            changes["context"] = tuple((n, fn(line)) for n, line in context)
        return dataclasses.replace(item, **changes)  # type: ignore[arg-type]

    def action(item: Action) -> Action:
        return Action(text=fn(item.text), command=opt(item.command), lang=item.lang)

    def cause(item: Cause) -> Cause:
        return dataclasses.replace(
            item,
            summary=fn(item.summary),
            evidence=tuple(evidence(e) for e in item.evidence),
            remediation=tuple(action(a) for a in item.remediation),
            next_checks=tuple(action(a) for a in item.next_checks),
            demoted_because=opt(item.demoted_because),
        )

    def status(item: InputStatus) -> InputStatus:
        return dataclasses.replace(item, path=fn(item.path), reason=opt(item.reason))

    def assessed(item: Assessment) -> Assessment:
        sign = evidence(item.sign) if item.sign is not None else None
        harmless = tuple(fn(h) for h in item.harmless)
        return dataclasses.replace(item, sign=sign, reason=fn(item.reason), harmless=harmless)

    first = report.first_failure
    return dataclasses.replace(
        report,
        causes=tuple(cause(c) for c in report.causes),
        inputs=tuple(status(i) for i in report.inputs),
        next_checks=tuple(action(a) for a in report.next_checks),
        first_failure=evidence(first) if first is not None else None,
        lead=evidence(report.lead) if report.lead is not None else None,
        notes=tuple(fn(n) for n in report.notes),
        assessment=assessed(report.assessment) if report.assessment is not None else None,
    )


def redact_report(report: Report, redactor: Redactor | None = None) -> Report:
    """The report with every string redacted; `redactor` keeps the mapping for the caller.

    Two passes: the first only learns (hosts and users named in one string are then known in
    all), the second writes. Pseudonyms are numbered in order of first appearance.
    """
    redactor = redactor if redactor is not None else Redactor()
    for host in _evidence_hosts(report):
        redactor.learn_host(host)
    _map_report(report, redactor.text)
    return _map_report(report, redactor.text)


def mapping_json(redactor: Redactor) -> str:
    """The mapping as JSON text, pseudonym -> original, for the user's eyes only."""
    return json.dumps(redactor.mapping(), indent=2, ensure_ascii=False) + "\n"


def write_mapping(redactor: Redactor, path: str | os.PathLike[str]) -> None:
    """Write the mapping to `path`, readable by its owner only (it holds the originals)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
        stream.write(mapping_json(redactor))


__all__ = ["KINDS", "PSEUDONYM_RE", "Redactor", "mapping_json", "redact_report", "write_mapping"]
