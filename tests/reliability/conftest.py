"""Fixtures of the reliability scenarios: a private SeaweedFS for the suite (scenarios that stop
or freeze S3 start their own), a counting proxy in front of it, and worker processes that are
always stopped by PID at the end."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import s3fs

from tests.reliability.support import Worker
from worker.locals3 import LocalS3
from worker.netproxy import TcpProxy

BUCKET = "reliability"
MakeWorker = Callable[..., Worker]


def s3_defines(server: LocalS3, endpoint: str | None = None) -> list[str]:
    """The worker's S3 settings for ``server``, reached at ``endpoint`` (e.g. a proxy)."""
    defines = server.storage_defines()
    if endpoint is not None:
        defines = [d for d in defines if not d.startswith("dora.ufs.s3.endpoint=")]
        defines.append(f"dora.ufs.s3.endpoint={endpoint}")
    return defines


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalS3]:
    server = LocalS3(tmp_path_factory.mktemp("reliability-s3"), buckets=(BUCKET,)).start()
    yield server
    server.stop()


@pytest.fixture
def outside(s3: LocalS3) -> s3fs.S3FileSystem:
    """A plain S3 client: the writer outside the cache."""
    client: s3fs.S3FileSystem = s3.client()
    return client


@pytest.fixture
def prefix(request: pytest.FixtureRequest) -> str:
    """A fresh S3 prefix for the test."""
    return f"s3://{BUCKET}/{request.node.name[:40]}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def proxy(s3: LocalS3) -> Iterator[TcpProxy]:
    """A proxy in front of the suite's S3, counting what workers ask of it."""
    with TcpProxy.to_url(s3.endpoint) as running:
        yield running


@pytest.fixture
def make_worker(tmp_path: Path) -> Iterator[MakeWorker]:
    """Starts ``dora worker start`` processes (``make_worker(*defines)``), each in a work dir of
    its own; every one is stopped at the end, frozen or not."""
    made: list[Worker] = []

    def make(*defines: str, work: Path | None = None) -> Worker:
        worker = Worker(work or tmp_path / f"worker-{len(made)}", *defines)
        made.append(worker)
        return worker.start()

    yield make
    for worker in made:
        worker.close()


@pytest.fixture
def s3_worker(s3: LocalS3, prefix: str, proxy: TcpProxy, make_worker: MakeWorker) -> MakeWorker:
    """Starts workers (``s3_worker(*defines)``) whose mount root is the test's prefix and whose
    S3 is reached through the proxy."""

    def make(*defines: str) -> Worker:
        return make_worker(f"dora.worker.ufs.roots={prefix}", *s3_defines(s3, proxy.url), *defines)

    return make
