"""A front process's app: REST v1 ``GET /v1/status``, ``/v1/list`` and ``/v1/read`` answered
here the way a same-host client answers them, everything else passed to the primary.

Coherence comes from the client's own machinery, not from anything new:

- statuses and listings are kept in a :class:`~worker.client.nearcache.NearCache` over the
  primary's generation file, read before each call whose answer is kept, so a change the
  primary made (through any process) is seen by every front before it serves that path again;
  each is served only while the call's ``sync_interval`` (or the path's, as the primary said)
  allows, otherwise the primary is asked, which syncs with the UFS as for any call;
- bytes come from the page files the primary's ``/v1/locate`` names, through a
  :class:`~worker.client.shortcircuit.ShortCircuitReader` that checks their checksums and
  treats an evicted or replaced page as a miss; a miss is read from the primary pinned to the
  version, which fills the page.

Anything this app does not answer exactly as the primary would is passed on whole: a call
carrying a feed revision (``X-Dora-Revision``), ``serve_stale``, a ``Range`` header, a missing
or wrong token, an error (not found, a directory, a range past the end), so error answers are
the primary's own.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import httpx
from starlette.types import Message, Receive, Scope, Send

from worker.api import access, params
from worker.api.jsonbody import json_body
from worker.api.surface import bearer_token
from worker.api.webhdfs_errors import credential
from worker.api.webhdfs_paths import PREFIX, Namespace
from worker.client.nearcache import NearCache
from worker.client.shortcircuit import ShortCircuitReader
from worker.common.errors import DoraError
from worker.common.generations import GenerationView
from worker.common.revision import REVISION_HEADER
from worker.procs.frontmetrics import FrontMetrics
from worker.procs.frontwebhdfs import FrontWebHdfs
from worker.procs.proxy import forward
from worker.request import exchange

log = logging.getLogger(__name__)
# A read is sent in pieces of this size, each read while the last is sent.
CHUNK = 1 << 20
ASKED = "_front_asked"  # where a kept answer remembers when it was asked (monotonic seconds)
_REVISION = REVISION_HEADER.lower().encode()
_PASSED_ON = (_REVISION, b"range")
WEBHDFS = PREFIX + "/"
WEBHDFS_ROUTE = PREFIX + "/{path:path}"  # as the primary's metrics name the route
_KEPT_HEADERS = (b"authorization", b"x-dora-timeout-ms")


class VersionGone(Exception):
    """The primary no longer has the version a read was pinned to."""


@dataclass(frozen=True)
class FrontSameHost:
    """What the primary's ``/v1/local`` said: the near-cache and the page reader over it."""

    near: NearCache
    reader: ShortCircuitReader


