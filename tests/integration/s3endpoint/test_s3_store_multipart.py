"""Multipart uploads through the S3 endpoint as SeaweedFS's own: ids, part ETags and the
object's ETag are the store's, parts reach the store as they are uploaded (nothing kept on the
worker), an abort leaves nothing in the store, and a stalled part waits on disk, not in
memory."""

import io
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from boto3.s3.transfer import TransferConfig
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from tests.integration.conftest import BUCKET, frozen
from tests.integration.harness import WorkerProcess
from tests.integration.s3endpoint.s3_endpoint_support import (
    KEY_ID,
    SECRET,
    Endpoint,
    start_worker,
    stop_worker,
    store_client,
)
from tests.integration.worker.test_upload_memory import rss, spooled, wait_for
from worker.devlab.local.s3 import LocalS3, free_port

pytestmark = pytest.mark.integration
MIB = 1 << 20


@pytest.fixture(scope="module")
def endpoint_worker(
    tmp_path_factory: pytest.TempPathFactory, seaweedfs: LocalS3
) -> Iterator[tuple[WorkerProcess, str, Path]]:
    work = tmp_path_factory.mktemp("s3-store-multipart")
    worker, url = start_worker(work, seaweedfs)
    yield worker, url, work
    stop_worker(worker, work)


@pytest.fixture
def endpoint(endpoint_worker: tuple[WorkerProcess, str, Path], s3_root: str) -> Endpoint:
    worker, url, _ = endpoint_worker
    return Endpoint(worker, url, s3_root.removeprefix(f"s3://{BUCKET}/"))


def complete(s3: Any, key: str, upload: str, parts: list[tuple[int, str]]) -> Any:
    listed = [{"PartNumber": number, "ETag": tag} for number, tag in parts]
    return s3.complete_multipart_upload(
        Bucket=BUCKET, Key=key, UploadId=upload, MultipartUpload={"Parts": listed}
    )


def error_code(error: pytest.ExceptionInfo[ClientError]) -> str:
    return str(error.value.response["Error"]["Code"])


def test_managed_upload_is_the_stores_multipart(
    endpoint: Endpoint, seaweedfs: LocalS3, endpoint_worker: tuple[WorkerProcess, str, Path]
) -> None:
    s3, store = endpoint.client(), store_client(seaweedfs)
    key, data = f"{endpoint.prefix}/managed.bin", os.urandom(21 * MIB + 7)
    s3.put_object(Bucket=BUCKET, Key=key, Body=b"old version, read and cached")
    assert s3.get_object(Bucket=BUCKET, Key=key)["Body"].read().startswith(b"old")
    config = TransferConfig(multipart_threshold=5 * MIB, multipart_chunksize=5 * MIB)
    s3.upload_fileobj(io.BytesIO(data), BUCKET, key, Config=config)
    stored = store.head_object(Bucket=BUCKET, Key=key)
    assert stored["ETag"].endswith('-5"')  # the store's multipart ETag: five parts
    assert s3.head_object(Bucket=BUCKET, Key=key)["ETag"] == stored["ETag"]
    assert s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() == data  # the old one is gone
    uploads = endpoint_worker[2] / "s3-uploads"
    assert not uploads.exists() or not list(uploads.iterdir())  # nothing kept on the worker


def test_parts_and_uploads_are_the_stores(endpoint: Endpoint, seaweedfs: LocalS3) -> None:
    s3, store = endpoint.client(), store_client(seaweedfs)
    key = f"{endpoint.prefix}/manual.bin"
    upload = s3.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
    first, second = os.urandom(5 * MIB), b"the last part"
    tags = [
        s3.upload_part(Bucket=BUCKET, Key=key, UploadId=upload, PartNumber=n, Body=body)["ETag"]
        for n, body in ((1, first), (2, second))
    ]
    # The store has the parts already, under the same upload id and ETags.
    in_store = store.list_parts(Bucket=BUCKET, Key=key, UploadId=upload)["Parts"]
    assert [(p["PartNumber"], p["ETag"], p["Size"]) for p in in_store] == [
        (1, tags[0], 5 * MIB), (2, tags[1], len(second))]  # fmt: skip
    listed = s3.list_parts(Bucket=BUCKET, Key=key, UploadId=upload)
    assert [(p["PartNumber"], p["ETag"]) for p in listed["Parts"]] == [(1, tags[0]), (2, tags[1])]
    paged = s3.list_parts(Bucket=BUCKET, Key=key, UploadId=upload, MaxParts=1)
    assert paged["IsTruncated"] and [p["PartNumber"] for p in paged["Parts"]] == [1]
    prefix = f"{endpoint.prefix}/"
    mine = s3.list_multipart_uploads(Bucket=BUCKET, Prefix=prefix)["Uploads"]
    assert [(u["Key"], u["UploadId"]) for u in mine] == [(key, upload)]
    with pytest.raises(ClientError) as order:
        complete(s3, key, upload, [(2, tags[1]), (1, tags[0])])
    assert error_code(order) == "InvalidPartOrder"
    with pytest.raises(ClientError) as wrong:
        complete(s3, key, upload, [(1, '"0123"')])
    assert error_code(wrong) == "InvalidPart"
    done = complete(s3, key, upload, [(1, tags[0]), (2, tags[1])])
    assert done["ETag"] == store.head_object(Bucket=BUCKET, Key=key)["ETag"]
    assert s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() == first + second
    assert not s3.list_multipart_uploads(Bucket=BUCKET, Prefix=prefix).get("Uploads")


