"""What S3 clients expect of the endpoint beyond bytes, with boto3 on a real worker over
SeaweedFS: ``Content-Type``, the other kept headers and ``x-amz-meta-*`` round-trip through
PutObject, CopyObject (``COPY`` and ``REPLACE``) and multipart uploads, as the store keeps
them; and the answers Ceph's s3-tests found different from the store's."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from tests.integration.conftest import BUCKET
from tests.integration.harness import WorkerProcess
from tests.integration.s3endpoint.s3_endpoint_support import (
    Endpoint,
    start_worker,
    stop_worker,
    store_client,
)
from worker.devlab.local.s3 import LocalS3

pytestmark = pytest.mark.integration
MIB = 1 << 20


@pytest.fixture(scope="module")
def compat_worker(
    tmp_path_factory: pytest.TempPathFactory, seaweedfs: LocalS3
) -> Iterator[tuple[WorkerProcess, str]]:
    work = tmp_path_factory.mktemp("s3-compat-worker")
    worker, url = start_worker(work, seaweedfs)
    yield worker, url
    stop_worker(worker, work)


@pytest.fixture
def endpoint(compat_worker: tuple[WorkerProcess, str], s3_root: str) -> Endpoint:
    worker, url = compat_worker
    return Endpoint(worker, url, s3_root.removeprefix(f"s3://{BUCKET}/"))


def _kept(answer: dict[str, object]) -> tuple[object, object, object]:
    return answer["ContentType"], answer.get("CacheControl"), answer["Metadata"]


def test_put_keeps_type_and_metadata(endpoint: Endpoint, seaweedfs: LocalS3) -> None:
    s3, store = endpoint.client(), store_client(seaweedfs)
    key = f"{endpoint.prefix}/typed.json"
    s3.put_object(Bucket=BUCKET, Key=key, Body=b"{}", ContentType="application/json",
                  CacheControl="max-age=60", Metadata={"origin": "lab", "Run": "7"})  # fmt: skip
    expected = ("application/json", "max-age=60", {"origin": "lab", "run": "7"})
    assert _kept(store.head_object(Bucket=BUCKET, Key=key)) == expected
    for _ in range(2):  # the first answer asks the store, the second is remembered
        assert _kept(s3.head_object(Bucket=BUCKET, Key=key)) == expected
        got = s3.get_object(Bucket=BUCKET, Key=key)
        assert _kept(got) == expected and got["Body"].read() == b"{}"
    ranged = s3.get_object(Bucket=BUCKET, Key=key, Range="bytes=0-0")
    assert _kept(ranged) == expected
    overridden = s3.get_object(Bucket=BUCKET, Key=key, ResponseContentType="text/plain")
    assert overridden["ContentType"] == "text/plain"


def test_an_object_without_a_type_answers_the_stores(endpoint: Endpoint) -> None:
    s3 = endpoint.client()
    key = f"{endpoint.prefix}/plain"
    s3.put_object(Bucket=BUCKET, Key=key, Body=b"x")
    head = s3.head_object(Bucket=BUCKET, Key=key)
    assert head["Metadata"] == {} and head["ContentType"]


def test_copy_keeps_or_replaces_metadata(endpoint: Endpoint, seaweedfs: LocalS3) -> None:
    s3, store = endpoint.client(), store_client(seaweedfs)
    source, copied, replaced = (f"{endpoint.prefix}/{name}" for name in ("src", "cp", "rp"))
    s3.put_object(Bucket=BUCKET, Key=source, Body=b"data", ContentType="text/csv",
                  Metadata={"a": "1"})  # fmt: skip
    s3.copy_object(Bucket=BUCKET, Key=copied, CopySource={"Bucket": BUCKET, "Key": source})
    assert _kept(s3.head_object(Bucket=BUCKET, Key=copied)) == ("text/csv", None, {"a": "1"})
    s3.copy_object(Bucket=BUCKET, Key=replaced, CopySource={"Bucket": BUCKET, "Key": source},
                   MetadataDirective="REPLACE", ContentType="text/plain",
                   Metadata={"b": "2"})  # fmt: skip
    assert _kept(s3.head_object(Bucket=BUCKET, Key=replaced)) == ("text/plain", None, {"b": "2"})
    assert store.head_object(Bucket=BUCKET, Key=replaced)["Metadata"] == {"b": "2"}
    # Onto itself: the bytes (and so the ETag) stay, the metadata is new.
    s3.copy_object(Bucket=BUCKET, Key=source, CopySource={"Bucket": BUCKET, "Key": source},
                   MetadataDirective="REPLACE", Metadata={"c": "3"})  # fmt: skip
    assert s3.head_object(Bucket=BUCKET, Key=source)["Metadata"] == {"c": "3"}


def test_multipart_keeps_type_and_metadata(endpoint: Endpoint, seaweedfs: LocalS3) -> None:
    s3, store = endpoint.client(), store_client(seaweedfs)
    key = f"{endpoint.prefix}/multi.bin"
    upload = s3.create_multipart_upload(Bucket=BUCKET, Key=key, ContentType="video/mp4",
                                        Metadata={"camera": "2"})["UploadId"]  # fmt: skip
    parts = []
    for number, body in ((1, b"a" * (5 * MIB)), (2, b"b" * 10)):
        sent = s3.upload_part(Bucket=BUCKET, Key=key, UploadId=upload, PartNumber=number,
                              Body=body)  # fmt: skip
        parts.append({"PartNumber": number, "ETag": sent["ETag"]})
    s3.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=upload,
                                 MultipartUpload={"Parts": parts})  # fmt: skip
    expected = ("video/mp4", None, {"camera": "2"})
    assert _kept(store.head_object(Bucket=BUCKET, Key=key)) == expected
    assert _kept(s3.head_object(Bucket=BUCKET, Key=key)) == expected


def test_local_bucket_keeps_no_metadata(endpoint: Endpoint, tmp_path: Path) -> None:
    s3 = endpoint.client()
    s3.put_object(Bucket="scratch", Key=f"{tmp_path.name}/x", Body=b"x",
                  ContentType="text/plain", Metadata={"a": "1"})  # fmt: skip
    head = s3.head_object(Bucket="scratch", Key=f"{tmp_path.name}/x")
    assert head["ContentType"] == "binary/octet-stream" and head["Metadata"] == {}


def test_listing_answers_as_s3_does(endpoint: Endpoint) -> None:
    s3 = endpoint.client()
    prefix = f"{endpoint.prefix}/ls/"
    for name in ("a", "b"):
        s3.put_object(Bucket=BUCKET, Key=prefix + name, Body=b"x")
    none = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix, MaxKeys=0)
    assert none["KeyCount"] == 0 and none["IsTruncated"] is False
    assert s3.list_objects(Bucket=BUCKET, Prefix=prefix, MaxKeys=0)["IsTruncated"] is False
    echoed = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix, ContinuationToken="")
    assert echoed["ContinuationToken"] == "" and echoed["KeyCount"] == 2
    # boto3 asks v1 for url-encoded keys and decodes the keys, not the Prefix
    odd = s3.list_objects(Bucket=BUCKET, Prefix=prefix + "\n")
    assert odd["Prefix"] == prefix + "\n" and "Contents" not in odd


def test_a_conditional_put_is_refused_not_done(endpoint: Endpoint) -> None:
    s3 = endpoint.client()
    key = f"{endpoint.prefix}/kept"
    s3.put_object(Bucket=BUCKET, Key=key, Body=b"first")
    with pytest.raises(ClientError) as refused:
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"second", IfNoneMatch="*")
    assert refused.value.response["Error"]["Code"] == "NotImplemented"
    assert s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() == b"first"


def test_a_part_copies_a_range_inside_its_source_or_nothing(endpoint: Endpoint) -> None:
    s3 = endpoint.client()
    source, key = f"{endpoint.prefix}/five", f"{endpoint.prefix}/dest"
    s3.put_object(Bucket=BUCKET, Key=source, Body=b"12345")
    upload = s3.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
    where = {"Bucket": BUCKET, "Key": key, "UploadId": upload, "PartNumber": 1}
    with pytest.raises(ClientError) as past:
        s3.upload_part_copy(**where, CopySource={"Bucket": BUCKET, "Key": source},
                            CopySourceRange="bytes=0-21")  # fmt: skip
    assert past.value.response["Error"]["Code"] == "InvalidRange"
    copied = s3.upload_part_copy(**where, CopySource={"Bucket": BUCKET, "Key": source},
                                 CopySourceRange="bytes=1-3")  # fmt: skip
    assert copied["CopyPartResult"]["ETag"]
    s3.abort_multipart_upload(Bucket=BUCKET, Key=key, UploadId=upload)
