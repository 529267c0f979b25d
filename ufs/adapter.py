"""The under-storage adapter: one object that serves any URI the backends know, with errors
translated once and bounded retries.

Each storage kind is a backend (:mod:`ufs.backend`): ``file://`` is :mod:`ufs.local`, ``s3://``
is :mod:`ufs.s3`, any other scheme fsspec knows is :mod:`ufs.generic`. None of them caches: the
worker's cache is the only cache.
"""

from __future__ import annotations

import io
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from typing import IO, TypeVar

import fsspec
from fsspec.spec import AbstractFileSystem

from config import Config
from ufs import s3
from ufs import uri as uris
from ufs.backend import WRITE_CHUNK, UfsBackend
from ufs.errors import UfsError, UfsIsADirectory, UfsNotFound, UfsUnavailable, UfsVersionChanged
from ufs.generic import FsspecBackend
from ufs.local import LocalBackend
from ufs.mapping import translate
from ufs.options import UfsOptions
from ufs.status import DIR_VERSION, UfsStatus, dir_status

__all__ = ["DIR_VERSION", "Ufs", "UfsOptions"]

T = TypeVar("T")
log = logging.getLogger(__name__)


class Ufs:
    """Serves any supported URI: statuses, listings, ranged reads, writes, deletes, renames.

    Every method takes a canonical URI (see :mod:`ufs.uri`) and raises only the errors in
    :mod:`ufs.errors`; calls that fail because the UFS is unavailable are retried with bounded,
    doubling backoff before :class:`UfsUnavailable` is raised. ``backends`` replaces or adds
    the backend of a scheme. Thread-safe: backends are created once per scheme under a lock,
    and backends are safe to share.
    """

    def __init__(
        self,
        options: UfsOptions | None = None,
        sleep: Callable[[float], None] = time.sleep,
        backends: Mapping[str, UfsBackend] | None = None,
    ) -> None:
        self.options = options or UfsOptions()
        self._sleep = sleep
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
        if scheme == "file":
            return LocalBackend()
        if scheme in s3.SCHEMES:
            return s3.S3Backend(scheme, self.options)
        return FsspecBackend(scheme, fsspec.filesystem(scheme, skip_instance_cache=True))

    def _of(self, uri: str) -> UfsBackend:
        return self._backend(uris.split(uri)[0])

    def _call(self, what: str, uri: str, fn: Callable[[], T], retry: bool = True) -> T:
        """``fn()`` with its errors translated; with ``retry``, an unavailable UFS is retried
        with bounded, doubling backoff."""
        attempts = self.options.retry_attempts if retry else 1
        for attempt in range(1, attempts + 1):
            try:
                return fn()
            except UfsError:
                raise
            except Exception as exc:
                error = translate(exc, what, uri)
                if isinstance(error, UfsUnavailable) and attempt < attempts:
                    delay = self.options.retry_base_delay_ms * (2 ** (attempt - 1)) / 1000
                    log.info(
                        "UFS %s %s failed (%s); retry %d in %.2fs", what, uri, exc, attempt, delay
                    )
                    self._sleep(delay)
                    continue
                raise error from exc
        raise AssertionError("unreachable: the loop returns or raises")

    def status(self, uri: str) -> UfsStatus:
        """The status of a file or directory; UfsNotFound if absent."""
        backend = self._of(uri)
        return self._call("status", uri, lambda: backend.status(uri))

    def list(self, uri: str) -> list[UfsStatus]:
        """The children of directory ``uri`` with full status, sorted by URI; UfsNotADirectory
        for a file."""
        backend = self._of(uri)
        return sorted(self._call("list", uri, lambda: backend.list(uri)), key=lambda s: s.uri)

    def read(self, uri: str, offset: int, length: int, version: str | None = None) -> bytes:
        """Bytes ``[offset, offset+length)``, fewer at the end of the file.

        With ``version``, the bytes are guaranteed to come from that version: S3 reads carry
        ``If-Match``; other stores are re-checked after the read. A different version raises
        :class:`UfsVersionChanged`.
        """
        backend = self._of(uri)
        pinned = backend.pins_versions and version not in (None, DIR_VERSION)
        data = self._call(
            "read", uri, lambda: backend.read(uri, offset, length, version if pinned else None)
        )
        if version is not None and not pinned:
            current = self.status(uri).version
            if current != version:
                raise UfsVersionChanged(uri, version, current)
        return data

    def open(self, uri: str) -> IO[bytes]:
        """A file object that streams the file's current version in large ranged reads; a
        change while it streams raises UfsVersionChanged."""
        status = self.status(uri)
        if status.is_dir:
            raise UfsIsADirectory(f"cannot open {uri!r}: it is a directory")
        return io.BufferedReader(_RangeReader(self, status), WRITE_CHUNK)

    def write(self, uri: str, data: bytes | Iterable[bytes]) -> UfsStatus:
        """Write (create or replace) a file from bytes or an iterable of chunks; its new status."""
        backend = self._of(uri)
        if isinstance(data, bytes | bytearray | memoryview):
            payload = bytes(data)
            self._call("write", uri, lambda: backend.write(uri, payload))
        else:
            # A stream cannot be replayed, so it is written once, without retries.
            chunks = iter(data)
            self._call("write", uri, lambda: backend.write_stream(uri, chunks), retry=False)
        return self.status(uri)

    def delete(self, uri: str, recursive: bool = False) -> None:
        """Delete a file, or a directory (its contents too only with ``recursive``)."""
        status = self.status(uri)
        if status.is_dir and not recursive and self.list(uri):
            raise UfsIsADirectory(f"cannot delete {uri!r}: a non-empty directory needs recursive")
        backend = self._of(uri)
        self._call("delete", uri, lambda: backend.delete(uri, status.is_dir))

    def rename(self, src: str, dst: str) -> UfsStatus:
        """Move a file or directory; the destination's new status."""
        status = self.status(src)
        backend = self._of(src)
        if status.is_dir and not backend.has_directories:
            # Object stores have no directories to rename: move each object under the prefix.
            for child in list(self.walk_files(src)):
                target = dst + child.uri[len(src) :]
                self._call("rename", child.uri, partial(backend.move, child.uri, target))
        else:
            self._call("rename", src, lambda: backend.move(src, dst))
        try:
            return self.status(dst)
        except UfsNotFound:
            # Object stores have no empty directories: a moved empty prefix leaves no trace.
            return dir_status(dst, uris.name(dst))

    def mkdir(self, uri: str) -> None:
        """Create a directory and its parents; an existing one is fine."""
        backend = self._of(uri)
        self._call("mkdir", uri, lambda: backend.mkdir(uri))

    def walk_files(self, uri: str) -> Iterator[UfsStatus]:
        """Every file under directory ``uri``, depth first (for prefix loads)."""
        stack = [uri]
        while stack:
            for child in self.list(stack.pop()):
                if child.is_dir:
                    stack.append(child.uri)
                else:
                    yield child


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