def test_abort_leaves_nothing_in_the_store(endpoint: Endpoint, seaweedfs: LocalS3) -> None:
    s3, store = endpoint.client(), store_client(seaweedfs)
    key = f"{endpoint.prefix}/aborted.bin"
    upload = s3.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
    s3.upload_part(Bucket=BUCKET, Key=key, UploadId=upload, PartNumber=1, Body=b"x" * 1000)
    s3.abort_multipart_upload(Bucket=BUCKET, Key=key, UploadId=upload)
    prefix = f"{endpoint.prefix}/"
    assert not store.list_multipart_uploads(Bucket=BUCKET, Prefix=prefix).get("Uploads")
    with pytest.raises(ClientError) as gone:
        store.list_parts(Bucket=BUCKET, Key=key, UploadId=upload)
    assert error_code(gone) == "NoSuchUpload"
    with pytest.raises(ClientError) as through:
        s3.list_parts(Bucket=BUCKET, Key=key, UploadId=upload)
    assert error_code(through) == "NoSuchUpload"
    with pytest.raises(ClientError):
        store.head_object(Bucket=BUCKET, Key=key)


def test_part_copy_and_the_part_limit(endpoint: Endpoint, seaweedfs: LocalS3) -> None:
    s3, store = endpoint.client(), store_client(seaweedfs)
    source, key = f"{endpoint.prefix}/source", f"{endpoint.prefix}/copied.bin"
    head = os.urandom(5 * MIB)
    s3.put_object(Bucket="scratch", Key="tail", Body=b"from a local bucket")
    s3.put_object(Bucket=BUCKET, Key=source, Body=head + b"ignored")
    upload = s3.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
    with pytest.raises(ClientError) as beyond:
        s3.upload_part(Bucket=BUCKET, Key=key, UploadId=upload, PartNumber=10_001, Body=b"x")
    assert error_code(beyond) == "InvalidArgument"
    last = s3.upload_part(Bucket=BUCKET, Key=key, UploadId=upload, PartNumber=10_000, Body=b"x")
    first = s3.upload_part_copy(Bucket=BUCKET, Key=key, UploadId=upload, PartNumber=1,
                                CopySource={"Bucket": BUCKET, "Key": source},
                                CopySourceRange=f"bytes=0-{len(head) - 1}")  # fmt: skip
    second = s3.upload_part_copy(Bucket=BUCKET, Key=key, UploadId=upload, PartNumber=2,
                                 CopySource={"Bucket": "scratch", "Key": "tail"})  # fmt: skip
    listed = s3.list_parts(Bucket=BUCKET, Key=key, UploadId=upload)["Parts"]
    assert [(p["PartNumber"], p["ETag"]) for p in listed][-1] == (10_000, last["ETag"])
    # Part 10,000 left out: a part uploaded and not named is no part of the object.
    parts = [(1, first["CopyPartResult"]["ETag"]), (2, second["CopyPartResult"]["ETag"])]
    complete(s3, key, upload, parts)
    assert store.get_object(Bucket=BUCKET, Key=key)["Body"].read() == head + b"from a local bucket"


def test_aws_cli_cp_of_a_large_file(endpoint: Endpoint, seaweedfs: LocalS3, tmp_path: Path) -> None:
    store, key = store_client(seaweedfs), f"{endpoint.prefix}/cli.bin"
    data = os.urandom(19 * MIB)
    (tmp_path / "big").write_bytes(data)
    copied = endpoint.aws("s3", "cp", str(tmp_path / "big"), f"s3://{BUCKET}/{key}")
    assert copied.returncode == 0, copied.stderr
    assert store.head_object(Bucket=BUCKET, Key=key)["ETag"].endswith('-3"')  # 8 MB parts
    back = endpoint.aws("s3", "cp", f"s3://{BUCKET}/{key}", str(tmp_path / "back"))
    assert back.returncode == 0, back.stderr
    assert (tmp_path / "back").read_bytes() == data


