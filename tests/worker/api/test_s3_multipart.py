"""Multipart uploads through the S3 endpoint over a real service on a local directory: parts
kept on the worker's disk, the object written whole on completion, S3's checks and errors."""

import asyncio
import hashlib
import json
import os
import re
import time
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.worker.api.s3_support import S3Api
from worker.api.s3 import keepalive
from worker.service import WorkerService

NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
MIB = 1 << 20


def text(response: object, tag: str) -> str:
    root = ElementTree.fromstring(response.content)  # type: ignore[attr-defined]
    found = root.findtext(NS + tag)
    return found if found is not None else str(root.findtext(tag))


def create(s3: S3Api, key: str) -> str:
    answer = s3.request("POST", f"/data/{key}?uploads")
    assert answer.status_code == 200, answer.text
    return text(answer, "UploadId")


def complete_body(parts: list[tuple[int, str]]) -> bytes:
    inner = "".join(
        f"<Part><PartNumber>{n}</PartNumber><ETag>{tag}</ETag></Part>" for n, tag in parts
    )
    return f"<CompleteMultipartUpload>{inner}</CompleteMultipartUpload>".encode()


def test_upload_list_complete(s3: S3Api, data_dir: Path, tmp_path: Path) -> None:
    upload = create(s3, "big/object.bin")
    first, second = os.urandom(5 * MIB), os.urandom(1000)
    tags = []
    for number, data in ((1, first), (2, second)):
        answer = s3.put(f"/data/big/object.bin?partNumber={number}&uploadId={upload}", data)
        assert answer.status_code == 200
        assert answer.headers["etag"] == f'"{hashlib.md5(data).hexdigest()}"'
        tags.append((number, answer.headers["etag"]))
    listed = s3.get(f"/data/big/object.bin?uploadId={upload}")
    assert re.findall(r"<PartNumber>(\d+)</PartNumber>", listed.text) == ["1", "2"]
    uploads = s3.get("/data?uploads")
    assert upload in uploads.text and "big/object.bin" in uploads.text
    assert not (data_dir / "big" / "object.bin").exists()  # nothing visible before completion
    done = s3.request(
        "POST", f"/data/big/object.bin?uploadId={upload}", content=complete_body(tags)
    )
    assert done.status_code == 200, done.text
    assert (data_dir / "big" / "object.bin").read_bytes() == first + second
    assert text(done, "ETag") == s3.request("HEAD", "/data/big/object.bin").headers["etag"]
    assert not list((tmp_path / "work" / "s3-uploads").iterdir())  # its parts are gone
    again = s3.request(
        "POST", f"/data/big/object.bin?uploadId={upload}", content=complete_body(tags)
    )
    assert text(again, "Code") == "NoSuchUpload"


def test_completion_checks_parts(s3: S3Api, data_dir: Path) -> None:
    upload = create(s3, "k")
    small = s3.put(f"/data/k?partNumber=1&uploadId={upload}", b"small").headers["etag"]
    other = s3.put(f"/data/k?partNumber=2&uploadId={upload}", b"more").headers["etag"]
    cases = {
        "InvalidPart": [(1, '"0000"')],
        "InvalidPartOrder": [(2, other), (1, small)],
        "EntityTooSmall": [(1, small), (2, other)],
    }
    for expected, parts in cases.items():
        answer = s3.request("POST", f"/data/k?uploadId={upload}", content=complete_body(parts))
        assert answer.status_code == 400 and text(answer, "Code") == expected
    assert (
        text(s3.request("POST", f"/data/k?uploadId={upload}", content=b"<x"), "Code")
        == "MalformedXML"
    )
    assert not (data_dir / "k").exists()
    assert s3.request("DELETE", f"/data/k?uploadId={upload}").status_code == 204
    assert text(s3.put(f"/data/k?partNumber=3&uploadId={upload}", b"x"), "Code") == "NoSuchUpload"


def test_upload_ids_name_only_uploads(s3: S3Api) -> None:
    upload = create(s3, "k")
    for bad in ("../../etc", "0" * 32, upload.upper()):
        assert text(s3.put(f"/data/k?partNumber=1&uploadId={bad}", b"x"), "Code") == "NoSuchUpload"
    # An upload answers only for the key it was made for.
    assert (
        text(s3.put(f"/data/other?partNumber=1&uploadId={upload}", b"x"), "Code") == "NoSuchUpload"
    )
    for number in ("0", "10001", "x"):
        answer = s3.put(f"/data/k?partNumber={number}&uploadId={upload}", b"x")
        assert text(answer, "Code") == "InvalidArgument"


