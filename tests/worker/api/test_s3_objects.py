"""The S3 endpoint's object operations over a real service on a local directory."""

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from email.utils import formatdate
from pathlib import Path
from xml.etree import ElementTree

import pytest
from anyio import to_thread

from tests.worker.api.s3_support import S3Api
from worker.service import WorkerService

NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


@pytest.fixture
def obj(data_dir: Path) -> bytes:
    content = bytes(range(256)) * 1000  # several 64 KB pages
    (data_dir / "dir").mkdir()
    (data_dir / "dir" / "obj.bin").write_bytes(content)
    return content


def code(response: object) -> str:
    root = ElementTree.fromstring(response.content)  # type: ignore[attr-defined]
    return str(root.findtext("Code"))


def test_get_whole_and_ranges(s3: S3Api, obj: bytes) -> None:
    whole = s3.get("/data/dir/obj.bin")
    assert whole.status_code == 200 and whole.content == obj
    assert whole.headers["etag"].startswith('"') and whole.headers["accept-ranges"] == "bytes"
    ranged = s3.get("/data/dir/obj.bin", headers={"Range": "bytes=100-199"})
    assert ranged.status_code == 206 and ranged.content == obj[100:200]
    assert ranged.headers["content-range"] == f"bytes 100-199/{len(obj)}"
    suffix = s3.get("/data/dir/obj.bin", headers={"Range": "bytes=-10"})
    assert suffix.content == obj[-10:]
    opened = s3.get("/data/dir/obj.bin", headers={"Range": f"bytes={len(obj) - 5}-"})
    assert opened.content == obj[-5:]


def test_range_past_the_end_is_invalid_range_with_the_size(s3: S3Api, obj: bytes) -> None:
    answer = s3.get("/data/dir/obj.bin", headers={"Range": f"bytes={len(obj)}-"})
    assert answer.status_code == 416 and code(answer) == "InvalidRange"
    assert answer.headers["content-range"] == f"bytes */{len(obj)}"


def test_head_answers_the_headers_of_get(s3: S3Api, obj: bytes) -> None:
    got, head = s3.get("/data/dir/obj.bin"), s3.request("HEAD", "/data/dir/obj.bin")
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == str(len(obj))
    for name in ("etag", "last-modified", "content-type"):
        assert head.headers[name] == got.headers[name]
    missing = s3.request("HEAD", "/data/dir/none")
    assert missing.status_code == 404 and missing.content == b""


def test_conditions(s3: S3Api, obj: bytes) -> None:
    tag = s3.request("HEAD", "/data/dir/obj.bin").headers["etag"]
    later = formatdate(time.time() + 3600, usegmt=True)
    earlier = formatdate(time.time() - 3600, usegmt=True)
    path = "/data/dir/obj.bin"
    assert s3.get(path, headers={"If-Match": tag}).status_code == 200
    refused = s3.get(path, headers={"If-Match": '"other"'})
    assert refused.status_code == 412 and code(refused) == "PreconditionFailed"
    assert s3.get(path, headers={"If-None-Match": tag}).status_code == 304
    assert s3.get(path, headers={"If-None-Match": '"other"'}).status_code == 200
    assert s3.get(path, headers={"If-Modified-Since": later}).status_code == 304
    assert s3.get(path, headers={"If-Modified-Since": earlier}).status_code == 200
    assert s3.get(path, headers={"If-Unmodified-Since": earlier}).status_code == 412
    # If-Match holding wins over If-Unmodified-Since failing (RFC 9110 §13.2.2).
    assert (
        s3.get(path, headers={"If-Match": tag, "If-Unmodified-Since": earlier}).status_code == 200
    )
    assert s3.request("HEAD", path, headers={"If-Match": '"x"'}).status_code == 412


