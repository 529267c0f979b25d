"""The worker's side of TLS: the listener's ``ssl.SSLContext`` built from PEM files, and the
reload of a replaced certificate, key or client CA without a restart.

Rotation is by polling (and at once on SIGHUP, :mod:`worker.hangup`): a thread compares the
certificate's, key's and client CA's (inode, mtime, size) every
``dora.worker.tls.reload.interval`` (what cert-manager and a Kubernetes Secret volume do is
replace the files, which a poll notices whether they were rewritten in place or renamed over).
Replaced files are read once into a new context, and only a context that loaded whole is put in
service; one that does not load (half written, a key that does not match, a CA file without a
certificate) leaves the old one serving, with the reason logged once.

A new context rather than a load into the live one, because a context's CA store only grows:
a client CA taken out of the bundle must stop being trusted. uvicorn (and the event loop under
it) keeps the context it was given, so that one stays the listener's and its SNI callback hands
every handshake to the newest context (OpenSSL calls it for every ClientHello, with or without
a server name, and the certificate, key and CA store used from then on are the new context's).

With a client CA the context asks for a certificate but lets a handshake without one complete
(``CERT_OPTIONAL``): the HTTP layer then answers 401 naming the client's key
(:mod:`worker.tls.clientcert`), where a refused handshake would reach the client as a bare
hang-up (asyncio and uvloop close it without sending TLS's alert). A certificate that is
presented is still verified in the handshake, and one the CA did not sign, or expired, ends it.
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
from pagestore import modes
from worker.common.tls import is_loopback
from worker.tls import keys

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
        """What changes when any of the files is replaced (missing files count too)."""
        marks = []
        for path in (self.cert, self.key, self.client_ca):
            try:
                stat = path.stat() if path is not None else None
            except OSError:
                stat = None
            marks.append(
                (0, 0, -1) if stat is None else (stat.st_ino, stat.st_mtime_ns, stat.st_size)
            )
        return tuple(marks)


class Unloadable(Exception):
    """A file of the worker's TLS that does not load: ``key`` names it, ``path`` is its file."""

    def __init__(self, key: str, path: Path, reason: str) -> None:
        super().__init__(f"{key}={path}: {reason}")
        self.key, self.path, self.reason = key, path, reason


def new_context(files: ServerFiles) -> ssl.SSLContext:
    """A server context holding ``files`` as they are now (each read once). Raises Unloadable
    naming the key whose file does not load."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if files.client_ca is not None:
        context.verify_mode = ssl.CERT_OPTIONAL  # none presented: 401 from the HTTP layer
        # No session tickets: a session resumed from one would skip the certificate's check
        # against a client CA rotated since (a full handshake per connection, which clients
        # keep alive anyway).
        context.num_tickets = 0
        context.options |= ssl.OP_NO_TICKET
        try:
            context.load_verify_locations(cadata=files.client_ca.read_text())
        except (OSError, ssl.SSLError, UnicodeDecodeError, ValueError) as exc:
            raise Unloadable(keys.WORKER_CLIENT_CA.name, files.client_ca, _reason(exc)) from None
    try:
        _load_pair(context, files)
    except (OSError, ssl.SSLError) as exc:
        raise Unloadable(keys.WORKER_CERT.name, files.cert, _reason(exc)) from None
    return context


def _load_pair(context: ssl.SSLContext, files: ServerFiles) -> None:
    """Load the pair into ``context`` as it is now: each file read once, so a pair replaced
    while it loads is never half the old and half the new."""
    cert, key = files.cert.read_bytes(), files.key.read_bytes()
    with tempfile.TemporaryDirectory(prefix="dora-tls-") as scratch:
        # The key goes into a directory only this user can read (mkdtemp's mode 0700).
        cert_copy, key_copy = Path(scratch, "cert.pem"), Path(scratch, "key.pem")
        modes.write_file(cert_copy, cert, modes.PRIVATE_FILE)
        modes.write_file(key_copy, key, modes.PRIVATE_FILE)
        context.load_cert_chain(str(cert_copy), str(key_copy))


class ServerTls:
    """The worker's listening ``ssl.SSLContext`` (:attr:`context`, given to uvicorn once), the
    newest context built from the files, and the thread that rebuilds it when they change.

    Thread-safe: :meth:`reload` (the poll thread's, or a SIGHUP's) builds a context under
    ``_reloading``, one at a time; the handshake's SNI callback, on the event loop, reads the
    newest by a reference that is replaced whole.
    """

    def __init__(self, files: ServerFiles, interval_s: float) -> None:
        """Raises Unloadable naming the key whose file does not load."""
        self.files = files
        self.interval_s = interval_s
        self._signature = files.signature()
        self.context = new_context(files)
        self.context.sni_callback = self._hand_over
        self._current = self.context
        self._reloading = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dora-tls-reload", daemon=True)

    @classmethod
    def from_config(cls, config: Config) -> ServerTls | None:
        """The worker's TLS, or None when it serves plain HTTP. Raises ConfigError naming the
        key whose file cannot be read or does not hold what it should."""
        files = ServerFiles.from_config(config)
        if files is None:
            return None
        try:
            return cls(files, config.get(keys.WORKER_RELOAD_INTERVAL) / 1000)
        except Unloadable as exc:
            raise _unusable(exc) from None

    @property
    def current(self) -> ssl.SSLContext:
        """The context new handshakes use: the newest that loaded whole."""
        return self._current

    def _hand_over(self, connection: ssl.SSLObject, _name: str | None, _at: ssl.SSLContext) -> None:
        current = self._current
        if current is not self.context:
            connection.context = current

    def reload(self, force: bool = False) -> bool:
        """Build a new context if the files changed since the last look, or whatever they look
        like with ``force`` (a SIGHUP: a file rewritten with the same size within the same
        mtime tick looks unchanged); whether it did. Files that do not load keep the context in
        use and are logged once (at each forced reload too)."""
        with self._reloading:
            signature = self.files.signature()
            if signature == self._signature and not force:
                return False
            changed = _changed(self._signature, signature)
            self._signature = signature
            return self._build(changed)

    def _build(self, changed: str) -> bool:
        try:
            self._current = new_context(self.files)
        except Unloadable as exc:
            log.warning(
                "worker TLS: keeping the certificate and client CA in use: the replaced %s=%s "
                "does not load (%s)",
                exc.key,
                exc.path,
                exc.reason,
            )
            return False
        log.info(
            "worker TLS: new connections use the files as they are now (changed: %s): %s, "
            "client CA %s",
            changed,
            self.files.cert,
            self.files.client_ca or "none",
        )
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


_FILE_NAMES = ("certificate", "key", "client CA")


def _changed(before: Signature, after: Signature) -> str:
    """Which of the files differ between two signatures, for the log."""
    names = [name for name, b, a in zip(_FILE_NAMES, before, after, strict=True) if b != a]
    return ", ".join(names) or "none"


def _unusable(exc: Unloadable) -> ConfigError:
    return ConfigError(
        f"{exc.key}={exc.path}: cannot use the TLS files ({exc.reason}); expected a PEM "
        f"certificate chain in {keys.WORKER_CERT.name}, its private key in "
        f"{keys.WORKER_KEY.name} and a PEM CA bundle in {keys.WORKER_CLIENT_CA.name}"
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
