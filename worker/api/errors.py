"""REST v1's error answers: ``{"error": "<Code>", "message": "..."}`` with the catalogue's
status code (``worker.errors``). A caller's mistake is never a bare 500."""

from __future__ import annotations

import json

from starlette.responses import Response

from worker.errors import ErrorKind


def error_response(kind: ErrorKind, message: str, headers: dict[str, str]) -> Response:
    """The REST v1 answer for an error of ``kind``."""
    body = json.dumps({"error": kind.code, "message": message})
    return Response(body, kind.status, headers=headers or None, media_type="application/json")
