"""Any fsspec filesystem as a UFS backend (``memory://``, ``gcs://``, ...): the default for a
scheme no dedicated backend claims, and the base of the S3 backend.

An async filesystem's coroutines run on fsspec's IO loop and are cancelled at their deadline;
a sync filesystem's calls run on the facade's threads (:class:`ufs.deadline.ThreadRunner`).

An fsspec write answers nothing about what it stored, so a write's status is the one the
filesystem gives right after it (:meth:`FsspecBackend.written`), checked against what the write
knows.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Iterable, Iterator
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

from fsspec.spec import AbstractFileSystem

from ufs import uri as uris
from ufs.backend import WRITE_CHUNK
from ufs.deadline import Deadline, ThreadRunner, run_coroutine
from ufs.errors import UfsInvalidPath, UfsNotADirectory, UfsUnsupported
from ufs.status import UfsStatus, dir_status, file_status

T = TypeVar("T")
log = logging.getLogger(__name__)
_MTIME_FIELDS = ("LastModified", "last_modified", "mtime", "created", "updated")


class FsspecBackend:
    """A :class:`ufs.backend.UfsBackend` over one fsspec filesystem instance. Object-store
    semantics: no directory renames, versions from an ETag where the listing carries one.
    Thread-safe as far as the filesystem is (fsspec's are safe to share)."""

    pins_versions = False
    has_directories = False

    def __init__(self, scheme: str, filesystem: AbstractFileSystem, threads: ThreadRunner) -> None:
        self.scheme = scheme
        self._fs = filesystem
        self._threads = threads

    @property
    def filesystem(self) -> AbstractFileSystem:
        return self._fs

    def path(self, uri: str) -> str:
        """The filesystem's path for ``uri``."""
        return uris.split(uri)[1].rstrip("/")

    def call(self, deadline: Deadline, method: str, *args: Any, **kwargs: Any) -> Any:
        """The filesystem's ``method`` (fsspec's name; its coroutine ``_method`` on an async
        filesystem), done by ``deadline``."""
        if self._fs.async_impl:
            return self.run(lambda: getattr(self._fs, "_" + method)(*args, **kwargs), deadline)
        return self._threads.run(partial(getattr(self._fs, method), *args, **kwargs), deadline)

    def run(self, coroutine: Callable[[], Coroutine[Any, Any, T]], deadline: Deadline) -> T:
        """A coroutine of this (async) filesystem, done by ``deadline`` or cancelled."""
        loop: asyncio.AbstractEventLoop = self._fs.loop
        return run_coroutine(loop, coroutine, deadline)

    def status(self, uri: str, deadline: Deadline) -> UfsStatus:
        return self.status_from_info(self.call(deadline, "info", self.path(uri)))

    def status_from_info(self, info: dict[str, Any]) -> UfsStatus:
        """A status from one fsspec ``info`` dict."""
        name = str(info["name"])
        uri = uris.normalize(f"{self.scheme}://{name.lstrip('/')}")
        # A name ending in "/" is a directory marker (a 0-byte "dir/" object; SeaweedFS lists an
        # emptied directory as one), never a file: no key of a file the cache serves ends so.
        if info.get("type") == "directory" or name.endswith("/"):
            return dir_status(uri, uris.name(uri), _mtime_ns(info))
        etag = info.get("ETag") or info.get("etag") or info.get("e_tag")
        return file_status(uri, int(info.get("size") or 0), _mtime_ns(info), unquoted_etag(etag))

    def list(self, uri: str, deadline: Deadline) -> list[UfsStatus]:
        infos: list[dict[str, Any]] = self.call(deadline, "ls", self.path(uri), detail=True)
        statuses: list[UfsStatus] = []
        for info in infos:
            try:
                statuses.append(self.status_from_info(info))
            except UfsInvalidPath:
                continue  # a name no canonical URI can address: it cannot be served either
        if len(statuses) == 1 and statuses[0].uri == uri and not statuses[0].is_dir:
            raise UfsNotADirectory(f"cannot list {uri!r}: it is a file")
        if not statuses:
            # Listing a file names the file itself (above), so an empty answer is an empty
            # directory — or nothing at all, which status() reports as not found.
            self.status(uri, deadline)
        return [s for s in statuses if s.uri != uri]

    def read(
        self, uri: str, offset: int, length: int, version: str | None, deadline: Deadline
    ) -> bytes:
        data = self.call(deadline, "cat_file", self.path(uri), start=offset, end=offset + length)
        return bytes(data)

    def write(self, uri: str, data: bytes, deadline: Deadline) -> UfsStatus:
        self.call(deadline, "pipe_file", self.path(uri), data)
        return self.written(uri, len(data), None, time.time_ns(), deadline)

    def written(
        self, uri: str, size: int, etag: str | None, mtime_ns: int, deadline: Deadline
    ) -> UfsStatus:
        """The status of the ``size`` bytes a write has just stored at ``uri`` (``etag``: the
        ETag the storage answered the write with, if it did).

        The storage is asked right after the write; its status is the answer when it shows
        this write (same size, same ETag where known), so a later status equals it. When it
        does not — someone deleted or replaced the file meanwhile, or the look failed — the
        write still happened: the answer is built from the write, with ``mtime_ns`` as the
        best value the caller has. Without an ETag that version matches no later status, so
        the cache re-reads the file rather than serve it under this one. Without an ETag, a
        replace of the same size right after cannot be told from the write itself.
        """
        try:
            current: UfsStatus | None = self.status(uri, deadline)
        except Exception as exc:  # noqa: BLE001 — the write is done; only its status is less exact
            log.debug("status of %s after its write failed (%r); built from the write", uri, exc)
            current = None
        if (
            current is not None
            and not current.is_dir
            and current.size == size
            and etag in (None, current.content_hash)
        ):
            return current
        return file_status(uri, size, mtime_ns, etag)

    def write_stream(
        self, uri: str, chunks: Iterator[bytes], step: Callable[[], Deadline]
    ) -> UfsStatus:
        # fsspec's file objects are sync: their steps run on threads, each by ``step()``.
        # Opened uncommitted (fsspec's transactions), so a failed upload is discarded; a
        # filesystem that ignores ``autocommit`` (fsspec's memory filesystem does) may still
        # leave a part. Local and S3 never do.
        def opened() -> Any:
            return self._fs.open(self.path(uri), "wb", block_size=WRITE_CHUNK, autocommit=False)

        out = self._threads.run(opened, step())
        size = 0
        try:
            for chunk in chunks:
                self._threads.run(partial(out.write, chunk), step())
                size += len(chunk)
            self._threads.run(out.close, step())
            self._threads.run(out.commit, step())
        except BaseException:
            self._threads.spawn(out.discard)
            raise
        return self.written(uri, size, None, time.time_ns(), step())

    def append(self, status: UfsStatus, data: Iterable[bytes], deadline: Deadline) -> UfsStatus:
        """Refused: fsspec offers no write conditional on a version, so a rewrite could undo
        a change made meanwhile."""
        raise UfsUnsupported(
            f"cannot append to {status.uri}: {self.scheme} has no append and no conditional "
            "write to emulate one exactly"
        )

    def delete(self, uri: str, recursive: bool, deadline: Deadline) -> None:
        self.call(deadline, "rm", self.path(uri), recursive=recursive)

    def move(self, src: str, dst: str, deadline: Deadline) -> None:
        self.call(deadline, "copy", self.path(src), self.path(dst))
        self.call(deadline, "rm", self.path(src))

    def mkdir(self, uri: str, deadline: Deadline) -> None:
        self.call(deadline, "makedirs", self.path(uri), exist_ok=True)


def unquoted_etag(value: object) -> str | None:
    """An ETag without the quotes S3 puts around it; None for none."""
    return str(value).strip('"') if value else None


def _mtime_ns(info: dict[str, Any]) -> int:
    for field in _MTIME_FIELDS:
        value = info.get(field)
        if isinstance(value, datetime):
            return int(value.timestamp() * 1_000_000) * 1000
        if isinstance(value, int | float):
            return int(value * 1_000_000) * 1000
        if isinstance(value, str) and value:
            return int(datetime.fromisoformat(value).timestamp() * 1_000_000) * 1000
    return 0
