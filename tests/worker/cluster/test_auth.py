"""etcd with authentication enabled (a real etcd, set up through its own API as the README's
``etcdctl`` recipe does): a worker's user, limited to the cluster's key prefixes, registers,
publishes and follows; no or wrong credentials are a clear refusal; tokens etcd forgot on a
restart are replaced; the role keeps the user out of every other key."""

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from config import load_config
from worker.client.http import WorkerClient
from worker.client.options import ClientOptions
from worker.cluster import layout
from worker.cluster.etcd import Credentials, Etcd, EtcdError
from worker.cluster.events import Event, Op
from worker.cluster.follower import Follower
from worker.cluster.members import MembershipView, Registration
from worker.cluster.publisher import Publisher, PublisherOptions
from worker.cluster.status import cluster_status
from worker.devlab.local.etcd import LocalEtcd
from worker.keys import build_registry

from .support import MemoryMarkers, RecordingSink, wait_for

CLUSTER = "secured"
WORKER = Credentials("dora-worker", "w0rker-pw")


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def enable_auth(endpoint: str) -> None:
    """``etcdctl user add root; role add root; user grant-role root root``, a role with
    read-write on the cluster's three prefixes for the worker's user, ``auth enable``."""

    def post(path: str, body: dict[str, object]) -> None:
        answer = requests.post(f"{endpoint}/v3{path}", json=body, timeout=10)
        assert answer.status_code == 200, answer.text

    post("/auth/user/add", {"name": "root", "password": "r00t-pw"})
    post("/auth/role/add", {"name": "root"})
    post("/auth/user/grant", {"user": "root", "role": "root"})
    post("/auth/user/add", {"name": WORKER.user, "password": WORKER.password})
    post("/auth/role/add", {"name": "dora-worker"})
    prefixes = [layout.live_prefix(CLUSTER), f"/DHT/{CLUSTER}/", f"/dora/{CLUSTER}/"]
    for prefix in prefixes:
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        perm = {"permType": "READWRITE", "key": _b64(prefix), "range_end": _b64(end)}
        post("/auth/role/grant", {"name": "dora-worker", "perm": perm})
    post("/auth/user/grant", {"user": WORKER.user, "role": "dora-worker"})
    post("/auth/enable", {})


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[LocalEtcd]:
    server = LocalEtcd(tmp_path / "etcd").start()
    try:
        enable_auth(server.endpoint)
        yield server
    finally:
        server.stop()


def test_without_or_with_wrong_credentials_etcd_refuses_clearly(secured: LocalEtcd) -> None:
    with pytest.raises(EtcdError, match="user name is empty"):
        Etcd([secured.endpoint], 2.0).get(layout.feed_key(CLUSTER))
    wrong = Credentials(WORKER.user, "not-it")
    with pytest.raises(EtcdError, match="refused user 'dora-worker'.*authentication failed"):
        Etcd([secured.endpoint], 2.0, wrong).get(layout.feed_key(CLUSTER))
    assert "not-it" not in repr(wrong)


def test_the_role_keeps_the_worker_to_its_prefixes(secured: LocalEtcd) -> None:
    etcd = Etcd([secured.endpoint], 2.0, WORKER)
    etcd.put(layout.feed_key(CLUSTER), b"ok")
    with pytest.raises(EtcdError, match="permission denied"):
        etcd.put(layout.live_prefix("other") + "forged", b"{}")
    with pytest.raises(EtcdError, match="permission denied"):
        etcd.watch("/elsewhere", prefix=True, start_revision=1, idle_timeout_s=5)


def test_a_worker_user_registers_publishes_and_follows_across_an_etcd_restart(
    secured: LocalEtcd,
) -> None:
    etcd = Etcd([secured.endpoint], 2.0, WORKER)
    info = layout.WorkerInfo("127.0.0.1", 1001, 0, 0)
    registration = Registration(etcd, CLUSTER, info, ttl_s=5, applied=lambda: 0)
    view = MembershipView(etcd, CLUSTER, idle_timeout_s=5)
    sink = RecordingSink()
    follower = Follower(etcd, layout.feed_key(CLUSTER), "B", sink, MemoryMarkers(), 5)
    publisher = Publisher(etcd, PublisherOptions("A", layout.feed_key(CLUSTER), 64, 1000))
    try:
        registration.start()
        view.start()
        follower.start()
        publisher.start()
        wait_for(lambda: view.names() == (info.name,) and follower.connected)
        first = Event(Op.UPDATED, "s3://b/one", "v1")
        assert publisher.publish([first], wait_s=5) is not None
        wait_for(lambda: sink.events == [first])
        # etcd forgets its tokens when it restarts: every part gets a new one and goes on.
        secured.stop()
        secured.start()
        second = Event(Op.UPDATED, "s3://b/two", "v2")
        wait_for(lambda: publisher.publish([second], wait_s=1) is not None)
        wait_for(lambda: sink.events == [first, second])
        wait_for(lambda: registration.registered and view.names() == (info.name,))
        assert follower.failures == 0
    finally:
        publisher.close(1)
        follower.close()
        view.close()
        registration.close()
        etcd.close()


def test_the_keys_reach_dora_cluster_ls_and_the_clients_ring(secured: LocalEtcd) -> None:
    config = load_config(
        build_registry(),
        environ={},
        defines=[
            f"dora.cluster.etcd.endpoints={secured.endpoint}",
            f"dora.cluster.name={CLUSTER}",
            f"dora.cluster.etcd.user={WORKER.user}",
            f"dora.cluster.etcd.password={WORKER.password}",
        ],
    )
    etcd = Etcd.from_config(config)
    info = layout.WorkerInfo("127.0.0.1", 1002, 0, 0)
    registration = Registration(etcd, CLUSTER, info, ttl_s=5, applied=lambda: 0)
    client = WorkerClient(ClientOptions.resolve(config))
    try:
        registration.start()
        assert [m.info.name for m in cluster_status(etcd, CLUSTER).members] == [info.name]
        wait_for(lambda: client.ring.workers == (info.name,))
        assert WORKER.password not in config.sources()
    finally:
        registration.close()
        etcd.close()
