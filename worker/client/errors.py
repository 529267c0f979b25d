"""The client's error tree, and the one place a worker's HTTP answer becomes a Python exception.

Every error is a :class:`DoraError` (an ``OSError``) and also the builtin a Python caller expects:
``FileNotFoundError`` for 404, ``PermissionError`` for 401/403, ``FileExistsError`` for 409,
``ValueError`` for a bad request or range, ``ConnectionError`` when no worker (or the UFS behind
it) can be reached, ``TimeoutError`` when the UFS did not answer within the time the client
said it waits (504). The classes and the code/status table live in the error catalogue
(:mod:`worker.common.errors`), shared with the worker and every other surface; this module reads an
answer and asks the catalogue, by the ``error`` code of the JSON body first, then by status.
"""

from __future__ import annotations

import json

import httpx

from worker.common import errors as catalogue
from worker.common.errors import (
    AccessDenied,
    AlreadyExists,
    DeadlineExceeded,
    DoraError,
    InvalidRequest,
    IsADirectory,
    NotADirectory,
    NotFound,
    PayloadTooLarge,
    RangeNotSatisfiable,
    RequestTimeout,
    UfsFailure,
    UfsUnavailable,
    Unauthorized,
    VersionMismatch,
    WorkerBusy,
    WorkerFailure,
    WorkerUnavailable,
)

__all__ = [
    "AccessDenied",
    "AlreadyExists",
    "DeadlineExceeded",
    "DoraError",
    "InvalidRequest",
    "IsADirectory",
    "NotADirectory",
    "NotFound",
    "PayloadTooLarge",
    "RangeNotSatisfiable",
    "RequestTimeout",
    "UfsFailure",
    "UfsUnavailable",
    "Unauthorized",
    "VersionMismatch",
    "WorkerBusy",
    "WorkerFailure",
    "WorkerUnavailable",
    "error_from_response",
    "retry_after",
]


def retry_after(response: httpx.Response) -> float:
    """The ``Retry-After`` hint of an answer in seconds (1 when absent or not a number)."""
    try:
        return max(0.0, float(response.headers.get("Retry-After", "1")))
    except ValueError:
        return 1.0


def error_from_response(response: httpx.Response, worker: str, what: str) -> DoraError:
    """The exception for a worker's error answer to ``what`` (e.g. ``"status s3://b/k"``)."""
    code, message = _error_body(response)
    text = f"{what}: {message} (worker {worker}, HTTP {response.status_code} {code or ''})"
    return catalogue.client_error(
        catalogue.for_answer(code, response.status_code),
        text.rstrip(),
        status=response.status_code,
        code=code,
        worker=worker,
        retry_after=retry_after(response),
    )


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
