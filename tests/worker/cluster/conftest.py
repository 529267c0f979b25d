"""A real etcd (Debian's binary) on free loopback ports, shared by a module's tests; each test
gets its own cluster name, so their keys never meet."""

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from worker.cluster.etcd import Etcd
from worker.devlab.local.etcd import LocalEtcd


@pytest.fixture(scope="module")
def etcd_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEtcd]:
    server = LocalEtcd(tmp_path_factory.mktemp("etcd")).start()
    yield server
    server.stop()


@pytest.fixture
def etcd(etcd_server: LocalEtcd) -> Iterator[Etcd]:
    client = Etcd([etcd_server.endpoint], timeout_s=2.0)
    yield client
    client.close()


@pytest.fixture
def cluster() -> str:
    return f"c-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def own_etcd(tmp_path: Path) -> Iterator[LocalEtcd]:
    """An etcd of the test's own, for tests that stop, kill or compact it."""
    server = LocalEtcd(tmp_path / "etcd").start()
    yield server
    server.stop()
