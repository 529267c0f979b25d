"""Sending REST calls to the worker that owns a URI, failing over along the hash ring.

Error policy, in one place:

- a worker that cannot be connected to (refused, connect timeout) never saw the call: any call
  goes on to the next worker on the ring;
- a worker that dropped the call after it was sent (read timeout, connection reset) may have
  applied it: an idempotent call is asked once more, then goes on to the next worker; a mutation
  raises :class:`WorkerUnavailable`;
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
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace

import httpx

from worker.client.bridge import SyncBridge
from worker.client.errors import WorkerUnavailable, error_from_response, retry_after
from worker.client.forksafe import ProcessLocal
from worker.client.options import ClientOptions
from worker.client.ring import HashRing
from worker.client.stats import Counters
from worker.cluster.clientring import ClusterRing
from worker.cluster.context import REVISION_HEADER

log = logging.getLogger(__name__)

# A worker that failed is tried after the others for this long: a dead worker costs one refused
# (or timed-out) connect per call at most, and a restarted one is used again soon after.
DOWN_PERIOD_S = 5.0
# Upper bound on one wait for a 503's Retry-After, so a read never stalls for long.
MAX_RETRY_WAIT_S = 2.0

Body = Callable[[], bytes | Iterator[bytes]]


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
    def __init__(self, worker: str, cause: Exception) -> None:
        super().__init__(f"{worker}: {type(cause).__name__}: {cause}")
        self.worker = worker


class _CutRead(Exception):
    """A read's body was cut after headers naming ``version``."""

    def __init__(self, version: str, cause: Exception) -> None:
        super().__init__(f"body cut after the headers of version {version!r}: {cause!r}")
        self.version = version


