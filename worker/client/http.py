"""Sending REST calls to the worker that owns a URI, failing over along the hash ring.

Error policy, in one place:

- a worker that cannot be connected to (refused, connect timeout) never saw the call: any call
  goes on to the next worker on the ring;
- a worker that dropped the call after it was sent (connection reset or closed) may have
  applied it: an idempotent call is asked once more (a kept connection the worker closed is the
  usual cause), then goes on to the next worker; a mutation raises :class:`WorkerUnavailable`;
- a worker that took the call but did not answer in time (a read timeout, or no answer to a
  liveness probe, :class:`~worker.client.liveness.Unresponsive`) is not asked
  again: asking a stopped or vanished host once more would cost another timeout, so an
  idempotent call goes on to the next worker at once (counted as ``unresponsive``);
- a read whose body is cut after the headers is a version change to check, not a dead worker:
  a worker that finds mid-stream that the file changed cuts the body (it never sends bytes of two
  versions). The same worker is asked again pinned to the version the headers named; a 412 is
  raised as :class:`VersionMismatch` (no failover: every worker would see the same change), a
  complete answer means the cut was a transient drop. Only a failed second ask is a failure;
- a 503 (UFS unavailable) is retried on the same worker, for idempotent calls only, a bounded
  number of times, waiting the worker's ``Retry-After`` (capped);
- any other error answer is raised at once, translated by :mod:`worker.client.errors`.

When every worker has failed, :class:`NoWorkerReachable` is raised; the caller decides whether
to fall back to the UFS.

The policy is written once, as flows (:mod:`worker.client.flow`): :meth:`WorkerClient.call` and
:meth:`WorkerClient.call_on`, run by the client's synchronous driver (``sync``) or asynchronous
one (``aio``).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from worker.client.bridge import async_transport, sync_transport
from worker.client.drivers import AsyncDriver, SyncDriver
from worker.client.errors import WorkerUnavailable, error_from_response, retry_after
from worker.client.flow import Body, BodyCut, ClientExchange, Flow, exchange, pause
from worker.client.lean import LeanHttp
from worker.client.options import ClientOptions
from worker.client.stats import ClientCounters
from worker.common.clusterring import ClusterRing
from worker.common.credentials import Credentials
from worker.common.deadlines import TIMEOUT_HEADER, header_value
from worker.common.revision import REVISION_HEADER
from worker.common.ring import HashRing
from worker.common.tls import (
    WorkerNotTrusted,
    client_cert_refused,
    refuse_plaintext,
    tls_failure,
)

log = logging.getLogger(__name__)

# A worker that failed is tried after the others for this long: a dead worker costs one refused
# (or timed-out) connect per call at most, and a restarted one is used again soon after.
DOWN_PERIOD_S = 5.0
# Upper bound on one wait for a 503's Retry-After, so a read never stalls for long.
MAX_RETRY_WAIT_S = 2.0

__all__ = ["Answer", "Body", "Call", "NoWorkerReachable", "WorkerClient"]


class NoWorkerReachable(WorkerUnavailable):
    """Every worker failed to take the call (none could be connected to, or each dropped an
    idempotent call). The only error after which a read may fall back to the UFS."""


@dataclass(frozen=True)
class Call:
    """One REST call. ``key`` (a full URI) picks the worker; ``what`` names the call in errors.
    ``idempotent`` calls may be repeated after a dropped connection or a 503. ``body`` builds
    the request body afresh for each attempt (a stream cannot be replayed). ``pin_on_cut``
    marks a read: a body cut after the headers is asked again with ``version`` set to the
    headers' ``X-Dora-Version`` (see the module docstring)."""

    method: str
    endpoint: str
    key: str
    what: str
    params: Mapping[str, str] = field(default_factory=dict)
    idempotent: bool = True
    body: Body | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    pin_on_cut: bool = False


@dataclass(frozen=True)
class Answer:
    """A worker's successful answer and the ring name of the worker that gave it."""

    response: httpx.Response
    worker: str


