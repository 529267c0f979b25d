"""Ranged reads through the workers: a large range is split into chunks (``read.chunk.size``,
8MB by default) fetched in parallel, all pinned to one version of the file so the pieces can
never mix two versions.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from worker.client.errors import WorkerFailure
from worker.client.forksafe import ProcessLocal
from worker.client.remote import Remote

T = TypeVar("T")
R = TypeVar("R")

_pool_thread = threading.local()


def _mark_pool_thread() -> None:
    _pool_thread.active = True


def spans(start: int, end: int, chunk: int) -> list[tuple[int, int]]:
    """``[start, end)`` cut into ``[a, b)`` pieces of at most ``chunk`` bytes."""
    return [(a, min(a + chunk, end)) for a in range(start, end, chunk)]


class ChunkedReader:
    """Reads byte ranges through a :class:`Remote`, in parallel chunks on a thread pool.

    Thread-safe. The pool is built once per process (a forked child gets its own); work that
    runs on a pool thread is never split again but done inline, because waiting on the same
    bounded pool from inside it could deadlock.
    """

    def __init__(self, remote: Remote, chunk_size: int, parallelism: int) -> None:
        self.remote = remote
        self.chunk_size = chunk_size
        self.parallelism = parallelism
        self._pool = ProcessLocal(
            lambda: ThreadPoolExecutor(
                parallelism, thread_name_prefix="dora-read", initializer=_mark_pool_thread
            )
        )

    def read(
        self,
        uri: str,
        start: int,
        end: int | None,
        *,
        version: str | None = None,
        sync_interval: str | None = None,
    ) -> bytes:
        """Bytes ``[start, end)`` of ``uri`` (to the end of the file when ``end`` is None), cut
        at the end of the file. The first chunk is one request (all of a small file); the rest
        follow in parallel, pinned to the version the first was served at."""
        first_len = self.chunk_size if end is None else min(self.chunk_size, end - start)
        first = self.remote.read(
            uri, start, first_len, version=version, sync_interval=sync_interval
        )
        if len(first.data) < first_len or (end is not None and end - start <= first_len):
            return first.data
        pinned = first.version
        size = first.size
        if size is None:
            # A status at a pinned version is answered from the worker's cache.
            size = int(self.remote.status(uri, version=pinned)["size"])
        last = size if end is None else min(end, size)
        # One join: a second concatenation would copy the whole result again.
        return b"".join([first.data, *self.iter_pinned(uri, start + first_len, last, pinned)])

    def iter_pinned(self, uri: str, start: int, end: int, version: str | None) -> Iterator[bytes]:
        """The chunks of ``[start, end)`` in order, at most ``parallelism`` in flight. ``end``
        must not pass the end of the file."""
        return self.ordered(
            lambda span: self._exact(uri, span, version),
            spans(start, end, self.chunk_size),
        )

    def read_pinned(self, uri: str, start: int, end: int, version: str | None) -> bytes:
        """Bytes ``[start, end)`` of the file at ``version``; ``end`` within the file."""
        return b"".join(self.iter_pinned(uri, start, end, version))

    def _exact(self, uri: str, span: tuple[int, int], version: str | None) -> bytes:
        start, end = span
        data = self.remote.read(uri, start, end - start, version=version).data
        if len(data) != end - start:
            # Within the file at a pinned version, a short answer can only be a fault.
            raise WorkerFailure(f"read {uri} [{start}, {end}): got {len(data)} bytes")
        return data

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """``fn`` over ``items`` in parallel; results in order, the first error raised."""
        return list(self.ordered(fn, items))

    def ordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
        """``fn`` over ``items`` with at most ``parallelism`` calls in flight, results yielded
        in order. On an error the calls not yet started are cancelled and the error raised."""
        if len(items) <= 1 or getattr(_pool_thread, "active", False):
            yield from (fn(item) for item in items)
            return
        pool = self._pool.get()
        pending: deque[Future[R]] = deque()
        queue = iter(items)
        try:
            for item in queue:
                pending.append(pool.submit(fn, item))
                if len(pending) >= self.parallelism:
                    break
            while pending:
                result = pending.popleft().result()
                for item in queue:
                    pending.append(pool.submit(fn, item))
                    break
                yield result
        finally:
            for future in pending:
                future.cancel()
