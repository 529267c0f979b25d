"""Block-location owners: the cluster's ring from a real etcd (Debian's binary) as workers join
and leave, the static list without a cluster, and nobody when neither names a worker."""

import time
from collections.abc import Iterator

import pytest

from worker.api.webhdfs_locality import Locality, host_and_name
from worker.cluster.etcd import Etcd
from worker.cluster.layout import WorkerInfo
from worker.cluster.members import Registration
from worker.common.ring import HashRing
from worker.devlab.local.etcd import LocalEtcd

URI = "s3://bucket/table/part-0.parquet"


@pytest.fixture(scope="module")
def etcd_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEtcd]:
    server = LocalEtcd(tmp_path_factory.mktemp("etcd")).start()
    yield server
    server.stop()


def wait_for_owner(locality: Locality, expected: str) -> None:
    deadline = time.monotonic() + 15
    while (owner := locality.owner(URI)) is None or owner[1] != expected:
        assert time.monotonic() < deadline, f"owner {owner} never became {expected}"
        time.sleep(0.02)


def test_the_owner_follows_the_cluster_ring(etcd_server: LocalEtcd) -> None:
    etcd = Etcd([etcd_server.endpoint], timeout_s=2.0)
    workers = [WorkerInfo(f"10.0.0.{i}", 28080, 0, 1 << 30) for i in (1, 2, 3)]
    joined = [Registration(etcd, "c1", w, ttl_s=5, applied=lambda: 0) for w in workers]
    locality = Locality(["static:1"], 200, [etcd_server.endpoint], "c1", 2.0)
    try:
        for registration in joined:
            registration.start()
        names = [w.name for w in workers]
        owner = HashRing(names, 200).owner(URI)
        wait_for_owner(locality, owner)
        assert locality.owner(URI) == host_and_name(owner)
        leaving = next(r for r, w in zip(joined, workers, strict=True) if w.name == owner)
        leaving.close()
        rest = [name for name in names if name != owner]
        wait_for_owner(locality, HashRing(rest, 200).owner(URI))
    finally:
        for registration in joined:
            registration.close()
        locality.close()
        etcd.close()


def test_an_empty_cluster_falls_back_to_the_static_list(etcd_server: LocalEtcd) -> None:
    locality = Locality(["hosta:1", "hostb:2"], 200, [etcd_server.endpoint], "empty", 2.0)
    try:
        assert locality.owner(URI) == host_and_name(
            HashRing(["hosta:1", "hostb:2"], 200).owner(URI)
        )
    finally:
        locality.close()


def test_without_cluster_or_list_nobody_is_named() -> None:
    assert Locality([], 200).owner(URI) is None
    assert Locality(["http://hosta:28080/"], 200).owner(URI) == ("hosta", "hosta:28080")
