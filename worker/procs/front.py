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
from starlette.types import Receive, Scope, Send

from worker.api import params
from worker.api.jsonbody import json_body
from worker.client.nearcache import NearCache
from worker.client.shortcircuit import ShortCircuitReader
from worker.common.errors import DoraError
from worker.common.generations import GenerationView
from worker.procs.frontmetrics import FrontMetrics
from worker.procs.proxy import forward

log = logging.getLogger(__name__)
# A read is sent in pieces of this size, each read while the last is sent.
CHUNK = 1 << 20
ASKED = "_front_asked"  # where a kept answer remembers when it was asked (monotonic seconds)
_PASSED_ON = (b"x-dora-revision", b"range")
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

    def __init__(self, primary: httpx.AsyncClient, token: str | None, metrics: FrontMetrics):
        self.primary = primary
        self._token = (token or "").encode()
        self.metrics = metrics
        self._local: FrontSameHost | None = None
        self._local_lock = asyncio.Lock()
        self._no_local = False
        self._routes: dict[
            str, Callable[[Scope, dict[str, str]], Awaitable[FrontAnswer | None]]
        ] = {
            "/v1/status": self._status,
            "/v1/list": self._list,
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        if scope["method"] == "GET" and self._ours(scope):
            query = dict(parse_qsl(scope["query_string"].decode("latin-1")))
            started = time.perf_counter()
            if path == "/v1/read" and await self._read(scope, query, send):
                self.metrics.served(path, time.perf_counter() - started)
                return
            route = self._routes.get(path)
            answer = None if route is None else await route(scope, query)
            if answer is not None:
                await answer.send(send)
                self.metrics.served(path, time.perf_counter() - started)
                return
        self.metrics.passed_on.inc()
        await forward(self.primary, scope, receive, send)

    def _ours(self, scope: Scope) -> bool:
        """Whether the call is one this app may answer: a hot route, with the right token
        (or none needed), no feed revision and no range header."""
        if scope["path"] not in ("/v1/status", "/v1/list", "/v1/read"):
            return False
        given = b""
        for name, value in scope["headers"]:
            if name in _PASSED_ON:
                return False
            if name == b"authorization":
                given = value.partition(b" ")[2].strip()
        return not self._token or hmac.compare_digest(given, self._token)

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
        answer = await self.primary.get("/v1/status", params=_only(query), headers=_kept(scope))
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
            return FrontAnswer.json({"entries": [_aged(entry, now) for entry in kept]})
        stamp, asked = local.near.stamp(key), local.near.now()
        answer = await self.primary.get("/v1/list", params=_only(query), headers=_kept(scope))
        if answer.status_code != 200:
            return None
        body = answer.json()
        entries = body["entries"]
        kept_entries = [(local.near.key(e["uri"]) or e["uri"], {**e, ASKED: asked})
                        for e in entries]  # fmt: skip
        age = entries[0].get("age_ms") if entries else None
        intervals = [e.get("sync_interval_ms") for e in entries]
        local.near.put_listing(key, stamp, asked, kept_entries, age, intervals)
        return FrontAnswer(200, json_body(body), b"application/json")

    # -- reads -----------------------------------------------------------------------------------

    async def _read(self, scope: Scope, query: dict[str, str], send: Send) -> bool:
        """Whether the read was answered here (False: pass it on, nothing sent)."""
        status = await self.status_of(scope, _only(query))
        local = self._local
        if status is None or local is None or status["is_dir"] or "serve_stale" in query:
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
        try:
            first = await self._chunk(scope, local.reader, status["uri"], version, offset, end)
        except (VersionGone, httpx.HTTPError):
            return False
        headers = [(b"content-type", b"application/octet-stream"),
                   (b"content-length", str(end - offset).encode()),
                   (b"x-dora-version", version.encode()), (b"accept-ranges", b"bytes")]  # fmt: skip
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
        small = reader.read_small(uri, version, at, length)
        if small is not None:
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
        return buffer  # sent as it is: a copy of a MiB costs more than the call

    async def _locate(
        self, scope: Scope, uri: str, version: str, offset: int, length: int
    ) -> dict[str, Any]:
        query = {"path": uri, "version": version, "offset": str(offset), "length": str(length)}
        answer = await self.primary.get("/v1/locate", params=query, headers=_kept(scope))
        _check(answer)
        located: dict[str, Any] = answer.json()
        return located

    async def _fetch(self, scope: Scope, uri: str, version: str, offset: int, length: int) -> bytes:
        query = {"path": uri, "version": version, "offset": str(offset), "length": str(length)}
        answer = await self.primary.get("/v1/read", params=query, headers=_kept(scope))
        _check(answer)
        if len(answer.content) != length:
            raise VersionGone(f"{uri}: {len(answer.content)} bytes at {offset}, not {length}")
        return answer.content


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