def test_a_large_part_streams_through_disk(
    endpoint: Endpoint, endpoint_worker: tuple[WorkerProcess, str, Path]
) -> None:
    s3, key, pid = (
        endpoint.client(),
        f"{endpoint.prefix}/large-part",
        endpoint_worker[0].process.pid,
    )
    upload = s3.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
    data = os.urandom(64 * MIB)
    before = rss(pid)
    peak, done = [before], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], rss(pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        s3.upload_part(Bucket=BUCKET, Key=key, UploadId=upload, PartNumber=1, Body=data)
    finally:
        done.set()
        sampler.join()
    print(f"RSS peak grew by {(peak[0] - before) / MIB:.1f} MB for a part of 64 MB")
    assert peak[0] - before < 24 * MIB
    s3.abort_multipart_upload(Bucket=BUCKET, Key=key, UploadId=upload)


STALLED = 8
DECLARED, SENT = 16 * MIB, 12 * MIB


def _stalled_part(url: str, bucket: str, key: str, upload: str, number: int) -> socket.socket:
    """An UploadPart whose signed head and first ``SENT`` bytes are sent, the rest never."""
    target = f"{url}/{bucket}/{key}?partNumber={number}&uploadId={upload}"
    request = AWSRequest("PUT", target, headers={
        "x-amz-content-sha256": "UNSIGNED-PAYLOAD", "Content-Length": str(DECLARED)})  # fmt: skip
    S3SigV4Auth(Credentials(KEY_ID, SECRET), "s3", "us-east-1").add_auth(request)
    host, port = url.removeprefix("http://").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    path = target.removeprefix(url)
    head = f"PUT {path} HTTP/1.1\r\nHost: {host}:{port}\r\n" + "".join(
        f"{name}: {value}\r\n" for name, value in request.headers.items()) + "\r\n"  # fmt: skip
    sock.sendall(head.encode())
    chunk = os.urandom(MIB)
    for _ in range(SENT // MIB):
        sock.sendall(chunk)
    return sock


def test_stalled_parts_wait_on_disk(tmp_path: Path, seaweedfs: LocalS3) -> None:
    work = tmp_path / "work"
    work.mkdir()
    worker, url = start_worker(work, seaweedfs, "dora.worker.http.body.idle.timeout=5min",
                               "dora.worker.http.body.min.rate=0")  # fmt: skip
    endpoint = Endpoint(worker, url, f"stalled-{uuid.uuid4().hex[:8]}")
    s3, key = endpoint.client(), f"{endpoint.prefix}/stalled.bin"
    pid, spool = worker.process.pid, work / "spool"
    try:
        upload = s3.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
        before = rss(pid)
        with ThreadPoolExecutor(4) as pool:
            socks = list(pool.map(lambda n: _stalled_part(url, BUCKET, key, upload, n),
                                  range(1, STALLED + 1)))  # fmt: skip
        wait_for(lambda: spooled(pid, spool) >= STALLED * (SENT - MIB), 30)
        time.sleep(1)
        grown = rss(pid) - before
        print(f"RSS grew by {grown / MIB:.1f} MB for {STALLED} stalled parts of {SENT >> 20} MB")
        assert spooled(pid, spool) >= STALLED * (SENT - MIB)
        assert grown < STALLED * 1.5 * MIB + 24 * MIB
        for sock in socks:
            sock.close()
        wait_for(lambda: spooled(pid, spool) == 0, 30)
        assert spooled(pid, spool) == 0
        # Nothing of the stalled parts reached the store.
        assert not s3.list_parts(Bucket=BUCKET, Key=key, UploadId=upload).get("Parts")
        s3.abort_multipart_upload(Bucket=BUCKET, Key=key, UploadId=upload)
    finally:
        stop_worker(worker, work)


def test_each_store_call_has_its_deadline(tmp_path: Path, private_s3: LocalS3) -> None:
    port = free_port()
    worker = WorkerProcess(
        tmp_path,
        "dora.worker.ufs.roots=s3://",
        *private_s3.storage_defines(),
        "dora.ufs.call.deadline=2s",
        f"dora.worker.s3.port={port}",
        f"dora.worker.s3.access.key.id={KEY_ID}",
        f"dora.worker.s3.secret.access.key={SECRET}",
    )
    endpoint = Endpoint(worker, f"http://127.0.0.1:{port}", "")
    s3 = endpoint.client(config=Config(retries={"max_attempts": 1}, read_timeout=30))
    try:
        upload = s3.create_multipart_upload(Bucket="private", Key="k")["UploadId"]
        with frozen(private_s3):
            for call in (
                lambda: s3.upload_part(Bucket="private", Key="k", UploadId=upload,
                                       PartNumber=1, Body=b"part"),
                lambda: s3.list_parts(Bucket="private", Key="k", UploadId=upload),
                lambda: s3.create_bucket(Bucket="frozen-store"),
            ):  # fmt: skip
                started = time.monotonic()
                with pytest.raises(ClientError) as late:
                    call()
                assert late.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
                assert time.monotonic() - started < 10
        s3.abort_multipart_upload(Bucket="private", Key="k", UploadId=upload)
    finally:
        stop_worker(worker, tmp_path)
