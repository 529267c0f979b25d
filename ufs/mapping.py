"""Translation of storage errors into the UFS error tree — the one place it happens. A storage
kind's own client errors are its declaration's to read (:attr:`ufs.kind.UfsKind.translate`);
the OS errors every kind raises, and aiohttp's, are read here. Decisions go by exception type,
errno or service error code, never by message text.

aiohttp is looked up among the loaded modules, not imported: its exceptions exist only once it
is loaded, and a process that never used an object store (the client, until it falls back to
the UFS) should not pay for importing it."""

from __future__ import annotations

import errno
import sys

from ufs import kinds
from ufs.errors import (
    StorageUnavailable,
    UfsAlreadyExists,
    UfsError,
    UfsInvalidPath,
    UfsIsADirectory,
    UfsNotADirectory,
    UfsNotFound,
    UfsPermissionDenied,
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
    found = kinds.translate(exc, what, uri)
    if found is not None:
        return found
    if isinstance(exc, ConnectionError | TimeoutError):
        return StorageUnavailable(f"UFS unavailable during {what} {uri}: {type(exc).__name__}")
    if isinstance(exc, OSError) and exc.errno in _UNAVAILABLE_ERRNOS:
        return StorageUnavailable(f"UFS unavailable during {what} {uri}: {exc.strerror or exc}")
    if isinstance(exc, OSError) and exc.errno == errno.ENAMETOOLONG:
        return UfsInvalidPath(f"invalid path {uri!r}: name too long")
    if isinstance(exc, OSError) and exc.errno == errno.ELOOP:
        return UfsInvalidPath(f"invalid path {uri!r}: too many levels of symbolic links")
    if _is_aiohttp_client_error(exc):
        return StorageUnavailable(f"UFS unavailable during {what} {uri}: {type(exc).__name__}")
    return UfsError(f"UFS error during {what} {uri}: {type(exc).__name__}: {exc}")


def _is_aiohttp_client_error(exc: BaseException) -> bool:
    aiohttp = sys.modules.get("aiohttp")
    return aiohttp is not None and isinstance(exc, aiohttp.ClientError)