class _Unreachable(Exception):
    def __init__(self, worker: str, cause: Exception, hint: str = "") -> None:
        super().__init__(f"{worker}: {type(cause).__name__}: {cause}{hint}")
        self.worker = worker


class _CutRead(Exception):
    """A read's body was cut after headers naming ``version``."""

    def __init__(self, version: str, cause: Exception) -> None:
        super().__init__(f"body cut after the headers of version {version!r}: {cause!r}")
        self.version = version


class WorkerClient:
    """REST calls routed by a consistent hash ring, as flows, and the two drivers that run them:
    ``sync`` (requests without a body over :mod:`worker.client.lean`, the others over a
    keep-alive ``httpx.Client`` per process) and ``aio`` (``httpx.AsyncClient`` per event loop).
    :meth:`send` and :meth:`send_to` are the synchronous shorthands.

    Thread-safe: the down-list and the set of workers already warned about are guarded by one
    lock, which is never held during I/O (the counters have their own lock, taken after it).
    Fork-safe: a forked child builds its own HTTP clients (:mod:`worker.common.forksafe`). An
    injected ``transport`` is shared as is; one that works only one way (``httpx.ASGITransport``
    is asynchronous) is bridged for the other driver (:mod:`worker.client.bridge`).
    """

    def __init__(
        self,
        options: ClientOptions,
        transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
        *,
        counters: ClientCounters | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        async_sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.options = options
        self.rings = ClusterRing(
            options.ring_names,
            options.virtual_nodes,
            options.etcd_endpoints,
            options.cluster_name,
            options.etcd_timeout_s,
            Credentials(options.etcd_user, options.etcd_password or "")
            if options.etcd_user
            else None,
            options.etcd_tls,
        )
        # The newest feed revision seen in an answer: sent with every call, so any worker
        # answers at least as fresh (read-your-writes, monotonic reads across workers).
        self.revision = 0
        self.counters = counters or ClientCounters()
        self.transport = transport
        # A worker stops waiting for the UFS when this client stops waiting for the worker.
        self._timeout_ms = header_value(options.timeout_s)
        self._urls = dict(zip(options.ring_names, options.workers, strict=True))
        self._sync_transport = None if transport is None else sync_transport(transport)
        self._async_transport = None if transport is None else async_transport(transport)
        self._clock = clock
        self._verify: ssl.SSLContext | None = None
        self._lock = threading.Lock()
        self._down_until: dict[str, float] = {}
        self._warned: set[str] = set()
        self.sync = SyncDriver(
            self._build_http,
            options.read_parallelism,
            sleep,
            lean=self._build_lean if transport is None else None,
        )
        probe_s = options.connect_timeout_s if transport is None else None
        self.aio = AsyncDriver(self._build_async_http, async_sleep, probe_s, self._tls)

    @property
    def ring(self) -> HashRing:
        """The ring now (it follows etcd's membership when the cluster is configured)."""
        return self.rings.current()

    def _settings(self) -> dict[str, Any]:
        opts = self.options
        pool = max(16, 2 * opts.read_parallelism)
        return {
            "headers": {"Authorization": f"Bearer {opts.token}"} if opts.token else {},
            "timeout": httpx.Timeout(opts.timeout_s, connect=opts.connect_timeout_s),
            "limits": httpx.Limits(max_connections=pool, max_keepalive_connections=pool),
            "verify": self._tls(),
        }

    def _tls(self) -> ssl.SSLContext:
        # Built once per client (loading a CA bundle costs milliseconds) and shared by its
        # drivers; two threads racing here build two equal contexts, which is harmless.
        if self._verify is None:
            self._verify = self.options.tls.context()
        return self._verify

    def _build_http(self) -> httpx.Client:
        return httpx.Client(transport=self._sync_transport, **self._settings())

    def _build_lean(self) -> LeanHttp:
        opts = self.options
        return LeanHttp(
            self._settings()["headers"], opts.connect_timeout_s, opts.timeout_s, self._tls()
        )

    def _build_async_http(self) -> httpx.AsyncClient:
        settings = self._settings()
        # Async callers fan out far wider than the thread pool (fsspec batches by the hundred).
        settings["limits"] = httpx.Limits(max_connections=256, max_keepalive_connections=64)
        return httpx.AsyncClient(transport=self._async_transport, **settings)

    def candidates(self, key: str) -> list[str]:
        """The workers to try for ``key``: ring order, workers that failed lately moved last."""
        now = self._clock()
        order = self.ring.owners(key)
        with self._lock:
            up = [w for w in order if self._down_until.get(w, 0.0) <= now]
        return up + [w for w in order if w not in up]

    def send(self, call: Call) -> Answer:
        """:meth:`call`, run in the calling thread."""
        return self.sync.run(self.call(call))

    def send_to(self, worker: str, call: Call) -> httpx.Response:
        """:meth:`call_on`, run in the calling thread."""
        return self.sync.run(self.call_on(worker, call))

    def call(self, call: Call) -> Flow[Answer]:
        """Send ``call`` to the first worker that takes it. Raises the translated error of a
        worker's error answer, :class:`WorkerUnavailable` for a dropped mutation, and
        :class:`NoWorkerReachable` when every worker failed."""
        failures: list[str] = []
        owner = self.ring.owner(call.key)
        for worker in self.candidates(call.key):
            try:
                response = yield from self._attempt(worker, call)
            except _Unreachable as exc:
                failures.append(str(exc))
                continue
            if worker != owner:
                self.counters.add("failovers")
            return Answer(response, worker)
        raise NoWorkerReachable(f"{call.what}: no worker reachable ({'; '.join(failures)})")

    def call_on(self, worker: str, call: Call) -> Flow[httpx.Response]:
        """Send ``call`` to ``worker`` only. Raises like :meth:`call`; an unreachable worker is
        :class:`NoWorkerReachable`."""
        try:
            return (yield from self._attempt(worker, call))
        except _Unreachable as exc:
            raise NoWorkerReachable(f"{call.what}: {exc}") from exc

    def _attempt(self, worker: str, call: Call) -> Flow[httpx.Response]:
        try:
            return (yield from self._answer(worker, call))
        except _CutRead as cut:
            log.info("%s: worker %s %s; asking again pinned to it", call.what, worker, cut)
            pinned = replace(call, params={**call.params, "version": cut.version}, pin_on_cut=False)
            # The cut was this worker's one drop: a second one marks it down.
            return (yield from self._answer(worker, pinned, dropped_once=True))

    def url(self, worker: str) -> str:
        """The base URL of ``worker`` (a ring name): with the scheme it registered in etcd, or
        the one it was listed with, else plain HTTP."""
        return self.rings.url(worker) or self._urls.get(worker) or f"http://{worker}"

    def _answer(self, worker: str, call: Call, dropped_once: bool = False) -> Flow[httpx.Response]:
        url = self.url(worker) + call.endpoint
        # An injected transport (in-process ASGI, a test's mock) decides where bytes go, not
        # the URL's host: the rule is about the network.
        if self.options.token and self.transport is None:
            refuse_plaintext(url, worker, self.options.allow_plaintext)
        attempts = self.options.retry_attempts if call.idempotent else 1
        for attempt in range(1, attempts + 1):
            response = yield from self._request(worker, url, call, dropped_once)
            if response.status_code == 503 and attempt < attempts:
                self.counters.add("retries")
                yield from pause(min(retry_after(response), MAX_RETRY_WAIT_S))
                continue
            if response.is_error:
                raise error_from_response(response, worker, call.what)
            self._mark_up(worker)
            return response
        raise AssertionError("unreachable: the loop returns or raises")

    def _request(
        self, worker: str, url: str, call: Call, dropped_once: bool = False
    ) -> Flow[httpx.Response]:
        headers = {TIMEOUT_HEADER: self._timeout_ms, **call.headers}
        if self.revision:
            headers[REVISION_HEADER] = str(self.revision)
        try:
            response = yield from exchange(
                ClientExchange(call.method, url, call.params, headers, call.body)
            )
        except httpx.PoolTimeout as exc:
            # Our own pool is exhausted: not the worker's fault, so no failover.
            raise WorkerUnavailable(f"{call.what}: no free connection to {worker}") from exc
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            _refuse_untrusted(worker, call, exc)
            self._mark_down(worker, exc)
            raise _Unreachable(worker, exc) from exc
        except BodyCut as cut:
            version = cut.response.headers.get("X-Dora-Version")
            if call.pin_on_cut and cut.response.is_success and version:
                raise _CutRead(version, cut.cause) from cut.cause
            return (yield from self._dropped(worker, url, call, cut.cause, dropped_once))
        except httpx.TimeoutException as exc:
            self.counters.add("unresponsive")
            return (yield from self._dropped(worker, url, call, exc, dropped_once=True))
        except httpx.TransportError as exc:
            return (yield from self._dropped(worker, url, call, exc, dropped_once))
        self._saw(response)
        return response

    def _dropped(
        self, worker: str, url: str, call: Call, exc: httpx.TransportError, dropped_once: bool
    ) -> Flow[httpx.Response]:
        """After ``worker`` dropped ``call``: ask once more if that is safe, else give up on it."""
        _refuse_untrusted(worker, call, exc)
        refused = self._refused_cert(url, exc)
        if not call.idempotent:
            raise WorkerUnavailable(
                f"{call.what}: worker {worker} dropped the call ({exc!r}); it may or may not "
                "have been applied" + (f" ({refused})" if refused else "")
            ) from exc
        if not dropped_once:
            return (yield from self._request(worker, url, call, dropped_once=True))
        if refused:
            raise WorkerNotTrusted(
                f"{call.what}: worker {worker}: {refused}", worker=worker
            ) from exc
        self._mark_down(worker, exc)
        raise _Unreachable(worker, exc) from exc

    def _refused_cert(self, url: str, exc: httpx.TransportError) -> str | None:
        """Why a worker hung up on a call over https from a client presenting a certificate: most
        likely it refused the certificate (raised once it happens twice in a row, on a fresh
        connection the second time); None for any other drop."""
        hung_up = isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError)
        if hung_up and url.startswith("https://") and self.options.tls.cert_file:
            return client_cert_refused(self.options.tls)
        return None

    def _saw(self, response: httpx.Response) -> None:
        seen = response.headers.get(REVISION_HEADER, "")
        if seen.isascii() and seen.isdigit() and len(seen) <= 19 and int(seen) > self.revision:
            with self._lock:
                self.revision = max(self.revision, int(seen))

    def _mark_down(self, worker: str, exc: Exception) -> None:
        with self._lock:
            self._down_until[worker] = self._clock() + DOWN_PERIOD_S
            first = worker not in self._warned
            self._warned.add(worker)
        total = self.counters.unreachable(worker)
        if first:
            log.warning("dora worker %s unreachable (%r); failing over along the ring", worker, exc)
        else:
            log.debug("dora worker %s unreachable again (%d times): %r", worker, total, exc)

    def _mark_up(self, worker: str) -> None:
        # Unlocked membership tests keep the common path (a healthy worker) lock-free.
        if worker not in self._down_until and worker not in self._warned:
            return
        with self._lock:
            self._down_until.pop(worker, None)
            recovered = worker in self._warned
            self._warned.discard(worker)
        if recovered:
            log.warning("dora worker %s is reachable again", worker)


def _refuse_untrusted(worker: str, call: Call, exc: Exception) -> None:
    """Raise WorkerNotTrusted when TLS is what failed: a setup to fix, not a worker to skip."""
    reason = tls_failure(exc)
    if reason is not None:
        raise WorkerNotTrusted(f"{call.what}: worker {worker}: {reason}", worker=worker) from exc
