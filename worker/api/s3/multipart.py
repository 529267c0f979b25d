"""Multipart uploads kept on the worker's disk, for a store that has none of its own (a local
directory, Azure; ``worker.api.s3.uploadops`` chooses): CreateMultipartUpload, UploadPart,
UploadPartCopy, CompleteMultipartUpload, AbortMultipartUpload, ListParts,
ListMultipartUploads.

Parts are kept under ``<dora.work.dir>/s3-uploads/<upload id>/``, each checked whole
(signature, checksums) before it is renamed into place; completing an upload streams the
parts, in order, through the service's one write path, so the object appears whole or not at
all. Aborting, or completing, removes the upload's directory. Safe for concurrent requests: a
part is written to a temporary name and renamed, and an upload's state is its directory."""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from pagestore import modes
from ufs.attributes import Attributes
from ufs.status import UfsStatus
from worker import keys as worker_keys
from worker.api.body import COPY_CHUNK
from worker.api.s3 import keys as s3_keys
from worker.api.s3 import xmlbody
from worker.api.s3.attributes import requested
from worker.api.s3.call import S3Call
from worker.api.s3.conditions import etag
from worker.api.s3.errors import S3Error
from worker.api.s3.keepalive import answered_while_working
from worker.api.s3.objects import pinned_chunks, source_status
from worker.api.s3.partlists import (
    COMPLETE_BODY_LIMIT,
    MAX_PART,
    MIN_PART,
    ListedPart,
    ListedUpload,
    copy_range,
    no_such_upload,
    part_number,
    parts_paging,
    parts_result,
    uploads_paging,
    uploads_result,
)
from worker.api.s3.xmlbody import el

_ID = re.compile(r"[0-9a-f]{32}")
_PART = re.compile(r"(\d{5})\.([0-9a-f]{32})")
_META = "upload.json"


@dataclass(frozen=True)
class StoredPart:
    """A part on disk: its number, ETag (the MD5 of its bytes, as S3's), size and time."""

    number: int
    etag: str
    size: int
    mtime_ns: int
    path: Path


@dataclass(frozen=True)
class Upload:
    """One upload's directory and what it is for. Immutable; its parts are read from the
    directory each time (:meth:`parts`), so concurrent requests see each other's parts."""

    id: str
    directory: Path
    bucket: str
    key: str
    initiated_ns: int
    initiator: str
    attributes: Attributes
    """What the object is to be stored with (CreateMultipartUpload's headers)."""

    def parts(self) -> list[StoredPart]:
        found = []
        for path in self.directory.iterdir():
            match = _PART.fullmatch(path.name)
            if match is not None:
                stat = path.stat()
                found.append(StoredPart(int(match[1]), match[2], stat.st_size,
                                        stat.st_mtime_ns, path))  # fmt: skip
        return sorted(found, key=lambda part: part.number)


def _load(directory: Path, upload_id: str) -> Upload:
    try:
        meta = json.loads((directory / upload_id / _META).read_text())
    except (OSError, ValueError):
        raise no_such_upload(upload_id) from None
    attributes = Attributes(meta.get("headers", {}), meta.get("user", {}))
    return Upload(upload_id, directory / upload_id, meta["bucket"], meta["key"],
                  meta["initiated_ns"], meta["initiator"], attributes)  # fmt: skip


def _upload(call: S3Call) -> Upload:
    """The upload the request's ``uploadId`` names, for its bucket and key; NoSuchUpload."""
    upload_id = call.request.query_params.get("uploadId", "")
    if _ID.fullmatch(upload_id) is None:
        raise no_such_upload(upload_id)
    upload = _load(call.endpoint.uploads, upload_id)
    if (upload.bucket, upload.key) != (call.bucket, call.key):
        raise no_such_upload(upload_id)
    return upload


def _expire(uploads: Path, expiry_ms: int) -> None:
    """Remove the uploads that began more than ``expiry_ms`` ago (abandoned: their parts would
    hold the disk for ever); an upload whose record cannot be read is left alone."""
    oldest = time.time_ns() - expiry_ms * 1_000_000
    for entry in uploads.iterdir() if uploads.is_dir() else ():
        if _ID.fullmatch(entry.name) is None:
            continue
        try:
            upload = _load(uploads, entry.name)
        except S3Error:
            continue
        if upload.initiated_ns < oldest:
            shutil.rmtree(upload.directory, ignore_errors=True)


