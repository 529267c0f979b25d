"""Translation of fsspec, botocore, aiohttp and OS errors into the UFS error tree — the one place
it happens. Decisions go by exception type, errno or service error code, never by message text.

botocore and aiohttp are looked up among the loaded modules, not imported: an exception of
theirs exists only once they are loaded, and a process that never used S3 (the client, until it
falls back to the UFS) should not pay for importing them."""

from __future__ import annotations

import errno
import sys
from typing import Any

from ufs.errors import (
    UfsAlreadyExists,
    UfsError,
    UfsInvalidPath,
    UfsIsADirectory,
    UfsNotADirectory,
    UfsNotFound,
    UfsPermissionDenied,
    UfsUnavailable,
)

_UNAVAILABLE_ERRNOS = frozenset(
    {
        errno.ECONNREFUSED,
        errno.ECONNRESET,
        errno.ECONNABORTED,
        errno.ETIMEDOUT,
        errno.EHOSTUNREACH,
        errno.ENETUNREACH,
        errno.EHOSTDOWN,
        errno.EBUSY,  # s3fs: SlowDown, ServiceUnavailable
        getattr(errno, "EREMOTEIO", errno.EIO),  # s3fs: InternalError
    }
)
_NOT_FOUND_CODES = frozenset({"NoSuchKey", "NoSuchBucket", "404", "NotFound"})
_DENIED_CODES = frozenset({"AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch"})


def _client_error(exc: Any, what: str, uri: str) -> UfsError:
    error = exc.response.get("Error", {})
    code = str(error.get("Code", ""))
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    if code in _NOT_FOUND_CODES or status == 404:
        return UfsNotFound(f"{uri} not found")
    if code in _DENIED_CODES or status == 403:
        return UfsPermissionDenied(f"permission denied for {what} {uri}: {code}")
    if status >= 500 or code in ("SlowDown", "ServiceUnavailable", "InternalError"):
        return UfsUnavailable(f"UFS unavailable during {what} {uri}: {code or status}")
    return UfsError(f"UFS refused {what} {uri}: {code or status}")


def translate(exc: BaseException, what: str, uri: str) -> UfsError:
    """The UFS error for ``exc`` raised during operation ``what`` on ``uri``."""
    if isinstance(exc, UfsError):
        return exc
    if isinstance(exc, FileNotFoundError):
        return UfsNotFound(f"{uri} not found")
    if isinstance(exc, PermissionError):
        return UfsPermissionDenied(f"permission denied for {what} {uri}")
    if isinstance(exc, FileExistsError):
        return UfsAlreadyExists(f"{uri} already exists")
    if isinstance(exc, NotADirectoryError):
        return UfsNotADirectory(f"{what} {uri}: a path component is a file")
    if isinstance(exc, IsADirectoryError):
        return UfsIsADirectory(f"{what} {uri}: is a directory")
    found = _botocore_error(exc, what, uri)
    if found is not None:
        return found
    if isinstance(exc, ConnectionError | TimeoutError):
        return UfsUnavailable(f"UFS unavailable during {what} {uri}: {type(exc).__name__}")
    if isinstance(exc, OSError) and exc.errno in _UNAVAILABLE_ERRNOS:
        return UfsUnavailable(f"UFS unavailable during {what} {uri}: {exc.strerror or exc}")
    if isinstance(exc, OSError) and exc.errno == errno.ENAMETOOLONG:
        return UfsInvalidPath(f"invalid path {uri!r}: name too long")
    if isinstance(exc, OSError) and exc.errno == errno.ELOOP:
        return UfsInvalidPath(f"invalid path {uri!r}: too many levels of symbolic links")
    if _is_aiohttp_client_error(exc):
        return UfsUnavailable(f"UFS unavailable during {what} {uri}: {type(exc).__name__}")
    return UfsError(f"UFS error during {what} {uri}: {type(exc).__name__}: {exc}")


def _botocore_error(exc: BaseException, what: str, uri: str) -> UfsError | None:
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
        return UfsUnavailable(f"UFS unavailable during {what} {uri}: {type(exc).__name__}")
    return None


def _is_aiohttp_client_error(exc: BaseException) -> bool:
    aiohttp = sys.modules.get("aiohttp")
    return aiohttp is not None and isinstance(exc, aiohttp.ClientError)
