"""The SeaweedFS change feed against a real SeaweedFS: a worker at sync interval -1 serves what
an outside writer (s3fs, boto3) wrote once the filer's event arrives, and a lost subscription
(a filer killed and restarted) is a gap that re-checks what was cached."""

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import s3fs

from tests.integration.conftest import BUCKET
from tests.integration.feeds.feed_support import body, fed_worker, served, wait_until
from tests.integration.harness import WorkerProcess
from tests.worker.conftest import open_service
from worker.devlab.local.s3 import ACCESS_KEY, SECRET_KEY, LocalS3
from worker.feeds.runner import Feeds
from worker.feeds.seaweedfs import CLOCK_SLACK_NS
from worker.service import WorkerService

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def seaweed_worker(
    work: Path, server: LocalS3, bucket: str, *defines: str
) -> tuple[WorkerService, Feeds]:
    feed = f"seaweedfs://127.0.0.1:{server.ports['filer.port.grpc']}/buckets/{bucket}"
    return fed_worker(work, bucket, feed, *server.storage_defines(), *defines)


@pytest.fixture
def fed(tmp_path: Path, seaweedfs: LocalS3) -> Iterator[WorkerService]:
    service, feeds = seaweed_worker(tmp_path / "work", seaweedfs, BUCKET)
    yield service
    feeds.close()
    service.close()


@pytest.fixture
def boto(seaweedfs: LocalS3) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=seaweedfs.endpoint,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name="us-east-1",
    )


def test_outside_writes_reach_a_worker_that_never_rechecks(
    fed: WorkerService, s3_root: str, s3_raw: s3fs.S3FileSystem, boto: Any
) -> None:
    uri = f"{s3_root}/a dir/ünïcode file.txt"
    key = uri.removeprefix(f"s3://{BUCKET}/")
    s3_raw.pipe_file(uri, b"first")
    wait_until(served(fed, uri, b"first"))
    s3_raw.pipe_file(uri, b"second, longer")  # overwrite
    wait_until(served(fed, uri, b"second, longer"))
    copy = f"{s3_root}/copy.txt"
    assert body(fed, copy) is None  # a "not found" answer is cached too
    s3_raw.copy(uri, copy)
    wait_until(served(fed, copy, b"second, longer"))
    upload = boto.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
    parts = [(b"p" * (5 << 20)), b"tail"]
    etags = [
        boto.upload_part(Bucket=BUCKET, Key=key, UploadId=upload, PartNumber=n + 1, Body=data)[
            "ETag"
        ]
        for n, data in enumerate(parts)
    ]
    boto.complete_multipart_upload(
        Bucket=BUCKET,
        Key=key,
        UploadId=upload,
        MultipartUpload={"Parts": [{"PartNumber": n + 1, "ETag": e} for n, e in enumerate(etags)]},
    )
    wait_until(served(fed, uri, b"".join(parts)))
    s3_raw.rm_file(uri)
    wait_until(served(fed, uri, None))
    # Each event's delay from the filer's own time to its application, per source.
    (source,) = fed.changes.lag.describe()
    assert source.startswith("seaweedfs://127.0.0.1:") and source.endswith(f"/buckets/{BUCKET}")
    assert fed.changes.lag.describe()[source]["events"] >= 5


def test_the_workers_own_writes_echo_back_at_no_cost(fed: WorkerService, s3_root: str) -> None:
    uri = f"{s3_root}/own.bin"
    before = fed.changes.counters.snapshot()["received"]
    fed.write(fed.request(uri), b"written through the worker")
    calls = fed.stats()["metadata_ufs_calls"]
    wait_until(lambda: fed.changes.counters.snapshot()["received"] > before)
    assert body(fed, uri) == b"written through the worker"
    assert fed.stats()["metadata_ufs_calls"] == calls


def test_without_resuming_a_filer_killed_and_restarted_is_a_gap(
    tmp_path: Path, private_s3: LocalS3
) -> None:
    # What resuming cannot see (worker.feeds.seaweedfs): the filer lost the event of a write
    # no subscriber received. Without resuming every subscription re-checks the cache.
    service, feeds = seaweed_worker(
        tmp_path / "work", private_s3, "private", "dora.ufs.change.seaweedfs.resume.max.age=0"
    )
    client = private_s3.client()
    uri = "s3://private/gap/file.txt"
    try:
        client.pipe_file(uri, b"before")
        wait_until(served(service, uri, b"before"))
        # Its page cached, so that only the metadata decides what is served.
        wait_until(
            lambda: service.describe(service.status(service.request(uri)))["cached_bytes"] == 6
        )
        feeds.close()  # the consumer is gone: the next write's event reaches nobody
        client.pipe_file(uri, b"after the crash")
        # Killed before its once-a-minute flush: the filer loses that event's log.
        private_s3.kill()
        private_s3.start()
        assert body(service, uri) == b"before"  # sync interval -1, and no event: stale
        feeds = Feeds.start(service.config, service.changes)
        assert feeds is not None
        wait_until(served(service, uri, b"after the crash"))
        assert service.changes.counters.snapshot()["gaps"] >= 2
    finally:
        feeds.close()
        service.close()


