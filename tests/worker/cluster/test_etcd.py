"""The etcd client against a real etcd: plain calls, leases, watches, compaction, outages."""

import threading

import pytest

from worker.cluster.etcd import Compacted, Etcd, EtcdUnavailable
from worker.devlab.local.etcd import LocalEtcd
from worker.devlab.local.s3 import free_port


def test_put_get_prefix_and_delete(etcd: Etcd, cluster: str) -> None:
    first = etcd.put(f"/{cluster}/a", b"1")
    second = etcd.put(f"/{cluster}/b", b"2")
    assert second > first
    assert etcd.get(f"/{cluster}/a").value == b"1"  # type: ignore[union-attr]
    revision, kvs = etcd.get_prefix(f"/{cluster}/")
    assert revision >= second
    assert [(kv.key, kv.value) for kv in kvs] == [(f"/{cluster}/a", b"1"), (f"/{cluster}/b", b"2")]
    etcd.delete(f"/{cluster}/a")
    assert etcd.get(f"/{cluster}/a") is None


def test_a_revoked_lease_takes_its_keys(etcd: Etcd, cluster: str) -> None:
    lease = etcd.grant(30)
    etcd.put(f"/{cluster}/leased", b"x", lease)
    assert etcd.keepalive(lease) > 0
    etcd.revoke(lease)
    assert etcd.get(f"/{cluster}/leased") is None
    assert etcd.keepalive(lease) == 0


def test_watch_replays_history_then_follows(etcd: Etcd, cluster: str) -> None:
    key = f"/{cluster}/feed"
    start = etcd.put(key, b"one")
    etcd.put(key, b"two")
    seen: list[bytes] = []
    with etcd.watch(key, prefix=False, start_revision=start, idle_timeout_s=10) as stream:
        for reply in stream:
            seen += [event.kv.value for event in reply.events]
            if len(seen) == 2:
                etcd.put(key, b"three")
            if len(seen) == 3:
                break
    assert seen == [b"one", b"two", b"three"]


def test_close_wakes_a_blocked_reader(etcd: Etcd, cluster: str) -> None:
    stream = etcd.watch(f"/{cluster}/idle", prefix=False, start_revision=0, idle_timeout_s=60)
    done = threading.Event()

    def read() -> None:
        for _ in stream:
            pass
        done.set()

    reader = threading.Thread(target=read)
    reader.start()
    stream.close()
    reader.join(timeout=10)
    assert done.is_set()


def test_a_watch_before_compaction_raises_compacted(own_etcd: LocalEtcd) -> None:
    etcd = Etcd([own_etcd.endpoint], timeout_s=2.0)
    first = etcd.put("/k", b"1")
    last = etcd.put("/k", b"2")
    etcd.compact(last)
    with pytest.raises(Compacted) as caught:
        for _ in etcd.watch("/k", prefix=False, start_revision=first, idle_timeout_s=10):
            pass
    assert caught.value.revision == last


def test_no_endpoint_is_unavailable_and_a_second_endpoint_is_used(etcd_server: LocalEtcd) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(EtcdUnavailable):
        Etcd([dead], timeout_s=1.0).revision("/")
    assert Etcd([dead, etcd_server.endpoint], timeout_s=1.0).revision("/") > 0


def test_a_killed_etcd_ends_the_watch_as_unavailable(own_etcd: LocalEtcd) -> None:
    etcd = Etcd([own_etcd.endpoint], timeout_s=1.0)
    stream = etcd.watch("/w", prefix=False, start_revision=0, idle_timeout_s=30)
    own_etcd.kill()
    with pytest.raises(EtcdUnavailable):
        for _ in stream:
            pass


def test_bad_endpoints_are_refused() -> None:
    with pytest.raises(ValueError, match="host:port"):
        Etcd(["ftp://x:1"], timeout_s=1.0)
