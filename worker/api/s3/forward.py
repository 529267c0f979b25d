"""A key served by its owner: in a cluster, the S3 endpoint of the worker a request reaches
passes each GetObject and HeadObject of a key another worker owns (the owner on the ring the
``dora`` clients and WebHDFS route by, among the workers etcd lists as live) to that worker's S3
endpoint, and relays its answer. So a key is cached once per cluster, by one worker, whichever
worker its S3 clients talk to.

The request goes on as the client sent it — method, path as sent, query, every header, Host
included — so the client's own signature (a header's or a presigned URL's) is what the owner
checks: the workers of a cluster share their S3 key pairs, as they share their token, and no
worker signs for a client. ``x-dora-forwarded-by`` tells the owner to serve the key itself,
whatever its own view of the ring (so two views that disagree for a moment never loop).

Writes go through to the store where they arrive (their bodies are never relayed), and are
published to the cluster's feed as every mutation is; before the answer, the worker makes the
owner apply that feed revision (a ``/v1/status`` of the key carrying ``X-Dora-Revision``, with
the worker token: the owner waits until it has applied it, or re-checks the store). So a client
that wrote through any worker reads its write through any worker (read-your-writes).

When the owner cannot be reached (its connection refused or not made within
``dora.worker.s3.owner.timeout``), the worker serves the key itself as every surface does when
it is asked: from its own cache, re-checked with the store first (a cache miss's path: the owner
may hold writes this worker has not heard of yet), and counts it
(``dora_s3_owner_requests_total{outcome="unreachable"}``). Only when the store is down too is
the answer SlowDown (503), as for any key neither cached nor readable. An owner that breaks off
an answer of up to :data:`RELAY_BUFFER` (read whole before it is relayed) is served around the
same way; one that breaks off a larger answer already under way cuts it short (the client sees
a short body and retries)."""

from __future__ import annotations

import logging
import ssl
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

import aiohttp
from prometheus_client import Counter
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from yarl import URL

from worker import keys as worker_keys
from worker.api.s3 import keys
from worker.cluster.layout import WorkerInfo
from worker.cluster.node import advertised_host
from worker.common import client_keys
from worker.common.errors import WorkerUnavailable
from worker.common.revision import REVISION_HEADER
from worker.common.tls import user_files
from worker.request import exchange
from worker.tls import keys as tls_keys

if TYPE_CHECKING:
    from worker.service import WorkerService

log = logging.getLogger(__name__)


class KeyCall(Protocol):
    """What forwarding needs of a request to the endpoint (``worker.api.s3.call.S3Call``,
    which builds the forwarder: named here by its shape, not imported)."""

    @property
    def request(self) -> Request: ...

    def uri(self) -> str: ...


C = TypeVar("C", bound=KeyCall)

FORWARDED_HEADER = "x-dora-forwarded-by"
"""Set on a request a worker passes to a key's owner: the owner serves it itself."""
READS = frozenset({"GetObject", "HeadObject"})
"""The operations served by the key's owner."""
WRITES = frozenset({"PutObject", "CopyObject", "DeleteObject"})
"""The operations whose change the key's owner applies before the answer."""
RELAY_BUFFER = 1 << 20
"""How much of an owner's answer is read at once: large pieces, few sends (measured: 64 KiB
pieces cost the relaying worker several times the CPU per byte)."""
# Hop-by-hop headers, and what the answering worker sets itself.
_NOT_RELAYED = frozenset(
    {b"connection", b"keep-alive", b"transfer-encoding", b"date", b"server",
     b"x-amz-request-id", REVISION_HEADER.lower().encode()}
)  # fmt: skip


