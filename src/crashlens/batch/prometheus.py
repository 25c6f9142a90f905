"""A scan's summary as Prometheus metrics, for node_exporter's textfile collector.

`crashlens scan --prom FILE` writes the text exposition format (HELP and TYPE lines, one
sample a line) into FILE atomically: a temporary file in the same folder, flushed and synced,
then renamed over FILE, so the collector never reads half a file (node_exporter reads only
`*.prom` files; the temporary one ends in `.tmp`). Every metric is a gauge: each describes one
scan, and the next scan replaces them all.

Label cardinality is bounded: the top `top` fingerprints, hotspot hosts and hotspot GPUs only,
label values cut at `MAX_LABEL_CHARS` and escaped as the format asks (backslash, double
quote, newline). Nothing here needs prometheus_client.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

PREFIX = "crashlens_"
DEFAULT_TOP = 10
"""Fingerprints, hosts and GPUs written by default (each a time series in Prometheus)."""
MAX_LABEL_CHARS = 120
"""A longer label value (a GPU's UUID list, a long host name) is cut to this length."""

Sample = tuple[Mapping[str, str], float]


def escape_label(value: str) -> str:
    """A label value as the text format writes it between double quotes."""
    value = value[:MAX_LABEL_CHARS]
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(int(value)) if float(value).is_integer() else repr(float(value))


def _family(name: str, help_text: str, samples: Iterable[Sample]) -> list[str]:
    full = PREFIX + name
    lines = [f"# HELP {full} {help_text}", f"# TYPE {full} gauge"]
    for labels, value in samples:
        shown = ",".join(f'{key}="{escape_label(text)}"' for key, text in labels.items())
        lines.append(f"{full}{{{shown}}} {_number(value)}" if shown else f"{full} {_number(value)}")
    return lines


def _count(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _epoch(text: object) -> float:
    if isinstance(text, str):
        try:
            return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    return time.time()


def render_metrics(summary: Mapping[str, Any], top: int = DEFAULT_TOP) -> str:
    """The metrics of one scan summary (`summary.json`'s content) in the text format."""
    jobs = summary.get("jobs") or {}
    fingerprints = summary.get("fingerprints") or {}
    hotspots = summary.get("hotspots") or {}
    lines: list[str] = []
    lines += _family(
        "scan_jobs",
        "Jobs of the last scan by verdict (a category, none or unknown).",
        [({"verdict": str(v)}, _count(n)) for v, n in (summary.get("by_verdict") or {}).items()],
    )
    for key, help_text in (
        ("scanned", "Jobs the last scan found and read (analyzed or from its cache)."),
        ("failed", "Jobs of the last scan whose run failed."),
        ("unreadable", "Jobs of the last scan with nothing that could be analyzed."),
        ("from_cache", "Jobs of the last scan taken unchanged from its cache."),
    ):
        lines += _family(f"scan_jobs_{key}", help_text, [({}, _count(jobs.get(key)))])
    lines += _family(
        "scan_fingerprints_distinct",
        "Distinct failure fingerprints in the last scan.",
        [({}, _count(fingerprints.get("distinct")))],
    )
    lines += _family(
        "fingerprint_jobs",
        f"Jobs per failure fingerprint in the last scan (the {top} most frequent).",
        [
            ({"fingerprint": str(item.get("fingerprint")), "verdict": str(item.get("verdict"))},
             _count(item.get("count")))
            for item in (fingerprints.get("top") or [])[:top]
        ],
    )  # fmt: skip
    lines += _family(
        "hotspot_host_jobs",
        f"Jobs implicating a host in hardware faults, last scan (the {top} most implicated).",
        [({"host": str(item.get("id"))}, _count(item.get("jobs")))
         for item in (hotspots.get("hosts") or [])[:top]],
    )  # fmt: skip
    lines += _family(
        "hotspot_gpu_jobs",
        f"Jobs implicating a GPU in hardware faults, last scan (the {top} most implicated).",
        [({"gpu": str(item.get("id"))}, _count(item.get("jobs")))
         for item in (hotspots.get("gpus") or [])[:top]],
    )  # fmt: skip
    lines += _family(
        "scan_duration_seconds",
        "Wall time of the last scan.",
        [({}, _count(summary.get("duration_s")))],
    )
    lines += _family(
        "scan_last_timestamp_seconds",
        "When the last scan ran (Unix time).",
        [({}, _epoch(summary.get("scanned_at")))],
    )
    return "\n".join(lines) + "\n"


def write_metrics(summary: Mapping[str, Any], path: Path, top: int = DEFAULT_TOP) -> None:
    """Write the metrics to `path` atomically; raises OSError when it cannot."""
    text = render_metrics(summary, top)
    folder = path.parent if str(path.parent) else Path(".")
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o644)  # mkstemp's 0600 would hide it from node_exporter's user
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
