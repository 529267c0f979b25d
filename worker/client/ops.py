"""The ``dora`` filesystem's operations, written once as flows (:mod:`worker.client.flow`): the
filesystem's synchronous methods run them with the client's synchronous driver, its ``_``-prefixed
coroutines with the asynchronous one.

Paths come as callers give them (a full UFS URI, ``dora://``/``dora::`` forms, or the inner form
of a filesystem built from a chained URL) and names go back in the filesystem's display form
(:mod:`worker.client.paths`). Statuses and listings are resolved by a
:class:`~worker.client.resolvers.Metadata`, bytes by the :class:`~worker.client.reader.
ChunkedReader` over a :class:`~worker.client.resolvers.Ranges`, mutations by the
:class:`~worker.client.remote.Remote`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from typing import IO, Any

from fsspec.callbacks import Callback

from ufs import uri as uris
from worker.client.errors import (
    AlreadyExists,
    DoraError,
    IsADirectory,
    NotADirectory,
    NotFound,
    RangeNotSatisfiable,
)
from worker.client.flow import Flow, blocking, parallel
from worker.client.options import SyncInterval, sync_interval_param
from worker.client.paths import display_name, to_uri
from worker.client.reader import ChunkedReader
from worker.client.remote import Remote
from worker.client.resolvers import Metadata

UPLOAD_CHUNK = 1 << 20

RangeResult = bytes | BaseException


class Operations:
    """Each filesystem operation as a flow. Thread-safe: it holds no state beyond its
    (thread-safe) parts."""

    def __init__(
        self,
        target_protocol: str | None,
        default_sync_interval: str | None,
        metadata: Metadata,
        remote: Remote,
        reader: ChunkedReader,
    ) -> None:
        self.target_protocol = target_protocol
        self.default_sync_interval = default_sync_interval
        self.metadata = metadata
        self.remote = remote
        self.reader = reader

    # -- names ---------------------------------------------------------------------------------

    def uri(self, path: Any) -> str:
        """The full UFS URI for ``path`` (what workers and the ring see)."""
        return to_uri(path, self.target_protocol)

    def shown(self, info: dict[str, Any]) -> dict[str, Any]:
        """``info`` with its name in the display form."""
        info["name"] = display_name(info["name"], self.target_protocol)
        return info

    def sync(self, value: SyncInterval | None) -> str | None:
        """The sync interval to send: ``value``, or the filesystem's default."""
        return self.default_sync_interval if value is None else sync_interval_param(value)

    # -- metadata ------------------------------------------------------------------------------

    def info(
        self, path: Any, sync_interval: SyncInterval | None = None, version: str | None = None
    ) -> Flow[dict[str, Any]]:
        status = yield from self.metadata.status(self.uri(path), self.sync(sync_interval), version)
        return self.shown(status)

    def ls(
        self, path: Any, detail: bool = True, sync_interval: SyncInterval | None = None
    ) -> Flow[list[dict[str, Any]] | list[str]]:
        uri, sync = self.uri(path), self.sync(sync_interval)
        try:
            entries = yield from self.metadata.list(uri, sync)
        except NotADirectory:
            entries = [(yield from self.metadata.status(uri, sync))]
        entries = sorted((self.shown(entry) for entry in entries), key=lambda e: str(e["name"]))
        return entries if detail else [str(entry["name"]) for entry in entries]

    def type_of(self, path: Any, sync_interval: SyncInterval | None = None) -> Flow[str | None]:
        """``"file"``, ``"directory"``, or None when ``path`` does not exist (only "not found"
        is None: other errors raise)."""
        try:
            details = yield from self.info(path, sync_interval=sync_interval)
        except FileNotFoundError:
            return None
        return str(details["type"])

    def ukey(self, path: Any, sync_interval: SyncInterval | None = None) -> Flow[str]:
        uri = self.uri(path)
        details = yield from self.metadata.status(uri, self.sync(sync_interval))
        return hashlib.sha256(f"{uri}\n{details['version']}".encode()).hexdigest()

    def invalidate(self, path: Any, recursive: bool) -> Flow[int]:
        return (yield from self.remote.invalidate(self.uri(path), recursive))

    def pin(self, path: Any, recursive: bool, pinned: bool) -> Flow[None]:
        return (yield from self.remote.pin(self.uri(path), recursive, pinned))

    # -- reading -------------------------------------------------------------------------------

    def cat_file(
        self,
        path: Any,
        start: int | None = None,
        end: int | None = None,
        sync_interval: SyncInterval | None = None,
        version: str | None = None,
    ) -> Flow[bytes]:
        uri, sync = self.uri(path), self.sync(sync_interval)
        if (start is not None and start < 0) or (end is not None and end < 0):
            details = yield from self.metadata.status(uri, sync, version)
            size, version, sync = details["size"], details["version"], None
            start = max(0, size + start) if start is not None and start < 0 else start
            end = max(0, size + end) if end is not None and end < 0 else end
        start = start or 0
        if end is not None and end <= start:
            return b""
        try:
            return (
                yield from self.reader.read(uri, start, end, version=version, sync_interval=sync)
            )
        except RangeNotSatisfiable:
            # A start at or past the end reads nothing, as read() at the end of a file does.
            return b""

    def cat_ranges(
        self,
        paths: list[Any],
        starts: list[int | None] | int | None,
        ends: list[int | None] | int | None,
        on_error: str,
        limit: int,
        **kwargs: Any,
    ) -> Flow[list[RangeResult]]:
        """Several byte ranges, at most ``limit`` in flight; with ``on_error="return"`` a
        failed range yields its exception in place of bytes."""
        count = len(paths)
        starts_list = starts if isinstance(starts, list) else [starts] * count
        ends_list = ends if isinstance(ends, list) else [ends] * count
        if len(starts_list) != count or len(ends_list) != count:
            raise ValueError("cat_ranges: paths, starts and ends differ in length")
        flows = [
            self._range(path, start, end, on_error, kwargs)
            for path, start, end in zip(paths, starts_list, ends_list, strict=True)
        ]
        return (yield from parallel(flows, limit))

    def _range(
        self, path: Any, start: int | None, end: int | None, on_error: str, kwargs: dict[str, Any]
    ) -> Flow[RangeResult]:
        try:
            return (yield from self.cat_file(path, start, end, **kwargs))
        except DoraError as exc:
            if on_error != "return":
                raise
            return exc

    def get_file(
        self,
        rpath: Any,
        lpath: Any,
        callback: Callback,
        outfile: IO[bytes] | None,
        sync_interval: SyncInterval | None = None,
        version: str | None = None,
    ) -> Flow[None]:
        """Copy a file to local ``lpath`` (or the file object ``outfile``), in parallel chunks
        pinned to one version; a directory becomes a local directory."""
        uri = self.uri(rpath)
        details = yield from self.metadata.status(uri, self.sync(sync_interval), version)
        if details["type"] == "directory":
            if outfile is None:
                yield from blocking(lambda: os.makedirs(lpath, exist_ok=True))
            return
        callback.set_size(details["size"])
        pinned = details["version"] or None
        if outfile is not None:
            sink = _writer(outfile, callback)
            yield from self.reader.copy_pinned(uri, 0, details["size"], pinned, sink)
            return
        out = yield from blocking(lambda: _create_local(lpath))
        try:
            sink = _writer(out, callback)
            yield from self.reader.copy_pinned(uri, 0, details["size"], pinned, sink)
        finally:
            out.close()

    def open_details(
        self,
        path: Any,
        mode: str,
        sync_interval: SyncInterval | None = None,
        version: str | None = None,
    ) -> Flow[dict[str, Any] | None]:
        """What opening ``path`` in ``mode`` needs: for reading, the status of the file (the
        version reads are pinned to); None for writing. IsADirectory for a directory opened for
        reading, AlreadyExists for an existing file opened with ``xb``."""
        uri = self.uri(path)
        if mode == "rb":
            details = yield from self.metadata.status(uri, self.sync(sync_interval), version)
            if details["type"] == "directory":
                raise IsADirectory(f"cannot open {uri} for reading: it is a directory")
            return details
        if mode == "xb" and (yield from self.type_of(uri, sync_interval="0")) is not None:
            # Checked at open, not atomically at commit: the REST write has no create-only form.
            raise AlreadyExists(f"cannot create {uri}: it already exists")
        return None

    # -- writing -------------------------------------------------------------------------------

    def pipe_file(self, path: Any, value: bytes, mode: str = "overwrite") -> Flow[None]:
        uri = yield from self._check_create(path, mode)
        data = bytes(value)
        yield from self.remote.write(uri, lambda: data, len(data))

    def put_file(self, lpath: str, rpath: Any, callback: Callback, mode: str) -> Flow[None]:
        """Upload local ``lpath`` as ``rpath``, streamed; a local directory becomes a
        directory; an ``rpath`` ending in ``/`` names the directory to put the file in."""
        if os.path.isdir(lpath):
            yield from self.makedirs(rpath, exist_ok=True)
            return
        if str(rpath).endswith("/"):
            rpath = f"{rpath}{os.path.basename(os.fspath(lpath))}"
        uri = yield from self._check_create(rpath, mode)
        size = os.path.getsize(lpath)
        callback.set_size(size)

        def body() -> Iterator[bytes]:
            with open(lpath, "rb") as source:
                while chunk := source.read(UPLOAD_CHUNK):
                    callback.relative_update(len(chunk))
                    yield chunk

        yield from self.remote.write(uri, body, size)

    def _check_create(self, path: Any, mode: str) -> Flow[str]:
        uri = self.uri(path)
        if mode not in ("overwrite", "create"):
            raise ValueError(f"mode={mode!r}: expected 'overwrite' or 'create'")
        if mode == "create" and (yield from self.type_of(uri, sync_interval="0")) is not None:
            raise AlreadyExists(f"cannot create {uri}: it already exists")
        return uri

    def cp_file(self, path1: Any, path2: Any) -> Flow[None]:
        """Copy a file through the client (read in parallel chunks, written as one stream);
        a directory is created at the destination."""
        src, dst = self.uri(path1), self.uri(path2)
        details = yield from self.metadata.status(src, self.default_sync_interval)
        if details["type"] == "directory":
            yield from self.makedirs(dst, exist_ok=True)
            return
        size, version = details["size"], details["version"] or None
        yield from self.remote.write(
            dst, lambda: self.reader.stream_pinned(src, 0, size, version), size
        )

    def mkdir(self, path: Any, create_parents: bool = True) -> Flow[None]:
        uri = self.uri(path)
        parent = uris.parent(uri)
        must_exist = not create_parents and parent is not None
        if must_exist and (yield from self.type_of(parent)) != "directory":
            raise NotFound(f"cannot create {uri}: parent {parent} does not exist")
        yield from self.remote.mkdir(uri)

    def makedirs(self, path: Any, exist_ok: bool = False) -> Flow[None]:
        uri = self.uri(path)
        if not exist_ok and (yield from self.type_of(uri)) is not None:
            raise AlreadyExists(f"cannot create {uri}: it already exists")
        yield from self.remote.mkdir(uri)

    def rm(self, paths: list[Any], recursive: bool, found: bool = False) -> Flow[None]:
        """Delete each of ``paths``. With ``found`` (paths just expanded from globs, deepest
        last), one already gone is skipped: it went with a directory deleted before it (on an
        object store a prefix disappears with its last object)."""
        for path in reversed(paths) if found else paths:
            try:
                yield from self.remote.delete(self.uri(path), recursive)
            except NotFound:
                if not found:
                    raise

    def mv(self, path1: Any, path2: Any) -> Flow[None]:
        """Move a file or directory with one rename on the worker, into ``path2`` when it is an
        existing directory or ends with ``/``."""
        src, dst = self.uri(path1), self.uri(path2)
        if str(path2).endswith("/") or (yield from self.type_of(dst)) == "directory":
            dst = f"{dst}/{uris.name(src)}"
        if src != dst:
            yield from self.remote.rename(src, dst)


def _create_local(lpath: str) -> IO[bytes]:
    os.makedirs(os.path.dirname(os.path.abspath(lpath)), exist_ok=True)
    return open(lpath, "wb")  # closed by the flow that opened it


def _writer(out: IO[bytes], callback: Callback) -> Callable[[bytes], None]:
    def write(chunk: bytes) -> None:
        out.write(chunk)
        callback.relative_update(len(chunk))

    return write
