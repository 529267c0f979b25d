"""REST v1's error answers: ``{"error": "<Code>", "message": "..."}`` with the catalogue's
status code (``worker.common.errors``). A caller's mistake is never a bare 500."""

from __future__ import annotations

from starlette.responses import Response

from worker.api.jsonbody import json_response
from worker.common.errors import ErrorKind


def error_response(kind: ErrorKind, message: str, headers: dict[str, str]) -> Response:
    """The REST v1 answer for an error of ``kind``."""
    return json_response({"error": kind.code, "message": message}, kind.status, headers)
