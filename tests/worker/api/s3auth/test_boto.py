"""What boto3 really sends, at its default settings (flexible checksums, aws-chunked bodies with
checksum trailers over HTTPS, signed payloads over HTTP), verifies and decodes to the payload."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import replace
from typing import Any

import pytest

from tests.worker.api.s3auth.captured import (
    KEY_ID,
    OTHER_KEY_ID,
    OTHER_SECRET,
    aws_chunked,
    botocore_signed,
    capture,
    client,
    presigned,
    verifier,
)

ENDPOINTS = ["https://s3.dora.test:9443", "http://127.0.0.1:9000"]
KEYS = ["plain.txt", "a b/c+d=é~!$&'()*,;:@.txt", "dir//double/./dot/../x", "%41%2F", "ünï/çødé"]
PAYLOAD = bytes(range(256)) * 12289  # 3 MiB and a bit: several 1 MiB aws-chunked chunks


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("key", KEYS)
def test_get_and_head_object(endpoint: str, key: str) -> None:
    s3 = client(endpoint)
    for call in (
        lambda: s3.get_object(Bucket="bucket", Key=key, Range="bytes=0-9"),
        lambda: s3.head_object(Bucket="bucket", Key=key, IfMatch='"abc"'),
    ):
        sent = capture(call)
        verified = sent.verify(verifier())
        assert verified.principal.access_key_id == KEY_ID
        verified.body.finish()


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("key", KEYS)
def test_put_object_with_default_checksums(endpoint: str, key: str) -> None:
    sent = capture(lambda: client(endpoint).put_object(Bucket="bucket", Key=key, Body=PAYLOAD))
    if endpoint.startswith("https"):
        assert sent.headers["x-amz-content-sha256"] == "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
        assert sent.headers["x-amz-trailer"] == "x-amz-checksum-crc32"
    else:
        assert len(sent.headers["x-amz-content-sha256"]) == 64
        assert "x-amz-checksum-crc32" in sent.headers
    assert sent.through(verifier()) == PAYLOAD
    assert sent.verify(verifier()).body.decoded_length == len(PAYLOAD)


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("algorithm", ["CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"])
def test_put_object_and_upload_part_with_each_checksum(endpoint: str, algorithm: str) -> None:
    s3 = client(endpoint)
    for call in (
        lambda: s3.put_object(Bucket="b", Key="k", Body=PAYLOAD, ChecksumAlgorithm=algorithm),
        lambda: s3.upload_part(
            Bucket="b",
            Key="k",
            UploadId="u1",
            PartNumber=3,
            Body=PAYLOAD,
            ChecksumAlgorithm=algorithm,
        ),
    ):
        sent = capture(call)
        assert f"x-amz-checksum-{algorithm.lower()}" in (
            sent.headers.get("x-amz-trailer", "") + " ".join(sent.headers)
        )
        assert sent.through(verifier(), split=7777) == PAYLOAD


def test_put_object_with_content_md5_and_a_file_body(tmp_path: Any) -> None:
    path = tmp_path / "f"
    path.write_bytes(PAYLOAD)
    md5 = base64.b64encode(hashlib.md5(PAYLOAD).digest()).decode()
    with path.open("rb") as body:
        sent = capture(lambda: client().put_object(Bucket="b", Key="k", Body=body, ContentMD5=md5))
    assert sent.headers["content-md5"] == md5
    assert sent.through(verifier()) == PAYLOAD


def test_checksums_only_when_required() -> None:
    s3 = client(request_checksum_calculation="when_required")
    sent = capture(lambda: s3.put_object(Bucket="b", Key="k", Body=PAYLOAD))
    assert sent.headers["x-amz-content-sha256"] == hashlib.sha256(PAYLOAD).hexdigest()
    assert "x-amz-checksum-crc32" not in sent.headers
    assert sent.through(verifier()) == PAYLOAD


def test_unsigned_payload_as_the_cpp_and_rust_sdks_send_it() -> None:
    sent, _ = botocore_signed("UNSIGNED-PAYLOAD", PAYLOAD)
    assert sent.through(verifier()) == PAYLOAD


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_bucket_operations(endpoint: str) -> None:
    s3 = client(endpoint)
    calls = [
        lambda: s3.list_objects_v2(
            Bucket="b", Prefix="a b/é+", Delimiter="/", StartAfter="x~y", MaxKeys=5
        ),
        lambda: s3.list_objects(Bucket="b", Marker="m=1&2"),
        s3.list_buckets,
        lambda: s3.head_bucket(Bucket="b"),
        lambda: s3.get_bucket_location(Bucket="b"),
        lambda: s3.delete_objects(
            Bucket="b", Delete={"Objects": [{"Key": f"k{i}"} for i in range(50)], "Quiet": True}
        ),
        lambda: s3.create_multipart_upload(Bucket="b", Key="k", Metadata={"a": "b"}),
        lambda: s3.complete_multipart_upload(
            Bucket="b",
            Key="k",
            UploadId="u1",
            MultipartUpload={
                "Parts": [{"PartNumber": 1, "ETag": '"e"', "ChecksumCRC32": "AAAAAA=="}]
            },
        ),
        lambda: s3.copy_object(
            Bucket="b",
            Key="k2",
            CopySource={"Bucket": "b", "Key": "k 1"},
            MetadataDirective="REPLACE",
            Metadata={"x": "y"},
        ),
        lambda: s3.list_parts(Bucket="b", Key="k", UploadId="u+1/2"),
    ]
    for call in calls:
        sent = capture(call)
        sent.through(verifier())


def test_complete_multipart_with_the_full_object_checksum_header() -> None:
    """On CompleteMultipartUpload an x-amz-checksum-* header is the whole object's digest, not
    the XML body's: it is left to the surface, never held against the body."""
    sent = capture(
        lambda: client().complete_multipart_upload(
            Bucket="b",
            Key="k",
            UploadId="u1",
            ChecksumCRC64NVME="AAAAAAAAAAA=",
            ChecksumType="FULL_OBJECT",
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"e"'}]},
        )
    )
    assert "x-amz-checksum-crc64nvme" in sent.headers
    sent.through(verifier())


