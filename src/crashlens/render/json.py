"""The canonical JSON report (docs/report-contract.md); every other format could derive from it."""

from __future__ import annotations

import json
from typing import Any

from crashlens.model import Action, Assessment, Cause, Evidence, InputStatus, Report
from crashlens.render.inert import inert_data


def _evidence(item: Evidence) -> dict[str, Any]:
    data: dict[str, Any] = {
        "path": item.path,
        "line": item.line,
        "text": item.text,
        "rule": item.rule,
        "role": item.role.value,
    }
    for name in ("note", "rank", "host", "timestamp"):
        value = getattr(item, name)
        if value is not None:
            data[name] = value
    return data


def _action(item: Action) -> dict[str, Any]:
    # `lang` says what `command` is, so it is null when there is no command
    return {"text": item.text, "command": item.command, "lang": item.lang if item.command else None}


def _cause(cause: Cause) -> dict[str, Any]:
    data: dict[str, Any] = {
        "category": cause.category.value,
        "confidence": round(cause.confidence, 3),
        "summary": cause.summary,
        "evidence": [_evidence(e) for e in cause.evidence],
        "remediation": [_action(a) for a in cause.remediation],
        "next_checks": [_action(a) for a in cause.next_checks],
    }
    if cause.demoted_because:
        data["demoted_because"] = cause.demoted_because
    return data


def _input(item: InputStatus) -> dict[str, Any]:
    return {
        "path": item.path,
        "kind": item.kind.value if item.kind else None,
        "status": item.status,
        "reason": item.reason,
    }


def _ending(item: Assessment) -> dict[str, Any]:
    return {
        "ending": item.ending.value,
        "sign": _evidence(item.sign) if item.sign is not None else None,
        "reason": item.reason,
        "harmless": list(item.harmless),
    }


def report_dict(report: Report) -> dict[str, Any]:
    """The report as plain JSON-ready data, its strings inert."""
    data: dict[str, Any] = inert_data(_report_dict(report))
    return data


def _report_dict(report: Report) -> dict[str, Any]:
    return {
        "schema_version": report.schema_version,
        "crashlens_version": report.crashlens_version,
        "verdict": report.verdict,
        "causes": [_cause(c) for c in report.causes],
        "inputs": [_input(i) for i in report.inputs],
        "next_checks": [_action(a) for a in report.next_checks],
        "first_failure": _evidence(report.first_failure) if report.first_failure else None,
        "notes": list(report.notes),
        "ending": _ending(report.assessment) if report.assessment is not None else None,
    }


def render_json(report: Report) -> str:
    """The report as indented JSON text."""
    return json.dumps(report_dict(report), indent=2, ensure_ascii=False) + "\n"
