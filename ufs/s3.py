"""S3 as a UFS backend, through s3fs: every S3 specific in one place — the client settings, the
conditional (``If-Match``) ranged read that pins a version, how S3 reports a failed
precondition, and the multipart upload of a stream. Every request is a coroutine on fsspec's
IO loop, cancelled (its connection closed) at its deadline."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from functools import partial
from typing import Any

import s3fs
from botocore.exceptions import ClientError

from ufs.backend import WRITE_CHUNK
from ufs.deadline import Deadline, ThreadRunner
from ufs.errors import UfsVersionChanged
from ufs.generic import FsspecBackend
from ufs.options import UfsOptions

SCHEMES = ("s3", "s3a")
PART_SIZE = WRITE_CHUNK  # S3 wants parts of at least 5 MiB, all but the last


def storage_options(options: UfsOptions) -> dict[str, Any]:
    """s3fs constructor options; every cache s3fs offers is off, so a file written from outside
    is visible at once (s3fs issue #851): the worker's cache is the only cache."""
    client_kwargs: dict[str, Any] = {}
    if options.s3_endpoint:
        client_kwargs["endpoint_url"] = options.s3_endpoint
    if options.s3_region:
        client_kwargs["region_name"] = options.s3_region
    return {
        "anon": options.s3_anonymous,
        "key": options.s3_access_key_id,
        "secret": options.s3_secret_access_key,
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
    carries ``If-Match``, so it can never return bytes of another version. Thread-safe."""

    pins_versions = True

    def __init__(self, scheme: str, options: UfsOptions, threads: ThreadRunner) -> None:
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

    def write_stream(self, uri: str, chunks: Iterator[bytes], step: float) -> None:
        """One PUT for a small body, else a multipart upload, one part per request; a failed
        upload is aborted, so nothing of it becomes visible."""
        bucket, _, key = self.path(uri).partition("/")
        upload = _Multipart(self, bucket, key)
        buffer = bytearray()
        try:
            for chunk in chunks:
                buffer += chunk
                while len(buffer) >= PART_SIZE:
                    part = bytes(buffer[:PART_SIZE])
                    del buffer[:PART_SIZE]
                    self.run(partial(upload.send, part), Deadline(step))
            if upload.id is None:
                self.write(uri, bytes(buffer), Deadline(step))
                return
            if buffer:
                self.run(lambda: upload.send(bytes(buffer)), Deadline(step))
            self.run(upload.complete, Deadline(step))
        except BaseException:
            upload.abort_soon(step)
            raise


class _Multipart:
    """One multipart upload, created with its first part. Used by one thread at a time."""

    def __init__(self, backend: S3Backend, bucket: str, key: str) -> None:
        self._backend = backend
        self._where = {"Bucket": bucket, "Key": key}
        self.id: str | None = None
        self._parts: list[dict[str, Any]] = []

    async def send(self, data: bytes) -> None:
        if self.id is None:
            created = await self._backend.s3("create_multipart_upload", **self._where)()
            self.id = str(created["UploadId"])
        number = len(self._parts) + 1
        sent = await self._backend.s3(
            "upload_part", PartNumber=number, UploadId=self.id, Body=data, **self._where
        )()
        self._parts.append({"PartNumber": number, "ETag": sent["ETag"]})

    async def complete(self) -> None:
        await self._backend.s3(
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
