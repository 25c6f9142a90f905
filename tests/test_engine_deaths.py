"""Serving engines' own death signs (`parsers.launcher.deaths.ENGINE_DEATHS`) read as a death.

A server that logs its engine's death keeps answering HTTP (500s) or exits by a path that
prints no signal: without these signs such a log looked like one that simply stops. Each
engine is tested on lines copied from real output in the corpus (the case folder named in
the test) and on shapes written for the test (another prefix, the V0 wording).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.mechanism_helpers import ending_of, log_report

from crashlens.model import Ending, Verdict
from crashlens.parsers.launcher.deaths import ENGINE_DEATHS

CORPUS = Path(__file__).resolve().parent.parent / "corpus"


def engine_of(line: str) -> str | None:
    return next((name for name, pattern in ENGINE_DEATHS if pattern.search(line)), None)


@pytest.mark.parametrize(
    ("case", "line", "engine"),
    [
        # vLLM V1: the API server's output handler raising the engine's death
        (
            "hardware-vllm-fork-tp4-a100-rpc-sample-tokens-timeout-failing-hbm-xid48",
            19,
            "vLLM",
        ),
        # vLLM V1: the engine core's own fatal error line
        ("hardware-b300-xid145-nvlink-vllm-tp-workers-killed", 6, "vLLM"),
        # vLLM: the engine core never came up
        (
            "permissions-odysseus-compose-vllm-serve-app-cache-parent-root-owned-engine-core-"
            "init-failed",
            3,
            "vLLM",
        ),
        # SGLang: the scheduler subprocess's exception (it then SIGQUITs the server)
        ("network-sglang-two-node-firewall-blocks-nccl-port", 5, "SGLang"),
        # TGI's launcher: its download child killed by SIGBUS
        ("shm-tgi-0-8-download-process-signal-7-two-shards-shm-not-mounted", 1, "TGI"),
    ],
)
def test_real_engine_death_lines_are_read(case: str, line: int, engine: str) -> None:
    logs = sorted((CORPUS / case / "logs").iterdir())
    texts = [p.read_text(encoding="utf-8", errors="replace").splitlines() for p in logs]
    found = [lines[line - 1] for lines in texts if len(lines) >= line]
    assert any(engine_of(text) == engine for text in found), found


def test_real_vllm_log_whose_last_lines_are_500s_died(tmp_path: Path) -> None:
    """hardware-vllm-fork-tp4-a100-rpc-sample-tokens-timeout-failing-hbm-xid48: after the
    engine died the server answered 500s; the run is dead, not a log that stops."""
    folder = CORPUS / "hardware-vllm-fork-tp4-a100-rpc-sample-tokens-timeout-failing-hbm-xid48"
    text = (folder / "logs" / "server.log").read_text(encoding="utf-8")
    report = log_report(tmp_path / "vllm", text)
    assert ending_of(report) is Ending.DIED
    assert report.assessment is not None and report.assessment.sign is not None
    assert "EngineDeadError" in report.assessment.sign.text


BUILT = {
    "vLLM V0 AsyncEngineDeadError": (
        "INFO 05-02 10:00:01 metrics.py:341] Avg prompt throughput: 12.0 tokens/s\n"
        "ERROR 05-02 10:00:09 async_llm_engine.py:64] Engine background task failed\n"
        "vllm.engine.async_llm_engine.AsyncEngineDeadError: Background loop has errored "
        "already.\n"
        'INFO:     10.1.2.3:5050 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error\n',
        "AsyncEngineDeadError",
    ),
    "vLLM V1 engine core, another process prefix": (
        "[engine-0] INFO step 12 served 40 requests\n"
        "[engine-0] ERROR EngineCore encountered a fatal error.\n"
        "[api] INFO:     GET /health 200 OK\n",
        "EngineCore encountered a fatal error",
    ),
    "SGLang detokenizer": (
        "[2025-01-01 00:00:00] INFO: The server is fired up and ready to roll!\n"
        "[2025-01-01 00:10:00] DetokenizerManager hit an exception: Traceback (most recent "
        "call last):\n"
        '[2025-01-01 00:10:01] INFO: 127.0.0.1 - "GET /health HTTP/1.1" 200\n',
        "DetokenizerManager hit an exception",
    ),
    "TGI shard signaled": (
        "  INFO text_generation_launcher: Starting shard rank=1\n"
        "ERROR text_generation_launcher: Shard process was signaled to "
        "shutdown with signal 9 rank=1\n"
        "  INFO text_generation_launcher: Shutting down shards\n",
        "Shard process was signaled to shutdown",
    ),
    "TGI shard failed to start": (
        "  INFO text_generation_launcher: Starting shard rank=0\n"
        "ERROR text_generation_launcher: Shard 0 failed to start\n"
        "  INFO text_generation_launcher: Shutting down shards\n",
        "Shard 0 failed to start",
    ),
}


@pytest.mark.parametrize("name", sorted(BUILT))
def test_built_engine_deaths_are_deaths(tmp_path: Path, name: str) -> None:
    text, cited = BUILT[name]
    report = log_report(tmp_path / "run", text)
    assert ending_of(report) is Ending.DIED
    assert report.verdict is not Verdict.NONE
    assert report.assessment is not None and report.assessment.sign is not None
    assert cited in report.assessment.sign.text


@pytest.mark.parametrize(
    "line",
    [
        # prose about an engine, not its death: no class name, no launcher wording
        "INFO: the engine is dead simple to configure",
        "WARNING: worker 3 failed to start a prefetch; retrying",
        "INFO: WorkerProc hit an exception handler registration",
        "docs: Shard processes are signaled on shutdown",
    ],
)
def test_near_misses_are_no_engine_death(line: str) -> None:
    assert engine_of(line) is None