class WorkerClient:
    """REST calls over one keep-alive httpx connection pool, routed by a consistent hash ring.

    Thread-safe: httpx.Client may be shared between threads; the down-list and the set of
    workers already warned about are guarded by one lock, which is never held during I/O (the
    counters have their own lock, taken after it). Fork-safe: a forked child builds its own
    httpx client (:mod:`worker.client.forksafe`). An injected ``transport`` is shared as is; an
    asynchronous-only one (``httpx.ASGITransport``) is driven through :mod:`worker.client.bridge`.
    """

    def __init__(
        self,
        options: ClientOptions,
        transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
        *,
        counters: Counters | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.options = options
        self.rings = ClusterRing(
            options.ring_names,
            options.virtual_nodes,
            options.etcd_endpoints,
            options.cluster_name,
            options.etcd_timeout_s,
        )
        # The newest feed revision seen in an answer: sent with every call, so any worker
        # answers at least as fresh (read-your-writes, monotonic reads across workers).
        self.revision = 0
        self.counters = counters or Counters()
        self._urls = dict(zip(options.ring_names, options.workers, strict=True))
        self._transport = (
            transport
            if transport is None or isinstance(transport, httpx.BaseTransport)
            else SyncBridge(transport)
        )
        self._clock = clock
        self._sleep = sleep
        self._http = ProcessLocal(self._build_http)
        self._lock = threading.Lock()
        self._down_until: dict[str, float] = {}
        self._warned: set[str] = set()

    @property
    def ring(self) -> HashRing:
        """The ring now (it follows etcd's membership when the cluster is configured)."""
        return self.rings.current()

    def _build_http(self) -> httpx.Client:
        opts = self.options
        headers = {"Authorization": f"Bearer {opts.token}"} if opts.token else {}
        pool = max(16, 2 * opts.read_parallelism)
        return httpx.Client(
            transport=self._transport,
            headers=headers,
            timeout=httpx.Timeout(opts.timeout_s, connect=opts.connect_timeout_s),
            limits=httpx.Limits(max_connections=pool, max_keepalive_connections=pool),
        )

    def candidates(self, key: str) -> list[str]:
        """The workers to try for ``key``: ring order, workers that failed lately moved last."""
        now = self._clock()
        order = self.ring.owners(key)
        with self._lock:
            up = [w for w in order if self._down_until.get(w, 0.0) <= now]
        return up + [w for w in order if w not in up]

    def send(self, call: Call) -> Answer:
        """Send ``call`` to the first worker that takes it. Raises the translated error of a
        worker's error answer, :class:`WorkerUnavailable` for a dropped mutation, and
        :class:`NoWorkerReachable` when every worker failed."""
        failures: list[str] = []
        owner = self.ring.owner(call.key)
        for worker in self.candidates(call.key):
            try:
                response = self._attempt(worker, call)
            except _Unreachable as exc:
                failures.append(str(exc))
                continue
            if worker != owner:
                self.counters.add("failovers")
            return Answer(response, worker)
        raise NoWorkerReachable(f"{call.what}: no worker reachable ({'; '.join(failures)})")

    def send_to(self, worker: str, call: Call) -> httpx.Response:
        """Send ``call`` to ``worker`` only. Raises like :meth:`send`; an unreachable worker is
        :class:`NoWorkerReachable`."""
        try:
            return self._attempt(worker, call)
        except _Unreachable as exc:
            raise NoWorkerReachable(f"{call.what}: {exc}") from exc

    def _attempt(self, worker: str, call: Call) -> httpx.Response:
        try:
            return self._answer(worker, call)
        except _CutRead as cut:
            log.info("%s: worker %s %s; asking again pinned to it", call.what, worker, cut)
            pinned = replace(call, params={**call.params, "version": cut.version}, pin_on_cut=False)
            # The cut was this worker's one drop: a second one marks it down.
            return self._answer(worker, pinned, dropped_once=True)

    def _answer(self, worker: str, call: Call, dropped_once: bool = False) -> httpx.Response:
        url = self._urls.get(worker, f"http://{worker}") + call.endpoint
        attempts = self.options.retry_attempts if call.idempotent else 1
        for attempt in range(1, attempts + 1):
            response = self._request(worker, url, call, dropped_once)
            if response.status_code == 503 and attempt < attempts:
                self.counters.add("retries")
                self._sleep(min(retry_after(response), MAX_RETRY_WAIT_S))
                continue
            if response.is_error:
                raise error_from_response(response, worker, call.what)
            self._mark_up(worker)
            return response
        raise AssertionError("unreachable: the loop returns or raises")

    def _request(
        self, worker: str, url: str, call: Call, dropped_once: bool = False
    ) -> httpx.Response:
        http = self._http.get()
        content = call.body() if call.body is not None else None
        headers = dict(call.headers)
        if self.revision:
            headers[REVISION_HEADER] = str(self.revision)
        request = http.build_request(
            call.method, url, params=dict(call.params), content=content, headers=headers
        )
        try:
            response = http.send(request, stream=True)
        except httpx.PoolTimeout as exc:
            # Our own pool is exhausted: not the worker's fault, so no failover.
            raise WorkerUnavailable(f"{call.what}: no free connection to {worker}") from exc
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            self._mark_down(worker, exc)
            raise _Unreachable(worker, exc) from exc
        except httpx.TransportError as exc:
            return self._dropped(worker, url, call, exc, dropped_once)
        try:
            response.read()
        except httpx.TransportError as exc:
            version = response.headers.get("X-Dora-Version")
            if call.pin_on_cut and response.is_success and version:
                raise _CutRead(version, exc) from exc
            return self._dropped(worker, url, call, exc, dropped_once)
        finally:
            response.close()
        self._saw(response)
        return response

    def _dropped(
        self, worker: str, url: str, call: Call, exc: httpx.TransportError, dropped_once: bool
    ) -> httpx.Response:
        """After ``worker`` dropped ``call``: ask once more if that is safe, else give up on it."""
        if not call.idempotent:
            raise WorkerUnavailable(
                f"{call.what}: worker {worker} dropped the call ({exc!r}); "
                "it may or may not have been applied"
            ) from exc
        if not dropped_once:
            return self._request(worker, url, call, dropped_once=True)
        self._mark_down(worker, exc)
        raise _Unreachable(worker, exc) from exc

    def _saw(self, response: httpx.Response) -> None:
        seen = response.headers.get(REVISION_HEADER, "")
        if seen.isdigit() and int(seen) > self.revision:
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
