"""Open files of the ``dora`` filesystem: buffered, ranged reads pinned to one version, and
whole-object writes.

A file opened for reading remembers the version its status named at open and sends it with every
range, so a file that changes in the UFS while open raises VersionMismatch instead of returning a
mix of two versions. The last ``TAIL_BYTES`` are fetched in one request the first time any of
them is read: Parquet (and ORC, zip) readers first read the 8-byte trailer and then the footer
before it, which would otherwise be two round trips.

Writes are spooled (memory, then a temporary file) and sent as one PUT when the file is closed
(or, inside a transaction, committed): the worker writes whole objects.

:class:`DoraFile` is the buffered file of ``open``; :class:`AsyncDoraFile` the unbuffered one of
``open_async``, for event loops. Both fetch and commit through the same flows
(:class:`_Transfers`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

from fsspec.asyn import AbstractAsyncStreamedFile
from fsspec.caching import BaseCache, ReadAheadCache
from fsspec.spec import AbstractBufferedFile

from worker.client.flow import Flow
from worker.client.ops import UPLOAD_CHUNK

if TYPE_CHECKING:
    from worker.client.filesystem import DoraFileSystem

TAIL_BYTES = 64 << 10
SPOOL_IN_MEMORY = 16 << 20


class _Transfers:
    """What both kinds of file do, as flows: fetch a range pinned to the version of the open
    file (the last ``TAIL_BYTES`` at once), and send the spooled bytes as one write."""

    modes: tuple[str, ...] = ()
    fs: DoraFileSystem
    path: str
    size: int
    version: str | None
    _tail: bytes | None
    _spool: IO[bytes] | None

    @classmethod
    def check_mode(cls, mode: str) -> None:
        """NotImplementedError for a mode this kind of file does not support."""
        if mode not in cls.modes:
            raise NotImplementedError(
                f"mode {mode!r} is not supported: the worker reads ranges and writes whole "
                f"objects ({', '.join(cls.modes)})"
            )

    def _opened(self, details: dict[str, Any] | None) -> int | None:
        """Set up the transfer state; the size of a file opened for reading."""
        self.version = (details["version"] or None) if details is not None else None
        self._tail = None
        self._spool = None
        return None if details is None else int(details["size"])

    def _fetch_now(self, start: int, end: int) -> bytes | Flow[bytes]:
        """As :meth:`_fetch`, but the bytes themselves when they could be read in this thread
        at once (from this host's cached page files, a blocking read)."""
        got = self.fs.reader.read_now(self.path, start, min(end, self.size), self.version)
        return self._fetch(start, end) if got is None else got

    def _fetch(self, start: int, end: int) -> Flow[bytes]:
        end = min(end, self.size)
        if start >= end:
            return b""
        reader = self.fs.reader
        tail_start = max(0, self.size - TAIL_BYTES)
        if start >= tail_start:
            if self._tail is None:
                self._tail = yield from reader.read_pinned(
                    self.path, tail_start, self.size, self.version
                )
            return self._tail[start - tail_start : end - tail_start]
        return (yield from reader.read_pinned(self.path, start, end, self.version))

    def _spooled(self, data: memoryview | bytes) -> None:
        if self._spool is None:
            self._spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # noqa: SIM115
        self._spool.write(data)

    def _commit(self) -> Flow[None]:
        """Send the spooled bytes (none if nothing was written) as one write."""
        self._spooled(b"")
        spool = self._spool
        assert spool is not None
        try:
            size = spool.seek(0, 2)
            yield from self.fs.remote.write(self.path, lambda: _replay(spool), size)
        finally:
            spool.close()
            self._spool = None

    def _discard(self) -> None:
        if self._spool is not None:
            self._spool.close()
            self._spool = None


class PassingReadAhead(ReadAheadCache):  # type: ignore[misc]  # fsspec is untyped
    """fsspec's read-ahead cache for small reads, but a read of at least a block that it does
    not hold is fetched exactly and handed over as fetched, not through the cache.

    fsspec's cache reads a block past every read and returns a slice of what it fetched (plus
    the part it held before): each large read was copied once or twice more and fetched a
    block it then dropped, three quarters of a streamed ``read(8 MiB)``'s time from the
    worker's page files. Read-ahead helps reads smaller than a block (lines, headers); a large
    read is its own batch. Not thread-safe (like the file it belongs to)."""

    name = "dora-readahead"

    def _fetch(self, start: int | None, end: int | None) -> bytes:
        start = 0 if start is None else start
        end = self.size if end is None else min(end, self.size)
        data: bytes
        if end - start < self.blocksize or start >= end or self.start <= start < end <= self.end:
            data = super()._fetch(start, end)
            return data
        self.miss_count += 1
        if self.start <= start < self.end:
            # The part held, and the rest exactly (one copy, no block past it).
            self.total_requested_bytes += end - self.end
            data = self.cache[start - self.start :] + self.fetcher(self.end, end)
            return data
        self.total_requested_bytes += end - start
        data = self.fetcher(start, end)
        return data


class DoraFile(_Transfers, AbstractBufferedFile):  # type: ignore[misc]  # fsspec is untyped
    """A file of the ``dora`` filesystem in ``rb``, ``wb`` or ``xb`` mode. ``details`` is the
    status at open for ``rb`` (see :meth:`worker.client.ops.Operations.open_details`).

    Not thread-safe (like any file object): use one per thread.
    """

    modes = ("rb", "wb", "xb")
    # Declared for mypy only (no class attribute): fsspec's property behind it is untyped.
    closed: bool
    cache: BaseCache | None

    def __init__(
        self,
        fs: DoraFileSystem,
        path: str,
        mode: str,
        details: dict[str, Any] | None,
        block_size: int | str | None = "default",
        autocommit: bool = True,
        cache_type: str = "readahead",
        cache_options: dict[str, Any] | None = None,
    ) -> None:
        size = self._opened(details)
        if details is not None:
            self._details = details
        super().__init__(
            fs, path, mode, block_size, autocommit, cache_type, cache_options, size=size
        )
        if mode == "rb" and cache_type == "readahead":
            self.cache = PassingReadAhead(
                self.blocksize, self._fetch_range, self.size, **(cache_options or {})
            )

    def _fetch_range(self, start: int, end: int) -> bytes:
        got = self._fetch_now(start, end)
        return got if isinstance(got, bytes) else self.fs._run(got)

    def _upload_chunk(self, final: bool = False) -> bool:
        self._spooled(self.buffer.getbuffer())
        if final and self.autocommit:
            self.commit()
        return True

    def commit(self) -> None:
        """Send the spooled bytes to the worker as one write."""
        self.fs._run(self._commit())

    def discard(self) -> None:
        """Drop the spooled bytes without writing them."""
        self._discard()

    def close(self) -> None:
        """Close the file; a file opened for writing is written now (unless in a transaction).

        Unlike fsspec's base class, this does not call ``fs.invalidate_cache``: that drops the
        workers' cache, and the write already left the cache in the new state."""
        if self.closed:
            return
        try:
            if self.mode == "rb":
                self.cache = None
                self._tail = None
            elif not self.forced:
                self.flush(force=True)
        finally:
            self.closed = True


class AsyncDoraFile(_Transfers, AbstractAsyncStreamedFile):  # type: ignore[misc]  # untyped
    """A file of the ``dora`` filesystem for event loops, in ``rb`` or ``wb`` mode: ``await
    f.read(n)`` fetches exactly what is asked (no read-ahead); writes are sent at ``close``.

    Not safe to share between tasks that use it at once.
    """

    modes = ("rb", "wb")
    closed: bool

    def __init__(
        self,
        fs: DoraFileSystem,
        path: str,
        mode: str,
        details: dict[str, Any] | None,
        **kwargs: Any,
    ) -> None:
        size = self._opened(details)
        if details is not None:
            self._details = details
        super().__init__(fs, path, mode, cache_type="none", size=size, **kwargs)

    async def _fetch_range(self, start: int, end: int) -> bytes:
        return await self.fs._arun(self._fetch(start, end))

    async def _upload_chunk(self, final: bool = False) -> bool:
        self._spooled(self.buffer.getbuffer())
        if final:
            await self.fs._arun(self._commit())
        return True

    async def close(self) -> None:
        """Close the file; a file opened for writing is written now. As :meth:`DoraFile.close`,
        no ``invalidate_cache``."""
        if self.closed:
            return
        try:
            if self.mode == "rb":
                self._tail = None
            elif not self.forced:
                await self.flush(force=True)
        finally:
            self.closed = True

    def __del__(self) -> None:
        # fsspec's __del__ calls close(), a coroutine here that nobody would await: a file
        # dropped unclosed sends nothing, so only its spool is released.
        self._discard()


def _replay(spool: IO[bytes]) -> Iterator[bytes]:
    """The spooled bytes from the start, in chunks; called again for each attempt of the PUT."""
    spool.seek(0)
    while chunk := spool.read(UPLOAD_CHUNK):
        yield chunk
