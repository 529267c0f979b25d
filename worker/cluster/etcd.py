"""The etcd v3 client the cluster uses: etcd3gw over etcd's grpc-gateway (JSON over HTTP).

Why etcd3gw and the gateway (docs/consistency.md has the comparison): it is maintained (OpenStack),
typed, synchronous and pure Python over ``requests``, so it works the same in the threaded worker
and in forked Spark Python workers, where a gRPC channel must not cross a fork. Debian's etcd
3.4 serves the gateway under ``/v3/`` (``/v3beta/`` too; ``/v3alpha/`` is gone); etcd3gw finds
the prefix from ``/version``.

etcd3gw's own ``Watcher`` drops what the feed needs (a watch cancelled by compaction, progress
notifications, the end of the stream), so :class:`WatchStream` reads the watch stream itself over
the same session. Errors are translated once, here: :class:`EtcdUnavailable` (no endpoint
answered in time), :class:`EtcdError` (etcd refused the call), :class:`Compacted`.

With :class:`Credentials` (etcd's own users and roles: etcd3gw has no authentication of its
own), each endpoint's session gets a token from ``/auth/authenticate`` before its first call and
sends it with every call; a token etcd no longer takes (it lapsed, ``--auth-token-ttl``, or etcd
restarted) is replaced once per call.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import socket
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, cast
from urllib.parse import urlsplit

import requests
from etcd3gw import exceptions as gw_errors
from etcd3gw.client import Etcd3Client

from config import Config
from worker.common import client_keys
from worker.common.credentials import Credentials
from worker.common.tls import PemFiles, etcd_files

log = logging.getLogger(__name__)

# gRPC's status code for a missing or invalid token, in the gateway's error answers.
_UNAUTHENTICATED = 16


class EtcdUnavailable(Exception):
    """No etcd endpoint answered within the deadline (refused, timed out, or dropped)."""


class EtcdError(Exception):
    """etcd answered, but refused the call (a bad request, a missing lease, ...)."""


class Compacted(Exception):
    """A watch asked for history older than etcd keeps: it was compacted up to ``revision``."""

    def __init__(self, revision: int) -> None:
        super().__init__(f"etcd compacted its history up to revision {revision}")
        self.revision = revision


class WatchRefused(EtcdUnavailable):
    """etcd cancelled a watch as it created it (no valid token, no permission)."""


@dataclass(frozen=True)
class KeyValue:
    """One key as etcd stores it; ``lease`` is 0 for a key without a lease."""

    key: str
    value: bytes
    mod_revision: int
    lease: int = 0


@dataclass(frozen=True)
class WatchEvent:
    """A put (``deleted`` False) or delete of ``kv.key`` at ``kv.mod_revision``."""

    kv: KeyValue
    deleted: bool


@dataclass(frozen=True)
class WatchReply:
    """One answer on a watch stream: events in revision order, or, with none, a progress
    notification saying every event up to ``revision`` has been delivered."""

    revision: int
    events: tuple[WatchEvent, ...]


def _encode(data: str | bytes) -> str:
    """The gateway's form of bytes: base64 (text is UTF-8 first)."""
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def _decode(data: str) -> bytes:
    return base64.b64decode(data)


def _prefix_end(prefix: str) -> str:
    """The range end that makes a range "every key starting with ``prefix``"."""
    raw = bytearray(prefix.encode())
    raw[-1] += 1  # our prefixes end in "/" or a letter, never 0xff
    return _encode(bytes(raw))


def _kv(raw: dict[str, Any], with_value: bool = True) -> KeyValue:
    value = _decode(raw["value"]) if with_value and "value" in raw else b""
    return KeyValue(
        key=_decode(raw["key"]).decode(),
        value=value,
        mod_revision=int(raw.get("mod_revision", 0)),
        lease=int(raw.get("lease", 0)),
    )


