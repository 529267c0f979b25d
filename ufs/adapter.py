"""The under-storage adapter: one object that serves any URI the backends know, with errors
translated once, bounded retries, and a deadline on every call.

Each storage kind is a backend (:mod:`ufs.backend`): ``file://`` is :mod:`ufs.local`, ``s3://``
is :mod:`ufs.s3`, any other scheme fsspec knows is :mod:`ufs.generic`. None of them caches: the
worker's cache is the only cache.
"""

from __future__ import annotations

import io
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import IO, TypeVar

import fsspec
from fsspec.spec import AbstractFileSystem

from config import Config
from ufs import uri as uris
from ufs.attributes import NO_ATTRIBUTES, Attributes, AttributeStore
from ufs.backend import WRITE_CHUNK, UfsBackend
from ufs.deadline import Deadline, DeadlinePassed, ThreadRunner
from ufs.errors import (
    StorageUnavailable,
    UfsDeadlineExceeded,
    UfsError,
    UfsIsADirectory,
    UfsNotFound,
    UfsVersionChanged,
)
from ufs.generic import FsspecBackend
from ufs.kinds import kind_of
from ufs.local import LocalBackend
from ufs.mapping import translate
from ufs.options import UfsOptions
from ufs.status import DIR_VERSION, UfsStatus, dir_status
from ufs.stores import Buckets, BucketStore, Uploads, UploadStore

__all__ = ["DIR_VERSION", "Ufs", "UfsOptions"]

T = TypeVar("T")
log = logging.getLogger(__name__)

# Threads for blocking storage calls (local files, sync fsspec filesystems), made as needed:
# enough that healthy calls never queue behind each other, and a bound on what a hung mount
# can hold.
UFS_THREADS = 64


