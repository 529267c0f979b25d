"""The service's compound operations, made of its reads and writes: a write at an offset that
keeps the rest of the file, a touch, a copy (Alluxio's ``POST /v1/file/{id}/page/{i}``,
``touch`` and ``copy``, which its REST surface only parses and answers).

Each takes the call's context and makes every lookup, read and write it needs as a call of the
same client (its exchange hears of what they find, its deadline bounds them all). What is read
is spooled whole before anything is written (``worker.spool``): a source that changes
mid-read fails the operation before the destination is touched, never leaving it torn.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Iterator
from typing import IO

from ufs.errors import UfsAlreadyExists, UfsIsADirectory, UfsNotFound
from ufs.roots import MountRoots
from ufs.status import UfsStatus
from worker.common.errors import RangeNotSatisfiable
from worker.reader import ReadResult
from worker.request import RequestContext
from worker.spool import BodySpool

COPY_CHUNK = 256 << 10


class Compound:
    """The compound operations of ``worker.service.WorkerService``, over its parts and
    operations named below. Thread-safe as those are."""

    roots: MountRoots
    spool: BodySpool
    status: Callable[[RequestContext], UfsStatus]
    list: Callable[[RequestContext], builtins.list[UfsStatus]]
    read: Callable[[RequestContext, int, int | None], ReadResult]
    write: Callable[[RequestContext, bytes | Iterable[bytes]], tuple[UfsStatus, bool]]
    request: Callable[..., RequestContext]

    def write_at(self, call: RequestContext, start: int, body: Iterable[bytes]) -> bool:
        """``body`` as the bytes of ``call.uri`` from ``start`` on, the rest of the file kept,
        written through whole; whether the file was created. Raises RangeNotSatisfiable for
        a ``start`` past the end (it would leave a hole)."""
        try:
            old: UfsStatus | None = self._checked(call, call.uri)
        except UfsNotFound:
            old = None
        size = 0 if old is None else old.size
        if start > size:
            raise RangeNotSatisfiable(f"a write at {start} starts past the end ({size})")
        with self.spool.open() as content:
            if old is not None and start:
                _copy(self._pinned(call, old, 0, start), content)
            end = start + _copy(iter(body), content)
            if old is not None and end < size:
                _copy(self._pinned(call, old, end, None), content)
            content.seek(0)
            return self.write(call, _chunks(content))[1]

    def touch(self, call: RequestContext) -> bool:
        """An empty file at ``call.uri`` where none is; an existing file is left as it is (as
        Unix touch leaves the content, and an object store has no times to set). Whether it
        was created."""
        try:
            self._checked(call, call.uri)
        except UfsNotFound:
            return self.write(call, b"")[1]
        return False

    def copy(self, src: RequestContext, dst: str, recursive: bool, forced: bool) -> None:
        """A file, or with ``recursive`` a directory's files, read and written through to
        ``dst``; an existing destination file is replaced only with ``forced`` (else
        UfsAlreadyExists). Raises UfsIsADirectory for a directory without ``recursive``."""
        root, target = self._checked(src, src.uri), self.roots.check(dst)
        if root.is_dir and not recursive:
            raise UfsIsADirectory(f"cannot copy {root.uri!r}: a directory needs recursive")
        sources = self._files_under(src, root) if root.is_dir else [root]
        for source in sources:
            into = self._as(src, target + source.uri[len(root.uri) :])
            self._copy_file(src, source, into, forced)

    def _copy_file(
        self, call: RequestContext, source: UfsStatus, dst: RequestContext, forced: bool
    ) -> None:
        if not forced:
            try:
                self._checked(call, dst.uri)
            except UfsNotFound:
                pass
            else:
                raise UfsAlreadyExists(
                    f"cannot copy to {dst.uri!r}: it exists (use forced to replace)"
                )
        with self.spool.open() as content:
            _copy(self._pinned(call, source), content)
            content.seek(0)
            self.write(dst, _chunks(content))

    def _files_under(self, call: RequestContext, root: UfsStatus) -> builtins.list[UfsStatus]:
        found: builtins.list[UfsStatus] = []
        pending = [root.uri]
        while pending:
            directory = pending.pop()
            for child in self.list(self._as(call, directory, 0)):
                if child.is_dir:
                    pending.append(child.uri)
                else:
                    found.append(child)
        return found

    def _as(
        self,
        call: RequestContext,
        uri: str,
        sync_interval: int | None = None,
        version: str | None = None,
    ) -> RequestContext:
        """A call to ``uri`` made for ``call``: its exchange, caller and deadline."""
        return self.request(
            uri, sync_interval, version, call.exchange, None, call.caller, call.deadline
        )

    def _checked(self, call: RequestContext, uri: str) -> UfsStatus:
        """The status of ``uri`` re-checked with the UFS (a mutation decides on the truth)."""
        return self.status(self._as(call, uri, 0))

    def _pinned(
        self, call: RequestContext, status: UfsStatus, offset: int = 0, length: int | None = None
    ) -> Iterator[bytes]:
        """``[offset, offset + length)`` of the version ``status`` names (None: to the end)."""
        return self.read(self._as(call, status.uri, version=status.version), offset, length).chunks


def _chunks(spool: IO[bytes]) -> Iterator[bytes]:
    while chunk := spool.read(COPY_CHUNK):
        yield chunk


def _copy(chunks: Iterator[bytes], out: IO[bytes]) -> int:
    copied = 0
    for chunk in chunks:
        out.write(chunk)
        copied += len(chunk)
    return copied
