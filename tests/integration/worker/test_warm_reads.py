"""Issue 36 item 5 on a real ``dora worker start`` process over SeaweedFS, the store behind a
counting proxy: a warm pass at sync interval -1 — what Spark's reader asks of a table it read
before, ``_spark_metadata`` probe included, on WebHDFS, REST v1 and the S3 endpoint — makes no
request to the store once the negative entries have expired; nested writes through the
worker (fsspec's directory copy into a directory listed before) still list and stat right."""

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import s3fs

from tests.integration.conftest import BUCKET
from tests.integration.harness import WorkerProcess
from tests.integration.s3endpoint.s3_endpoint_support import KEY_ID, SECRET, Endpoint
from worker.client import DoraFileSystem
from worker.devlab.local.netproxy import TcpProxy
from worker.devlab.local.s3 import LocalS3, free_port

pytestmark = pytest.mark.integration
NEGATIVE_TTL_S = 0.5
PARTS = ("part-0.parquet", "part-1.parquet", "part-2.parquet")


class Warm:
    """The worker, the proxy between it and the store, and its S3 endpoint."""

    def __init__(self, worker: WorkerProcess, proxy: TcpProxy, s3_url: str) -> None:
        self.worker, self.proxy = worker, proxy
        self.s3 = Endpoint(worker, s3_url, "").client()

    def counts(self) -> dict[str, int]:
        """What the store saw since the last reset, and the worker's own UFS counters."""
        stats = self.worker.http.get("/v1/overview").json()
        return {
            "store_requests": self.proxy.stats().requests,
            "store_bytes": self.proxy.stats().bytes_down,
            "metadata_ufs_calls": stats["metadata"]["ufs_calls"],
            "listing_negatives": stats["metadata"]["listing_negatives"],
        }


@pytest.fixture
def warm(tmp_path: Path, seaweedfs: LocalS3) -> Iterator[Warm]:
    target = urlsplit(seaweedfs.endpoint)
    assert target.hostname is not None and target.port is not None
    proxy = TcpProxy(target.hostname, target.port).start()
    port = free_port()
    worker = WorkerProcess(
        tmp_path,
        f"dora.worker.ufs.roots=s3://{BUCKET}",
        *seaweedfs.storage_defines(),
        f"dora.ufs.s3.endpoint={proxy.url}",
        "dora.user.file.metadata.sync.interval=-1",
        f"dora.worker.ufs.negative.cache.ttl={int(NEGATIVE_TTL_S * 1000)}ms",
        f"dora.worker.s3.port={port}",
        f"dora.worker.s3.access.key.id={KEY_ID}",
        f"dora.worker.s3.secret.access.key={SECRET}",
    )
    try:
        yield Warm(worker, proxy, f"http://127.0.0.1:{port}")
    finally:
        worker.stop()
        proxy.stop()


def webhdfs(warm: Warm, uri: str, op: str) -> httpx.Response:
    path = "/webhdfs/v1/s3/" + uri.removeprefix("s3://")
    return warm.worker.http.get(path, params={"op": op}, follow_redirects=True)


def spark_pass(warm: Warm, table: str) -> None:
    """What a Spark job reading ``table`` asks (FileStreamSink.hasMetadata, then the file
    index and the reads), and the same questions on REST v1 and the S3 endpoint."""
    assert webhdfs(warm, table, "GETFILESTATUS").json()["FileStatus"]["type"] == "DIRECTORY"
    assert webhdfs(warm, f"{table}/_spark_metadata", "GETFILESTATUS").status_code == 404
    listed = webhdfs(warm, table, "LISTSTATUS").json()["FileStatuses"]["FileStatus"]
    assert sorted(entry["pathSuffix"] for entry in listed) == list(PARTS)
    for part in PARTS:
        assert webhdfs(warm, f"{table}/{part}", "OPEN").content == part.encode() * 1000
    rest = warm.worker.http.get("/v1/status", params={"path": f"{table}/_spark_metadata"})
    assert rest.status_code == 404
    key = table.removeprefix(f"s3://{BUCKET}/")
    listing = warm.s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{key}/", Delimiter="/")
    assert sorted(o["Key"] for o in listing["Contents"]) == [f"{key}/{p}" for p in PARTS]
    missing: Any = None
    try:
        warm.s3.head_object(Bucket=BUCKET, Key=f"{key}/_spark_metadata")
    except warm.s3.exceptions.ClientError as exc:
        missing = exc.response["Error"]["Code"]
    assert missing == "404"


def test_a_warm_pass_at_minus_one_makes_no_store_request_past_the_negative_ttl(
    warm: Warm, s3_raw: s3fs.S3FileSystem, s3_root: str
) -> None:
    table = f"{s3_root}/table"
    for part in PARTS:
        s3_raw.pipe_file(f"{table}/{part}".removeprefix("s3://"), part.encode() * 1000)
    spark_pass(warm, table)  # cold: fills the caches
    before = warm.counts()
    warm.proxy.reset_counts()
    time.sleep(NEGATIVE_TTL_S * 3)  # the negative entries of the cold pass have expired
    spark_pass(warm, table)
    after = warm.counts()
    assert (after["store_requests"], after["store_bytes"]) == (0, 0), warm.proxy.requests()
    assert after["metadata_ufs_calls"] == before["metadata_ufs_calls"]
    # The probes of _spark_metadata (WebHDFS, REST, S3 HEAD) were answered by the listing.
    assert after["listing_negatives"] - before["listing_negatives"] == 3


def test_nested_writes_through_the_worker_list_and_stat_right(
    warm: Warm, s3_root: str, tmp_path: Path
) -> None:
    """A write whose directories are new, into a directory listed before, and fsspec's
    directory copy: the listings of the directories they make appear are dropped, so
    ``isdir`` and ``ls`` see them past the negative TTL (a listing that lacked them would
    answer "not found")."""
    fs = DoraFileSystem(workers=f"http://{warm.worker.address}", skip_instance_cache=True)
    target = f"{s3_root}/target"
    fs.pipe_file(f"{target}/dummy", b"d")
    assert fs.ls(target, detail=False) == [f"{target}/dummy"]
    assert fs.ls(s3_root, detail=False) == [target]
    assert not fs.exists(f"{target}/subdir")
    fs.pipe_file(f"{target}/subdir/nesteddir/nestedfile", b"n")
    source = tmp_path / "source"
    (source / "subdir").mkdir(parents=True)
    (source / "subdir" / "subfile").write_bytes(b"s")
    fs.put(str(source), f"{s3_root}/copied", recursive=True)
    time.sleep(NEGATIVE_TTL_S * 3)  # past any negative entry of the probes above
    assert fs.isdir(f"{target}/subdir") and fs.isdir(f"{target}/subdir/nesteddir")
    assert fs.cat_file(f"{target}/subdir/nesteddir/nestedfile") == b"n"
    assert fs.ls(target, detail=False) == [f"{target}/dummy", f"{target}/subdir"]
    assert fs.ls(s3_root, detail=False) == [f"{s3_root}/copied", target]
    assert fs.isdir(f"{s3_root}/copied/subdir")
    assert fs.cat_file(f"{s3_root}/copied/subdir/subfile") == b"s"
