"""The two drivers of the client's flows (:mod:`worker.client.flow`): one runs a flow in the
calling thread, one on the running event loop. They are the only code of the client that does
HTTP; everything they do is perform an effect and hand the result (or the exception) back.

Both are fork-safe (a child builds its own connection pools and threads) and thread-safe.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
import weakref
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import aclosing
from typing import Any, Generic, TypeVar

import httpx

from worker.client.flow import (
    Blocking,
    BodyCut,
    Chunks,
    ClientExchange,
    Effect,
    Flow,
    Parallel,
    Pause,
)
from worker.client.lean import LeanHttp
from worker.client.liveness import answer_or_unresponsive
from worker.common.forksafe import ProcessLocal

T = TypeVar("T")

_pool_thread = threading.local()


def _mark_pool_thread() -> None:
    _pool_thread.active = True


class _Step(Generic[T]):
    """A flow being driven: ``effect`` is what it waits for, None once it ended with ``result``
    (or raised, which propagates from :meth:`resume` or :meth:`fail`)."""

    def __init__(self, flow: Flow[T]) -> None:
        self._flow = flow
        self.effect: Effect | None = None
        self.result: T
        self._advance(lambda: next(flow))

    def resume(self, value: Any) -> None:
        self._advance(lambda: self._flow.send(value))

    def fail(self, error: Exception) -> None:
        self._advance(lambda: self._flow.throw(error))

    def _advance(self, step: Callable[[], Effect]) -> None:
        try:
            self.effect = step()
        except StopIteration as stop:
            self.effect = None
            self.result = stop.value


class SyncDriver:
    """Runs flows in the calling thread: HTTP over one keep-alive ``httpx.Client`` per thread
    (built by ``http``), parallel flows on a thread pool of ``parallelism`` threads per process.
    Requests without a body go over ``lean`` (:mod:`worker.client.lean`, one per process) when
    it is given: the client leaves it out when a transport was injected.

    Thread-safe. A flow that runs on a pool thread runs its own parallel flows inline, because
    waiting on the same bounded pool from inside it could deadlock.
    """

    def __init__(
        self,
        http: Callable[[], httpx.Client],
        parallelism: int,
        sleep: Callable[[float], None],
        lean: Callable[[], LeanHttp] | None = None,
    ) -> None:
        self._http = http
        # A client per thread, not one shared: httpcore's pool picks the connections to close
        # under its lock but closes them after, so a pass run by one thread can close an idle
        # kept-alive connection another thread has just been handed and is sending on (the
        # request is cut, or waits for its whole read timeout; encode/httpcore#1110).
        self._threads: ProcessLocal[threading.local] = ProcessLocal(threading.local)
        self.lean = None if lean is None else ProcessLocal(lean)
        self.parallelism = parallelism
        self._sleep = sleep
        self._pool = ProcessLocal(
            lambda: ThreadPoolExecutor(
                parallelism, thread_name_prefix="dora-read", initializer=_mark_pool_thread
            )
        )

    def run(self, flow: Flow[T]) -> T:
        """Drive ``flow`` to its end; its result, or the exception it raised."""
        step = _Step(flow)
        while step.effect is not None:
            try:
                value = self._perform(step.effect)
            except Exception as exc:  # noqa: BLE001  # handed to the flow, which decides
                step.fail(exc)
            else:
                step.resume(value)
        return step.result

    def _perform(self, effect: Effect) -> Any:
        match effect:
            case ClientExchange():
                return self._exchange(effect)
            case Blocking():
                return effect.fn()
            case Pause():
                self._sleep(effect.seconds)
                return None
            case Parallel():
                results = self.ordered(effect.flows, effect.limit)
                if effect.sink is None:
                    return list(results)
                for result in results:
                    effect.sink(result)
                return None
        raise TypeError(f"not an effect: {effect!r}")

    def _exchange(self, request: ClientExchange) -> httpx.Response:
        if self.lean is not None and LeanHttp.takes(request):
            return self.lean.get().exchange(request)
        http = self._client()
        content = _sync_content(self, request.body() if request.body is not None else None)
        built = http.build_request(
            request.method,
            request.url,
            params=request.params,
            content=content,
            headers=request.headers,
        )
        response = http.send(built, stream=True)
        try:
            response.read()
        except httpx.TransportError as exc:
            raise BodyCut(response, exc) from exc
        finally:
            response.close()
        return response

    def _client(self) -> httpx.Client:
        """This thread's client (see ``__init__``), built on its first request."""
        local = self._threads.get()
        client: httpx.Client | None = getattr(local, "client", None)
        if client is None:
            client = local.client = self._http()
        return client

    def peek(self) -> httpx.Client | None:
        """This thread's client in this process, if it has one (without building one)."""
        local = self._threads.peek()
        return None if local is None else getattr(local, "client", None)

    def ordered(self, flows: Sequence[Flow[T]], limit: int) -> Iterator[T]:
        """The results of ``flows``, at most ``limit`` in flight, yielded in order. On an error
        the flows not yet started are dropped and the error raised."""
        if len(flows) <= 1 or getattr(_pool_thread, "active", False):
            yield from (self.run(flow) for flow in flows)
            return
        pool = self._pool.get()
        pending: deque[Future[T]] = deque()
        queue = iter(flows)
        try:
            for flow in queue:
                pending.append(pool.submit(self.run, flow))
                if len(pending) >= min(limit, self.parallelism):
                    break
            while pending:
                result = pending.popleft().result()
                for flow in queue:
                    pending.append(pool.submit(self.run, flow))
                    break
                yield result
        finally:
            for future in pending:
                future.cancel()