def test_upload_part_copy(s3: S3Api, data_dir: Path) -> None:
    source = os.urandom(6 * MIB)
    (data_dir / "src.bin").write_bytes(source)
    upload = create(s3, "dst.bin")
    copied = s3.put(f"/data/dst.bin?partNumber=1&uploadId={upload}",
                    headers={"x-amz-copy-source": "data/src.bin",
                             "x-amz-copy-source-range": f"bytes=0-{5 * MIB - 1}"})  # fmt: skip
    assert copied.status_code == 200, copied.text
    rest = s3.put(f"/data/dst.bin?partNumber=2&uploadId={upload}",
                  headers={"x-amz-copy-source": "data/src.bin",
                           "x-amz-copy-source-range": f"bytes={5 * MIB}-"})  # fmt: skip
    parts = [(1, text(copied, "ETag")), (2, text(rest, "ETag"))]
    done = s3.request("POST", f"/data/dst.bin?uploadId={upload}", content=complete_body(parts))
    assert done.status_code == 200, done.text
    assert (data_dir / "dst.bin").read_bytes() == source


def test_part_over_the_write_limit(make_service: object, data_dir: Path) -> None:
    service: WorkerService = make_service(  # type: ignore[operator]
        f"dora.worker.s3.buckets=data=file://{data_dir}", "dora.worker.s3.anonymous=true",
        "dora.worker.http.max.write.size=1KB")  # fmt: skip
    client = S3Api(service)
    try:
        upload = create(client, "k")
        answer = client.put(f"/data/k?partNumber=1&uploadId={upload}", b"x" * 2048)
        assert text(answer, "Code") == "EntityTooLarge"
        assert text(client.put("/data/k", b"x" * 2048), "Code") == "EntityTooLarge"
        assert not (data_dir / "k").exists()
    finally:
        client.close()


def test_a_write_failing_after_the_answer_started_is_an_error_in_it(
    s3: S3Api, data_dir: Path
) -> None:
    """CompleteMultipartUpload answers 200 at once and writes while it keeps the connection
    busy; a write that fails then is an <Error> in that answer, as S3 gives it (boto3 raises)."""
    (data_dir / "file").write_bytes(b"a file where the key needs a directory")
    upload = create(s3, "file/under")
    tag = s3.put(f"/data/file/under?partNumber=1&uploadId={upload}", b"x").headers["etag"]
    answer = s3.request(
        "POST", f"/data/file/under?uploadId={upload}", content=complete_body([(1, tag)])
    )
    assert answer.status_code == 200
    root = ElementTree.fromstring(answer.content)
    assert root.tag == "Error" and root.findtext("Code") not in (None, "InternalError")
    assert (data_dir / "file").read_bytes().startswith(b"a file")


def test_spaces_go_out_while_the_work_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keepalive, "INTERVAL_S", 0.01)

    def work() -> str:
        time.sleep(0.2)
        return "done"

    answer = keepalive.answered_while_working(work, lambda r: f"<R>{r}</R>", "/b/k")

    async def drain() -> bytes:
        return b"".join([chunk async for chunk in answer.body_iterator])  # type: ignore[misc]

    body = asyncio.run(drain())
    assert body.startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n  ')
    assert body.endswith(b"<R>done</R>") and ElementTree.fromstring(body).text == "done"


def test_abandoned_uploads_expire(s3: S3Api, tmp_path: Path) -> None:
    old, recent = create(s3, "old"), create(s3, "recent")
    uploads = tmp_path / "work" / "s3-uploads"
    record = uploads / old / "upload.json"
    meta = json.loads(record.read_text())
    meta["initiated_ns"] -= 8 * 24 * 3600 * 10**9  # past the default expiry of 7 days
    record.write_text(json.dumps(meta))
    create(s3, "next")  # a new upload sweeps the abandoned ones
    assert not (uploads / old).exists() and (uploads / recent).exists()
    assert text(s3.put(f"/data/old?partNumber=1&uploadId={old}", b"x"), "Code") == "NoSuchUpload"


def test_list_uploads_in_pages(s3: S3Api) -> None:
    made = [(key, create(s3, key)) for key in ("a", "b", "b", "c")]
    seen: list[str] = []
    params = {"uploads": "", "max-uploads": "1"}
    while True:
        answer = s3.get("/data", params=params)
        assert answer.status_code == 200, answer.text
        seen += re.findall(r"<UploadId>(\w+)</UploadId>", answer.text)
        if text(answer, "IsTruncated") == "false":
            break
        params = {"uploads": "", "max-uploads": "1", "key-marker": text(answer, "NextKeyMarker"),
                  "upload-id-marker": text(answer, "NextUploadIdMarker")}  # fmt: skip
    assert sorted(seen) == sorted(upload for _, upload in made) and len(seen) == 4
    assert text(s3.get("/data?uploads&max-uploads=x"), "Code") == "InvalidArgument"
