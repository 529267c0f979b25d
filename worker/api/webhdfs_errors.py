"""How the WebHDFS surface answers errors and reads credentials.

Errors are ``{"RemoteException": {"exception", "javaClassName", "message"}}`` with the status
and Java exception of the error catalogue (``worker.common.errors``: each kind's ``hadoop`` class),
which Hadoop's client re-creates (``RemoteException.unwrapRemoteException``), so a Spark job
fails with ``FileNotFoundException`` or ``AccessControlException``, not a bare ``IOException``.

Credentials: ``Authorization: Bearer <token>`` (what the Hadoop client's OAuth2 settings send)
or the ``delegation=<token>`` query parameter (for clients that add parameters, such as curl).
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.responses import Response
from starlette.types import Scope

from worker.api.jsonbody import json_body
from worker.api.params import Dialect
from worker.api.surface import bearer_token
from worker.common.errors import ErrorKind

DIALECT = Dialect(
    fold_case=True,
    missing=lambda name: f'Missing webhdfs parameter "{name}"',
    invalid=lambda name, shown, expected: (
        f'Invalid value for webhdfs parameter "{name}": {shown}: {expected}'
    ),
)
"""WebHDFS parameters: names in any case and refusals in the NameNode's words, as Hadoop's
client and shell show them."""

CREDENTIAL_HINT = (
    "Authorization: Bearer <token> (Hadoop: the dfs.webhdfs.oauth2.* settings) "
    "or the query parameter delegation=<token>"
)


def json_answer(data: object, status: int = 200) -> Response:
    """A JSON answer with no Content-Type: the Hadoop client checks one with a media-type
    parser its shaded jar cannot load (``ClassNotFoundException ...RuntimeDelegateImpl``)."""
    return Response(json_body(data), status)


def render_error(kind: ErrorKind, message: str, headers: dict[str, str]) -> Response:
    """The RemoteException answer for an error of ``kind``."""
    body = {
        "RemoteException": {
            "exception": kind.hadoop_name,
            "javaClassName": kind.hadoop,
            "message": message,
        }
    }
    response = json_answer(body, kind.status)
    response.headers.update(headers)
    return response


def credential(scope: Scope) -> bytes | None:
    """The token of a bearer header, else of a ``delegation`` query parameter."""
    given = bearer_token(scope)
    if given is not None:
        return given
    query: bytes = scope.get("query_string", b"")
    for name, value in parse_qsl(query.decode("latin-1")):
        if name.lower() == "delegation" and value:
            return value.encode()
    return None