class Ufs:
    """Serves any supported URI: statuses, listings, ranged reads, writes, deletes, renames.

    Every method takes a canonical URI (see :mod:`ufs.uri`) and raises only the errors in
    :mod:`ufs.errors`. Each call to the storage has a deadline (``dora.ufs.call.deadline``)
    covering its retries and backoff: a call that fails because the UFS is unavailable is
    retried with doubling backoff while time remains, and a UFS that does not answer in time
    raises :class:`StorageUnavailable` with ``retry_after`` = the deadline. A method that makes
    several calls (delete: status, list, delete) gives each its deadline; a streamed write is
    bounded per request (see :meth:`write`).

    Every operation a request uses also takes the caller's ``deadline`` (None: none, only the
    calls' own), which bounds the whole operation: each call gets the earlier of its own
    deadline and the caller's, no backoff sleeps past the caller's, and once the caller's time
    is what runs out (or leaves no time to retry) the operation raises
    :class:`UfsDeadlineExceeded` naming the caller's deadline, making no further call.

    ``backends`` replaces or adds the backend of a scheme. Thread-safe: backends are created
    once per scheme under a lock that is never held during a call, and backends are safe to
    share.
    """

    def __init__(
        self,
        options: UfsOptions | None = None,
        sleep: Callable[[float], None] = time.sleep,
        backends: Mapping[str, UfsBackend] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.options = options or UfsOptions()
        self._sleep = sleep
        self._clock = clock
        self._deadline = self.options.call_deadline_ms / 1000
        self._threads = ThreadRunner(UFS_THREADS)
        self._backends: dict[str, UfsBackend] = dict(backends or {})
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: Config) -> Ufs:
        return cls(UfsOptions.from_config(config))

    def filesystem(self, scheme: str) -> AbstractFileSystem:
        """The fsspec filesystem for ``scheme``, created on first use."""
        return self._backend(scheme).filesystem

    def _backend(self, scheme: str) -> UfsBackend:
        with self._lock:
            backend = self._backends.get(scheme)
            if backend is None:
                try:
                    backend = self._make_backend(scheme)
                except (ImportError, ValueError) as exc:
                    raise UfsError(f"cannot use scheme {scheme!r}: {exc}") from exc
                self._backends[scheme] = backend
            return backend

    def _make_backend(self, scheme: str) -> UfsBackend:
        kind = kind_of(scheme)
        if kind is not None:
            return kind.backend(scheme, self.options, self._threads)
        filesystem = fsspec.filesystem(scheme, skip_instance_cache=True)
        return FsspecBackend(scheme, filesystem, self._threads)

    def _of(self, uri: str) -> UfsBackend:
        return self._backend(uris.split(uri)[0])

    def uploads(self, uri: str) -> Uploads | None:
        """The store's own multipart uploads for ``uri``; None where the store has none."""
        backend = self._of(uri)
        return Uploads(backend, self._call) if isinstance(backend, UploadStore) else None

    def buckets(self, scheme: str) -> Buckets | None:
        """The buckets of the store ``scheme://`` names; None where it has none."""
        backend = self._backend(scheme)
        if not isinstance(backend, BucketStore):
            return None
        return Buckets(scheme, backend, self._call)

    def _call(
        self,
        what: str,
        uri: str,
        request: Callable[[Deadline], T],
        caller: Deadline | None,
        retry: bool = True,
    ) -> T:
        """``request(deadline)`` with its errors translated, by the earlier of its own deadline
        and the ``caller``'s; with ``retry``, an unavailable UFS is retried with doubling
        backoff as long as that deadline leaves time for it."""
        deadline = self._bound(caller)
        attempts = self.options.retry_attempts if retry else 1
        for attempt in range(1, attempts + 1):
            try:
                return request(deadline)
            except UfsError:
                raise
            except DeadlinePassed as exc:
                if exc.deadline is caller:
                    raise _late(caller, f"UFS gave no answer to {what} {uri} within") from exc
                raise StorageUnavailable(
                    f"UFS gave no answer to {what} {uri} within {self._deadline:g}s "
                    "(dora.ufs.call.deadline)",
                    retry_after=math.ceil(self._deadline),
                ) from exc
            except Exception as exc:
                error = translate(exc, what, uri)
                delay = self.options.retry_base_delay_ms * (2 ** (attempt - 1)) / 1000
                if not isinstance(error, StorageUnavailable) or attempt == attempts:
                    raise error from exc
                if delay >= deadline.left():
                    # No time left for another attempt: the caller's time, or the call's.
                    if deadline is caller:
                        raise _late(caller, f"{error}; no time to retry within") from exc
                    raise error from exc
                log.info("UFS %s %s failed (%s); retry %d in %.2fs", what, uri, exc, attempt, delay)
                self._sleep(delay)
        raise AssertionError("unreachable: the loop returns or raises")

    def _bound(self, caller: Deadline | None) -> Deadline:
        """A call's deadline: its own (``dora.ufs.call.deadline`` from now), or the caller's
        when that comes first."""
        if caller is None:
            return Deadline(self._deadline, self._clock)
        return caller.capped(self._deadline)

    def status(self, uri: str, *, deadline: Deadline | None = None) -> UfsStatus:
        """The status of a file or directory; UfsNotFound if absent."""
        backend = self._of(uri)
        return self._call("status", uri, partial(backend.status, uri), deadline)

    def list(self, uri: str, *, deadline: Deadline | None = None) -> list[UfsStatus]:
        """The children of directory ``uri`` with full status, sorted by URI; UfsNotADirectory
        for a file."""
        backend = self._of(uri)
        children = self._call("list", uri, partial(backend.list, uri), deadline)
        return sorted(children, key=lambda s: s.uri)

    def read(
        self,
        uri: str,
        offset: int,
        length: int,
        version: str | None = None,
        *,
        deadline: Deadline | None = None,
    ) -> bytes:
        """Bytes ``[offset, offset+length)``, fewer at the end of the file.

        With ``version``, the bytes are guaranteed to come from that version: S3 reads carry
        ``If-Match``, local reads check it on the descriptor they read from, other stores are
        re-checked after the read. A different version raises :class:`UfsVersionChanged`.
        """
        backend = self._of(uri)
        pinned = backend.pins_versions and version not in (None, DIR_VERSION)
        pin = version if pinned else None
        data = self._call("read", uri, partial(backend.read, uri, offset, length, pin), deadline)
        if version is not None and not pinned:
            current = self.status(uri, deadline=deadline).version
            if current != version:
                raise UfsVersionChanged(uri, version, current)
        return data

    def read_files(
        self, files: Sequence[UfsStatus], *, deadline: Deadline | None = None
    ) -> Sequence[bytes | UfsError]:
        """Each file read whole, its bytes guaranteed to be its status's version as
        :meth:`read` guarantees them: per file, the bytes or the error :meth:`read` would
        raise. All files are of one scheme (ValueError otherwise).

        A local UFS reads them in one request to a UFS thread, under one deadline for them all
        (raising StorageUnavailable for them all when it does not answer in time; no retries, a
        failed file is the caller's to read again): for small files the hop costs more than the
        read. Any other store reads each file as :meth:`read` does, with its own deadline and
        retries, as one request per file is all an object store offers and a batch of them
        under one deadline would fail whole on a slow store."""
        if not files:
            return []
        scheme = uris.split(files[0].uri)[0]
        if any(uris.split(f.uri)[0] != scheme for f in files):
            raise ValueError(f"files of more than one scheme: {[f.uri for f in files]}")
        backend = self._backend(scheme)
        if not isinstance(backend, LocalBackend):
            return [self._read_whole(status, deadline) for status in files]
        requests = [(f.uri, f.size, f.version) for f in files]
        what = f"{files[0].uri} and {len(files) - 1} more" if len(files) > 1 else files[0].uri
        outcomes: Sequence[bytes | Exception] = self._call(
            "read", what, partial(backend.read_whole, requests), deadline, retry=False
        )
        return [
            outcome if isinstance(outcome, (bytes, UfsError)) else translate(outcome, "read", s.uri)
            for s, outcome in zip(files, outcomes, strict=True)
        ]

    def _read_whole(self, status: UfsStatus, deadline: Deadline | None) -> bytes | UfsError:
        try:
            return self.read(status.uri, 0, status.size, status.version, deadline=deadline)
        except UfsError as exc:
            return exc

    def open(self, uri: str) -> IO[bytes]:
        """A file object that streams the file's current version in large ranged reads; a
        change while it streams raises UfsVersionChanged."""
        status = self.status(uri)
        if status.is_dir:
            raise UfsIsADirectory(f"cannot open {uri!r}: it is a directory")
        return io.BufferedReader(_RangeReader(self, status), WRITE_CHUNK)

    def write(
        self,
        uri: str,
        data: bytes | Iterable[bytes],
        *,
        deadline: Deadline | None = None,
        attributes: Attributes = NO_ATTRIBUTES,
    ) -> UfsStatus:
        """Write (create or replace) a file from bytes or an iterable of chunks; the status of
        what was written, as the write itself reports it (:meth:`UfsBackend.write`): a file
        deleted or replaced by someone else right after does not make a write that happened
        raise UfsNotFound or answer the other party's status.

        Bytes are one call with the deadline. A stream cannot be replayed, so it is written
        once, without retries, and the deadline bounds each request of the upload (one part,
        one chunk) instead of the whole: an upload of any size succeeds while the UFS keeps
        answering, and one the UFS stops answering fails within the deadline. Time spent
        waiting for the caller's chunks does not count. A write that fails at its deadline
        may still complete on the UFS side; the local and S3 backends never leave a part.

        The caller's ``deadline`` bounds the whole write, each request of a stream included
        (a caller that waits for chunks from a client of its own counts its deadline from
        when it has them all, as the worker's surfaces spool a body before writing it).

        ``attributes`` are stored with the file where the store keeps them
        (:class:`ufs.attributes.AttributeStore`), and dropped elsewhere.
        """
        backend = self._of(uri)
        if attributes and isinstance(backend, AttributeStore):
            chunks = (
                iter((bytes(data),))
                if isinstance(data, bytes | bytearray | memoryview)
                else iter(data)
            )
            kept = partial(backend.write_attributed, uri, chunks, partial(self._bound, deadline))
            return self._call("write", uri, lambda _: kept(attributes), deadline, retry=False)
        if isinstance(data, bytes | bytearray | memoryview):
            payload = bytes(data)
            return self._call("write", uri, partial(backend.write, uri, payload), deadline)
        stream = partial(backend.write_stream, uri, iter(data), partial(self._bound, deadline))
        return self._call("write", uri, lambda _: stream(), deadline, retry=False)

    def attributes(self, uri: str, version: str, *, deadline: Deadline | None = None) -> Attributes:
        """What the store keeps of file ``uri`` at ``version`` besides its bytes
        (:mod:`ufs.attributes`): none where it keeps nothing. UfsVersionChanged when the file
        is at another version."""
        backend = self._of(uri)
        if not isinstance(backend, AttributeStore):
            return NO_ATTRIBUTES
        look = partial(backend.attributes, uri, version)
        return self._call("status", uri, look, deadline)

    def append(
        self, uri: str, data: Iterable[bytes], *, deadline: Deadline | None = None
    ) -> UfsStatus:
        """Append the chunks of ``data`` to file ``uri`` as it is now (:meth:`UfsBackend.append`:
        in place on a local directory, a version-pinned rewrite of at most
        ``dora.ufs.append.rewrite.max.size`` on S3, refused elsewhere); the new status. A
        change by someone else between the look and the append raises UfsVersionChanged; a
        failed append leaves the file as it was. Chunks are read once, so it is not retried."""
        status = self.status(uri, deadline=deadline)
        if status.is_dir:
            raise UfsIsADirectory(f"cannot append to {uri!r}: it is a directory")
        backend = self._of(uri)
        append = partial(backend.append, status, data)
        return self._call("append", uri, append, deadline, retry=False)

    def delete(
        self, uri: str, recursive: bool = False, *, deadline: Deadline | None = None
    ) -> None:
        """Delete a file, or a directory (its contents too only with ``recursive``)."""
        status = self.status(uri, deadline=deadline)
        if status.is_dir and not recursive and self.list(uri, deadline=deadline):
            raise UfsIsADirectory(f"cannot delete {uri!r}: a non-empty directory needs recursive")
        backend = self._of(uri)
        self._call("delete", uri, partial(backend.delete, uri, status.is_dir), deadline)

    def rename(self, src: str, dst: str, *, deadline: Deadline | None = None) -> UfsStatus:
        """Move a file or directory; the destination's new status."""
        status = self.status(src, deadline=deadline)
        backend = self._of(src)
        if status.is_dir and not backend.has_directories:
            # Object stores have no directories to rename: move each object under the prefix.
            for child in list(self.walk_files(src, deadline=deadline)):
                move = partial(backend.move, child.uri, dst + child.uri[len(src) :])
                self._call("rename", child.uri, move, deadline)
        else:
            self._call("rename", src, partial(backend.move, src, dst), deadline)
        try:
            return self.status(dst, deadline=deadline)
        except UfsNotFound:
            # Object stores have no empty directories: a moved empty prefix leaves no trace.
            return dir_status(dst, uris.name(dst))

    def mkdir(self, uri: str, *, deadline: Deadline | None = None) -> None:
        """Create a directory and its parents; an existing one is fine."""
        backend = self._of(uri)
        self._call("mkdir", uri, partial(backend.mkdir, uri), deadline)

    def walk_files(self, uri: str, *, deadline: Deadline | None = None) -> Iterator[UfsStatus]:
        """Every file under directory ``uri``, depth first (for prefix loads)."""
        stack = [uri]
        while stack:
            for child in self.list(stack.pop(), deadline=deadline):
                if child.is_dir:
                    stack.append(child.uri)
                else:
                    yield child


def _late(caller: Deadline, what: str) -> UfsDeadlineExceeded:
    return UfsDeadlineExceeded(f"{what} the request's deadline of {caller.seconds:g}s", caller)


class _RangeReader(io.RawIOBase):
    """The bytes of one pinned file version, as a raw stream of version-pinned ranged reads."""

    def __init__(self, ufs: Ufs, status: UfsStatus) -> None:
        self._ufs = ufs
        self._status = status
        self._position = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        wanted = min(len(buffer), self._status.size - self._position)
        if wanted <= 0:
            return 0
        data = self._ufs.read(self._status.uri, self._position, wanted, self._status.version)
        buffer[: len(data)] = data
        self._position += len(data)
        return len(data)

    def readall(self) -> bytes:
        # io's default reads 8 KB at a time: one UFS call each.
        parts = []
        while part := self.read(WRITE_CHUNK):
            parts.append(part)
        return b"".join(parts)
