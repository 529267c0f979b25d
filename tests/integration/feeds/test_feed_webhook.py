"""The webhook feed against a real store: SeaweedFS's filer POSTs its events to a worker's
/v1/events (configured through SeaweedFS's WEED_NOTIFICATION_WEBHOOK_* settings), and an S3
event notification posted as AWS sends one takes effect on a worker fronting SeaweedFS."""

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import s3fs

from tests.integration.cluster.cluster_support import ClusterWorker
from tests.integration.conftest import BUCKET
from tests.integration.feeds.feed_support import body, put_record, served, wait_until
from tests.integration.inprocess import serving
from tests.worker.conftest import Api, open_service
from worker.common.revision import REVISION_HEADER as REVISION
from worker.devlab.local.etcd import LocalEtcd
from worker.devlab.local.s3 import LocalS3
from worker.service import WorkerService

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOKEN = "hook-secret"


@pytest.fixture
def hooked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[WorkerService, LocalS3]]:
    """A worker taking webhook events, and a SeaweedFS of its own sending them to it."""
    server = LocalS3(tmp_path / "s3", buckets=("hooked",))
    service = open_service(
        tmp_path / "work",
        "s3://hooked",
        "dora.user.file.metadata.sync.interval=-1",
        "dora.ufs.change.feeds=webhook",
        f"dora.ufs.change.webhook.token={TOKEN}",
        *server.storage_defines(),
    )
    try:
        with serving(service) as port:
            for name, value in {
                "ENABLED": "true",
                "ENDPOINT": f"http://127.0.0.1:{port}/v1/events",
                "BEARER_TOKEN": TOKEN,
                "PATH_PREFIXES": "/buckets/hooked",
            }.items():
                monkeypatch.setenv(f"WEED_NOTIFICATION_WEBHOOK_{name}", value)
            server.start()
            try:
                yield service, server
            finally:
                server.stop()
    finally:
        service.close()


def test_seaweedfs_posts_its_events_to_the_worker(hooked: tuple[WorkerService, LocalS3]) -> None:
    service, server = hooked
    client = server.client()
    uri = "s3://hooked/a dir/ü.txt"
    client.pipe_file(uri, b"first")
    wait_until(served(service, uri, b"first"))
    client.pipe_file(uri, b"second")
    wait_until(served(service, uri, b"second"))
    client.rm_file(uri)
    wait_until(served(service, uri, None))


def test_an_s3_event_notification_takes_effect(
    tmp_path: Path, seaweedfs: LocalS3, s3_root: str, s3_raw: s3fs.S3FileSystem
) -> None:
    service = open_service(
        tmp_path / "work",
        f"s3://{BUCKET}",
        "dora.user.file.metadata.sync.interval=-1",
        "dora.ufs.change.feeds=webhook",
        f"dora.ufs.change.webhook.token={TOKEN}",
        *seaweedfs.storage_defines(),
    )
    api = Api(service)
    try:
        uri = f"{s3_root}/a dir/ü+x.txt"
        s3_raw.pipe_file(uri, b"v1")
        assert body(service, uri) == b"v1"
        s3_raw.pipe_file(uri, b"v2, longer")
        assert body(service, uri) == b"v1"  # no event yet, and -1 never looks
        key = uri.removeprefix(f"s3://{BUCKET}/")
        record = put_record(BUCKET, key, s3_raw.info(uri)["ETag"])
        answer = api.request(
            "POST",
            "/v1/events",
            json={"Records": [record, record]},  # at least once: a duplicate
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        assert answer.json() == {"changes": 2}
        assert body(service, uri) == b"v2, longer"
    finally:
        api.close()
        service.close()


def test_in_a_cluster_one_worker_told_is_enough(
    tmp_path: Path, seaweedfs: LocalS3, s3_root: str, s3_raw: s3fs.S3FileSystem
) -> None:
    etcd = LocalEtcd(tmp_path / "etcd").start()
    defines = (
        f"dora.worker.ufs.roots=s3://{BUCKET}",
        *seaweedfs.storage_defines(),
        "dora.ufs.change.feeds=webhook",
        f"dora.ufs.change.webhook.token={TOKEN}",
    )
    workers = [ClusterWorker(tmp_path / f"w{n}", tmp_path, etcd, *defines) for n in range(2)]
    try:
        for worker in workers:
            worker.start()
            wait_until(lambda w=worker: w.metric("dora_cluster_etcd_connected") == 1)  # type: ignore[misc]
        uri = f"{s3_root}/shared.txt"
        s3_raw.pipe_file(uri, b"v1")
        for worker in workers:
            assert worker.http.get("/v1/read", params={"path": uri}).content == b"v1"
        before = int(workers[0].http.get("/v1/status", params={"path": uri}).headers[REVISION])
        s3_raw.pipe_file(uri, b"v2, longer")
        key = uri.removeprefix(f"s3://{BUCKET}/")
        now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        record = put_record(BUCKET, key, s3_raw.info(uri)["ETag"], now)
        told = workers[0].http.post(
            "/v1/events", json={"Records": [record]}, headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert told.json() == {"changes": 1}
        # The answer names the revision the change was published under, as a write's does: a
        # caller that sends it to any other worker reads the new bytes at once.
        revision = int(told.headers[REVISION])
        assert revision > before
        read = workers[1].http.get(
            "/v1/read", params={"path": uri}, headers={REVISION: str(revision)}
        )
        assert read.content == b"v2, longer"
        # Every worker measures the lag from the event's own time, not only the one told.
        for worker in workers:
            assert worker.metric("dora_ufs_change_lag_seconds_count", '{source="webhook"}') == 1
    finally:
        for worker in workers:
            worker.stop()
            worker.http.close()
        etcd.stop()
