"""`--notify URL` on analyze and scan: the JSON posted to a real local HTTP server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from scan_helpers import healthy_job, oom_job, xid_job
from typer.testing import CliRunner

from crashlens.cli import app

RUNNER = CliRunner()


class _Hook:
    """A web hook on 127.0.0.1 that keeps what it was sent."""

    def __init__(self, status: int = 200) -> None:
        self.posts: list[tuple[str, str, bytes]] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                hook.posts.append((self.path, self.headers.get("Content-Type", ""), body))
                self.send_response(status)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                return

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hooks/T0KEN-SECRET"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hook() -> Iterator[_Hook]:
    server = _Hook()
    yield server
    server.close()


def _job(tmp_path: Path) -> Path:
    folder = oom_job(tmp_path / "job-1")
    return folder / "launcher.log"


def test_analyze_posts_the_json_report(tmp_path: Path, hook: _Hook) -> None:
    log = _job(tmp_path)
    result = RUNNER.invoke(app, ["analyze", "-f", "json", "--notify", hook.url, str(log)])
    assert result.exit_code == 0, result.output
    ((path, content_type, body),) = hook.posts
    assert path == "/hooks/T0KEN-SECRET" and content_type.startswith("application/json")
    posted = json.loads(body)
    assert posted == json.loads(result.stdout)
    assert posted["verdict"] == "gpu_oom"


def test_with_redaction_on_the_posted_report_is_the_redacted_one(
    tmp_path: Path, hook: _Hook
) -> None:
    job = xid_job(tmp_path / "job-2", host="gpu-a12")
    plain = RUNNER.invoke(app, ["analyze", "-f", "json", "--no-redact", str(job)])
    assert "gpu-a12" in plain.stdout  # the host name is in the report when not redacted
    result = RUNNER.invoke(
        app, ["analyze", "-f", "markdown", "--notify", hook.url, str(job)]
    )  # markdown: redaction is on by default
    assert result.exit_code == 0, result.output
    ((_, _, body),) = hook.posts
    posted = json.loads(body)
    assert b"gpu-a12" not in body
    assert posted["verdict"] == "hardware" and posted["causes"][0]["evidence"]


def test_a_hook_that_is_down_is_reported_without_changing_the_exit_status(
    tmp_path: Path,
) -> None:
    log = _job(tmp_path)
    down = _Hook()
    url = down.url
    down.close()  # nothing listens on the port any more
    result = RUNNER.invoke(app, ["analyze", "-f", "json", "--notify", url, str(log)])
    assert result.exit_code == 0
    assert "--notify http://127.0.0.1:" in result.stderr and "not delivered" in result.stderr
    assert "T0KEN-SECRET" not in result.stderr  # a webhook's path is its secret
    assert json.loads(result.stdout)["verdict"] == "gpu_oom"


def test_an_http_error_is_reported_without_changing_the_exit_status(tmp_path: Path) -> None:
    log = _job(tmp_path)
    failing = _Hook(status=500)
    try:
        result = RUNNER.invoke(app, ["analyze", "-f", "json", "--notify", failing.url, str(log)])
    finally:
        failing.close()
    assert result.exit_code == 0
    assert "HTTP 500" in result.stderr and len(failing.posts) == 1


def test_a_notify_value_that_is_not_a_url_is_refused_before_any_work(tmp_path: Path) -> None:
    log = _job(tmp_path)
    result = RUNNER.invoke(app, ["analyze", "--notify", "file:///etc/passwd", str(log)])
    assert result.exit_code == 2 and "http" in result.stderr


def test_scan_posts_the_summary(tmp_path: Path, hook: _Hook) -> None:
    root = tmp_path / "archive"
    oom_job(root / "job-1")
    xid_job(root / "job-2", host="gpu-a12")
    healthy_job(root / "job-3")
    args = ["scan", str(root), "-o", str(tmp_path / "out"), "-j", "1", "--summary", "json"]
    result = RUNNER.invoke(app, [*args, "--notify", hook.url])
    assert result.exit_code == 0, result.output
    ((_, _, body),) = hook.posts
    posted = json.loads(body)
    assert posted == json.loads(result.stdout)
    assert posted["jobs"]["scanned"] == 3
