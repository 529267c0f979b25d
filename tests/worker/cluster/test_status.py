"""The cluster snapshot: online and offline members, each one's applied revision and lag."""

from worker.cluster import layout
from worker.cluster.etcd import Etcd
from worker.cluster.layout import WorkerInfo
from worker.cluster.members import Registration
from worker.cluster.status import cluster_status


def test_members_their_state_and_lag(etcd: Etcd, cluster: str) -> None:
    first = Registration(etcd, cluster, WorkerInfo("h1", 1, 0, 10), ttl_s=30, applied=lambda: 0)
    second = Registration(etcd, cluster, WorkerInfo("h2", 2, 0, 20), ttl_s=30, applied=lambda: 0)
    first.start()
    second.start()
    feed = etcd.put(layout.feed_key(cluster), b"{}")
    etcd.put(layout.applied_prefix(cluster) + first.info.id, str(feed - 3).encode())
    second.close()
    status = cluster_status(etcd, cluster)
    first.close()
    assert status.feed_revision == feed
    assert [(m.info.name, m.online, m.applied, m.lag) for m in status.members] == [
        ("h1:1", True, feed - 3, 3),
        ("h2:2", False, None, None),
    ]
