"""Real servers for integration tests: one SeaweedFS (S3) per session, on free loopback ports,
stopped by PID at the end."""

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import s3fs

from tests.integration.lab.lab_support import lab_fixture
from tests.worker.tls.certs import CA
from ufs.adapter import Ufs, UfsOptions
from ufs.kinds.s3 import S3Options
from worker.devlab.lab.lab import Lab
from worker.devlab.local.s3 import ACCESS_KEY, SECRET_KEY, LocalS3
from worker.devlab.local.server import LocalServer

BUCKET = "itest"


@pytest.fixture(scope="session")
def seaweedfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalS3]:
    server = LocalS3(tmp_path_factory.mktemp("seaweedfs"), buckets=(BUCKET,)).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """The many-host lab (worker/devlab/lab), one per test process that runs a lab test, shared by
    the lab's modules (each test leaves it as it found it: every host up, every link healed)."""
    yield from lab_fixture(tmp_path_factory)


@pytest.fixture
def s3_raw(seaweedfs: LocalS3) -> s3fs.S3FileSystem:
    """A plain s3fs client for writing "from outside" the cache."""
    client: s3fs.S3FileSystem = seaweedfs.client()
    return client


@pytest.fixture
def s3_ufs(seaweedfs: LocalS3) -> Ufs:
    return Ufs(UfsOptions(kinds=(S3Options(seaweedfs.endpoint, None, ACCESS_KEY, SECRET_KEY),)))


@pytest.fixture
def s3_root(request: pytest.FixtureRequest) -> str:
    """A fresh prefix per test (SeaweedFS keeps emptied prefixes listed for a while)."""
    import uuid

    return f"s3://{BUCKET}/{request.node.name[:40]}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def private_s3(tmp_path: Path) -> Iterator[LocalS3]:
    """A SeaweedFS of the test's own (bucket ``private``), free to be frozen with
    :func:`frozen`."""
    server = LocalS3(tmp_path / "private-s3", buckets=("private",)).start()
    yield server
    assert server.process is not None
    os.killpg(server.process.pid, signal.SIGCONT)  # a stopped server cannot act on SIGTERM
    server.stop()


@contextmanager
def frozen(server: LocalServer) -> Iterator[None]:
    """``server`` stopped (SIGSTOP: its sockets stay open and answer nothing) for the block."""
    assert server.process is not None
    os.killpg(server.process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.killpg(server.process.pid, signal.SIGCONT)


@pytest.fixture(scope="module")
def tls_ca(tmp_path_factory: pytest.TempPathFactory) -> CA:
    """A throwaway certificate authority for a module's TLS tests."""
    return CA(tmp_path_factory.mktemp("ca"))
