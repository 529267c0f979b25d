"""A whole store as a mount root (``s3://``) behind the S3 endpoint, on SeaweedFS: its buckets
are served, listed with the configured ones, made and removed through the endpoint with the
store's answers, and a bucket removed takes what the cache held of it along."""

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from tests.integration.conftest import BUCKET
from tests.integration.harness import WorkerProcess
from tests.integration.s3endpoint.s3_endpoint_support import (
    KEY_ID,
    SECRET,
    Endpoint,
    stop_worker,
    store_client,
)
from worker.devlab.local.s3 import LocalS3, free_port

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def whole_store(tmp_path_factory: pytest.TempPathFactory, seaweedfs: LocalS3) -> Iterator[Endpoint]:
    work = tmp_path_factory.mktemp("s3-whole-store")
    scratch = work / "scratch"
    scratch.mkdir()
    port = free_port()
    worker = WorkerProcess(
        work,
        f"dora.worker.ufs.roots=s3://,file://{scratch}",
        *seaweedfs.storage_defines(),
        f"dora.worker.s3.port={port}",
        f"dora.worker.s3.buckets=scratch=file://{scratch}",
        f"dora.worker.s3.access.key.id={KEY_ID}",
        f"dora.worker.s3.secret.access.key={SECRET}",
    )
    yield Endpoint(worker, f"http://127.0.0.1:{port}", "")
    stop_worker(worker, work)


def code(error: pytest.ExceptionInfo[ClientError]) -> tuple[str, int]:
    response = error.value.response
    return response["Error"]["Code"], response["ResponseMetadata"]["HTTPStatusCode"]


def test_buckets_pass_through(whole_store: Endpoint, seaweedfs: LocalS3) -> None:
    s3, store = whole_store.client(), store_client(seaweedfs)
    name = f"made-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    store.head_bucket(Bucket=name)
    listed = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert {BUCKET, "scratch", name} <= set(listed) and listed == sorted(listed)
    with pytest.raises(ClientError) as again:
        s3.create_bucket(Bucket=name)
    assert code(again) in {("BucketAlreadyExists", 409), ("BucketAlreadyOwnedByYou", 409)}
    with pytest.raises(ClientError) as taken:
        s3.create_bucket(Bucket="scratch")
    assert code(taken) == ("BucketAlreadyOwnedByYou", 409)
    with pytest.raises(ClientError) as bad:
        s3.create_bucket(Bucket="Not_A_Bucket")
    assert code(bad) == ("InvalidBucketName", 400)

    s3.put_object(Bucket=name, Key="dir/k", Body=b"kept")
    assert store.get_object(Bucket=name, Key="dir/k")["Body"].read() == b"kept"
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=name)["Contents"]]
    assert keys == ["dir/k"]
    with pytest.raises(ClientError) as full:
        s3.delete_bucket(Bucket=name)
    assert code(full) == ("BucketNotEmpty", 409)
    s3.delete_object(Bucket=name, Key="dir/k")
    s3.delete_bucket(Bucket=name)
    with pytest.raises(ClientError) as gone:
        store.head_bucket(Bucket=name)
    assert code(gone)[1] == 404
    with pytest.raises(ClientError) as missing:
        s3.head_bucket(Bucket=name)
    assert code(missing)[1] == 404
    with pytest.raises(ClientError) as unlisted:
        s3.list_objects_v2(Bucket=name)
    assert code(unlisted) == ("NoSuchBucket", 404)
    with pytest.raises(ClientError) as twice:
        s3.delete_bucket(Bucket=name)
    assert code(twice) == ("NoSuchBucket", 404)
    with pytest.raises(ClientError) as configured:
        s3.delete_bucket(Bucket="scratch")
    assert code(configured) == ("NotImplemented", 501)


def test_a_removed_bucket_leaves_nothing_cached(whole_store: Endpoint, seaweedfs: LocalS3) -> None:
    s3, store = whole_store.client(), store_client(seaweedfs)
    name = f"cached-{uuid.uuid4().hex[:12]}"
    # Looked up before the bucket exists: a negative entry, which its creation drops.
    with pytest.raises(ClientError):
        s3.get_object(Bucket=name, Key="early")
    s3.create_bucket(Bucket=name)
    store.put_object(Bucket=name, Key="early", Body=b"written by another")
    assert s3.get_object(Bucket=name, Key="early")["Body"].read() == b"written by another"
    # Cached, then removed from outside, then the bucket removed through the endpoint: the
    # cached object goes with the bucket (its sync interval would otherwise keep serving it).
    store.delete_object(Bucket=name, Key="early")
    s3.delete_bucket(Bucket=name)
    with pytest.raises(ClientError) as gone:
        s3.get_object(Bucket=name, Key="early")
    assert code(gone)[1] == 404
    store.create_bucket(Bucket=name)
    try:
        with pytest.raises(ClientError) as still:
            s3.get_object(Bucket=name, Key="early")
        assert code(still)[1] == 404
    finally:
        store.delete_bucket(Bucket=name)


def test_the_store_stays_a_boundary(whole_store: Endpoint, seaweedfs: LocalS3) -> None:
    s3 = whole_store.client()
    for key in ("../itest/x", "a/../../b"):
        with pytest.raises(ClientError) as refused:
            s3.get_object(Bucket=BUCKET, Key=key)
        assert code(refused)[1] in (400, 403, 404)


def test_aws_cli_mb_ls_rb(whole_store: Endpoint, tmp_path: Path) -> None:
    name = f"cli-{uuid.uuid4().hex[:12]}"
    made = whole_store.aws("s3", "mb", f"s3://{name}")
    assert made.returncode == 0, made.stderr
    listed = whole_store.aws("s3", "ls")
    assert name in listed.stdout.decode(), listed.stderr
    (tmp_path / "f").write_bytes(b"through the cli")
    copied = whole_store.aws("s3", "cp", str(tmp_path / "f"), f"s3://{name}/f")
    assert copied.returncode == 0, copied.stderr
    removed = whole_store.aws("s3", "rb", "--force", f"s3://{name}")
    assert removed.returncode == 0, removed.stderr
    assert name not in whole_store.aws("s3", "ls").stdout.decode()
