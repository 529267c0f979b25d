"""Errors to HTTP answers, in one place: ``{"error": "<Code>", "message": "..."}`` with the status
codes of DESIGN.md. A caller's mistake is never a bare 500."""

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
from worker.meta.errors import VersionMismatch
from worker.service import RangeNotSatisfiable

log = logging.getLogger(__name__)


class BadRequest(ValueError):
    """A request parameter is missing or malformed; the message names it."""


class Unauthorized(Exception):
    """The bearer token is missing or wrong."""


class PayloadTooLarge(Exception):
    """A request body exceeds ``dora.worker.http.max.write.size``."""


# Most specific first: several UFS errors share base classes.
_MAPPING: tuple[tuple[type[BaseException], int, str], ...] = (
    (BadRequest, 400, "BadRequest"),
    (ConfigError, 400, "BadRequest"),
    (UfsInvalidPath, 400, "InvalidPath"),
    (UfsNotADirectory, 400, "NotADirectory"),
    (UfsIsADirectory, 400, "IsADirectory"),
    (IsADirectoryError, 400, "IsADirectory"),
    (Unauthorized, 401, "Unauthorized"),
    (UfsOutsideRoots, 403, "OutsideMountRoots"),
    (UfsPermissionDenied, 403, "PermissionDenied"),
    (UfsNotFound, 404, "NotFound"),
    (UfsAlreadyExists, 409, "AlreadyExists"),
    (VersionMismatch, 412, "VersionMismatch"),
    (UfsVersionChanged, 412, "VersionMismatch"),
    (PayloadTooLarge, 413, "PayloadTooLarge"),
    (RangeNotSatisfiable, 416, "RangeNotSatisfiable"),
    (UfsUnavailable, 503, "UfsUnavailable"),
    (UfsError, 502, "UfsError"),
)


def classify(exc: BaseException) -> tuple[int, str] | None:
    """The (status, code) for a known error, or None for a bug."""
    for kind, status, code in _MAPPING:
        if isinstance(exc, kind):
            return status, code
    return None


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> Response:
    body = json.dumps({"error": code, "message": message})
    return Response(body, status, headers=headers, media_type="application/json")


def response_for(exc: BaseException) -> Response:
    """The HTTP answer for ``exc``; an unexpected error is logged and answered 500 without
    internals."""
    known = classify(exc)
    if known is None:
        log.exception("unexpected error", exc_info=exc)
        return error_response(500, "InternalError", f"internal error: {type(exc).__name__}")
    status, code = known
    headers = None
    if isinstance(exc, UfsUnavailable):
        headers = {"Retry-After": str(exc.retry_after)}
    if isinstance(exc, Unauthorized):
        headers = {"WWW-Authenticate": "Bearer"}
    return error_response(status, code, str(exc), headers)
