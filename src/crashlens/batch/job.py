"""`analyze_job`: one job of an archive, analyzed as `crashlens analyze` would, as one row.

A pure function of the job's files and the shipped rule library and model: it runs the
pipeline (`pipeline.analyze_inputs` then `pipeline.build_report`) and boils the report down to
one `JobRow`: verdict, confidence, the lead line and its fingerprint, the hosts and GPUs
implicated, when the failure happened. It never raises: a job that cannot be read or analyzed
is a row with a `reason`. A distributed engine can map it over a cluster unchanged.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from crashlens.batch.fingerprint import fingerprint, normalize
from crashlens.batch.hotspots import failure_host, implicated
from crashlens.batch.jobs import JobSpec
from crashlens.batch.remote import is_url
from crashlens.batch.row import JobRow
from crashlens.decide.classifier import shipped_model
from crashlens.match.site import library as rule_library
from crashlens.model import Fact, InputState, Verdict
from crashlens.pipeline import AnalyzeOptions, analyze_inputs, build_report

MAX_SKIPPED_LISTED = 5


def analyze_job(job: JobSpec, root: str, backend: str = "auto") -> JobRow:
    """Analyze one job's files, as `crashlens analyze` would, into one row. Never raises."""
    started = time.perf_counter()
    row = JobRow.for_job(job)
    if job.reason is not None or not job.inputs:
        row.reason = job.reason or "no files"
        row.skipped = [f"{path}: {why}" for path, why in job.skipped][:MAX_SKIPPED_LISTED]
    else:
        try:
            _analyze_into(row, job, root, backend)
        except MemoryError:
            row.reason = "analysis failed: out of memory"
        except Exception as error:  # a bug must cost one row, not the scan
            row.reason = f"analysis failed: {type(error).__name__}: {error}"
    row.seconds = round(time.perf_counter() - started, 4)
    row.make_inert()
    return row


def _analyze_into(row: JobRow, job: JobSpec, root: str, backend: str) -> None:
    rules = rule_library()
    if job.inputs and is_url(job.inputs[0]):
        from crashlens.batch.remote import remote_analyses  # fsspec: for URL roots only

        analyses = remote_analyses(job, rules, backend)
    else:
        analyses = analyze_inputs(job.inputs, AnalyzeOptions(backend=backend), rules)
    prefix = root.rstrip(os.sep) + os.sep

    def shown(path: str) -> str:
        return path[len(prefix) :] if path.startswith(prefix) else path

    skipped = [a.status for a in analyses if a.status.status is InputState.SKIPPED]
    not_read = [f"{path}: {reason}" for path, reason in job.skipped]  # links out of the root
    listed = not_read + [f"{shown(s.path)}: {s.reason}" for s in skipped]
    row.skipped = listed[:MAX_SKIPPED_LISTED]
    if len(skipped) == len(analyses):
        reasons = "; ".join(row.skipped[:3]) or "no input"
        row.reason = f"nothing could be analyzed ({reasons})"
        return
    # As `crashlens analyze` does; the newest file's time dates a log that prints no year.
    report = build_report(analyses, rules, shipped_model(), year_hint=row.job_mtime)
    row.verdict = report.verdict.value
    top = report.causes[0] if report.causes and report.verdict is not Verdict.NONE else None
    if top is not None:
        row.confidence = top.confidence
        row.summary = top.summary
        row.rules = sorted({e.rule for e in top.evidence if e.rule})
    faults = implicated(analyses)
    row.hardware_hosts = list(faults.hosts)
    row.gpu_details = list(faults.gpus)
    row.gpus = [str(gpu["label"]) for gpu in faults.gpus]
    if report.verdict is Verdict.NONE:
        return
    facts = [item for analysis in analyses for item in analysis.facts]
    lead = report.lead
    if lead is not None:
        rule, signature = lead.rule, normalize(lead.text, lead.host)
        line = f":{lead.line}" if lead.line is not None else ""
        row.evidence = f"{shown(lead.path)}{line}: {lead.text}"
    else:
        rule, signature = _unmatched_signature(facts, report.first_failure_rank)
    row.signature = signature
    row.fingerprint = fingerprint(report.verdict, rule, signature)
    hosts: dict[str, None] = {}
    if top is not None:
        hosts.update((e.host, None) for e in top.evidence if e.host)
    first_host = failure_host(analyses)
    if first_host:
        hosts.setdefault(first_host, None)
    hosts.update((h, None) for h in faults.hosts)
    row.hosts = list(hosts)
    row.first_failure_at = report.first_failure_at


def _unmatched_signature(facts: Sequence[Fact], first_rank: int | None) -> tuple[str | None, str]:
    """What names a failure no rule matched: (what it was read from, normalized text).

    The job's fatal Python exception (on the rank that failed first, when known), else how it
    exited; so jobs that died of the same unmatched error still fall into one group.
    """
    exceptions = [f for f in facts if f.key == "python.exception"]
    on_rank = [f for f in exceptions if first_rank is not None and f.attr("rank") == first_rank]
    chosen = on_rank or exceptions
    if chosen:
        last = max(chosen, key=lambda f: f.lineno or 0)
        return "python.exception", normalize(str(last.value))
    for key in ("launcher.signal", "launcher.exit_code", "docker.exit_code"):
        for item in facts:
            if item.key == key:
                return key, f"{key}={item.value}"
    return None, "no failure line matched"
