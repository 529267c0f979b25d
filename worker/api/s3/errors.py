"""S3's errors: the codes and statuses S3 answers with, and the worker's error catalogue
(``worker.errors``) mapped onto them once. Every S3 error answer is S3's XML body (Code,
Message, Resource, RequestId) with S3's status; a HEAD answer has the status alone."""

from __future__ import annotations

import secrets

from starlette.responses import Response

from ufs.stores import UfsStoreRefused
from worker.api.s3 import xmlbody
from worker.api.s3auth import S3AuthError
from worker.common import errors as catalogue
from worker.common.errors import ErrorKind


class S3Error(Exception):
    """An error answered with S3's ``code`` and ``status``; ``headers`` go on the answer."""

    def __init__(
        self, code: str, status: int, message: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.status = status
        self.message = message
        self.headers = headers or {}


def no_such_bucket(bucket: str) -> S3Error:
    return S3Error("NoSuchBucket", 404, f"the bucket {bucket!r} does not exist")


def invalid_argument(message: str) -> S3Error:
    return S3Error("InvalidArgument", 400, message)


def not_implemented(operation: str) -> S3Error:
    return S3Error("NotImplemented", 501, f"{operation} is not implemented by this endpoint")


def malformed_xml(message: str) -> S3Error:
    return S3Error("MalformedXML", 400, f"the XML body is not well-formed or valid: {message}")


# The catalogue's codes (worker.errors.CATALOGUE) as S3 names them. A catalogue row missing
# here is InternalError, which a test over the whole catalogue keeps from happening.
BY_CATALOGUE: dict[str, tuple[str, int]] = {
    "BadRequest": ("InvalidArgument", 400),
    "InvalidPath": ("InvalidArgument", 400),
    "UnsupportedOperation": ("NotImplemented", 501),
    # An object store has no directories: a key naming one, or under a file, is no key.
    "NotADirectory": ("NoSuchKey", 404),
    "IsADirectory": ("NoSuchKey", 404),
    "Unauthorized": ("AccessDenied", 403),
    "OutsideMountRoots": ("AccessDenied", 403),
    "PermissionDenied": ("AccessDenied", 403),
    "NotFound": ("NoSuchKey", 404),
    "NoSuchRoute": ("InvalidRequest", 400),
    "MethodNotAllowed": ("MethodNotAllowed", 405),
    "AlreadyExists": ("OperationAborted", 409),
    "VersionMismatch": ("PreconditionFailed", 412),
    "RequestTimeout": ("RequestTimeout", 400),
    "PayloadTooLarge": ("EntityTooLarge", 400),
    "RangeNotSatisfiable": ("InvalidRange", 416),
    "InternalError": ("InternalError", 500),
    "UfsError": ("InternalError", 500),
    # The store is down and the object not cached, or the worker takes no more uploads now:
    # S3 clients back off and retry on SlowDown.
    "UfsUnavailable": ("SlowDown", 503),
    "WorkerBusy": ("SlowDown", 503),
    "DeadlineExceeded": ("ServiceUnavailable", 503),
    # Pins are made through REST v1 and the CLI, never through S3; should one ever surface
    # here, it is the worker's refusal of more than it may hold, as HTTP's own 507 says.
    "PinLimitExceeded": ("InsufficientStorage", 507),
}


FIXED_MESSAGES = {
    "NoSuchKey": "The specified key does not exist.",
    "AccessDenied": "Access Denied",
}
"""S3's own words for errors whose worker message names a URI: the roots behind the buckets
are the worker's business, not the client's (the worker's logs and metrics keep the URI)."""


def from_kind(kind: ErrorKind, message: str, headers: dict[str, str]) -> S3Error:
    """The S3 error for the catalogue's ``kind``."""
    code, status = BY_CATALOGUE.get(kind.code, ("InternalError", 500))
    if kind.code == "InvalidPath":
        message = "the key is not one this endpoint serves: empty, '.' and '..' segments are not"
    return S3Error(code, status, FIXED_MESSAGES.get(code, message), headers)


def translated(exc: Exception) -> S3Error:
    """``exc`` as the S3 error it is answered with; ``exc`` itself, raised again, when it is
    a bug (no catalogued error: the app logs it and answers InternalError)."""
    if isinstance(exc, S3Error):
        return exc
    if isinstance(exc, S3AuthError):
        return S3Error(exc.code, exc.status, exc.message)
    if isinstance(exc, UfsStoreRefused):
        # A whole store's or a store multipart upload's refusal: answered as the store did.
        return S3Error(exc.code, exc.status, str(exc))
    kind = catalogue.kind_of(exc)
    if kind is None:
        raise exc
    return from_kind(kind, str(exc), catalogue.headers_for(exc))


def request_id() -> str:
    """A request id for an answer (S3's ``x-amz-request-id``)."""
    return secrets.token_hex(8).upper()


def answer(error: S3Error, resource: str, head: bool = False, rid: str | None = None) -> Response:
    """The answer to ``error`` about ``resource`` (the request's path); no body for a HEAD."""
    rid = rid or request_id()
    headers = {**error.headers, "x-amz-request-id": rid}
    if head:
        return Response(b"", error.status, headers)
    body = xmlbody.error(error.code, error.message, resource, rid)
    return Response(body, error.status, headers, media_type=xmlbody.MEDIA_TYPE)


def render(kind: ErrorKind, message: str, headers: dict[str, str]) -> Response:
    """The surface's error renderer: for errors the app answers itself (a refused upload, a
    stalled body, a bug), where the resource is not known."""
    return answer(from_kind(kind, message, headers), "")
