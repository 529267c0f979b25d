"""Errors as WebHDFS answers: ``{"RemoteException": {"exception", "javaClassName", "message"}}``
with the Java exception Hadoop's client re-creates (``RemoteException.unwrapRemoteException``),
so a Spark job fails with ``FileNotFoundException`` or ``AccessControlException``, not a bare
``IOException``. One table, most specific first; the HTTP codes follow the NameNode's.
"""

from __future__ import annotations

import json
import logging

from starlette.responses import Response

from config import ConfigError
from ufs.errors import (
    UfsAlreadyExists,
    UfsError,
    UfsInvalidPath,
    UfsIsADirectory,
    UfsNotADirectory,
    UfsNotFound,
    UfsOutsideRoots,
    UfsPermissionDenied,
    UfsUnavailable,
    UfsVersionChanged,
)
from worker.api.errors import BadRequest, PayloadTooLarge, Unauthorized
from worker.meta.errors import VersionMismatch
from worker.service import RangeNotSatisfiable

log = logging.getLogger(__name__)

ACCESS_CONTROL = "org.apache.hadoop.security.AccessControlException"
ILLEGAL_ARGUMENT = "java.lang.IllegalArgumentException"
IO_EXCEPTION = "java.io.IOException"
NOT_FOUND = "java.io.FileNotFoundException"


class InvalidParameter(ValueError):
    """A query parameter is missing or malformed (the NameNode's ``Invalid value for webhdfs
    parameter``)."""


class UnsupportedOperation(Exception):
    """A WebHDFS operation this surface does not offer (ACLs, snapshots, xattrs, ...)."""


_TABLE: tuple[tuple[type[BaseException], int, str], ...] = (
    # The client turns any 401 into an AccessControlException itself.
    (Unauthorized, 401, "java.lang.SecurityException"),
    (InvalidParameter, 400, ILLEGAL_ARGUMENT),
    (BadRequest, 400, ILLEGAL_ARGUMENT),
    (ConfigError, 400, ILLEGAL_ARGUMENT),
    (UfsInvalidPath, 400, ILLEGAL_ARGUMENT),
    (UnsupportedOperation, 400, "java.lang.UnsupportedOperationException"),
    (UfsOutsideRoots, 403, ACCESS_CONTROL),
    (UfsPermissionDenied, 403, ACCESS_CONTROL),
    (UfsNotFound, 404, NOT_FOUND),
    (UfsAlreadyExists, 403, "org.apache.hadoop.fs.FileAlreadyExistsException"),
    (UfsNotADirectory, 403, "org.apache.hadoop.fs.PathIsNotDirectoryException"),
    (UfsIsADirectory, 403, "org.apache.hadoop.fs.PathIsDirectoryException"),
    # Reading a directory: HDFS answers "Path is not a file" as a FileNotFoundException.
    (IsADirectoryError, 404, NOT_FOUND),
    (VersionMismatch, 412, IO_EXCEPTION),
    (UfsVersionChanged, 412, IO_EXCEPTION),
    (PayloadTooLarge, 413, IO_EXCEPTION),
    (RangeNotSatisfiable, 416, "java.io.EOFException"),
    (UfsUnavailable, 503, IO_EXCEPTION),
    (UfsError, 502, IO_EXCEPTION),
)


def classify(exc: BaseException) -> tuple[int, str] | None:
    """The (HTTP status, Java class name) for a known error, or None for a bug."""
    for kind, status, java_class in _TABLE:
        if isinstance(exc, kind):
            return status, java_class
    return None


def remote_exception(status: int, java_class: str, message: str) -> Response:
    """A RemoteException answer. Like every JSON answer of this surface it carries no
    Content-Type: the Hadoop client validates one with a media-type parser its shaded jar
    cannot load."""
    body = {
        "RemoteException": {
            "exception": java_class.rsplit(".", 1)[-1],
            "javaClassName": java_class,
            "message": message,
        }
    }
    return Response(json.dumps(body).encode(), status)


def response_for(exc: BaseException) -> Response:
    """The answer for ``exc``; an unexpected error is logged and answered 500 without
    internals."""
    known = classify(exc)
    if known is None:
        log.exception("unexpected error in a WebHDFS call", exc_info=exc)
        return remote_exception(
            500, "java.lang.RuntimeException", f"internal error: {type(exc).__name__}"
        )
    status, java_class = known
    response = remote_exception(status, java_class, str(exc))
    if isinstance(exc, UfsUnavailable):
        response.headers["Retry-After"] = str(exc.retry_after)
    if isinstance(exc, Unauthorized):
        response.headers["WWW-Authenticate"] = "Bearer"
    return response
