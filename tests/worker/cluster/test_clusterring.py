"""A client's ring over a real etcd: closing it stops following etcd, so a client that outlives
its cluster (a lab's, stopped under it) stays quiet (issue 36 item 10)."""

import logging
import threading
import time

import pytest

from worker.cluster.etcd import Etcd
from worker.cluster.layout import WorkerInfo
from worker.cluster.members import RETRY_S, Registration
from worker.common.clusterring import ClusterRing
from worker.devlab.local.etcd import LocalEtcd

VIEW_THREAD = "dora-membership-view"


def watching() -> int:
    return sum(thread.name == VIEW_THREAD for thread in threading.enumerate())


def test_a_closed_ring_stops_following_etcd_and_says_nothing_when_etcd_stops(
    own_etcd: LocalEtcd, caplog: pytest.LogCaptureFixture
) -> None:
    etcd = Etcd([own_etcd.endpoint], timeout_s=1.0)
    worker = WorkerInfo("127.0.0.1", 1006, 1_700_000_000_000, 1 << 30)
    registration = Registration(etcd, "c", worker, ttl_s=30, applied=lambda: 0)
    registration.start()
    before = watching()
    ring = ClusterRing(["127.0.0.1:9"], 16, [own_etcd.endpoint], "c", 1.0)
    try:
        assert ring.current().workers == ("127.0.0.1:1006",)
        assert watching() == before + 1 and ring.etcd_available
    finally:
        ring.close()
        registration.close()
        etcd.close()
    assert watching() == before
    assert ring.current().workers == ("127.0.0.1:9",)  # the static ring, etcd left alone
    ring.close()  # idempotent
    with caplog.at_level(logging.INFO, logger="worker.cluster"):
        own_etcd.stop()
        time.sleep(3 * RETRY_S)  # what a still-watching view retries in
        assert ring.current().workers == ("127.0.0.1:9",)
    assert not [r.getMessage() for r in caplog.records if "etcd" in r.getMessage()]
