"""Mutual TLS at the HTTP layer: a connection's TLS facts put into each request's scope (ASGI's
TLS extension), and the 401 for a request whose connection presented no client certificate.

The handshake asks for a certificate without requiring one (``worker.tls.server``): a refused
handshake reaches the client as a bare hang-up, since asyncio and uvloop close it without
sending TLS's alert, whereas an answer can say what is missing and which key sets it. A
certificate that is presented is verified in the handshake as before.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections.abc import Callable

from cryptography import x509
from cryptography.x509.oid import NameOID
from starlette.types import ASGIApp, Receive, Scope, Send

from worker.common import client_keys
from worker.common.errors import Unauthorized
from worker.tls import keys

MISSING = (
    "no client certificate: this worker requires one signed by the CA in its "
    f"{keys.WORKER_CLIENT_CA.name} (mutual TLS); set {client_keys.USER_CERT.name} and "
    f"{client_keys.USER_KEY.name} on the client"
)


def tls_extension(transport: asyncio.BaseTransport) -> dict[object, object] | None:
    """ASGI's ``extensions["tls"]`` for a connection (None for one without TLS): the version
    and the client's certificate, verified in the handshake, as PEM (an empty chain: none)."""
    connection = transport.get_extra_info("ssl_object")
    if not isinstance(connection, ssl.SSLObject | ssl.SSLSocket):
        return None
    der = connection.getpeercert(binary_form=True)
    return {
        "tls_version": connection.version(),
        "client_cert_chain": [ssl.DER_cert_to_PEM_cert(der)] if der else [],
    }


def presented(scope: Scope) -> bool:
    """Whether the request's connection presented a client certificate (the handshake has
    verified any it did)."""
    tls = scope.get("extensions", {}).get("tls") or {}
    return bool(tls.get("client_cert_chain"))


def subject_name(scope: Scope) -> str | None:
    """Who the request's connection proved to be: the subject common name (CN) of the client
    certificate the handshake verified (its whole subject, RFC 4514, if it has no CN), or None
    when it presented none."""
    tls = scope.get("extensions", {}).get("tls") or {}
    chain = tls.get("client_cert_chain")
    return _subject(chain[0]) if chain else None


@functools.lru_cache(maxsize=256)
def _subject(pem: str) -> str:
    # Cached by certificate: a connection's requests, and a client's connections, present the
    # same one, and parsing it costs more than the rest of a cached lookup.
    subject = x509.load_pem_x509_certificate(pem.encode("ascii")).subject
    names = subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if names:
        value = names[0].value
        return value if isinstance(value, str) else value.decode("utf-8", "replace")
    return subject.rfc4514_string()


class ClientCertCheck:
    """Pure ASGI middleware: an HTTP request whose connection presented no client certificate
    is answered by ``refuse(scope, Unauthorized(MISSING))``, the error in the shape of the
    surface owning its path, probes included (the chart's probes present the worker's own).
    Stateless, so safe for concurrent requests."""

    def __init__(self, app: ASGIApp, refuse: Callable[[Scope, Exception], ASGIApp]) -> None:
        self.app = app
        self._refuse = refuse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not presented(scope):
            await self._refuse(scope, Unauthorized(MISSING))(scope, receive, send)
            return
        await self.app(scope, receive, send)