class Etcd:
    """A client for one etcd cluster given by its endpoints (``http://host:port``).

    Every call has the deadline ``timeout_s``; a call an endpoint cannot take goes to the next
    endpoint, and when none takes it raises :class:`EtcdUnavailable`. With ``credentials``,
    calls carry a token (see the module docstring); a refused authentication is
    :class:`EtcdError`. ``tls`` verifies ``https://`` endpoints (the system's store without a
    CA) and presents a client certificate when it has one (etcd's ``--client-cert-auth``).
    Thread-safe (a ``requests.Session`` per endpoint, shared, as ``requests`` allows for plain
    calls; a token is swapped in one assignment); not fork-safe: a forked process builds its
    own.
    """

    def __init__(
        self,
        endpoints: Sequence[str],
        timeout_s: float,
        credentials: Credentials | None = None,
        tls: PemFiles | None = None,
    ) -> None:
        if not endpoints:
            raise ValueError("etcd: at least one endpoint is needed")
        self.endpoints = tuple(endpoints)
        self.timeout_s = timeout_s
        self._credentials = credentials
        self._clients = [_client(endpoint, timeout_s, tls) for endpoint in self.endpoints]
        # Given with each request: requests lets REQUESTS_CA_BUNDLE override a session's CA.
        self._verify: dict[str, Any] = {"verify": tls.ca_file} if tls and tls.ca_file else {}
        self._lock = threading.Lock()
        self._current = 0

    @classmethod
    def from_config(cls, config: Config) -> Etcd:
        """The cluster's etcd as ``dora.cluster.etcd.*`` name it (the endpoints must be set)."""
        endpoints: list[str] = config.get(client_keys.ETCD_ENDPOINTS)
        return cls(
            endpoints,
            config.get(client_keys.ETCD_TIMEOUT) / 1000,
            Credentials.from_config(config),
            etcd_files(config),
        )

    # -- authentication ------------------------------------------------------------------------

    def _authenticate(self, index: int) -> None:
        """A fresh token from endpoint ``index``, sent with every later call there."""
        assert self._credentials is not None
        client = self._clients[index]
        user = self._credentials.user
        body = {"name": user, "password": self._credentials.password}
        try:
            # Without the old token: etcd checks a token sent even to this call.
            answer = client.post(
                client.get_url("/auth/authenticate"),
                json=body,
                headers={"Authorization": None},
                **self._verify,
            )
        except (gw_errors.ConnectionFailedError, gw_errors.ConnectionTimeoutError):
            raise
        except gw_errors.Etcd3Exception as exc:
            raise EtcdError(f"etcd refused user {user!r}: {_detail(exc)}") from None
        client.session.headers["Authorization"] = str(answer["token"])

    def _call(self, index: int, path: str, body: dict[str, Any]) -> dict[str, Any]:
        client = self._clients[index]
        if self._credentials is not None and "Authorization" not in client.session.headers:
            self._authenticate(index)
        try:
            return cast(
                dict[str, Any], client.post(client.get_url(path), json=body, **self._verify)
            )
        except gw_errors.Etcd3Exception as exc:
            if self._credentials is None or _grpc_code(exc) != _UNAUTHENTICATED:
                raise
        self._authenticate(index)  # the token lapsed, or etcd restarted: a new one, once
        return cast(dict[str, Any], client.post(client.get_url(path), json=body, **self._verify))

    # -- plain calls ---------------------------------------------------------------------------

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        failures: list[str] = []
        with self._lock:
            start = self._current
        for step in range(len(self._clients)):
            index = (start + step) % len(self._clients)
            try:
                answer = self._call(index, path, body)
            except (gw_errors.ConnectionFailedError, gw_errors.ConnectionTimeoutError) as exc:
                failures.append(f"{self.endpoints[index]}: {type(exc).__name__}")
                continue
            except gw_errors.Etcd3Exception as exc:
                raise EtcdError(f"etcd {path}: {_detail(exc)}") from exc
            except requests.RequestException as exc:
                failures.append(f"{self.endpoints[index]}: {type(exc).__name__}")
                continue
            with self._lock:
                self._current = index
            return answer
        raise EtcdUnavailable(f"etcd {path}: no endpoint answered ({'; '.join(failures)})")

    def revision(self, key: str) -> int:
        """The store's current revision, read through ``key`` (a key the user may read: etcd
        checks permissions on any range)."""
        answer = self._post("/kv/range", {"key": _encode(key), "count_only": True})
        return int(answer["header"]["revision"])

    def get(self, key: str) -> KeyValue | None:
        answer = self._post("/kv/range", {"key": _encode(key)})
        kvs = answer.get("kvs") or []
        return _kv(kvs[0]) if kvs else None

    def get_prefix(self, prefix: str) -> tuple[int, list[KeyValue]]:
        """Every key under ``prefix`` and the revision the answer is consistent at."""
        answer = self._post("/kv/range", {"key": _encode(prefix), "range_end": _prefix_end(prefix)})
        return int(answer["header"]["revision"]), [_kv(kv) for kv in answer.get("kvs") or []]

    def put(self, key: str, value: bytes, lease: int = 0) -> int:
        """Store ``value`` at ``key`` (attached to ``lease`` unless 0); the new revision."""
        body: dict[str, Any] = {"key": _encode(key), "value": _encode(value)}
        if lease:
            body["lease"] = str(lease)  # int64: a string keeps every digit
        return int(self._post("/kv/put", body)["header"]["revision"])

    def create(self, key: str, value: bytes, lease: int) -> bool:
        """Store ``value`` at ``key``, attached to ``lease``, only if ``key`` does not exist
        (one transaction); whether it did (an election's claim)."""
        claim = {"key": _encode(key), "value": _encode(value), "lease": str(lease)}
        body = {
            "compare": [{"key": _encode(key), "result": "EQUAL", "target": "CREATE",
                         "create_revision": 0}],
            "success": [{"request_put": claim}],
        }  # fmt: skip
        return bool(self._post("/kv/txn", body).get("succeeded", False))

    def delete(self, key: str) -> int:
        return int(self._post("/kv/deleterange", {"key": _encode(key)})["header"]["revision"])

    def grant(self, ttl_s: int) -> int:
        """A new lease of ``ttl_s`` seconds; its id."""
        return int(self._post("/lease/grant", {"TTL": ttl_s, "ID": 0})["ID"])

    def keepalive(self, lease: int) -> int:
        """Renew ``lease``; the seconds it now has left, 0 if etcd no longer knows it."""
        answer = self._post("/lease/keepalive", {"ID": str(lease)})
        return int(answer.get("result", {}).get("TTL", 0))

    def revoke(self, lease: int) -> None:
        """Drop ``lease`` and every key attached to it."""
        self._post("/kv/lease/revoke", {"ID": str(lease)})

    def compact(self, revision: int) -> None:
        """Discard history before ``revision`` (what an operator's auto-compaction does)."""
        self._post("/kv/compaction", {"revision": revision, "physical": True})

    # -- watching ------------------------------------------------------------------------------

    def watch(
        self, key: str, *, prefix: bool, start_revision: int, idle_timeout_s: float
    ) -> WatchStream:
        """A stream of changes to ``key`` (or every key under it, with ``prefix``) from
        ``start_revision`` on. ``idle_timeout_s``: silence after which the stream counts as
        dead (:class:`EtcdUnavailable`); progress notifications are asked for, so a live etcd
        configured with a shorter ``--experimental-watch-progress-notify-interval`` never
        looks dead. Raises EtcdUnavailable when no endpoint takes the watch."""
        request: dict[str, Any] = {
            "key": _encode(key),
            "start_revision": start_revision,
            "progress_notify": True,
        }
        if prefix:
            request["range_end"] = _prefix_end(key)
        failures: list[str] = []
        for index in range(len(self._clients)):
            try:
                return self._watch_on(index, request, idle_timeout_s)
            except (requests.RequestException, gw_errors.Etcd3Exception, EtcdUnavailable) as exc:
                failures.append(f"{self.endpoints[index]}: {exc}")
        raise EtcdUnavailable(f"etcd watch: no endpoint answered ({'; '.join(failures)})")

    def _watch_on(self, index: int, request: dict[str, Any], idle_timeout_s: float) -> WatchStream:
        """A watch created on endpoint ``index``; with credentials, one refusal is answered by
        a new token and a second try (the token may have lapsed); a second refusal is
        :class:`EtcdError` (the user may not read the key)."""
        client = self._clients[index]
        if self._credentials is not None and "Authorization" not in client.session.headers:
            self._authenticate(index)
        for attempt in (1, 2):
            response = client.session.post(
                client.get_url("/watch"),
                json={"create_request": request},
                stream=True,
                timeout=(self.timeout_s, idle_timeout_s),
                **self._verify,
            )
            if response.status_code != 200:
                response.close()
                raise EtcdUnavailable(f"HTTP {response.status_code}")
            stream = WatchStream(response)
            try:
                stream.created()
                return stream
            except WatchRefused as exc:
                stream.close()
                if self._credentials is None or attempt == 2:
                    raise EtcdError(f"etcd refused the watch: {exc}") from None
            self._authenticate(index)
        raise AssertionError("unreachable: the loop returns or raises")

    def close(self) -> None:
        for client in self._clients:
            client.session.close()