class FrontApp:
    """The front's ASGI app. Runs on one event loop; the near-cache and the reader are
    thread-safe, and page files are read on the loop (a warm page is in the OS page cache:
    microseconds) except for reads larger than one chunk, whose chunks go to a thread."""

    def __init__(
        self,
        primary: httpx.AsyncClient,
        token: str | None,
        metrics: FrontMetrics,
        namespace: Namespace,
        *,
        access_log: bool = False,
        redirects: bool = True,
    ) -> None:
        self.primary = primary
        self._token = (token or "").encode()
        self.metrics = metrics
        self._local: FrontSameHost | None = None
        self._local_lock = asyncio.Lock()
        self._no_local = False
        self._access_log = access_log
        # The newest feed revision the primary's answers named (None: it names none, as
        # without a cluster), sent with every answer given here (see _Answering).
        self.revision: int | None = None
        self._routes: dict[
            str, Callable[[Scope, dict[str, str]], Awaitable[FrontAnswer | None]]
        ] = {
            "/v1/status": self._status,
            "/v1/list": self._list,
        }
        self.webhdfs = FrontWebHdfs(self, namespace, redirects)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["method"] == "GET" and self._ours(scope):
            started = time.perf_counter()
            answer = _Answering(send, self)
            try:
                route = await self._answered(scope, receive, answer.send)
            finally:
                # Logged here once started here (a body cut short too): the primary never
                # saw the call. Not started: passed on below, and the primary logs it.
                millis = (time.perf_counter() - started) * 1000
                if self._access_log and answer.status:
                    access.write(scope, answer.status, answer.sent, millis)
            if route is not None:
                self.metrics.served(route, millis / 1000)
                return
        self.metrics.passed_on.inc()
        await forward(self.primary, scope, receive, send)

    async def _answered(self, scope: Scope, receive: Receive, send: Send) -> str | None:
        """The route (as the primary's metrics name it) of a call answered here; None when
        nothing was sent and the call is to be passed on."""
        path: str = scope["path"]
        if path.startswith(WEBHDFS):
            done = await self.webhdfs.answer(scope, receive, send)
            return WEBHDFS_ROUTE if done else None
        query = dict(parse_qsl(scope["query_string"].decode("latin-1")))
        if path == "/v1/read":
            return path if await self._read(scope, query, send) else None
        route = self._routes[path]
        answer = await route(scope, query)
        if answer is None:
            return None
        await answer.send(send)
        return path

    def _ours(self, scope: Scope) -> bool:
        """Whether the call is one this app may answer: a hot route, with the right token
        (or none needed), no feed revision and no range header."""
        path = scope["path"]
        webhdfs = path.startswith(WEBHDFS)
        if path not in self._routes and path != "/v1/read" and not webhdfs:
            return False
        if any(name in _PASSED_ON for name, _ in scope["headers"]):
            return False
        given = (credential(scope) if webhdfs else bearer_token(scope)) or b""
        return not self._token or hmac.compare_digest(given, self._token)

    async def ask(self, scope: Scope, route: str, query: Mapping[str, str]) -> httpx.Response:
        """The primary's answer to ``GET route?query`` on behalf of the call ``scope`` (its
        token and deadline), the feed revision it names noted."""
        headers = _kept(scope)
        if self._token:  # the caller's was checked (_ours); WebHDFS may give it in the query
            headers["authorization"] = "Bearer " + self._token.decode()
        answer = await self.primary.get(route, params=query, headers=headers)
        named = answer.headers.get(REVISION_HEADER)
        if named is not None and named.isdigit():
            self.revision = max(self.revision or 0, int(named))
        return answer

    async def same_host(self, scope: Scope) -> FrontSameHost | None:
        """The near-cache and reader, asking the primary's ``/v1/local`` until it answers;
        None while it has not, and for good once it said it keeps no generation file (then
        every call is passed on: nothing would tell this process of a change)."""
        if self._local is not None or self._no_local:
            return self._local
        async with self._local_lock:
            if self._local is None and not self._no_local:
                answer = await self.primary.get("/v1/local", headers=_kept(scope))
                if answer.status_code != 200:
                    return None
                facts = answer.json()
                if not facts.get("generations"):
                    log.warning("the primary keeps no generation file: every call is passed on")
                    self._no_local = True
                    return None
                near = NearCache(GenerationView(facts["generations"]), facts["sync_interval_ms"])
                self._local = FrontSameHost(near, ShortCircuitReader(facts["page_size"]))
        return self._local

    # -- statuses and listings -----------------------------------------------------------------

    async def status_of(self, scope: Scope, query: Mapping[str, str]) -> dict[str, Any] | None:
        """The status answer (kept, or the primary's, then kept) for the call; None when the
        call is to be passed on (an error, a parameter this app does not take)."""
        local = await self.same_host(scope)
        if local is None or "serve_stale" in query or "path" not in query:
            return None
        key = local.near.key(query["path"])
        try:
            interval = params.interval(query.get("sync_interval"))
        except DoraError:
            return None
        if key is None:
            return None
        version = query.get("version") or None
        kept = local.near.status(key, interval, version)
        if kept is not None:
            self.metrics.near_hits.labels("status").inc()
            return _aged(kept, local.near.now())
        stamp, asked = local.near.stamp(key), local.near.now()
        answer = await self.ask(scope, "/v1/status", _only(query))
        if answer.status_code != 200:
            return None
        body: dict[str, Any] = answer.json()
        local.near.put_status(key, stamp, asked, {**body, ASKED: asked}, body.get("age_ms"),
                              body.get("sync_interval_ms"))  # fmt: skip
        return body

    async def _status(self, scope: Scope, query: dict[str, str]) -> FrontAnswer | None:
        body = await self.status_of(scope, query)
        return None if body is None else FrontAnswer.json(body)

    async def _list(self, scope: Scope, query: dict[str, str]) -> FrontAnswer | None:
        entries = await self.listing_of(scope, query)
        return None if entries is None else FrontAnswer.json({"entries": entries})

    async def listing_of(
        self, scope: Scope, query: Mapping[str, str]
    ) -> list[dict[str, Any]] | None:
        """The entries of the listing answer (kept, or the primary's, then kept) for the
        call; None when the call is to be passed on."""
        local = await self.same_host(scope)
        if local is None or "path" not in query or (key := local.near.key(query["path"])) is None:
            return None
        try:
            interval = params.interval(query.get("sync_interval"))
        except DoraError:
            return None
        kept = local.near.listing(key, interval)
        if kept is not None:
            self.metrics.near_hits.labels("list").inc()
            now = local.near.now()
            return [_aged(entry, now) for entry in kept]
        stamp, asked = local.near.stamp(key), local.near.now()
        answer = await self.ask(scope, "/v1/list", _only(query))
        if answer.status_code != 200:
            return None
        entries: list[dict[str, Any]] = answer.json()["entries"]
        kept_entries = [(local.near.key(e["uri"]) or e["uri"], {**e, ASKED: asked})
                        for e in entries]  # fmt: skip
        age = entries[0].get("age_ms") if entries else None
        intervals = [e.get("sync_interval_ms") for e in entries]
        local.near.put_listing(key, stamp, asked, kept_entries, age, intervals)
        return entries

    # -- reads -----------------------------------------------------------------------------------

    async def _read(self, scope: Scope, query: dict[str, str], send: Send) -> bool:
        """Whether the read was answered here (False: pass it on, nothing sent)."""
        status = await self.status_of(scope, _only(query))
        if status is None or status["is_dir"] or "serve_stale" in query:
            return False
        try:
            offset = int(query.get("offset") or 0)
            length = None if query.get("length") in (None, "") else int(query["length"])
        except ValueError:
            return False
        size, version = int(status["size"]), str(status["version"])
        if offset < 0 or offset >= size or (length is not None and length < 0):
            return False  # the primary words the error (or the empty answer)
        end = size if length is None else min(size, offset + length)
        headers = [(b"content-type", b"application/octet-stream"),
                   (b"content-length", str(end - offset).encode()),
                   (b"x-dora-version", version.encode()), (b"accept-ranges", b"bytes")]  # fmt: skip
        return await self.stream(scope, send, status, (offset, end), headers)

    async def stream(
        self,
        scope: Scope,
        send: Send,
        status: Mapping[str, Any],
        span: tuple[int, int],
        headers: list[tuple[bytes, bytes]],
    ) -> bool:
        """Send bytes ``[offset, end)`` of the file ``status`` names, at its version, as a
        200 with ``headers``; whether it was (False: its first chunk could not be had, and
        nothing was sent)."""
        local = self._local
        assert local is not None, "a status was kept, so the near-cache exists"
        (offset, end), version = span, str(status["version"])
        try:
            first = await self._chunk(scope, local.reader, status["uri"], version, offset, end)
        except (VersionGone, httpx.HTTPError):
            return False
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        at, chunk = offset + len(first), first
        while True:
            # The next chunk is read while this one is sent. A failure now cuts the body short
            # of its length (the exception ends the connection), as the primary cuts a read
            # whose file changed mid-stream.
            ahead = None
            if at < end:
                ahead = asyncio.ensure_future(
                    self._chunk(scope, local.reader, status["uri"], version, at, end)
                )
            try:
                await send({"type": "http.response.body", "body": chunk, "more_body": at < end})
            except BaseException:
                if ahead is not None:
                    ahead.cancel()
                raise
            if ahead is None:
                break
            chunk = await ahead
            at += len(chunk)
        self.metrics.bytes_served.inc(end - offset)
        return True

    async def _chunk(
        self, scope: Scope, reader: ShortCircuitReader, uri: str, version: str, at: int, end: int
    ) -> bytes | bytearray:
        """The bytes of ``uri`` at ``version`` from ``at``, one chunk at most, before ``end``."""
        length = min(CHUNK, end - at)
        served = exchange(scope).served  # for the access log's cache outcome
        small = reader.read_small(uri, version, at, length)
        if small is not None:
            served["cache"] = served.get("cache", 0) + length
            return small
        for where, size in reader.to_locate(uri, version, at, length):
            reader.located(
                uri, version, where, await self._locate(scope, uri, version, where, size)
            )
        buffer = bytearray(length)
        if length >= CHUNK:
            gaps = await asyncio.to_thread(reader.read_local, uri, version, at, buffer)
        else:
            gaps = reader.read_local(uri, version, at, buffer)
        for where, size in gaps:
            buffer[where - at : where - at + size] = await self._fetch(
                scope, uri, version, where, size
            )
        fetched = sum(size for _, size in gaps)
        served["cache"] = served.get("cache", 0) + length - fetched
        if fetched:
            served["ufs"] = served.get("ufs", 0) + fetched  # not in the page store when looked
        return buffer  # sent as it is: a copy of a MiB costs more than the call

    async def _locate(
        self, scope: Scope, uri: str, version: str, offset: int, length: int
    ) -> dict[str, Any]:
        query = {"path": uri, "version": version, "offset": str(offset), "length": str(length)}
        answer = await self.ask(scope, "/v1/locate", query)
        _check(answer)
        located: dict[str, Any] = answer.json()
        return located

    async def _fetch(self, scope: Scope, uri: str, version: str, offset: int, length: int) -> bytes:
        query = {"path": uri, "version": version, "offset": str(offset), "length": str(length)}
        answer = await self.ask(scope, "/v1/read", query)
        _check(answer)
        if len(answer.content) != length:
            raise VersionGone(f"{uri}: {len(answer.content)} bytes at {offset}, not {length}")
        return answer.content