@dataclass(frozen=True)
class OwnerLink:
    """How a worker reaches the owners: connection timeout, TLS (None: the default
    verification), the worker token (for the revision of a write). Immutable."""

    connect_timeout_s: float
    tls: ssl.SSLContext | None
    token: str | None

    def session(self) -> aiohttp.ClientSession:
        """A session of kept-alive connections; made on the event loop it serves."""
        # Only the connection is bounded: an owner answers by its own deadlines.
        timeouts = aiohttp.ClientTimeout(total=None, sock_connect=self.connect_timeout_s)
        return aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=self.tls if self.tls is not None else True),
            timeout=timeouts,
            auto_decompress=False,
            skip_auto_headers=("Accept-Encoding", "User-Agent"),  # what the client sent, only
            read_bufsize=RELAY_BUFFER,
        )


class Forwarder:
    """Finds a key's owner and passes it the key's reads (and its writes' revisions).

    Thread-safety: :meth:`read` and :meth:`settle` run on the event loop (one aiohttp session,
    made there on first use, its connections kept alive); :meth:`owner` may run anywhere (the
    service's cluster view is thread-safe). The membership is first listed in a thread of its
    own (:meth:`start`): until then every key is served where it arrives. It lives as long as
    the worker's process (its session; the membership's watch is the service's)."""

    def __init__(
        self,
        service: WorkerService,
        itself: tuple[str, int],
        link: OwnerLink,
        outcomes: Counter,
    ) -> None:
        self._service = service
        self._itself = itself
        self._link = link
        self._session: aiohttp.ClientSession | None = None
        self._outcomes = outcomes
        self._ready = False
        self._unreachable: set[str] = set()  # owners said to be unreachable, logged once each

    @classmethod
    def from_config(cls, service: WorkerService) -> Forwarder | None:
        """The forwarder of a worker in a cluster that serves S3 (None otherwise)."""
        config = service.config
        s3_port = config.get(keys.PORT)
        if not config.get(client_keys.ETCD_ENDPOINTS) or not s3_port:
            return None
        # Owners are reached as a client reaches them: the dora.user.tls.* files.
        tls = user_files(config).context() if config.get(tls_keys.WORKER_CERT) else None
        link = OwnerLink(config.get(keys.OWNER_TIMEOUT) / 1000, tls, config.get(worker_keys.TOKEN))
        host = advertised_host(config, config.get(worker_keys.BIND_HOST))
        outcomes = Counter(
            "dora_s3_owner_requests",
            "S3 requests for keys another worker owns, by outcome: served (the owner answered "
            "a read), unreachable (served here instead), settled (the owner applied a write), "
            "unsettled (it could not be told)",
            ["outcome"],
            registry=service.metrics.registry,
        )
        forwarder = cls(service, (host, s3_port), link, outcomes)
        forwarder.start()
        return forwarder

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = self._link.session()
        return self._session

    def start(self) -> None:
        """List the membership in a thread (the first listing waits on etcd)."""

        def listed() -> None:
            self._service.owner_of("s3://", live=True)
            self._ready = True

        threading.Thread(target=listed, name="dora-s3-owners", daemon=True).start()

    def owner(self, uri: str) -> WorkerInfo | None:
        """The live worker that owns ``uri`` when it is another one with an S3 endpoint."""
        if not self._ready:
            return None
        member = self._service.owner_member(uri)
        if member is None or not member.s3_port or (member.host, member.s3_port) == self._itself:
            return None
        return member

    async def read(self, call: KeyCall, raw_path: str) -> Response | None:
        """The owner's answer to ``call`` (a read), or None when the key is this worker's or
        its owner cannot be reached or breaks off before its answer is under way (the request
        is then to be served here, re-checked)."""
        if FORWARDED_HEADER in call.request.headers:
            return None
        owner = self.owner(call.uri())
        if owner is None or owner.s3_url is None:
            return None
        request = call.request
        query = request.scope.get("query_string", b"").decode("latin-1")
        target = URL(owner.s3_url + raw_path + (f"?{query}" if query else ""), encoded=True)
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw
                   if k not in _NOT_RELAYED]  # fmt: skip
        headers.append((FORWARDED_HEADER, f"{self._itself[0]}:{self._itself[1]}"))
        try:
            answer = await self._send(request.method, target, headers)
            small = answer.content_length is not None and answer.content_length <= RELAY_BUFFER
            # A small answer is read whole: no stream to pace, no task watching for a hang-up.
            body = await answer.read() if small or request.method == "HEAD" else None
        except aiohttp.ClientError as exc:
            self._missed(owner, exc)
            exchange(request.scope).must_sync = True
            return None
        self._outcomes.labels("served").inc()
        self._unreachable.discard(owner.name)
        relayed = [(k.lower(), v) for k, v in answer.raw_headers if k.lower() not in _NOT_RELAYED]
        if body is not None:
            answer.release()
            response = Response(body, answer.status)
        else:
            response = StreamingResponse(_relay(answer, owner.name), answer.status)
        response.raw_headers = relayed
        return response

    async def _send(
        self, method: str, target: URL, headers: list[tuple[str, str]]
    ) -> aiohttp.ClientResponse:
        try:
            return await self._http().request(method, target, headers=headers,
                                              allow_redirects=False)  # fmt: skip
        except aiohttp.ServerDisconnectedError:
            # A kept-alive connection the owner had closed (idle): once more, on a new one.
            return await self._http().request(method, target, headers=headers,
                                              allow_redirects=False)  # fmt: skip

    async def settle(self, call: KeyCall) -> None:
        """Have the owner of the key ``call`` changed apply the change before the answer."""
        revision = exchange(call.request.scope).revision
        owner = self.owner(call.uri()) if revision else None
        if owner is None:
            return
        headers = {REVISION_HEADER: str(revision)}
        if self._link.token:
            headers["Authorization"] = f"Bearer {self._link.token}"
        try:
            async with self._http().get(
                f"{owner.url}/v1/status", params={"path": call.uri()}, headers=headers
            ) as answer:
                status = answer.status
        except aiohttp.ClientError as exc:
            self._missed(owner, exc, "unsettled")
            return
        # 404 is the answer for a key deleted; anything else but 200 means it was not heard.
        if status not in (200, 404):
            log.warning("S3: owner %s answered %d to the revision of a write to %s",
                        owner.name, status, call.uri())  # fmt: skip
            self._outcomes.labels("unsettled").inc()
            return
        self._outcomes.labels("settled").inc()

    def _missed(self, owner: WorkerInfo, exc: Exception, outcome: str = "unreachable") -> None:
        self._outcomes.labels(outcome).inc()
        if owner.name not in self._unreachable:
            self._unreachable.add(owner.name)
            log.warning("S3: the owner %s cannot be reached (%s: %s); its keys are served here "
                        "until it answers again", owner.name, type(exc).__name__, exc)  # fmt: skip


async def _relay(answer: aiohttp.ClientResponse, owner: str) -> AsyncIterator[bytes]:
    """The owner's body as it arrives; broken off, a cut answer (the client retries)."""
    try:
        async for chunk in answer.content.iter_any():
            yield chunk
    except aiohttp.ClientError as exc:
        raise WorkerUnavailable(f"the owner {owner} broke off its answer ({exc})") from None
    finally:
        answer.release()


async def through_owner(
    forwarder: Forwarder | None,
    name: str,
    handler: Callable[[C], Awaitable[Response]],
    call: C,
    raw_path: str,
) -> Response:
    """``call`` (operation ``name``) answered by the key's owner when it is a read of a key
    another worker owns, else by ``handler`` here (then, for a write, applied by the owner)."""
    if forwarder is None:
        return await handler(call)
    if name in READS:
        relayed = await forwarder.read(call, raw_path)
        return relayed if relayed is not None else await handler(call)
    response = await handler(call)
    if name in WRITES and response.status_code < 300:
        await forwarder.settle(call)
    return response
