"""Passing a request a front process does not answer itself to the primary, over the primary's
private unix socket: method, path, query, headers and body as received, the answer's status,
headers and body as sent, both streamed (a 5 GB write or read holds one chunk at a time)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
from starlette.types import Receive, Scope, Send

# Headers about one hop (RFC 9110 §7.6.1), which each connection sets for itself; the
# primary's Host is kept as the client sent it, so absolute URLs it writes stay right.
_HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    }
)
# The front's server writes its own Date and Server headers.
_NOT_PASSED_BACK = _HOP_BY_HOP | {b"date", b"server"}
_BODY_HEADERS = frozenset({b"content-length", b"transfer-encoding"})
# No deadline of its own: the primary's deadlines (X-Dora-Timeout-Ms, slow clients) govern;
# only a primary that does not take the connection at all fails fast.
_TIMEOUT = httpx.Timeout(None, connect=10.0)


def primary_client(socket_path: str) -> httpx.AsyncClient:
    """An HTTP client of the primary's private socket. Use on one event loop."""
    transport = httpx.AsyncHTTPTransport(uds=socket_path)
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=256)
    return httpx.AsyncClient(
        transport=transport, base_url="http://primary", timeout=_TIMEOUT, limits=limits
    )


async def _body(receive: Receive) -> AsyncIterator[bytes]:
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return  # the client went away; the primary sees a body cut short
        if chunk := message.get("body", b""):
            yield chunk
        if not message.get("more_body", False):
            return


def _forwarded(scope: Scope) -> list[tuple[bytes, bytes]]:
    headers: list[tuple[bytes, bytes]] = scope["headers"]
    return [(name, value) for name, value in headers if name.lower() not in _HOP_BY_HOP]


async def forward(primary: httpx.AsyncClient, scope: Scope, receive: Receive, send: Send) -> None:
    """Answer the HTTP request ``scope`` with the primary's answer to it. A body cut by the
    primary is cut here too (the connection is dropped short of its length, as the primary
    does); a primary that cannot be reached is a 502."""
    has_body = any(name in _BODY_HEADERS for name, _ in scope["headers"])
    target = scope["raw_path"] + (b"?" + scope["query_string"] if scope["query_string"] else b"")
    request = primary.build_request(
        scope["method"],
        target.decode("latin-1"),
        headers=_forwarded(scope),
        content=_body(receive) if has_body else None,
    )
    try:
        answer = await primary.send(request, stream=True)
    except httpx.TransportError as exc:
        text = f"the worker's primary process cannot be reached: {type(exc).__name__}"
        await _plain(send, 502, text.encode())
        return
    try:
        headers = [(k, v) for k, v in answer.headers.raw if k.lower() not in _NOT_PASSED_BACK]
        await send({"type": "http.response.start", "status": answer.status_code,
                    "headers": headers})  # fmt: skip
        async for chunk in answer.aiter_raw():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        await answer.aclose()


async def _plain(send: Send, status: int, text: bytes) -> None:
    headers = [(b"content-type", b"text/plain; charset=utf-8"),
               (b"content-length", str(len(text)).encode())]  # fmt: skip
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": text, "more_body": False})