async def create(call: S3Call) -> Response:
    """A new upload; the abandoned ones (``dora.worker.s3.multipart.expiry``) go first."""
    bucket, key = call.named_bucket(), call.key or ""
    target = call.context(call.uri())
    await run_in_threadpool(call.service.admit, target, "create")
    upload_id = secrets.token_hex(16)
    expiry = call.service.config.get(s3_keys.UPLOAD_EXPIRY)
    attributes = requested(call.request.headers)

    def work() -> None:
        _expire(call.endpoint.uploads, expiry)
        directory = call.endpoint.uploads / upload_id
        modes.make_dirs(directory, modes.PRIVATE_DIR)
        meta = {"bucket": bucket, "key": key, "initiated_ns": time.time_ns(),
                "initiator": call.caller, "headers": dict(attributes.headers),
                "user": dict(attributes.user)}  # fmt: skip
        modes.write_file(directory / _META, json.dumps(meta).encode(), modes.PRIVATE_FILE)

    await run_in_threadpool(work)
    answer = xmlbody.document("InitiateMultipartUploadResult", el("Bucket", bucket),
                              el("Key", key), el("UploadId", upload_id))  # fmt: skip
    return Response(answer, 200, media_type=xmlbody.MEDIA_TYPE)


def _keep(upload: Upload, number: int, temp: Path, digest: str) -> None:
    """The part written to ``temp`` put in place of any earlier part ``number``."""
    final = upload.directory / f"{number:05d}.{digest}"
    os.replace(temp, final)
    for old in upload.directory.glob(f"{number:05d}.*"):
        if old != final:
            old.unlink(missing_ok=True)


async def upload_part(call: S3Call) -> Response:
    upload, number = _upload(call), part_number(call)
    limit = min(MAX_PART, call.service.config.get(worker_keys.MAX_WRITE_SIZE))
    temp = upload.directory / f".{number:05d}.{secrets.token_hex(4)}"
    md5 = hashlib.md5(usedforsecurity=False)
    with temp.open("wb") as out:
        temp.chmod(modes.PRIVATE_FILE)

        def write(data: bytes) -> None:
            md5.update(data)
            out.write(data)

        try:
            await call.receive(write, limit)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
    digest = md5.hexdigest()
    await run_in_threadpool(_keep, upload, number, temp, digest)
    return Response(b"", 200, {"ETag": f'"{digest}"'})


async def upload_part_copy(call: S3Call) -> Response:
    """A part copied from a range of an object (``x-amz-copy-source-range``), pinned to the
    source's version."""
    upload, number = _upload(call), part_number(call)
    _, status = await source_status(call)
    header = call.request.headers.get("x-amz-copy-source-range")
    span = None if header is None else copy_range(header, status.size)
    temp = upload.directory / f".{number:05d}.{secrets.token_hex(4)}"

    def work() -> str:
        md5 = hashlib.md5(usedforsecurity=False)
        try:
            with temp.open("wb") as out:
                for chunk in pinned_chunks(call, status, span):
                    md5.update(chunk)
                    out.write(chunk)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        _keep(upload, number, temp, md5.hexdigest())
        return md5.hexdigest()

    digest = await run_in_threadpool(work)
    answer = xmlbody.copy_result("CopyPartResult", f'"{digest}"', time.time_ns())
    return Response(answer, 200, media_type=xmlbody.MEDIA_TYPE)


def _chosen(upload: Upload, asked: list[xmlbody.Part], limit: int) -> list[StoredPart]:
    """The stored parts a CompleteMultipartUpload names, checked as S3 checks them."""
    stored = {part.number: part for part in upload.parts()}
    chosen: list[StoredPart] = []
    for part in asked:
        if chosen and part.number <= chosen[-1].number:
            raise S3Error("InvalidPartOrder", 400, "parts must be listed in ascending order")
        found = stored.get(part.number)
        if found is None or found.etag != part.etag:
            raise S3Error("InvalidPart", 400, f"part {part.number} with ETag {part.etag!r} "
                          "was not uploaded")  # fmt: skip
        chosen.append(found)
    for small in chosen[:-1]:
        if small.size < MIN_PART:
            raise S3Error("EntityTooSmall", 400, f"part {small.number} has {small.size} "
                          f"bytes; every part but the last needs {MIN_PART}")  # fmt: skip
    if sum(stored.size for stored in chosen) > limit:
        raise S3Error("EntityTooLarge", 400, f"the object would exceed {limit} bytes")
    return chosen


