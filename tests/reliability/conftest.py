"""Fixtures of the reliability scenarios: a private SeaweedFS for the suite (scenarios that stop
or freeze S3 start their own), a counting proxy in front of it, and worker processes that are
always stopped by PID at the end."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import s3fs

from tests.reliability.support import Worker
from worker.devlab.local.netproxy import HttpRequest, TcpProxy
from worker.devlab.local.s3 import LocalS3

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

    def make(*defines: str, work: Path | None = None, conf: Path | None = None) -> Worker:
        worker = Worker(work or tmp_path / f"worker-{len(made)}", *defines, conf=conf)
        made.append(worker)
        return worker.start()

    yield make
    for worker in made:
        worker.close()


@dataclass
class Scene:
    """What an S3 scenario works with: the suite's SeaweedFS, a fresh prefix, the proxy that
    workers reach S3 through, and the writer outside the cache."""

    server: LocalS3
    prefix: str
    proxy: TcpProxy
    outside: s3fs.S3FileSystem
    make_worker: MakeWorker

    def worker(self, *defines: str) -> Worker:
        """A worker whose mount root is the prefix and whose S3 is behind the proxy."""
        return self.make_worker(
            f"dora.worker.ufs.roots={self.prefix}", *s3_defines(self.server, self.proxy.url),
            *defines)  # fmt: skip

    def put(self, uri: str, data: bytes) -> None:
        """Write ``uri`` from outside the cache, straight to S3."""
        self.outside.pipe_file(uri.removeprefix("s3://"), data)

    def requests(self, uri: str) -> list[HttpRequest]:
        """The requests the proxy saw for the object ``uri`` or anything under it."""
        key = "/" + uri.removeprefix("s3://")
        paths = [(r, r.target.split("?")[0]) for r in self.proxy.requests()]
        return [r for r, path in paths if path == key or path.startswith(key + "/")]


@pytest.fixture
def scene(
    s3: LocalS3, prefix: str, proxy: TcpProxy, outside: s3fs.S3FileSystem, make_worker: MakeWorker
) -> Scene:
    return Scene(s3, prefix, proxy, outside, make_worker)
