"""Property keys of TLS: the worker's certificate and the client CA it requires, the client's
trust and certificate, etcd's client TLS, and the two keys that allow a token in clear.

The etcd keys live here rather than with the cluster's: they are read by the same code that
reads the client's (one way to turn PEM files into an ``ssl.SSLContext``)."""

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
USER_CA = _file(
    "dora.user.tls.ca.file",
    "PEM CA bundle a client verifies https:// workers with (empty: the system's store).",
)
USER_CERT = _file(
    "dora.user.tls.cert.file",
    "PEM certificate a client presents to workers that require one (mutual TLS).",
)
USER_KEY = _file("dora.user.tls.key.file", "PEM private key of dora.user.tls.cert.file.")
USER_ALLOW_PLAINTEXT: PropertyKey[bool] = PropertyKey(
    "dora.user.client.token.allow.plaintext",
    KeyType.BOOL,
    "false",
    "Let a client send its token over plain http:// to a worker beyond loopback.",
)
ETCD_CA = _file(
    "dora.cluster.etcd.tls.ca.file",
    "PEM CA bundle https:// etcd endpoints are verified with (empty: the system's store).",
)
ETCD_CERT = _file(
    "dora.cluster.etcd.tls.cert.file",
    "PEM client certificate for etcd (etcd started with --client-cert-auth).",
)
ETCD_KEY = _file(
    "dora.cluster.etcd.tls.key.file", "PEM private key of the etcd client certificate."
)

KEYS: list[PropertyKey[Any]] = [
    WORKER_CERT,
    WORKER_KEY,
    WORKER_CLIENT_CA,
    WORKER_RELOAD_INTERVAL,
    WORKER_ALLOW_PLAINTEXT,
    USER_CA,
    USER_CERT,
    USER_KEY,
    USER_ALLOW_PLAINTEXT,
    ETCD_CA,
    ETCD_CERT,
    ETCD_KEY,
]