def test_a_second_credential_pair_verifies_as_its_own_principal() -> None:
    s3 = client(key_id=OTHER_KEY_ID, secret=OTHER_SECRET)
    sent = capture(lambda: s3.put_object(Bucket="b", Key="k", Body=b"hello"))
    verified = sent.verify(verifier())
    assert verified.principal.access_key_id == OTHER_KEY_ID


@pytest.mark.parametrize("key", KEYS)
def test_presigned_get_and_put(key: str) -> None:
    s3 = client(signature_version="s3v4")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "b", "Key": key}, ExpiresIn=900)
    presigned(url).through(verifier())
    url = s3.generate_presigned_url("put_object", Params={"Bucket": "b", "Key": key})
    assert presigned(url, "PUT", PAYLOAD).through(verifier()) == PAYLOAD


def test_presigned_url_with_a_week_of_life() -> None:
    url = client(signature_version="s3v4").generate_presigned_url(
        "get_object", Params={"Bucket": "b", "Key": "k"}, ExpiresIn=604800
    )
    presigned(url).through(verifier())


def _sizes(size: int) -> Any:
    while True:
        yield size


@pytest.mark.parametrize("chunk", [8192, 65536, 1 << 20])
def test_signed_chunks_after_a_seed_botocore_signed(chunk: int) -> None:
    mode = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
    sent, signing = botocore_signed(mode, b"", length=len(PAYLOAD))
    body = aws_chunked(PAYLOAD, _sizes(chunk), signing)
    sent = replace(sent, body=body, headers={**sent.headers, "content-length": str(len(body))})
    assert sent.through(verifier(), split=5000) == PAYLOAD


def test_signed_chunks_and_a_signed_trailer() -> None:
    crc = (
        capture(
            lambda: client().put_object(
                Bucket="b", Key="k", Body=PAYLOAD, ChecksumAlgorithm="CRC32C"
            )
        )
        .body.rsplit(b"x-amz-checksum-crc32c:", 1)[1]
        .split(b"\r\n")[0]
        .decode()
    )
    mode, trailer = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", "x-amz-checksum-crc32c"
    sent, signing = botocore_signed(mode, b"", trailer, len(PAYLOAD))
    body = aws_chunked(PAYLOAD, _sizes(65536), signing, (trailer, crc))
    sent = replace(sent, body=body, headers={**sent.headers, "content-length": str(len(body))})
    assert sent.through(verifier()) == PAYLOAD