def _concatenated(parts: list[StoredPart]) -> Iterator[bytes]:
    for part in parts:
        with part.path.open("rb") as data:
            while chunk := data.read(COPY_CHUNK):
                yield chunk


async def complete(call: S3Call) -> Response:
    """The parts named, checked, written through as the object; the answer is under way while
    the write runs (``worker.api.s3.keepalive``), since an object of many parts takes longer
    to write than a client waits for a first byte."""
    upload = _upload(call)
    body = await call.small(COMPLETE_BODY_LIMIT)
    try:
        asked = xmlbody.parse_complete(body)
    except xmlbody.BadXml as exc:
        raise S3Error("MalformedXML", 400, str(exc)) from None
    target = call.context(call.uri()).renewed()
    limit = call.service.config.get(worker_keys.MAX_WRITE_SIZE)
    chosen = await run_in_threadpool(_chosen, upload, asked, limit)
    host = call.request.headers.get("host", "")
    location = f"{call.request.url.scheme}://{host}/{upload.bucket}/{quote(upload.key)}"

    def work() -> UfsStatus:
        status, _ = call.service.write(target, _concatenated(chosen), upload.attributes)
        call.endpoint.memo.forget(target.uri)
        shutil.rmtree(upload.directory, ignore_errors=True)
        return status

    def render(status: UfsStatus) -> str:
        return xmlbody.root("CompleteMultipartUploadResult", el("Location", location),
                            el("Bucket", upload.bucket), el("Key", upload.key),
                            el("ETag", etag(status)))  # fmt: skip

    return answered_while_working(work, render, f"/{upload.bucket}/{upload.key}")


async def abort(call: S3Call) -> Response:
    upload = _upload(call)
    await run_in_threadpool(shutil.rmtree, upload.directory, True)
    return Response(b"", 204)


async def list_parts(call: S3Call) -> Response:
    upload = _upload(call)
    marker, most = parts_paging(call)
    parts = [part for part in await run_in_threadpool(upload.parts) if part.number > marker]
    shown = [ListedPart(p.number, f'"{p.etag}"', p.size, p.mtime_ns) for p in parts[:most]]
    answer = parts_result(call, upload.id, marker, most, shown, len(parts) > most)
    return Response(answer, 200, media_type=xmlbody.MEDIA_TYPE)


def _uploads_of(call: S3Call, bucket: str, prefix: str) -> list[Upload]:
    directory = call.endpoint.uploads
    found = []
    for entry in directory.iterdir() if directory.is_dir() else ():
        if _ID.fullmatch(entry.name) is None:
            continue
        try:
            upload = _load(directory, entry.name)
        except S3Error:
            continue  # completed or aborted meanwhile
        if upload.bucket == bucket and upload.key.startswith(prefix):
            found.append(upload)
    return sorted(found, key=lambda upload: (upload.key, upload.initiated_ns))


async def list_uploads(call: S3Call) -> Response:
    """The bucket's uploads in progress under ``prefix``, by key then start, a page of
    ``max-uploads`` (at most 1,000) after ``key-marker`` / ``upload-id-marker``."""
    bucket = call.named_bucket()
    call.endpoint.buckets.root(bucket)
    paging = uploads_paging(call)
    prefix, key_marker, id_marker, most = paging
    uploads = await run_in_threadpool(_uploads_of, call, bucket, prefix)
    if key_marker:
        # After the marker's key; with an upload id too, after that upload of the same key.
        ids = [u.id for u in uploads if u.key == key_marker]
        skip_same = ids.index(id_marker) + 1 if id_marker in ids else len(ids)
        same = [u for u in uploads if u.key == key_marker][skip_same:]
        uploads = same + [u for u in uploads if u.key > key_marker]
    shown = [ListedUpload(u.key, u.id, u.initiated_ns) for u in uploads[:most]]
    answer = uploads_result(call, paging, shown, len(uploads) > most)
    return Response(answer, 200, media_type=xmlbody.MEDIA_TYPE)