class _Answering:
    """The ASGI ``send`` of an answer given here: its status and body bytes counted for the
    access log, and ``X-Dora-Revision`` added when the primary names one: the newest the
    front has seen when the answer starts (this call's own asks included). A kept status or
    listing is valid under the generation counters checked when it is served, and the
    primary has applied an event (bumping those) before it names its revision, so the answer
    reflects every event up to that revision: the header says no more than the primary's own
    would. Used by one request on one event loop."""

    def __init__(self, send: Send, front: FrontApp) -> None:
        self._send = send
        self._front = front
        self.status = 0
        self.sent = 0

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            if (revision := self._front.revision) is not None:
                header = (_REVISION, str(revision).encode())
                message = {**message, "headers": [*message["headers"], header]}
        elif message["type"] == "http.response.body":
            self.sent += len(message.get("body", b""))
        await self._send(message)


@dataclass(frozen=True)
class FrontAnswer:
    """A whole answer this app sends."""

    status: int
    body: bytes
    media_type: bytes

    @classmethod
    def json(cls, data: Any) -> FrontAnswer:
        return cls(200, json_body(data), b"application/json")

    async def send(self, send: Send) -> None:
        headers = [(b"content-type", self.media_type),
                   (b"content-length", str(len(self.body)).encode())]  # fmt: skip
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": self.body, "more_body": False})


def _check(answer: httpx.Response) -> None:
    if answer.status_code != 200:
        raise VersionGone(f"the primary answered {answer.status_code}: {answer.text[:200]}")


def _aged(kept: Mapping[str, Any], now: float) -> dict[str, Any]:
    """A kept answer as the primary would give it now: its age grown by the time kept."""
    answer = dict(kept)
    asked = answer.pop(ASKED)
    if answer.get("age_ms") is not None:
        answer["age_ms"] = int(answer["age_ms"] + (now - asked) * 1000)
    return answer


def _kept(scope: Scope) -> dict[str, str]:
    """The caller's headers that the front's own calls to the primary carry: its token and
    its deadline."""
    return {name.decode(): value.decode("latin-1") for name, value in scope["headers"]
            if name in _KEPT_HEADERS}  # fmt: skip


def _only(query: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in query.items() if k in ("path", "sync_interval", "version")}
