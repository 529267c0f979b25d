"""The client's error tree, and the one place a worker's HTTP answer becomes a Python exception.

Every error is a :class:`DoraError` (an ``OSError``) and also the builtin a Python caller expects:
``FileNotFoundError`` for 404, ``PermissionError`` for 401/403, ``FileExistsError`` for 409,
``ValueError`` for a bad request or range, ``ConnectionError`` when no worker (or the UFS behind
it) can be reached. Mapping goes by the ``error`` code of the JSON body first, then by status.
"""

from __future__ import annotations

import json

import httpx


class DoraError(OSError):
    """Base of every error the dora client raises. ``status`` and ``code`` are the worker's HTTP
    status and error code when the error came from a worker's answer; ``worker`` is its address."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        worker: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.worker = worker

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class InvalidRequest(DoraError, ValueError):
    """The worker refused the request as malformed (400): a bad path or parameter."""


class NotFound(DoraError, FileNotFoundError):
    """The path does not exist (404)."""


class AccessDenied(DoraError, PermissionError):
    """The worker refused the caller (401: token) or the path (403: outside the mount roots,
    or the UFS denied access)."""


class AlreadyExists(DoraError, FileExistsError):
    """The target of a create already exists (409)."""


class NotADirectory(DoraError, NotADirectoryError):
    """A directory operation named a file."""


class IsADirectory(DoraError, IsADirectoryError):
    """A file operation named a directory."""


class VersionMismatch(DoraError):
    """The file no longer has the version the caller pinned (412): it changed in the UFS."""


class PayloadTooLarge(DoraError):
    """The worker refused a write body larger than its limit (413)."""


class RangeNotSatisfiable(DoraError, ValueError):
    """The requested byte range is outside the file (416)."""


class UfsFailure(DoraError):
    """The UFS behind the worker failed (502)."""


class UfsUnavailable(DoraError, ConnectionError):
    """The UFS behind the worker is unavailable (503), still after the client's retries.
    ``retry_after`` is the worker's hint in seconds."""

    def __init__(
        self,
        message: str,
        *,
        retry_after: float = 1.0,
        status: int | None = None,
        code: str | None = None,
        worker: str | None = None,
    ) -> None:
        super().__init__(message, status=status, code=code, worker=worker)
        self.retry_after = retry_after


class WorkerUnavailable(DoraError, ConnectionError):
    """No worker could be reached (and the call could not or may not fall back to the UFS), or a
    worker dropped a call that is not safe to repeat."""


class WorkerFailure(DoraError):
    """A worker answered with an error this client does not know (e.g. a 500)."""


_BY_CODE: dict[str, type[DoraError]] = {
    "BadRequest": InvalidRequest,
    "InvalidPath": InvalidRequest,
    "NotADirectory": NotADirectory,
    "IsADirectory": IsADirectory,
    "Unauthorized": AccessDenied,
    "OutsideMountRoots": AccessDenied,
    "PermissionDenied": AccessDenied,
    "NotFound": NotFound,
    "AlreadyExists": AlreadyExists,
    "VersionMismatch": VersionMismatch,
    "PayloadTooLarge": PayloadTooLarge,
    "RangeNotSatisfiable": RangeNotSatisfiable,
    "UfsError": UfsFailure,
    "UfsUnavailable": UfsUnavailable,
}

_BY_STATUS: dict[int, type[DoraError]] = {
    400: InvalidRequest,
    401: AccessDenied,
    403: AccessDenied,
    404: NotFound,
    409: AlreadyExists,
    412: VersionMismatch,
    413: PayloadTooLarge,
    416: RangeNotSatisfiable,
    502: UfsFailure,
    503: UfsUnavailable,
}


def retry_after(response: httpx.Response) -> float:
    """The ``Retry-After`` hint of an answer in seconds (1 when absent or not a number)."""
    try:
        return max(0.0, float(response.headers.get("Retry-After", "1")))
    except ValueError:
        return 1.0


def error_from_response(response: httpx.Response, worker: str, what: str) -> DoraError:
    """The exception for a worker's error answer to ``what`` (e.g. ``"status s3://b/k"``)."""
    code, message = _error_body(response)
    kind = _BY_CODE.get(code or "") or _BY_STATUS.get(response.status_code, WorkerFailure)
    text = f"{what}: {message} (worker {worker}, HTTP {response.status_code} {code or ''})"
    if kind is UfsUnavailable:
        return UfsUnavailable(
            text.rstrip(),
            retry_after=retry_after(response),
            status=response.status_code,
            code=code,
            worker=worker,
        )
    return kind(text.rstrip(), status=response.status_code, code=code, worker=worker)


def _error_body(response: httpx.Response) -> tuple[str | None, str]:
    """(code, message) from a ``{"error", "message"}`` body; a non-JSON body becomes the message
    (a proxy or a crashed worker may answer in plain text)."""
    try:
        body = json.loads(response.content or b"null")
    except ValueError:
        return None, response.text[:200] or response.reason_phrase
    if isinstance(body, dict):
        code = body.get("error")
        message = body.get("message")
        return (str(code) if code else None), str(message or response.reason_phrase)
    return None, response.reason_phrase
