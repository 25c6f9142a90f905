"""Real services for the scan tests, as subprocesses: a Dask scheduler with worker processes,
and moto's S3 server spoken to over HTTP."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
S3_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}
"""Credentials moto accepts; the endpoint is the running server's (`moto_s3`)."""
MOTO_SERVER = shutil.which("moto_server") or str(Path(sys.executable).with_name("moto_server"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def moto_s3() -> Iterator[str]:
    """moto's S3 server on a free port; yields its endpoint (`http://127.0.0.1:PORT`)."""
    port = free_port()
    server = subprocess.Popen(
        [MOTO_SERVER, "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1).close()
                break
            except OSError as error:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("moto_server did not start") from error
                time.sleep(0.1)
        yield endpoint
    finally:
        server.terminate()
        server.wait(timeout=10)


@contextlib.contextmanager
def dask_cluster(
    folder: Path, environment: Mapping[str, str] | None = None, workers: int = 2
) -> Iterator[str]:
    """`dask scheduler` and `dask worker` (`workers` processes of one thread, under nannies,
    which restart a worker that dies) as subprocesses, with `environment` added to theirs;
    yields the scheduler file. Tasks on a dead worker fail at once (allowed-failures 0), as on
    the clusters crashlens starts itself."""
    import distributed

    scheduler_file = folder / "scheduler.json"
    env = {
        **os.environ,
        **(environment or {}),
        "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0",
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    dask = str(Path(sys.executable).parent / "dask")
    common = ["--scheduler-file", str(scheduler_file), "--no-dashboard"]
    logs = contextlib.ExitStack()
    started = [
        subprocess.Popen(
            [dask, "scheduler", "--host", "127.0.0.1", "--port", "0", *common],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=logs.enter_context((folder / "scheduler.log").open("w")),
        )
    ]
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        started.append(
            subprocess.Popen(
                [dask, "worker", "--nworkers", str(workers), "--nthreads", "1", *common],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=logs.enter_context((folder / "workers.log").open("w")),
            )
        )
        with distributed.Client(scheduler_file=str(scheduler_file), timeout=60) as client:
            client.wait_for_workers(workers, timeout=120)
        yield str(scheduler_file)
    finally:
        for process in reversed(started):
            process.send_signal(signal.SIGTERM)
        for process in reversed(started):
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        logs.close()


# Fixtures the scan tests share, once per test session: a module that uses them names this
# one in `pytest_plugins` (a conftest.py here would shadow the `conftest` module that tests
# elsewhere import their sample paths from).


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server: its endpoint (`http://127.0.0.1:PORT`)."""
    if not os.path.exists(MOTO_SERVER):
        pytest.skip("moto[server] is not installed")
    with moto_s3() as endpoint:
        yield endpoint


@pytest.fixture(scope="session")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[str]:
    """`dask scheduler` and `dask worker` (2 processes of one thread under nannies) as
    subprocesses (`dask_cluster`); yields the scheduler file. The workers' environment names
    moto's S3 store when moto is installed, as a site's workers find theirs."""
    pytest.importorskip("distributed")
    environment: dict[str, str] = {}
    if os.path.exists(MOTO_SERVER):
        endpoint = request.getfixturevalue("s3_endpoint")
        environment = {**S3_ENVIRONMENT, "AWS_ENDPOINT_URL": endpoint}
    with dask_cluster(tmp_path_factory.mktemp("dask"), environment) as scheduler_file:
        yield scheduler_file
