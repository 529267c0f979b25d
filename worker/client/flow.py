"""The client's logic as flows: generators that yield what they need done (effects) and receive
the results, so one implementation of failover, retries, the UFS fallback, version pinning and
error translation runs both in the caller's thread and on an event loop
(:mod:`worker.client.drivers`).

A flow does no I/O itself. It yields one of:

- :class:`ClientExchange`: one HTTP request; the answer comes back read in full and closed. The
driver
  throws ``httpx.TransportError`` into the flow when no answer came, and :class:`BodyCut` when
  the body broke off after the headers;
- :class:`Pause`: wait (a 503's ``Retry-After``);
- :class:`Blocking`: call a blocking function (the UFS fallback, local files): inline on the
  synchronous driver, in a worker thread on the asynchronous one;
- :class:`Parallel`: run flows concurrently, at most ``limit`` at a time, results in order.

Flows compose with ``yield from``; the functions below give each effect a typed result. A driver
hands any exception an effect raised back into the flow, so ``try``/``except`` inside a flow
works as it reads.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeAlias, TypeVar

import httpx

T = TypeVar("T")

Flow: TypeAlias = Generator["Effect", Any, T]


@dataclass(frozen=True)
class Chunks:
    """A request body made of the results of ``flows`` in order (at most ``limit`` computed
    at a time): a copy streams what it reads."""

    flows: Sequence[Flow[bytes]]
    limit: int


# Builds a request body afresh for each attempt (a stream cannot be replayed).
Body = Callable[[], bytes | Iterator[bytes] | Chunks]


@dataclass(frozen=True)
class ClientExchange:
    """Send one request to ``url`` and read the whole answer."""

    method: str
    url: str
    params: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Body | None = None


@dataclass(frozen=True)
class Pause:
    """Wait ``seconds``."""

    seconds: float


@dataclass(frozen=True)
class Blocking(Generic[T]):
    """Call ``fn``, which blocks (disk or UFS I/O)."""

    fn: Callable[[], T]


@dataclass(frozen=True)
class Parallel(Generic[T]):
    """Run ``flows`` with at most ``limit`` in flight. Without a ``sink`` the result is the list
    of their results in order; with one, each result is handed to ``sink`` in order (a blocking
    call, e.g. a local write) and the result is None. The first failure (in order) is raised
    and the flows not yet started are dropped."""

    flows: Sequence[Flow[T]]
    limit: int
    sink: Callable[[T], None] | None = None


Effect: TypeAlias = ClientExchange | Pause | Blocking[Any] | Parallel[Any]


class BodyCut(Exception):
    """An answer whose body broke off after the headers: ``response`` has the status and
    headers, ``cause`` is the transport error."""

    def __init__(self, response: httpx.Response, cause: httpx.TransportError) -> None:
        super().__init__(f"body cut after HTTP {response.status_code}: {cause!r}")
        self.response = response
        self.cause = cause


def exchange(request: ClientExchange) -> Flow[httpx.Response]:
    """The answer to ``request`` (see :class:`ClientExchange` for what is raised)."""
    response: httpx.Response = yield request
    return response


def pause(seconds: float) -> Flow[None]:
    yield Pause(seconds)


def blocking(fn: Callable[[], T]) -> Flow[T]:
    """``fn()``, called where blocking is allowed."""
    result: T = yield Blocking(fn)
    return result


def parallel(flows: Sequence[Flow[T]], limit: int) -> Flow[list[T]]:
    """The results of ``flows``, run at most ``limit`` at a time, in order."""
    results: list[T] = yield Parallel(flows, limit)
    return results


def each_in_order(flows: Sequence[Flow[T]], limit: int, sink: Callable[[T], None]) -> Flow[None]:
    """Run ``flows`` at most ``limit`` at a time, handing each result to ``sink`` in order."""
    yield Parallel(flows, limit, sink)