def test_response_overrides_and_part_number(s3: S3Api, obj: bytes) -> None:
    overrides = {"response-content-type": "text/csv", "response-content-disposition": "inline"}
    answer = s3.get("/data/dir/obj.bin", params=overrides)
    assert answer.headers["content-type"] == "text/csv"
    assert answer.headers["content-disposition"] == "inline"
    part = s3.get("/data/dir/obj.bin", params={"partNumber": "1"})
    assert part.status_code == 206 and part.content == obj
    assert part.headers["x-amz-mp-parts-count"] == "1"
    assert s3.get("/data/dir/obj.bin", params={"partNumber": "2"}).status_code == 416


def test_prefix_is_no_key(s3: S3Api, obj: bytes) -> None:
    assert code(s3.get("/data/dir")) == "NoSuchKey"


def test_sync_interval_header_is_honoured(s3: S3Api, data_dir: Path, obj: bytes) -> None:
    path = data_dir / "dir" / "obj.bin"
    assert s3.get("/data/dir/obj.bin").content == obj
    path.write_bytes(b"changed outside")
    # The default sync interval (-1) serves what is cached; a caller that asks re-checks.
    assert s3.get("/data/dir/obj.bin").content == obj
    fresh = s3.get("/data/dir/obj.bin", headers={"x-dora-sync-interval": "0"})
    assert fresh.content == b"changed outside"


def test_put_then_get_and_delete(s3: S3Api, data_dir: Path) -> None:
    put = s3.put("/data/new/file.txt", b"written through")
    assert put.status_code == 200
    assert (data_dir / "new" / "file.txt").read_bytes() == b"written through"
    got = s3.get("/data/new/file.txt")
    assert got.content == b"written through" and got.headers["etag"] == put.headers["etag"]
    assert s3.request("DELETE", "/data/new/file.txt").status_code == 204
    assert not (data_dir / "new" / "file.txt").exists()
    assert code(s3.get("/data/new/file.txt")) == "NoSuchKey"
    assert s3.request("DELETE", "/data/new/file.txt").status_code == 204  # idempotent


def test_put_of_a_folder_key(s3: S3Api, data_dir: Path) -> None:
    assert s3.put("/data/folder/").status_code == 200
    assert (data_dir / "folder").is_dir()


def test_unfinished_chunked_body_writes_nothing(s3: S3Api, data_dir: Path) -> None:
    """An aws-chunked body that ends before its last chunk is refused once it is in, and
    nothing of it is written (the body is checked whole before the store sees a byte)."""
    body = b"5;chunk-signature=" + b"0" * 64 + b"\r\nhello\r\n"
    answer = s3.put("/data/torn.txt", body, headers={
        "x-amz-content-sha256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
        "content-encoding": "aws-chunked", "x-amz-decoded-content-length": "10"})  # fmt: skip
    assert answer.status_code == 400
    assert not (data_dir / "torn.txt").exists()


def test_delete_objects(s3: S3Api, data_dir: Path) -> None:
    for name in ("a", "b", "c"):
        (data_dir / name).write_bytes(b"x")
    body = (b"<Delete><Object><Key>a</Key></Object><Object><Key>b</Key></Object>"
            b"<Object><Key>missing</Key></Object></Delete>")  # fmt: skip
    answer = s3.request("POST", "/data?delete", content=body)
    assert answer.status_code == 200
    root = ElementTree.fromstring(answer.content)
    assert sorted(k.text or "" for k in root.iter(NS + "Key")) == ["a", "b", "missing"]
    assert not (data_dir / "a").exists() and (data_dir / "c").exists()
    quiet = b"<Delete><Quiet>true</Quiet><Object><Key>c</Key></Object></Delete>"
    answer = s3.request("POST", "/data?delete", content=quiet)
    assert ElementTree.fromstring(answer.content).find(NS + "Deleted") is None
    assert not (data_dir / "c").exists()