class WatchStream:
    """The answers of one watch, read line by line from the gateway's chunked JSON stream.

    Iterating yields :class:`WatchReply` and raises :class:`Compacted` when etcd cancels the
    watch because its start is compacted, :class:`EtcdUnavailable` when the stream ends, breaks
    or stays silent too long. :meth:`close` may be called from another thread and ends the
    iteration; otherwise one thread uses a stream.
    """

    def __init__(self, response: requests.Response) -> None:
        self._response = response
        self._lines = response.iter_lines()
        self._closed = False

    def created(self) -> None:
        """Read etcd's answer to the watch's creation. Raises :class:`WatchRefused` when etcd
        cancelled the watch at once, EtcdUnavailable when the stream ends or breaks first."""
        try:
            message = json.loads(next(line for line in self._lines if line.strip()))
        except StopIteration:
            raise EtcdUnavailable("etcd closed the watch stream") from None
        except (requests.RequestException, OSError, ValueError, AttributeError) as exc:
            raise EtcdUnavailable(f"etcd watch stream broke: {type(exc).__name__}") from exc
        result = message.get("result", {})
        if result.get("canceled") and "error" not in message and not result.get("compact_revision"):
            raise WatchRefused(str(result.get("cancel_reason", "")))
        # Anything else in it (an error, a compaction) is what iterating it raises.
        self._parse(message)

    def __iter__(self) -> Iterator[WatchReply]:
        try:
            for line in self._lines:
                if not line.strip():
                    continue
                reply = self._parse(json.loads(line))
                if reply is not None:
                    yield reply
        except (requests.RequestException, OSError, ValueError) as exc:
            if self._closed:
                return
            raise EtcdUnavailable(f"etcd watch stream broke: {type(exc).__name__}") from exc
        except AttributeError:
            # http.client reading a response that close() released from another thread.
            if self._closed:
                return
            raise
        if not self._closed:
            raise EtcdUnavailable("etcd closed the watch stream")

    @staticmethod
    def _parse(message: dict[str, Any]) -> WatchReply | None:
        if "error" in message:
            raise EtcdUnavailable(f"etcd watch failed: {message['error']}")
        result = message.get("result", {})
        compacted = int(result.get("compact_revision", 0))
        if compacted:
            raise Compacted(compacted)
        if result.get("canceled"):
            raise EtcdUnavailable(f"etcd cancelled the watch: {result.get('cancel_reason', '')}")
        if result.get("created"):
            return None
        events = tuple(
            WatchEvent(_kv(event["kv"]), event.get("type") == "DELETE")
            for event in result.get("events") or []
        )
        return WatchReply(int(result.get("header", {}).get("revision", 0)), events)

    def close(self) -> None:
        """End the stream; a thread blocked reading it wakes up. Idempotent."""
        if self._closed:
            return
        self._closed = True
        # A blocked recv() is only woken by shutting the socket down; closing the response
        # from another thread is not enough (etcd3gw's Watcher.stop does the same).
        try:
            raw = self._response.raw._fp  # http.client.HTTPResponse under urllib3
            sock = socket.socket(fileno=raw.fileno())
        except (AttributeError, OSError, ValueError):
            sock = None
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed by the peer
                sock.shutdown(socket.SHUT_RDWR)
            sock.detach()  # the fd belongs to the response, which closes it
        self._response.close()

    def __enter__(self) -> WatchStream:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _detail(exc: gw_errors.Etcd3Exception) -> str:
    """etcd's own message in a gateway error answer (JSON ``{"error", "message", "code"}``)."""
    try:
        return str(json.loads(exc.detail_text or "")["message"])
    except (TypeError, ValueError, KeyError):
        return str(exc.detail_text or exc)


def _grpc_code(exc: gw_errors.Etcd3Exception) -> int | None:
    try:
        code = json.loads(exc.detail_text or "").get("code")
    except (TypeError, ValueError, AttributeError):
        return None
    return code if isinstance(code, int) else None


def _client(endpoint: str, timeout_s: float, tls: PemFiles | None) -> Etcd3Client:
    parts = urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}")
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.port is None:
        raise ValueError(f"etcd endpoint {endpoint!r}: expected http(s)://host:port")
    # Debian's etcd 3.4 serves /v3/; naming it saves a /version round trip per process.
    return Etcd3Client(
        host=parts.hostname,
        port=parts.port,
        protocol=parts.scheme,
        timeout=timeout_s,
        api_path="/v3/",
        ca_cert=None if tls is None else tls.ca_file,
        cert_cert=None if tls is None else tls.cert_file,
        cert_key=None if tls is None else tls.key_file,
    )
