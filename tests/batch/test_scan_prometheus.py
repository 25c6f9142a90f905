"""`crashlens scan --prom FILE`: metrics Prometheus's own parser reads, written atomically."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from scan_helpers import healthy_job, oom_job, xid_job
from typer.testing import CliRunner

from crashlens.batch.prometheus import (
    MAX_LABEL_CHARS,
    escape_label,
    render_metrics,
    write_metrics,
)
from crashlens.cli import app

RUNNER = CliRunner()


def _families(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    parsed: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        assert family.type == "gauge", family.name
        assert family.documentation, family.name
        parsed[family.name] = [(dict(s.labels), s.value) for s in family.samples]
    return parsed


def _summary(**changes: object) -> dict[str, object]:
    summary: dict[str, object] = {
        "jobs": {"scanned": 5, "from_cache": 1, "failed": 4, "healthy": 1, "unreadable": 0},
        "by_verdict": {"hardware": 2, "gpu_oom": 2, "none": 1},
        "fingerprints": {
            "distinct": 2,
            "top": [
                {"fingerprint": "a1b2", "verdict": "hardware", "count": 2},
                {"fingerprint": "c3d4", "verdict": "gpu_oom", "count": 2},
            ],
        },
        "hotspots": {
            "hosts": [{"id": "gpu-a12", "jobs": 2}],
            "gpus": [{"id": "gpu-a12/0000:3b:00.0", "jobs": 2}],
        },
        "duration_s": 1.25,
        "scanned_at": "2026-12-01T20:00:00Z",
    }
    summary.update(changes)
    return summary


def test_metrics_parse_with_prometheus_client_and_carry_the_summary() -> None:
    families = _families(render_metrics(_summary()))
    assert families["crashlens_scan_jobs"] == [
        ({"verdict": "hardware"}, 2.0),
        ({"verdict": "gpu_oom"}, 2.0),
        ({"verdict": "none"}, 1.0),
    ]
    assert families["crashlens_scan_jobs_failed"] == [({}, 4.0)]
    assert families["crashlens_fingerprint_jobs"][0] == (
        {"fingerprint": "a1b2", "verdict": "hardware"},
        2.0,
    )
    assert families["crashlens_hotspot_host_jobs"] == [({"host": "gpu-a12"}, 2.0)]
    assert families["crashlens_hotspot_gpu_jobs"] == [({"gpu": "gpu-a12/0000:3b:00.0"}, 2.0)]
    assert families["crashlens_scan_duration_seconds"] == [({}, 1.25)]
    assert families["crashlens_scan_last_timestamp_seconds"] == [({}, 1796155200.0)]
    assert all(name.startswith("crashlens_") for name in families)


def test_label_cardinality_is_bounded_to_the_top_n() -> None:
    many = [{"id": f"node-{i:03d}", "jobs": 100 - i} for i in range(50)]
    fingerprints = {
        "distinct": 50,
        "top": [{"fingerprint": f"f{i}", "verdict": "hardware", "count": 1} for i in range(50)],
    }
    text = render_metrics(
        _summary(hotspots={"hosts": many, "gpus": many}, fingerprints=fingerprints), top=5
    )
    families = _families(text)
    assert len(families["crashlens_hotspot_host_jobs"]) == 5
    assert len(families["crashlens_hotspot_gpu_jobs"]) == 5
    assert len(families["crashlens_fingerprint_jobs"]) == 5
    assert families["crashlens_hotspot_host_jobs"][0] == ({"host": "node-000"}, 100.0)


def test_hostile_label_values_are_escaped_and_cut() -> None:
    host = 'evil"host\\name\nnext_metric 1'
    long_host = "h" * 1000
    hosts = [{"id": host, "jobs": 3}, {"id": long_host, "jobs": 2}]
    families = _families(render_metrics(_summary(hotspots={"hosts": hosts, "gpus": []})))
    samples = families["crashlens_hotspot_host_jobs"]
    assert samples[0] == ({"host": host}, 3.0)  # round-trips through the real parser
    assert samples[1][0]["host"] == "h" * MAX_LABEL_CHARS
    assert "next_metric" not in families
    assert escape_label('a"b') == 'a\\"b'


def test_an_empty_or_odd_summary_still_gives_valid_metrics() -> None:
    families = _families(render_metrics({"by_verdict": {"x": "seven"}, "scanned_at": "never"}))
    assert families["crashlens_scan_jobs"] == [({"verdict": "x"}, 0.0)]
    assert families["crashlens_scan_last_timestamp_seconds"][0][1] > 0


def test_write_is_atomic_readable_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "crashlens.prom"
    target.write_text("old content that must be replaced whole\n")
    write_metrics(_summary(), target)
    assert [p.name for p in tmp_path.iterdir()] == ["crashlens.prom"]
    assert "crashlens_scan_jobs" in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "crashlens.prom"
    target.mkdir()  # os.replace cannot put a file over a folder
    with pytest.raises(OSError):
        write_metrics(_summary(), target)
    assert [p.name for p in tmp_path.iterdir()] == ["crashlens.prom"]


def test_scan_writes_the_metrics_file(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    oom_job(root / "job-1")
    xid_job(root / "job-2", host="gpu-a12")
    xid_job(root / "job-3", host="gpu-a12")
    healthy_job(root / "job-4")
    prom = tmp_path / "textfile" / "crashlens.prom"
    prom.parent.mkdir()
    args = ["scan", str(root), "-o", str(tmp_path / "out"), "-j", "1", "--summary", "json"]
    result = RUNNER.invoke(app, [*args, "--prom", str(prom), "--prom-top", "3"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    families = _families(prom.read_text())
    by_verdict = {labels["verdict"]: value for labels, value in families["crashlens_scan_jobs"]}
    assert by_verdict == {k: float(v) for k, v in summary["by_verdict"].items()}
    assert families["crashlens_hotspot_host_jobs"] == [({"host": "gpu-a12"}, 2.0)]
    assert families["crashlens_scan_jobs_scanned"] == [({}, 4.0)]


def test_scan_refuses_a_prom_file_in_a_missing_folder(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    healthy_job(root / "job-1")
    result = RUNNER.invoke(
        app,
        ["scan", str(root), "-o", str(tmp_path / "out"), "--prom", str(tmp_path / "no" / "x.prom")],
    )
    assert result.exit_code == 2 and "--prom" in result.stderr


def test_the_writer_does_not_need_prometheus_client() -> None:
    import subprocess

    code = (
        "import sys; import crashlens.batch.prometheus as p; "
        "p.render_metrics({}); assert 'prometheus_client' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
