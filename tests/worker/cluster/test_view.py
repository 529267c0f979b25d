"""The worker's one view of its cluster: block-location owners from the cluster's ring (a real
etcd, Debian's binary) as workers join and leave, the static list without a cluster, nobody when
neither names a worker; and ``/v1/cluster`` answered over the view's one etcd client."""

import time
from pathlib import Path

import pytest

from tests.worker.conftest import Api, open_service
from worker.cluster import etcd as etcd_module
from worker.cluster.etcd import Etcd
from worker.cluster.layout import WorkerInfo
from worker.cluster.members import Registration
from worker.cluster.view import ClusterView, NoCluster
from worker.common.ring import HashRing
from worker.devlab.local.etcd import LocalEtcd

URI = "s3://bucket/table/part-0.parquet"


def view_of(
    static: list[str], etcd_server: LocalEtcd | None = None, cluster: str = ""
) -> ClusterView:
    etcd = None if etcd_server is None else Etcd([etcd_server.endpoint], timeout_s=2.0)
    return ClusterView(etcd, cluster, static, 200)


def wait_for_owner(view: ClusterView, expected: str) -> None:
    deadline = time.monotonic() + 15
    while (owner := view.owner(URI)) != expected:
        assert time.monotonic() < deadline, f"owner {owner} never became {expected}"
        time.sleep(0.02)


def test_the_owner_follows_the_cluster_ring(etcd_server: LocalEtcd, etcd: Etcd) -> None:
    workers = [WorkerInfo(f"10.0.0.{i}", 28080, 0, 1 << 30) for i in (1, 2, 3)]
    joined = [Registration(etcd, "c1", w, ttl_s=5, applied=lambda: 0) for w in workers]
    view = view_of(["static:1"], etcd_server, "c1")
    try:
        for registration in joined:
            registration.start()
        names = [w.name for w in workers]
        owner = HashRing(names, 200).owner(URI)
        wait_for_owner(view, owner)
        assert view.live_owner(URI) == owner
        leaving = next(r for r, w in zip(joined, workers, strict=True) if w.name == owner)
        leaving.close()
        rest = [name for name in names if name != owner]
        wait_for_owner(view, HashRing(rest, 200).owner(URI))
        assert {m.info.name for m in view.status().members if m.online} == set(rest)
    finally:
        for registration in joined:
            registration.close()
        view.close()


def test_an_empty_cluster_falls_back_to_the_static_list(etcd_server: LocalEtcd) -> None:
    view = view_of(["hosta:1", "hostb:2"], etcd_server, "empty")
    try:
        assert view.owner(URI) == HashRing(["hosta:1", "hostb:2"], 200).owner(URI)
        assert view.live_owner(URI) is None  # a static list says nothing of who is up
    finally:
        view.close()


def test_without_cluster_or_list_nobody_is_named() -> None:
    assert view_of([]).owner(URI) is None
    assert view_of(["http://hosta:28080/"]).owner(URI) == "http://hosta:28080"
    with pytest.raises(NoCluster):
        view_of([]).status()


@pytest.fixture
def etcd_clients(monkeypatch: pytest.MonkeyPatch) -> list[Etcd]:
    """Every etcd client made from now on."""
    made: list[Etcd] = []
    real = etcd_module.Etcd.__init__

    def counted(self: Etcd, *args: object, **kwargs: object) -> None:
        real(self, *args, **kwargs)  # type: ignore[arg-type]
        made.append(self)

    monkeypatch.setattr(etcd_module.Etcd, "__init__", counted)
    return made


def test_the_cluster_page_asks_etcd_through_the_one_view(
    tmp_path: Path, data_dir: Path, etcd_server: LocalEtcd, etcd_clients: list[Etcd]
) -> None:
    service = open_service(
        tmp_path / "w", f"file://{data_dir}", f"dora.cluster.etcd.endpoints={etcd_server.endpoint}"
    )
    api = Api(service)
    try:
        assert len(etcd_clients) == 1  # the worker's view, made with the service
        for _ in range(3):
            answer = api.get("/v1/cluster").json()
            assert answer["etcd"] == [etcd_server.endpoint]
            assert answer["workers"] == []
        assert len(etcd_clients) == 1
    finally:
        api.close()
        service.close()