def test_a_lost_subscription_resumes_without_rechecking_the_cache(
    tmp_path: Path, private_s3: LocalS3
) -> None:
    service, feeds = seaweed_worker(tmp_path / "work", private_s3, "private")
    client = private_s3.client()
    kept, changed = "s3://private/resume/kept.txt", "s3://private/resume/changed.txt"
    try:
        client.pipe_file(kept, b"kept")
        client.pipe_file(changed, b"before")
        wait_until(served(service, kept, b"kept"))
        wait_until(served(service, changed, b"before"))
        gaps = service.changes.counters.snapshot()["gaps"]
        (feed,) = feeds.feeds
        private_s3.kill()  # the stream is lost; the filer had flushed nothing it loses here
        private_s3.start()
        wait_until(lambda: feed.connected and feed.subscriptions >= 2)  # type: ignore[attr-defined]
        client.pipe_file(changed, b"after the filer came back")
        wait_until(served(service, changed, b"after the filer came back"))
        calls = service.stats()["metadata_ufs_calls"]
        assert body(service, kept) == b"kept"
        # Resumed from its position: no gap, so what it cached is not re-checked.
        assert service.changes.counters.snapshot()["gaps"] == gaps
        assert service.stats()["metadata_ufs_calls"] == calls
    finally:
        feeds.close()
        service.close()


def test_a_gap_before_a_restart_still_holds_after_it(tmp_path: Path, private_s3: LocalS3) -> None:
    client = private_s3.client()
    uri = "s3://private/fence/a.txt"
    client.pipe_file(uri, b"before")
    work = tmp_path / "work"
    service = open_service(
        work, "s3://private", "dora.user.file.metadata.sync.interval=-1",
        *private_s3.storage_defines(),
    )  # fmt: skip
    try:
        assert body(service, uri) == b"before"  # cached, with no feed to tell it of changes
    finally:
        service.close()
    client.pipe_file(uri, b"changed while no feed followed")
    time.sleep(CLOCK_SLACK_NS / 1e9 + 1)  # out of reach of the few seconds a subscription replays
    # Its first subscription is a gap: what was cached before is to be re-checked. It stops
    # before anyone asks, having saved a position after that gap.
    service, feeds = seaweed_worker(work, private_s3, "private")
    feeds.close()
    service.close()
    service, feeds = seaweed_worker(work, private_s3, "private")  # resumes from the position
    try:
        assert body(service, uri) == b"changed while no feed followed"
    finally:
        feeds.close()
        service.close()


def test_a_restarted_worker_resumes_where_it_stopped(
    tmp_path: Path, seaweedfs: LocalS3, s3_root: str, s3_raw: s3fs.S3FileSystem
) -> None:
    feed = f"seaweedfs://127.0.0.1:{seaweedfs.ports['filer.port.grpc']}/buckets/{BUCKET}"
    defines = (
        f"dora.worker.ufs.roots=s3://{BUCKET}",
        "dora.user.file.metadata.sync.interval=-1",
        f"dora.ufs.change.feeds={feed}",
        *seaweedfs.storage_defines(),
    )
    uri, kept = f"{s3_root}/restart.txt", f"{s3_root}/kept.txt"
    s3_raw.pipe_file(uri, b"before")
    s3_raw.pipe_file(kept, b"kept")
    (tmp_path / "work").mkdir()
    worker = WorkerProcess(tmp_path / "work", *defines)
    # Subscribed (its first subscription is a gap), so what it caches next comes after it.
    wait_until(lambda: worker.http.get("/v1/overview").json()["feeds"]["gaps"] >= 2)
    assert worker.http.get("/v1/read", params={"path": uri}).content == b"before"
    assert worker.http.get("/v1/read", params={"path": kept}).content == b"kept"
    # Quiet for longer than the replay slack: stopping moves its position past the two PUTs'
    # events (replayed after a restart, with the memory tier empty, each would cost a re-check).
    time.sleep(CLOCK_SLACK_NS / 1e9 + 1.5)
    assert worker.stop() == 0  # its metastore and pages keep "before", and its position
    s3_raw.pipe_file(uri, b"written while no worker listened")
    # Out of reach of the few seconds a new subscription replays: only its position helps.
    time.sleep(CLOCK_SLACK_NS / 1e9 + 1)
    worker = WorkerProcess(tmp_path / "work", *defines)
    try:
        # The filer replays the write since the saved position...
        wait_until(
            lambda: (
                worker.http.get("/v1/read", params={"path": uri}).content
                == b"written while no worker listened"
            )
        )
        # ...and what did not change is served as cached, with no re-check of the UFS.
        calls = ufs_calls(worker)
        assert worker.http.get("/v1/read", params={"path": kept}).content == b"kept"
        assert ufs_calls(worker) == calls
        assert "resuming from" in (tmp_path / "work" / "worker.log").read_text()
    finally:
        worker.stop()


def ufs_calls(worker: WorkerProcess) -> float:
    """Metadata lookups the worker answered from the UFS (its /metrics)."""
    text = worker.http.get("/metrics").text
    (line,) = [x for x in text.splitlines() if x.startswith("dora_metadata_ufs_calls_total ")]
    return float(line.split()[1])
