"""Services the scan tests share, started once per test session: moto's S3 server (spoken to
over HTTP) and a Dask scheduler with two worker processes under nannies, whose environment
names that store (as a site's workers find theirs), so the same cluster reads local and S3
archives."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from service_helpers import MOTO_SERVER, S3_ENVIRONMENT, dask_cluster, moto_s3


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
    subprocesses (`service_helpers.dask_cluster`); yields the scheduler file. The workers'
    environment names the S3 store when moto is installed."""
    pytest.importorskip("distributed")
    environment: dict[str, str] = {}
    if os.path.exists(MOTO_SERVER):
        endpoint = request.getfixturevalue("s3_endpoint")
        environment = {**S3_ENVIRONMENT, "AWS_ENDPOINT_URL": endpoint}
    with dask_cluster(tmp_path_factory.mktemp("dask"), environment) as scheduler_file:
        yield scheduler_file
