"""S3 as a UFS backend, through s3fs: every S3 specific in one place — the client settings, the
conditional (``If-Match``) ranged read that pins a version, how S3 reports a failed
precondition, the uploads (one PUT, or a multipart upload of a stream) and the status a write
answers. Every request is a coroutine on fsspec's IO loop, cancelled (its connection closed) at
its deadline."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Iterable, Iterator, Sequence
from datetime import datetime
from email.utils import parsedate_to_datetime
from functools import partial
from typing import IO, Any, TypeVar

import s3fs
from botocore.exceptions import ClientError

from ufs import uri as uris
from ufs.attributes import HEADERS, Attributes
from ufs.backend import WRITE_CHUNK
from ufs.deadline import Deadline, ThreadRunner
from ufs.errors import UfsInvalidPath, UfsTooLarge, UfsVersionChanged
from ufs.generic import FsspecBackend, unquoted_etag
from ufs.kinds.s3 import S3Options
from ufs.options import UfsOptions
from ufs.status import UfsStatus
from ufs.stores import (
    PartsPage,
    StoreBucket,
    StorePart,
    StoreUpload,
    UfsStoreRefused,
    UploadsPage,
)

T = TypeVar("T")
PART_SIZE = WRITE_CHUNK  # S3 wants parts of at least 5 MiB, all but the last
MAX_PUT = 5 << 30  # the largest object S3 takes in one PUT


def storage_options(options: UfsOptions) -> dict[str, Any]:
    """s3fs constructor options; every cache s3fs offers is off, so a file written from outside
    is visible at once (s3fs issue #851): the worker's cache is the only cache."""
    s3 = options.of(S3Options)
    client_kwargs: dict[str, Any] = {}
    if s3.endpoint:
        client_kwargs["endpoint_url"] = s3.endpoint
    if s3.region:
        client_kwargs["region_name"] = s3.region
    return {
        "anon": s3.anonymous,
        "key": s3.access_key_id,
        "secret": s3.secret_access_key,
        "client_kwargs": client_kwargs,
        "config_kwargs": {
            "connect_timeout": options.connect_timeout_ms / 1000,
            "read_timeout": options.read_timeout_ms / 1000,
            # Retries are ours (bounded, counted); botocore's would multiply them.
            "retries": {"max_attempts": 1, "mode": "standard"},
        },
        "use_listings_cache": False,
        "default_cache_type": "none",
        "skip_instance_cache": True,
    }


class S3Backend(FsspecBackend):
    """S3 (``s3://``, ``s3a://``) through s3fs. Versions are ETags, and a read with a version
    carries ``If-Match``, so it can never return bytes of another version. Objects keep their
    attributes (``ufs.attributes.AttributeStore``). A :class:`ufs.stores.BucketStore` and
    :class:`ufs.stores.UploadStore`. Thread-safe."""

    pins_versions = True

    def __init__(self, scheme: str, options: UfsOptions, threads: ThreadRunner) -> None:
        self._append_max = options.append_rewrite_max_bytes
        # A failed upload's abort runs in the background by the call's own deadline, never a
        # caller's: a request whose time ran out still leaves no part behind.
        self._abort_s = options.call_deadline_ms / 1000
        self._region = options.of(S3Options).region
        filesystem = s3fs.S3FileSystem(**storage_options(options))
        # s3fs retries some errors itself (5 times); ours are the bounded ones.
        filesystem.retries = 1
        super().__init__(scheme, filesystem, threads)

    def s3(self, method: str, **kwargs: Any) -> Callable[[], Coroutine[Any, Any, Any]]:
        """A request to S3's API (botocore's ``method``), for :meth:`run`."""
        return lambda: self.filesystem._call_s3(method, **kwargs)

    def read(
        self, uri: str, offset: int, length: int, version: str | None, deadline: Deadline
    ) -> bytes:
        if version is None:
            return super().read(uri, offset, length, None, deadline)
        bucket, _, key = self.path(uri).partition("/")
        get = self.s3(
            "get_object",
            Bucket=bucket,
            Key=key,
            Range=f"bytes={offset}-{offset + length - 1}",
            IfMatch=f'"{version}"',
        )

        async def body() -> bytes:
            response = await get()
            try:
                data: bytes = await response["Body"].read()
                return data
            finally:
                response["Body"].close()

        try:
            return self.run(body, deadline)
        except OSError as exc:
            if _precondition_failed(exc):
                raise UfsVersionChanged(uri, version, None) from exc
            raise

    def write(self, uri: str, data: bytes, deadline: Deadline) -> UfsStatus:
        """One PUT (a multipart upload past S3's limit for one), all within ``deadline``."""
        if len(data) > MAX_PUT:
            parts = (data[start : start + PART_SIZE] for start in range(0, len(data), PART_SIZE))
            return self._upload(uri, parts, lambda: deadline)
        return self._written(uri, len(data), self.run(self._put(uri, data), deadline), deadline)

    def write_stream(
        self, uri: str, chunks: Iterator[bytes], step: Callable[[], Deadline]
    ) -> UfsStatus:
        """One PUT for a small body, else a multipart upload, one part per request; a failed
        upload is aborted, so nothing of it becomes visible."""
        return self._upload(uri, chunks, step)

    def write_attributed(
        self,
        uri: str,
        chunks: Iterator[bytes],
        step: Callable[[], Deadline],
        attributes: Attributes,
    ) -> UfsStatus:
        """:meth:`write_stream`, the object created with ``attributes`` (its PUT's, or its
        multipart upload's, headers)."""
        return self._upload(uri, chunks, step, _arguments(attributes))

    def attributes(self, uri: str, version: str, deadline: Deadline) -> Attributes:
        """From a HEAD with ``If-Match``: the headers as the store answered them, as sent."""
        bucket, _, key = self.path(uri).partition("/")
        head = self.s3("head_object", Bucket=bucket, Key=key, IfMatch=f'"{version}"')
        try:
            response = self.run(head, deadline)
        except OSError as exc:
            if _precondition_failed(exc):
                raise UfsVersionChanged(uri, version, None) from exc
            raise
        return Attributes.from_headers(response["ResponseMetadata"]["HTTPHeaders"])

    def append(self, status: UfsStatus, data: Iterable[bytes], deadline: Deadline) -> UfsStatus:
        """Emulated, as S3 has no append: the object is read at the version seen and written
        back with ``data`` after it by a PUT with ``If-Match`` on that version, so a change
        made meanwhile fails the append (UfsVersionChanged) rather than being undone, and a
        failed PUT leaves the old object. It moves the whole object twice, so it is refused
        (UfsTooLarge) past ``dora.ufs.append.rewrite.max.size``."""
        added = bytearray()
        for chunk in data:
            added += chunk
            if status.size + len(added) > self._append_max:
                raise UfsTooLarge(
                    f"cannot append to {status.uri}: S3 has no append, and rewriting the "
                    f"object would make it larger than dora.ufs.append.rewrite.max.size "
                    f"({self._append_max} bytes)"
                )
        old = b""
        if status.size:
            old = self.read(status.uri, 0, status.size, status.version, deadline)
        total = status.size + len(added)
        put = self._put(status.uri, old + added, IfMatch=f'"{status.version}"')
        try:
            response = self.run(put, deadline)
        except OSError as exc:
            if _precondition_failed(exc):
                raise UfsVersionChanged(status.uri, status.version, None) from exc
            raise
        return self._written(status.uri, total, response, deadline)

    def _put(
        self, uri: str, data: bytes, **arguments: Any
    ) -> Callable[[], Coroutine[Any, Any, Any]]:
        bucket, _, key = self.path(uri).partition("/")
        return self.s3("put_object", Bucket=bucket, Key=key, Body=data, **arguments)

    def _upload(
        self,
        uri: str,
        chunks: Iterator[bytes],
        deadline: Callable[[], Deadline],
        arguments: dict[str, Any] | None = None,
    ) -> UfsStatus:
        bucket, _, key = self.path(uri).partition("/")
        arguments = arguments or {}
        upload = _Multipart(self, bucket, key, arguments)
        buffer = bytearray()
        size = 0
        try:
            for chunk in chunks:
                buffer += chunk
                size += len(chunk)
                while len(buffer) >= PART_SIZE:
                    part = bytes(buffer[:PART_SIZE])
                    del buffer[:PART_SIZE]
                    self.run(partial(upload.send, part), deadline())
            if upload.id is None:
                response = self.run(self._put(uri, bytes(buffer), **arguments), deadline())
            else:
                if buffer:
                    self.run(lambda: upload.send(bytes(buffer)), deadline())
                response = self.run(upload.complete, deadline())
        except BaseException:
            upload.abort_soon(self._abort_s)
            raise
        return self._written(uri, size, response, deadline())

    def _written(
        self, uri: str, size: int, response: dict[str, Any], deadline: Deadline
    ) -> UfsStatus:
        """The status of the object a PutObject or CompleteMultipartUpload ``response`` has
        just stored: its ETag from that response, its size as sent. S3 answers a write with
        no modification time, so that comes from the HEAD right after when it still shows
        this ETag (and a later status equals this one). If the object was deleted or
        replaced meanwhile, or the HEAD failed, the best value is the ``Date`` of
        ``response``: the server's clock as the write completed, to the second like
        Last-Modified (which S3 sets when the upload began, so a long upload's is earlier);
        this host's clock if the response has no date."""
        return self.written(
            uri, size, unquoted_etag(response.get("ETag")), _date_ns(response), deadline
        )

    def _asked(self, request: Callable[[], Coroutine[Any, Any, T]], deadline: Deadline) -> T:
        """A bucket or multipart request; the store's refusals of the caller's mistakes raise
        :class:`UfsStoreRefused` with its code."""
        try:
            return self.run(request, deadline)
        except OSError as exc:
            refused = _refusal(exc)
            if refused is not None:
                raise refused from exc
            raise

    def list_buckets(self, deadline: Deadline) -> list[StoreBucket]:
        answer = self._asked(self.s3("list_buckets"), deadline)
        return [StoreBucket(str(b["Name"]), _ns(b.get("CreationDate")))
                for b in answer.get("Buckets", [])]  # fmt: skip

    def create_bucket(self, name: str, deadline: Deadline) -> None:
        where: dict[str, Any] = {}
        if self._region not in (None, "us-east-1"):
            where["CreateBucketConfiguration"] = {"LocationConstraint": self._region}
        self._asked(self.s3("create_bucket", Bucket=name, **where), deadline)

    def delete_bucket(self, name: str, deadline: Deadline) -> None:
        """S3 refuses to delete a bucket that holds objects; some stores (SeaweedFS) delete
        them with it, so a bucket is looked into first, and refused (BucketNotEmpty) as S3
        would. An object written between the look and the delete is the store's to keep."""
        held = self._asked(self.s3("list_objects_v2", Bucket=name, MaxKeys=1), deadline)
        if held.get("KeyCount") or held.get("Contents"):
            raise UfsStoreRefused("BucketNotEmpty", 409, f"the bucket {name!r} is not empty")
        self._asked(self.s3("delete_bucket", Bucket=name), deadline)

    def _object(self, uri: str) -> dict[str, str]:
        bucket, _, key = self.path(uri).partition("/")
        return {"Bucket": bucket, "Key": key}

    def create_upload(self, uri: str, deadline: Deadline, attributes: Attributes) -> str:
        create = self.s3("create_multipart_upload", **self._object(uri), **_arguments(attributes))
        created = self._asked(create, deadline)
        return str(created["UploadId"])

    def upload_part(
        self, uri: str, upload_id: str, number: int, body: IO[bytes], size: int, deadline: Deadline
    ) -> str:
        send = self.s3("upload_part", UploadId=upload_id, PartNumber=number, Body=body,
                       ContentLength=size, **self._object(uri))  # fmt: skip
        return str(self._asked(send, deadline)["ETag"])

    def complete_upload(
        self, uri: str, upload_id: str, parts: Sequence[tuple[int, str]], deadline: Deadline
    ) -> UfsStatus:
        """The object made; its status is the store's right after (S3's answer to a
        completion names no size), so a later status equals it."""
        listed = [{"PartNumber": number, "ETag": etag} for number, etag in parts]
        done = self.s3("complete_multipart_upload", UploadId=upload_id,
                       MultipartUpload={"Parts": listed}, **self._object(uri))  # fmt: skip
        self._asked(done, deadline)
        return self.status(uri, deadline)

    def abort_upload(self, uri: str, upload_id: str, deadline: Deadline) -> None:
        abort = self.s3("abort_multipart_upload", UploadId=upload_id, **self._object(uri))
        self._asked(abort, deadline)

    def list_parts(
        self, uri: str, upload_id: str, after: int, most: int, deadline: Deadline
    ) -> PartsPage:
        listed = self._asked(self.s3("list_parts", UploadId=upload_id, PartNumberMarker=after,
                                     MaxParts=most, **self._object(uri)), deadline)  # fmt: skip
        parts = [
            StorePart(
                int(p["PartNumber"]), str(p["ETag"]), int(p["Size"]), _ns(p.get("LastModified"))
            )
            for p in listed.get("Parts", [])
        ]
        return PartsPage(parts, bool(listed.get("IsTruncated")))

    def list_uploads(
        self, prefix: str, after: tuple[str, str] | None, most: int, deadline: Deadline
    ) -> UploadsPage:
        bucket, _, key_prefix = prefix.partition("://")[2].partition("/")
        markers: dict[str, Any] = {}
        if after is not None:
            markers = {"KeyMarker": self._object(after[0])["Key"], "UploadIdMarker": after[1]}
        listed = self._asked(self.s3("list_multipart_uploads", Bucket=bucket, Prefix=key_prefix,
                                     MaxUploads=most, **markers), deadline)  # fmt: skip
        uploads = []
        for upload in listed.get("Uploads", []):
            try:
                uri = uris.normalize(f"{self.scheme}://{bucket}/{upload['Key']}")
            except UfsInvalidPath:
                continue  # a key no canonical URI names: no caller can address it
            uploads.append(StoreUpload(uri, str(upload["UploadId"]), _ns(upload.get("Initiated"))))
        return UploadsPage(uploads, bool(listed.get("IsTruncated")))


class _Multipart:
    """One multipart upload, created with its first part. Used by one thread at a time."""

    def __init__(
        self, backend: S3Backend, bucket: str, key: str, arguments: dict[str, Any]
    ) -> None:
        self._backend = backend
        self._where = {"Bucket": bucket, "Key": key}
        self._arguments = arguments
        self.id: str | None = None
        self._parts: list[dict[str, Any]] = []

    async def send(self, data: bytes) -> None:
        if self.id is None:
            create = self._backend.s3("create_multipart_upload", **self._where, **self._arguments)
            created = await create()
            self.id = str(created["UploadId"])
        number = len(self._parts) + 1
        sent = await self._backend.s3(
            "upload_part", PartNumber=number, UploadId=self.id, Body=data, **self._where
        )()
        self._parts.append({"PartNumber": number, "ETag": sent["ETag"]})

    async def complete(self) -> Any:
        return await self._backend.s3(
            "complete_multipart_upload",
            UploadId=self.id,
            MultipartUpload={"Parts": self._parts},
            **self._where,
        )()

    def abort_soon(self, timeout: float) -> None:
        """Abort the upload in the background (bounded by ``timeout``), so a failed upload
        leaves no parts behind; without waiting, as the store may be what failed."""
        if self.id is None:
            return
        abort = self._backend.s3("abort_multipart_upload", UploadId=self.id, **self._where)
        loop: asyncio.AbstractEventLoop = self._backend.filesystem.loop
        asyncio.run_coroutine_threadsafe(asyncio.wait_for(abort(), timeout), loop)


_ARGUMENTS = {name: name.replace("-", "") for name in HEADERS}
"""botocore's parameter of each kept header (``Content-Type``: ``ContentType``)."""


def _arguments(attributes: Attributes) -> dict[str, Any]:
    """A PUT's (or CreateMultipartUpload's) botocore arguments that store ``attributes``."""
    arguments: dict[str, Any] = {}
    for name, value in attributes.headers.items():
        if name == "Expires":
            try:  # botocore takes a date only; S3 keeps only a date
                arguments["Expires"] = parsedate_to_datetime(value)
            except (TypeError, ValueError):
                continue
        else:
            arguments[_ARGUMENTS[name]] = value
    if attributes.user:
        arguments["Metadata"] = dict(attributes.user)
    return arguments


def _date_ns(response: dict[str, Any]) -> int:
    """The ``Date`` header of a response in ns since the epoch; this host's clock without one."""
    date = response.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date")
    try:
        return int(parsedate_to_datetime(date).timestamp()) * 1_000_000_000
    except (TypeError, ValueError):
        return time.time_ns()


_REFUSALS = frozenset({
    "NoSuchUpload", "InvalidPart", "InvalidPartOrder", "EntityTooSmall", "EntityTooLarge",
    "NoSuchBucket", "BucketNotEmpty", "BucketAlreadyExists", "BucketAlreadyOwnedByYou",
    "InvalidBucketName", "TooManyBuckets", "InvalidArgument", "InvalidRequest", "MalformedXML",
})  # fmt: skip
"""The store's codes for a bucket or multipart request that is the caller's mistake."""


def _refusal(exc: BaseException) -> UfsStoreRefused | None:
    """The store's refusal behind ``exc`` (s3fs wraps botocore's ClientError in an OSError),
    when it is one of :data:`_REFUSALS`."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ClientError):
            error = cause.response.get("Error", {})
            code = str(error.get("Code", ""))
            if code not in _REFUSALS:
                return None
            status = int(cause.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 400))
            return UfsStoreRefused(code, status, str(error.get("Message") or code))
        cause = cause.__cause__ or cause.__context__
    return None


def _ns(moment: datetime | None) -> int:
    """A time the store answered, in ns since the epoch; now if it gave none."""
    return time.time_ns() if moment is None else int(moment.timestamp() * 1e9)


def _precondition_failed(exc: BaseException) -> bool:
    """s3fs turns S3's 412 into a generic OSError; the ClientError it came from says 412."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ClientError):
            meta = cause.response.get("ResponseMetadata", {})
            code = cause.response.get("Error", {}).get("Code")
            return bool(meta.get("HTTPStatusCode") == 412 or code == "PreconditionFailed")
        cause = cause.__cause__ or cause.__context__
    return False
