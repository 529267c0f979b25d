"""S3 (``s3://``, ``s3a://``) as a storage kind: its keys, options and error translation. The
backend is :mod:`ufs.s3` (s3fs), imported only when a process reaches S3; botocore's errors
are looked up among the loaded modules, never imported, for the same reason."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from config import Config
from config.keys import KeyType, PropertyKey
from ufs.errors import (
    StorageUnavailable,
    UfsError,
    UfsInvalidPath,
    UfsNotFound,
    UfsPermissionDenied,
)
from ufs.kind import UfsKind

if TYPE_CHECKING:
    from ufs.backend import UfsBackend
    from ufs.deadline import ThreadRunner
    from ufs.options import UfsOptions

ENDPOINT: PropertyKey[str | None] = PropertyKey(
    "dora.ufs.s3.endpoint", KeyType.STRING, None, "S3 endpoint URL (empty: AWS)."
)
REGION: PropertyKey[str | None] = PropertyKey(
    "dora.ufs.s3.region", KeyType.STRING, None, "S3 region name."
)
ACCESS_KEY_ID: PropertyKey[str | None] = PropertyKey(
    "dora.ufs.s3.access.key.id", KeyType.STRING, None, "S3 access key id."
)
SECRET_ACCESS_KEY: PropertyKey[str | None] = PropertyKey(
    "dora.ufs.s3.secret.access.key", KeyType.STRING, None, "S3 secret access key.", secret=True
)
ANONYMOUS: PropertyKey[bool] = PropertyKey(
    "dora.ufs.s3.anonymous", KeyType.BOOL, "false", "Access S3 without credentials."
)


@dataclass(frozen=True)
class S3Options:
    """How to reach S3; built from the ``dora.ufs.s3.*`` keys."""

    endpoint: str | None = None
    region: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    anonymous: bool = False

    @classmethod
    def from_config(cls, config: Config) -> S3Options:
        return cls(
            endpoint=config.get(ENDPOINT) or None,
            region=config.get(REGION) or None,
            access_key_id=config.get(ACCESS_KEY_ID) or None,
            secret_access_key=config.get(SECRET_ACCESS_KEY) or None,
            anonymous=config.get(ANONYMOUS),
        )


def _backend(scheme: str, options: UfsOptions, threads: ThreadRunner) -> UfsBackend:
    from ufs.s3 import S3Backend  # s3fs and botocore: only for a process that reaches S3

    return S3Backend(scheme, options, threads)


_NOT_FOUND_CODES = frozenset({"NoSuchKey", "NoSuchBucket", "404", "NotFound"})
_DENIED_CODES = frozenset({"AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch"})
_BUSY_CODES = frozenset({"SlowDown", "ServiceUnavailable", "InternalError", "RequestTimeout"})


def _client_error(exc: Any, what: str, uri: str) -> UfsError:
    error = exc.response.get("Error", {})
    code = str(error.get("Code", ""))
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    if code in _NOT_FOUND_CODES or status == 404:
        return UfsNotFound(f"{uri} not found")
    if code in _DENIED_CODES or status == 403:
        return UfsPermissionDenied(f"permission denied for {what} {uri}: {code}")
    if status >= 500 or status == 429 or code in _BUSY_CODES:
        return StorageUnavailable(f"UFS unavailable during {what} {uri}: {code or status}")
    return UfsError(f"UFS refused {what} {uri}: {code or status}")


def translate(exc: BaseException, what: str, uri: str) -> UfsError | None:
    """The UFS error for one of botocore's exceptions, by service error code and status."""
    boto = sys.modules.get("botocore.exceptions")
    if boto is None:
        return None
    if isinstance(exc, boto.ClientError):
        return _client_error(exc, what, uri)
    if isinstance(exc, boto.NoCredentialsError | boto.PartialCredentialsError):
        return UfsPermissionDenied(f"no usable credentials for {what} {uri}: {type(exc).__name__}")
    if isinstance(exc, boto.ParamValidationError):
        return UfsInvalidPath(f"invalid path {uri!r} for {what}: {exc}")
    if isinstance(exc, boto.ConnectionError | boto.HTTPClientError):
        return StorageUnavailable(f"UFS unavailable during {what} {uri}: {type(exc).__name__}")
    return None


KIND = UfsKind(
    name="s3",
    schemes=frozenset({"s3", "s3a"}),
    keys=[ENDPOINT, REGION, ACCESS_KEY_ID, SECRET_ACCESS_KEY, ANONYMOUS],
    options=S3Options.from_config,
    backend=_backend,
    translate=translate,
)
