"""Property keys of the worker's TLS: its certificate, the client CA it requires and the key
that allows a token in clear. The client's trust and certificate, and etcd's client TLS, are
keys a client reads (:mod:`worker.common.client_keys`)."""

from __future__ import annotations

from typing import Any

from config.keys import KeyType, PropertyKey


def _file(name: str, description: str) -> PropertyKey[str | None]:
    return PropertyKey(name, KeyType.STRING, None, description)


WORKER_CERT = _file(
    "dora.worker.tls.cert.file",
    "PEM certificate chain of the worker; with dora.worker.tls.key.file every surface is "
    "served over HTTPS. Replaced files are used for new connections (checked every "
    "dora.worker.tls.reload.interval).",
)
WORKER_KEY = _file("dora.worker.tls.key.file", "PEM private key of dora.worker.tls.cert.file.")
WORKER_CLIENT_CA = _file(
    "dora.worker.tls.client.ca.file",
    "PEM CA bundle; set: every client must present a certificate it signed (mutual TLS; a "
    "client without one is answered 401). A replaced bundle is used for new connections.",
)
WORKER_RELOAD_INTERVAL: PropertyKey[int] = PropertyKey(
    "dora.worker.tls.reload.interval",
    KeyType.DURATION,
    "10s",
    "How often the worker checks its certificate, key and client CA files for a replacement.",
    minimum=10,
)
WORKER_ALLOW_PLAINTEXT: PropertyKey[bool] = PropertyKey(
    "dora.worker.security.token.allow.plaintext",
    KeyType.BOOL,
    "false",
    "Start without a warning when a worker with a token listens beyond loopback without TLS.",
)

KEYS: list[PropertyKey[Any]] = [
    WORKER_CERT,
    WORKER_KEY,
    WORKER_CLIENT_CA,
    WORKER_RELOAD_INTERVAL,
    WORKER_ALLOW_PLAINTEXT,
]
