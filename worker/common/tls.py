"""The client's side of TLS: which CA a client trusts and which certificate it presents (for
workers and for etcd), the one place a failed handshake becomes an error naming the worker and
the reason, and the rule that a token never travels in clear beyond loopback.

Files are checked when the options are resolved (so a wrong path fails at once, naming the key)
and contexts are built per client, never pickled: options travel to Spark executors as paths.
"""

from __future__ import annotations

import ipaddress
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

from config import Config, ConfigError
from worker.common import client_keys
from worker.common.errors import AccessDenied, WorkerUnavailable


class WorkerNotTrusted(WorkerUnavailable):
    """A worker's TLS handshake failed: its certificate is not trusted (unknown CA, expired,
    another host's name), or it refused ours. Raised at once: no other worker is tried and a
    read does not fall back to the UFS, since every try would hide a setup to fix."""


class PlaintextRefused(AccessDenied):
    """The client would have sent its token over plain HTTP to a worker beyond loopback."""


@dataclass(frozen=True)
class PemFiles:
    """A CA bundle to verify a server by (None: the system's store) and a certificate with its
    key to present (both or neither). ``names`` are the keys or options that set each, for
    errors. Immutable and picklable."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    names: tuple[str, str, str] = (
        client_keys.USER_CA.name,
        client_keys.USER_CERT.name,
        client_keys.USER_KEY.name,
    )

    def context(self) -> ssl.SSLContext:
        """A client context that verifies the server's certificate and host name. Raises
        ValueError naming the key whose file cannot be used."""
        ca_name, cert_name, _ = self.names
        try:
            context = ssl.create_default_context(cafile=self.ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(
                f"{ca_name}={self.ca_file}: not a PEM CA bundle ({_why(exc)})"
            ) from None
        if self.cert_file and self.key_file:
            try:
                context.load_cert_chain(self.cert_file, self.key_file)
            except (OSError, ssl.SSLError) as exc:
                raise ConfigError(
                    f"{cert_name}={self.cert_file}: cannot load the client certificate and its "
                    f"key ({_why(exc)})"
                ) from None
        return context

    def checked(self) -> PemFiles:
        """These files, once :meth:`context` has loaded them. Raises ValueError naming the key
        for a missing or unusable file, or half a certificate pair."""
        _, cert_name, key_name = self.names
        if bool(self.cert_file) != bool(self.key_file):
            given, missing = (cert_name, key_name) if self.cert_file else (key_name, cert_name)
            raise ConfigError(
                f"{given} is set but {missing} is not: a client certificate needs both"
            )
        if self.ca_file or self.cert_file:
            self.context()
        return self


def user_files(
    config: Config,
    ca_file: str | None = None,
    cert_file: str | None = None,
    key_file: str | None = None,
) -> PemFiles:
    """The client's files: each argument (a storage option) over its ``dora.user.tls.*`` key.
    Raises ValueError naming the key or option whose file cannot be used."""
    return PemFiles(
        ca_file or config.get(client_keys.USER_CA),
        cert_file or config.get(client_keys.USER_CERT),
        key_file or config.get(client_keys.USER_KEY),
    ).checked()


def etcd_files(config: Config) -> PemFiles:
    """etcd's client TLS from ``dora.cluster.etcd.tls.*``. Raises ValueError naming the key."""
    return PemFiles(
        config.get(client_keys.ETCD_CA),
        config.get(client_keys.ETCD_CERT),
        config.get(client_keys.ETCD_KEY),
        (client_keys.ETCD_CA.name, client_keys.ETCD_CERT.name, client_keys.ETCD_KEY.name),
    ).checked()


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 possibly in brackets) stays on this machine."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def refuse_plaintext(url: str, worker: str, allowed: bool) -> None:
    """Raise PlaintextRefused, naming the key that allows it, when a request carrying a token
    to ``url`` would travel in clear beyond loopback."""
    parts = urlsplit(url)
    if allowed or parts.scheme != "http" or is_loopback(parts.hostname or ""):
        return
    raise PlaintextRefused(
        f"worker {worker}: not sending the token in clear over http:// beyond loopback; reach "
        f"the worker over https:// (dora.worker.tls.cert.file on the worker, https://{worker} "
        f"in dora.user.workers), or set {client_keys.USER_ALLOW_PLAINTEXT.name}=true on a trusted "
        "network",
        worker=worker,
    )


# OpenSSL's reasons for a handshake the peer ended with an alert (our certificate refused,
# or none sent where one is required) or that cannot be TLS at all (a plain HTTP server).
_PEER_REFUSED = ("ALERT", "WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG")


def tls_failure(exc: BaseException) -> str | None:
    """Why a TLS handshake failed, from an exception that a failed handshake caused (anywhere
    in its chain), or None when TLS is not what failed."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ssl.SSLCertVerificationError):
            return f"its certificate is not trusted: {current.verify_message}"
        if isinstance(current, ssl.SSLError) and any(
            part in (current.reason or "") for part in _PEER_REFUSED
        ):
            return f"the TLS handshake failed: {current.reason}"
        current = current.__cause__ or current.__context__
    return None


def client_cert_refused(files: PemFiles) -> str:
    """The likely reason a worker hung up twice, on fresh connections, on a client that
    presents a certificate: it refused the certificate in the handshake, whose end TLS 1.3
    leaves to the server after the client's side is done, and asyncio and uvloop close it
    without sending TLS's alert (a client with none is answered 401 instead)."""
    _, cert_name, _ = files.names
    return (
        "it hung up right after the TLS handshake: it most likely refuses our client "
        f"certificate {cert_name}={files.cert_file} (not signed by the CA in the worker's "
        "dora.worker.tls.client.ca.file, or expired)"
    )


def _why(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError):
        return exc.reason or str(exc)
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)
