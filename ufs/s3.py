"""S3 as a UFS backend, through s3fs: every S3 specific in one place — the client settings, the
conditional (``If-Match``) ranged read that pins a version, and how S3 reports a failed
precondition."""

from __future__ import annotations

from typing import Any

import s3fs
from botocore.exceptions import ClientError
from fsspec.asyn import sync

from ufs.errors import UfsVersionChanged
from ufs.generic import FsspecBackend
from ufs.options import UfsOptions

SCHEMES = ("s3", "s3a")


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

    def __init__(self, scheme: str, options: UfsOptions) -> None:
        filesystem = s3fs.S3FileSystem(**storage_options(options))
        # s3fs retries some errors itself (5 times); ours are the bounded ones.
        filesystem.retries = 1
        super().__init__(scheme, filesystem)

    def read(self, uri: str, offset: int, length: int, version: str | None) -> bytes:
        if version is None:
            return super().read(uri, offset, length, None)
        bucket, _, key = self.path(uri).partition("/")

        async def get() -> bytes:
            response = await self.filesystem._call_s3(
                "get_object",
                Bucket=bucket,
                Key=key,
                Range=f"bytes={offset}-{offset + length - 1}",
                IfMatch=f'"{version}"',
            )
            try:
                body: bytes = await response["Body"].read()
                return body
            finally:
                response["Body"].close()

        try:
            data: bytes = sync(self.filesystem.loop, get)
            return data
        except OSError as exc:
            if _precondition_failed(exc):
                raise UfsVersionChanged(uri, version, None) from exc
            raise


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
