"""The worker's side of TLS: the listener's ``ssl.SSLContext`` built from PEM files, and the
reload of a replaced certificate without a restart.

Rotation is by polling: a thread compares the certificate's and key's (inode, mtime, size)
every ``dora.worker.tls.reload.interval`` (what cert-manager and a Kubernetes Secret volume do
is replace the files, which a poll notices whether they were rewritten in place or renamed over).
A replaced pair is read once, checked in a scratch context, and only then loaded into the live
context: ``load_cert_chain`` on a live context applies to every handshake after it, and a pair
that does not load (half written, a key that does not match) leaves the old one serving, with
the reason logged once.
"""

from __future__ import annotations

import logging
import ssl
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from config import Config, ConfigError
from worker.tls import keys
from worker.tls.client import is_loopback

log = logging.getLogger(__name__)

Signature = tuple[tuple[int, int, int], ...]


@dataclass(frozen=True)
class ServerFiles:
    """The PEM files of a worker's TLS: its certificate chain and key, and the CA its clients'
    certificates must be signed by (None: no client certificate asked for)."""

    cert: Path
    key: Path
    client_ca: Path | None

    @classmethod
    def from_config(cls, config: Config) -> ServerFiles | None:
        """The files the keys name, or None without TLS. Raises ConfigError naming the key when
        only one of the pair is set or a client CA is set without them."""
        cert, key = config.get(keys.WORKER_CERT), config.get(keys.WORKER_KEY)
        client_ca = config.get(keys.WORKER_CLIENT_CA)
        if not cert and not key:
            if client_ca:
                raise config.invalid(
                    keys.WORKER_CLIENT_CA,
                    f"mutual TLS needs {keys.WORKER_CERT.name} and {keys.WORKER_KEY.name} too",
                )
            return None
        if not cert or not key:
            given, missing = keys.WORKER_CERT, keys.WORKER_KEY
            if not cert:
                given, missing = missing, given
            raise config.invalid(given, f"{missing.name} must be set as well")
        return cls(Path(cert), Path(key), Path(client_ca) if client_ca else None)

    def signature(self) -> Signature:
        """What changes when either file of the pair is replaced (missing files count too)."""
        marks = []
        for path in (self.cert, self.key):
            try:
                stat = path.stat()
            except OSError:
                marks.append((0, 0, -1))
                continue
            marks.append((stat.st_ino, stat.st_mtime_ns, stat.st_size))
        return tuple(marks)


def _new_context(client_ca: Path | None) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if client_ca is not None:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cafile=str(client_ca))
    return context


def _load_pair(context: ssl.SSLContext, files: ServerFiles) -> None:
    """Load the pair into ``context`` as it is now: read once, checked in a scratch context
    first, so a failure (raised as ssl.SSLError or OSError) leaves ``context`` as it was."""
    cert, key = files.cert.read_bytes(), files.key.read_bytes()
    with tempfile.TemporaryDirectory(prefix="dora-tls-") as scratch:
        # The key goes into a directory only this user can read (mkdtemp's mode 0700).
        cert_copy, key_copy = Path(scratch, "cert.pem"), Path(scratch, "key.pem")
        cert_copy.write_bytes(cert)
        key_copy.write_bytes(key)
        _new_context(None).load_cert_chain(str(cert_copy), str(key_copy))
        context.load_cert_chain(str(cert_copy), str(key_copy))


class ServerTls:
    """The worker's live ``ssl.SSLContext`` and the thread that reloads its certificate.

    Thread-safe: only the reload thread (or a caller of :meth:`reload`, one at a time) loads
    into the context; OpenSSL applies a load to the handshakes that start after it.
    """

    def __init__(
        self, files: ServerFiles, interval_s: float, context: ssl.SSLContext | None = None
    ) -> None:
        self.files = files
        self.interval_s = interval_s
        self.context = context or _new_context(files.client_ca)
        self._signature = files.signature()
        _load_pair(self.context, files)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dora-tls-reload", daemon=True)

    @classmethod
    def from_config(cls, config: Config) -> ServerTls | None:
        """The worker's TLS, or None when it serves plain HTTP. Raises ConfigError naming the
        key whose file cannot be read or does not hold what it should."""
        files = ServerFiles.from_config(config)
        if files is None:
            return None
        interval_s = config.get(keys.WORKER_RELOAD_INTERVAL) / 1000
        try:
            context = _new_context(files.client_ca)
        except (OSError, ssl.SSLError) as exc:
            raise _unusable(keys.WORKER_CLIENT_CA.name, files.client_ca, exc) from None
        try:
            return cls(files, interval_s, context)
        except (OSError, ssl.SSLError) as exc:
            raise _unusable(keys.WORKER_CERT.name, files.cert, exc) from None

    def reload(self) -> bool:
        """Load the pair again if its files changed since the last look; whether it did. A pair
        that does not load keeps the old one and is logged once."""
        signature = self.files.signature()
        if signature == self._signature:
            return False
        self._signature = signature
        try:
            _load_pair(self.context, self.files)
        except (OSError, ssl.SSLError) as exc:
            log.warning(
                "worker TLS: keeping the certificate in use: the replaced %s / %s does not "
                "load (%s)",
                self.files.cert,
                self.files.key,
                _reason(exc),
            )
            return False
        log.info("worker TLS: now serving the replaced certificate %s", self.files.cert)
        return True

    def start(self) -> None:
        """Check for replaced files every interval until :meth:`close`."""
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.reload()

    def close(self) -> None:
        """Stop checking. Idempotent."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


def _unusable(key: str, path: Path | None, exc: BaseException) -> ConfigError:
    return ConfigError(
        f"{key}={path}: cannot use the TLS files ({_reason(exc)}); expected a PEM certificate "
        f"chain in {keys.WORKER_CERT.name}, its private key in {keys.WORKER_KEY.name} and a "
        f"PEM CA bundle in {keys.WORKER_CLIENT_CA.name}"
    )


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError):
        return exc.reason or str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return str(exc)


def plaintext_warning(config: Config, host: str, token_key: str) -> str | None:
    """The warning a worker without TLS logs at start when its token would travel in clear:
    ``token_key`` is set and it listens beyond loopback, and the allowing key is not set."""
    if not config.setting(token_key).value or config.get(keys.WORKER_ALLOW_PLAINTEXT):
        return None
    if is_loopback(host):
        return None
    return (
        f"the worker's token ({token_key}) travels in clear: it listens on {host} without "
        f"TLS; set {keys.WORKER_CERT.name} and {keys.WORKER_KEY.name}, or "
        f"{keys.WORKER_ALLOW_PLAINTEXT.name}=true on a trusted network"
    )


def warn_plaintext(config: Config, host: str, tls: ServerTls | None, token_key: str) -> None:
    """Log :func:`plaintext_warning`'s warning for a worker without TLS, if it has one."""
    warning = None if tls is not None else plaintext_warning(config, host, token_key)
    if warning:
        log.warning("%s", warning)


@contextmanager
def reloading(tls: ServerTls | None) -> Iterator[None]:
    """Check ``tls``'s files for a replacement while the block runs (nothing without TLS)."""
    if tls is None:
        yield
        return
    tls.start()
    try:
        yield
    finally:
        tls.close()
