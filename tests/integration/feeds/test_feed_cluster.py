"""A change feed in a cluster: one worker per source, elected through an etcd lease, follows
SeaweedFS's filer and republishes into the invalidation feed; every worker at sync interval -1
serves an outside write; when the consumer is killed another takes the source over."""

from collections.abc import Iterator
from pathlib import Path

import pytest
import s3fs

from tests.integration.cluster.cluster_support import ClusterWorker
from tests.integration.conftest import BUCKET
from tests.integration.feeds.feed_support import wait_until
from worker.devlab.local.etcd import LocalEtcd
from worker.devlab.local.s3 import LocalS3

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RECEIVED = 'dora_ufs_change_events_total{outcome="received"}'
GAPS = 'dora_ufs_change_events_total{outcome="gaps"}'
LAG_COUNT = "dora_ufs_change_lag_seconds_count"


@pytest.fixture
def workers(tmp_path: Path, seaweedfs: LocalS3) -> Iterator[list[ClusterWorker]]:
    etcd = LocalEtcd(tmp_path / "etcd").start()
    feed = f"seaweedfs://127.0.0.1:{seaweedfs.ports['filer.port.grpc']}/buckets/{BUCKET}"
    defines = (
        f"dora.worker.ufs.roots=s3://{BUCKET}",
        *seaweedfs.storage_defines(),
        f"dora.ufs.change.feeds={feed}",
    )
    made = [ClusterWorker(tmp_path / f"w{n}", tmp_path, etcd, *defines) for n in range(2)]
    try:
        for worker in made:
            worker.start()
        yield made
    finally:
        for worker in made:
            worker.kill()
            worker.http.close()
        etcd.stop()


def serves(worker: ClusterWorker, uri: str, data: bytes) -> bool:
    return worker.http.get("/v1/read", params={"path": uri}).content == data


def test_one_consumer_per_source_and_a_failover(
    workers: list[ClusterWorker], seaweedfs: LocalS3, s3_root: str, s3_raw: s3fs.S3FileSystem
) -> None:
    uri = f"{s3_root}/shared.txt"
    s3_raw.pipe_file(uri, b"v1")
    for worker in workers:
        wait_until(lambda w=worker: serves(w, uri, b"v1"))  # type: ignore[misc]
    s3_raw.pipe_file(uri, b"v2, longer")
    for worker in workers:
        wait_until(lambda w=worker: serves(w, uri, b"v2, longer"))  # type: ignore[misc]
    consumers = [w for w in workers if w.metric(RECEIVED) > 0]
    assert len(consumers) == 1  # the other heard it through the etcd feed
    assert [w.metric(GAPS) for w in workers if w not in consumers] == [0]
    # Every worker measures the source's lag to its own application, the other one from the
    # event times the republished batch carries.
    source = f"seaweedfs://127.0.0.1:{seaweedfs.ports['filer.port.grpc']}/buckets/{BUCKET}"
    for worker in workers:
        wait_until(lambda w=worker: w.metric(LAG_COUNT, f'{{source="{source}"}}') >= 1)  # type: ignore[misc]
        lag = worker.http.get("/v1/overview").json()["feeds"]["lag"][source]
        assert lag["events"] >= 1 and lag["last_ms"] is not None and lag["p99_ms"] is not None
    consumers[0].kill()
    survivor = next(w for w in workers if w is not consumers[0])
    s3_raw.pipe_file(uri, b"v3, longer still")
    # Within a lease's life the survivor holds the source, resuming from the position the
    # killed consumer saved in etcd: the filer replays the write, and nothing is re-checked.
    wait_until(lambda: serves(survivor, uri, b"v3, longer still"))
    assert survivor.metric(RECEIVED) > 0  # it consumes the source now
    assert survivor.metric(GAPS) == 0
