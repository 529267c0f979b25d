"""Membership against a real etcd: Alluxio's layout, joins and leaves seen by a watching view,
a lease that lapses, the last known set kept through an outage."""

import json

import pytest

from worker.cluster import layout
from worker.cluster.entries import BadEntry
from worker.cluster.etcd import Etcd
from worker.cluster.layout import WorkerInfo
from worker.cluster.members import MembershipView, Registration, live_members
from worker.devlab.local.etcd import LocalEtcd

from .support import wait_for


def info(port: int) -> WorkerInfo:
    return WorkerInfo("127.0.0.1", port, 1_700_000_000_000, 1 << 30)


def test_the_entry_is_alluxios_worker_service_entity() -> None:
    entity = json.loads(info(28080).encode())
    assert entity["ServiceEntityName"] == layout.worker_id("127.0.0.1", 28080)
    assert entity["WorkerNetAddress"]["Host"] == "127.0.0.1"
    assert entity["WorkerNetAddress"]["HttpServerPort"] == 28080
    assert entity["State"] == "AUTHORIZED"
    assert WorkerInfo.decode(info(28080).encode()) == info(28080)


def test_the_entry_carries_the_s3_endpoint_when_the_worker_serves_one() -> None:
    served = WorkerInfo("10.0.0.5", 28080, 1, 1, "https", s3_port=29000)
    assert WorkerInfo.decode(served.encode()) == served
    assert served.s3_url == "https://10.0.0.5:29000"
    assert info(28080).s3_url is None
    assert "S3Port" not in json.loads(info(28080).encode())["Dora"]


def entry(host: object = "h", port: object = 80) -> bytes:
    return json.dumps({"WorkerNetAddress": {"Host": host, "HttpServerPort": port}}).encode()


FORGED_MEMBERS = {
    "not JSON": b"x",
    "no address": b"{}",
    "port 0": entry(port=0),
    "port Infinity": b'{"WorkerNetAddress":{"Host":"h","HttpServerPort":Infinity}}',
    "port NaN": b'{"WorkerNetAddress":{"Host":"h","HttpServerPort":NaN}}',
    "port true": entry(port=True),
    "port string": entry(port="80"),
    "port 65536": entry(port=65536),
    "port float": entry(port=80.5),
    "host number": entry(host=5),
    "host with a slash": entry(host="evil/x"),
    "host with a space": entry(host="a b"),
    "host empty": entry(host=""),
    "100k deep": b"[" * 100_000,
    "s3 port 65536": b'{"WorkerNetAddress":{"Host":"h","HttpServerPort":1},'
    b'"Dora":{"S3Port":65536}}',
    "s3 port string": b'{"WorkerNetAddress":{"Host":"h","HttpServerPort":1},'
    b'"Dora":{"S3Port":"29000"}}',
    "capacity negative": b'{"WorkerNetAddress":{"Host":"h","HttpServerPort":1},'
    b'"Dora":{"CapacityBytes":-1}}',
}


@pytest.mark.parametrize("raw", FORGED_MEMBERS.values(), ids=FORGED_MEMBERS.keys())
def test_a_forged_entry_is_one_error(raw: bytes) -> None:
    with pytest.raises(BadEntry, match="worker"):
        WorkerInfo.decode(raw)


def test_joins_and_leaves_reach_a_running_view(etcd: Etcd, cluster: str) -> None:
    view = MembershipView(etcd, cluster, idle_timeout_s=5).start()
    first = Registration(etcd, cluster, info(1001), ttl_s=5, applied=lambda: 7)
    second = Registration(etcd, cluster, info(1002), ttl_s=5, applied=lambda: 0)
    try:
        assert view.names() == ()
        first.start()
        second.start()
        wait_for(lambda: view.names() == ("127.0.0.1:1001", "127.0.0.1:1002"))
        assert etcd.get(layout.applied_prefix(cluster) + info(1001).id).value == b"7"  # type: ignore[union-attr]
        first.close()
        wait_for(lambda: view.names() == ("127.0.0.1:1002",))
        # The permanent entry stays: Alluxio lists such a worker as OFFLINE.
        _, authorized = etcd.get_prefix(layout.authorized_prefix(cluster))
        assert len(authorized) == 2
    finally:
        second.close()
        view.close()


def test_a_worker_that_stops_renewing_leaves_within_its_lease(etcd: Etcd, cluster: str) -> None:
    lease = etcd.grant(2)
    etcd.put(layout.live_prefix(cluster) + info(1003).id, info(1003).encode(), lease)
    view = MembershipView(etcd, cluster, idle_timeout_s=5).start()
    try:
        assert view.names() == ("127.0.0.1:1003",)
        wait_for(lambda: view.names() == (), timeout=10)
    finally:
        view.close()


def test_the_view_keeps_its_last_members_while_etcd_is_down(own_etcd: LocalEtcd) -> None:
    etcd = Etcd([own_etcd.endpoint], timeout_s=1.0)
    registration = Registration(etcd, "c", info(1004), ttl_s=30, applied=lambda: 0)
    registration.start()
    view = MembershipView(etcd, "c", idle_timeout_s=3).start()
    try:
        assert view.names() == ("127.0.0.1:1004",) and view.available
        own_etcd.stop()
        wait_for(lambda: not view.available)
        assert view.names() == ("127.0.0.1:1004",)
        own_etcd.start()
        wait_for(lambda: view.available)
        assert live_members(etcd, "c")[1].keys() == {info(1004).id}
    finally:
        registration.close()
        view.close()
