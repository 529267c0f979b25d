"""Open files of the ``dora`` filesystem: buffered, ranged reads pinned to one version, and
whole-object writes.

A file opened for reading remembers the version its status named at open and sends it with every
range, so a file that changes in the UFS while open raises VersionMismatch instead of returning a
mix of two versions. The last ``TAIL_BYTES`` are fetched in one request the first time any of
them is read: Parquet (and ORC, zip) readers first read the 8-byte trailer and then the footer
before it, which would otherwise be two round trips.

Writes are spooled (memory, then a temporary file) and sent as one PUT when the file is closed
(or, inside a transaction, committed): the worker writes whole objects.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

from fsspec.spec import AbstractBufferedFile

from worker.client.errors import AlreadyExists, IsADirectory

if TYPE_CHECKING:
    from worker.client.filesystem import DoraFileSystem

TAIL_BYTES = 64 << 10
SPOOL_IN_MEMORY = 16 << 20
UPLOAD_CHUNK = 1 << 20


class DoraFile(AbstractBufferedFile):  # type: ignore[misc]  # fsspec is untyped
    """A file of the ``dora`` filesystem in ``rb``, ``wb`` or ``xb`` mode.

    Not thread-safe (like any file object): use one per thread.
    """

    # Declared for mypy only (no class attribute): fsspec's property behind it is untyped.
    closed: bool

    def __init__(
        self,
        fs: DoraFileSystem,
        path: str,
        mode: str = "rb",
        block_size: int | str | None = "default",
        autocommit: bool = True,
        cache_type: str = "readahead",
        cache_options: dict[str, Any] | None = None,
        *,
        sync_interval: str | None = None,
        version: str | None = None,
    ) -> None:
        if mode not in ("rb", "wb", "xb"):
            raise NotImplementedError(
                f"mode {mode!r} is not supported: the worker reads ranges and writes whole "
                "objects (rb, wb, xb)"
            )
        size = None
        self.version: str | None = None
        if mode == "rb":
            details = fs.info(path, sync_interval=sync_interval, version=version)
            if details["type"] == "directory":
                raise IsADirectory(f"cannot open {path} for reading: it is a directory")
            self._details = details
            self.version = details["version"] or None
            size = details["size"]
        elif mode == "xb" and fs.exists(path, sync_interval="0"):
            # Checked at open, not atomically at commit: the REST write has no create-only form.
            raise AlreadyExists(f"cannot create {path}: it already exists")
        self._tail: bytes | None = None
        self._spool: IO[bytes] | None = None
        super().__init__(
            fs, path, mode, block_size, autocommit, cache_type, cache_options, size=size
        )

    # -- reading -------------------------------------------------------------------------------

    def _fetch_range(self, start: int, end: int) -> bytes:
        end = min(end, self.size)
        if start >= end:
            return b""
        tail_start = max(0, self.size - TAIL_BYTES)
        if start >= tail_start:
            if self._tail is None:
                self._tail = self.fs.reader.read_pinned(
                    self.path, tail_start, self.size, self.version
                )
            return self._tail[start - tail_start : end - tail_start]
        data: bytes = self.fs.reader.read_pinned(self.path, start, end, self.version)
        return data

    # -- writing -------------------------------------------------------------------------------

    def _initiate_upload(self) -> None:
        self._spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # noqa: SIM115

    def _upload_chunk(self, final: bool = False) -> bool:
        assert self._spool is not None, "_initiate_upload runs before the first chunk"
        self._spool.write(self.buffer.getbuffer())
        if final and self.autocommit:
            self.commit()
        return True

    def commit(self) -> None:
        """Send the spooled bytes to the worker as one write."""
        if self._spool is None:
            # Nothing was ever flushed (an empty file closed at once).
            self._initiate_upload()
        spool = self._spool
        assert spool is not None
        try:
            size = spool.seek(0, 2)
            self.fs.remote.write(self.path, lambda: _replay(spool), size)
        finally:
            spool.close()
            self._spool = None

    def discard(self) -> None:
        """Drop the spooled bytes without writing them."""
        if self._spool is not None:
            self._spool.close()
            self._spool = None

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


def _replay(spool: IO[bytes]) -> Iterator[bytes]:
    """The spooled bytes from the start, in chunks; called again for each attempt of the PUT."""
    spool.seek(0)
    while chunk := spool.read(UPLOAD_CHUNK):
        yield chunk