@pytest.mark.parametrize(
    "body",
    [b"<Delete><Object></Object></Delete>", b"not xml", b"<Other/>",
     b'<!DOCTYPE d [<!ENTITY e "x">]><Delete><Object><Key>&e;</Key></Object></Delete>'],
)  # fmt: skip
def test_delete_objects_refuses_malformed_xml(s3: S3Api, body: bytes) -> None:
    assert code(s3.request("POST", "/data?delete", content=body)) == "MalformedXML"


def test_delete_objects_refuses_more_than_1000_keys(s3: S3Api) -> None:
    body = b"<Delete>" + b"<Object><Key>k</Key></Object>" * 1001 + b"</Delete>"
    assert code(s3.request("POST", "/data?delete", content=body)) == "MalformedXML"


def test_copy(s3: S3Api, data_dir: Path, obj: bytes) -> None:
    answer = s3.put("/data/copy.bin", headers={"x-amz-copy-source": "/data/dir/obj.bin"})
    assert answer.status_code == 200, answer.text
    assert (data_dir / "copy.bin").read_bytes() == obj
    result = ElementTree.fromstring(answer.content)
    assert result.findtext(NS + "ETag") == s3.request("HEAD", "/data/copy.bin").headers["etag"]
    to_itself = s3.put("/data/dir/obj.bin", headers={"x-amz-copy-source": "data/dir/obj.bin"})
    assert code(to_itself) == "InvalidRequest"
    refused = s3.put("/data/c2", headers={"x-amz-copy-source": "data/dir/obj.bin",
                                          "x-amz-copy-source-if-match": '"nope"'})  # fmt: skip
    assert refused.status_code == 412 and not (data_dir / "c2").exists()
    assert code(s3.put("/data/c3", headers={"x-amz-copy-source": "data/none"})) == "NoSuchKey"


def test_put_streams_a_large_body_through(s3: S3Api, data_dir: Path) -> None:
    body = bytes(range(256)) * (12 << 12)  # 12 MiB: many pieces of the request stream

    async def pieces() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 1 << 16):
            yield body[start : start + (1 << 16)]

    assert s3.put("/data/large.bin", pieces()).status_code == 200  # chunked: no length
    assert (data_dir / "large.bin").read_bytes() == body


def test_a_body_past_the_limit_midstream_writes_nothing(
    make_service: Callable[..., WorkerService], data_dir: Path
) -> None:
    service = make_service(f"dora.worker.s3.buckets=data=file://{data_dir}",
                           "dora.worker.s3.anonymous=true",
                           "dora.worker.http.max.write.size=1MB")  # fmt: skip

    async def pieces() -> AsyncIterator[bytes]:
        for _ in range(3):
            yield b"x" * (1 << 19)

    client = S3Api(service)
    try:
        answer = client.put("/data/big", pieces())  # no declared length
        assert answer.status_code == 400 and code(answer) == "EntityTooLarge"
        assert not (data_dir / "big").exists()
    finally:
        client.close()


def test_a_stalled_upload_takes_no_thread_from_the_shared_pool(s3: S3Api, data_dir: Path) -> None:
    """A PutObject streams its body in a thread of the endpoint's own upload pool: a client
    that sends slowly holds none of the threads every other request runs in."""
    more = asyncio.Event()

    async def pieces() -> AsyncIterator[bytes]:
        yield b"first "
        await more.wait()
        yield b"last"

    async def scenario() -> tuple[int, int]:
        put = asyncio.ensure_future(s3.client.put("/data/slow", content=pieces()))
        for _ in range(200):  # until the write is under way in its thread
            await asyncio.sleep(0.01)
            if any(data_dir.glob("*slow*")) or put.done():
                break
        borrowed = int(to_thread.current_default_thread_limiter().borrowed_tokens)
        more.set()
        return borrowed, (await put).status_code

    borrowed, status = s3.loop.run_until_complete(scenario())
    assert status == 200 and (data_dir / "slow").read_bytes() == b"first last"
    assert borrowed == 0