class AsyncDriver:
    """Runs flows on the running event loop: HTTP over one ``httpx.AsyncClient`` per event loop
    and process (built by ``http``), blocking calls in worker threads, parallel flows as tasks.

    With ``probe_s``, a worker that has not begun to answer is probed that often (an https://
    one over TLS with the context ``tls`` gives) and given up on when it answers no probe
    (:mod:`worker.client.liveness`); without it (an injected transport has no address to probe)
    the read timeout alone bounds the wait.

    Thread-safe: flows may run on several loops in several threads at once, each with its own
    client (an httpx async client belongs to the loop it was first used on).
    """

    def __init__(
        self,
        http: Callable[[], httpx.AsyncClient],
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        probe_s: float | None = None,
        tls: Callable[[], ssl.SSLContext] = ssl.create_default_context,
    ) -> None:
        self._build = http
        self._sleep = sleep
        self._probe_s = probe_s
        self._tls = tls
        self._lock = threading.Lock()
        self._clients: ProcessLocal[
            weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient]
        ] = ProcessLocal(weakref.WeakKeyDictionary)

    def http(self) -> httpx.AsyncClient:
        """The client of the running loop."""
        loop = asyncio.get_running_loop()
        clients = self._clients.get()
        client = clients.get(loop)
        if client is None:
            with self._lock:
                client = clients.get(loop)
                if client is None:
                    client = clients[loop] = self._build()
        return client

    async def run(self, flow: Flow[T]) -> T:
        """Drive ``flow`` to its end; its result, or the exception it raised."""
        step = _Step(flow)
        while step.effect is not None:
            try:
                value = await self._perform(step.effect)
            except Exception as exc:  # noqa: BLE001  # handed to the flow, which decides
                step.fail(exc)
            else:
                step.resume(value)
        return step.result

    async def _perform(self, effect: Effect) -> Any:
        match effect:
            case ClientExchange():
                return await self._exchange(effect)
            case Blocking():
                return await asyncio.to_thread(effect.fn)
            case Pause():
                await self._sleep(effect.seconds)
                return None
            case Parallel():
                results: list[Any] = []
                async with aclosing(self.ordered(effect.flows, effect.limit)) as ordered:
                    async for result in ordered:
                        if effect.sink is None:
                            results.append(result)
                        else:
                            await asyncio.to_thread(effect.sink, result)
                return results if effect.sink is None else None
        raise TypeError(f"not an effect: {effect!r}")

    async def _exchange(self, request: ClientExchange) -> httpx.Response:
        http = self.http()
        content = _async_content(self, request.body() if request.body is not None else None)
        built = http.build_request(
            request.method,
            request.url,
            params=request.params,
            content=content,
            headers=request.headers,
        )
        sending = http.send(built, stream=True)
        if self._probe_s is not None:
            secure = built.url.scheme == "https"
            netloc = f"{built.url.host}:{built.url.port or (443 if secure else 80)}"
            context = self._tls() if secure else None
            response = await answer_or_unresponsive(sending, netloc, self._probe_s, context)
        else:
            response = await sending
        try:
            await response.aread()
        except httpx.TransportError as exc:
            raise BodyCut(response, exc) from exc
        finally:
            await response.aclose()
        return response

    async def ordered(self, flows: Sequence[Flow[T]], limit: int) -> AsyncGenerator[T, None]:
        """The results of ``flows``, at most ``limit`` in flight, yielded in order. On an error
        the flows still running are cancelled and the error raised."""
        pending: deque[asyncio.Task[T]] = deque()
        queue = iter(flows)
        try:
            for flow in queue:
                pending.append(asyncio.ensure_future(self.run(flow)))
                if len(pending) >= limit:
                    break
            while pending:
                result = await pending.popleft()
                for flow in queue:
                    pending.append(asyncio.ensure_future(self.run(flow)))
                    break
                yield result
        finally:
            for task in pending:
                task.cancel()
            # Collect what the cancelled tasks raised, so nothing is reported as unretrieved.
            await asyncio.gather(*pending, return_exceptions=True)


def _sync_content(
    driver: SyncDriver, body: bytes | Iterator[bytes] | Chunks | None
) -> bytes | Iterator[bytes] | None:
    if isinstance(body, Chunks):
        return driver.ordered(body.flows, body.limit)
    return body


def _async_content(
    driver: AsyncDriver, body: bytes | Iterator[bytes] | Chunks | None
) -> bytes | AsyncIterator[bytes] | None:
    if isinstance(body, Chunks):
        return driver.ordered(body.flows, body.limit)
    if body is None or isinstance(body, bytes):
        return body
    return _from_thread(body)


async def _from_thread(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    """A blocking iterator (a local file read in chunks) pulled in a worker thread."""
    while (chunk := await asyncio.to_thread(next, chunks, None)) is not None:
        yield chunk
