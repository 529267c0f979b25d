"""``dora``: an fsspec filesystem that reads and writes through doracache workers.

Two ways to name a file, both full UFS URIs in the end::

    fsspec.open("dora::s3://bucket/key")             # URL chaining
    fs = fsspec.filesystem("dora", workers=["h:28080"])
    fs.open("s3://bucket/key")                       # a full UFS URI on an instance

``dora://s3://bucket/key`` names the same file; pandas (2.x) hands only ``scheme://`` URLs to
fsspec, so it needs this form: ``pd.read_parquet("dora://s3://bucket/t.parquet")``. So does
DuckDB, globs and hive partitions included::

    duckdb.register_filesystem(fs)
    duckdb.sql("select * from read_parquet('dora://s3://bucket/t/**/*.parquet', "
               "hive_partitioning=true)")

Polars sends no unknown scheme to fsspec on its own, and passes ``storage_options`` as strings
only (every option takes a string form: ``workers="h1:28080,h2:28080"``, ``timeout="30"``,
``fallback_to_ufs="false"``). Files go through ``use_pyarrow=True``, datasets through pyarrow::

    pl.read_parquet("dora://s3://bucket/t.parquet", use_pyarrow=True,
                    storage_options={"workers": "h1:28080,h2:28080"})
    pl.read_csv("dora://s3://bucket/t.csv", use_pyarrow=True, storage_options=...)
    pl.scan_pyarrow_dataset(pyarrow.dataset.dataset("s3://bucket/t", filesystem=fs,
                                                    partitioning="hive"))

Names returned by ``ls``/``info``/``find`` are full UFS URIs (for an instance built from a chained
URL, the inner filesystem's form: see :mod:`worker.client.paths`). Each call goes to the worker that
owns the URI on a consistent hash ring; see :mod:`worker.client.http` for failover and retries
and :mod:`worker.client.fallback` for reads straight from the UFS when no worker is reachable.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from glob import has_magic
from typing import Any

from fsspec.callbacks import DEFAULT_CALLBACK, Callback
from fsspec.utils import isfilelike

from ufs import uri as uris
from worker.client.base import DoraFileSystemBase
from worker.client.errors import (
    AlreadyExists,
    DoraError,
    NotFound,
    RangeNotSatisfiable,
)
from worker.client.file import UPLOAD_CHUNK, DoraFile
from worker.client.options import SyncInterval


class DoraFileSystem(DoraFileSystemBase):
    """The ``dora`` fsspec filesystem.

    Options (constructor or fsspec ``storage_options``), each defaulting to the client's site
    properties (``dora.user.workers``, ``dora.user.client.*``): ``workers`` (``host:port``
    list, or one comma-separated string), ``sync_interval`` (ms, a duration such as ``30s``,
    ``-1`` or ``0``; unset leaves the worker's default), ``token``, ``timeout`` (seconds or a
    duration), ``fallback_to_ufs``, ``virtual_nodes``, each of these also as a string;
    ``transport`` (an httpx transport, e.g. ``httpx.ASGITransport`` in tests)
    and ``config`` (a :class:`config.Config`, instead of loading one from the environment).
    ``info``, ``ls``, ``open`` and ``cat_file`` also take ``sync_interval=`` and ``version=``
    per call.

    Errors are :class:`worker.client.errors.DoraError` subclasses of the usual builtins;
    ``exists``/``isfile``/``isdir`` answer False only for a path that does not exist.

    Thread-safe; fsspec caches one instance per thread and per process. After a fork the HTTP
    connection pool and the thread pool are rebuilt in the child.
    """

    # -- reading -------------------------------------------------------------------------------

    def _open(
        self,
        path: str,
        mode: str = "rb",
        block_size: int | None = None,
        autocommit: bool = True,
        cache_options: dict[str, Any] | None = None,
        cache_type: str = "readahead",
        sync_interval: SyncInterval | None = None,
        version: str | None = None,
    ) -> DoraFile:
        """A buffered file (``rb``, ``wb`` or ``xb``); reads are pinned to the version the file
        had at open (VersionMismatch if it changes meanwhile)."""
        return DoraFile(
            self,
            self._uri(path),
            mode,
            block_size,
            autocommit,
            cache_type,
            cache_options,
            sync_interval=self._sync(sync_interval),
            version=version,
        )

    def cat_file(
        self,
        path: str,
        start: int | None = None,
        end: int | None = None,
        sync_interval: SyncInterval | None = None,
        version: str | None = None,
    ) -> bytes:
        """Bytes ``[start, end)`` (negative: from the end, as in slices); ranges past the end
        are cut, as a file's ``read`` would. Large reads go in parallel chunks."""
        uri, sync = self._uri(path), self._sync(sync_interval)
        if (start is not None and start < 0) or (end is not None and end < 0):
            details = self.remote.status(uri, sync, version)
            size, version, sync = details["size"], details["version"], None
            start = max(0, size + start) if start is not None and start < 0 else start
            end = max(0, size + end) if end is not None and end < 0 else end
        start = start or 0
        if end is not None and end <= start:
            return b""
        try:
            return self.reader.read(uri, start, end, version=version, sync_interval=sync)
        except RangeNotSatisfiable:
            # A start at or past the end reads nothing, as read() at the end of a file does.
            return b""

    def cat_ranges(
        self,
        paths: list[str],
        starts: list[int | None] | int | None,
        ends: list[int | None] | int | None,
        max_gap: int | None = None,
        on_error: str = "return",
        **kwargs: Any,
    ) -> list[bytes | BaseException]:
        """Several byte ranges, fetched in parallel; with ``on_error="return"`` a failed range
        yields its exception in place of bytes."""
        if max_gap is not None:
            raise NotImplementedError("max_gap: ranges are fetched separately and in parallel")
        count = len(paths)
        starts_list = starts if isinstance(starts, list) else [starts] * count
        ends_list = ends if isinstance(ends, list) else [ends] * count
        if len(starts_list) != count or len(ends_list) != count:
            raise ValueError("cat_ranges: paths, starts and ends differ in length")

        def one(item: tuple[str, int | None, int | None]) -> bytes | BaseException:
            try:
                return self.cat_file(item[0], item[1], item[2], **kwargs)
            except DoraError as exc:
                if on_error != "return":
                    raise
                return exc

        return self.reader.map(one, list(zip(paths, starts_list, ends_list, strict=True)))

    def get_file(
        self,
        rpath: str,
        lpath: Any,
        callback: Callback = DEFAULT_CALLBACK,
        outfile: Any = None,
        sync_interval: SyncInterval | None = None,
        version: str | None = None,
    ) -> None:
        """Copy a file to local ``lpath`` (or the file object ``outfile``), in parallel chunks
        pinned to one version; a directory becomes a local directory."""
        uri = self._uri(rpath)
        details = self.info(uri, sync_interval=sync_interval, version=version)
        if outfile is None and isfilelike(lpath):
            outfile = lpath
        if details["type"] == "directory":
            if outfile is None:
                os.makedirs(lpath, exist_ok=True)
            return
        callback.set_size(details["size"])
        chunks = self.reader.iter_pinned(uri, 0, details["size"], details["version"] or None)
        if outfile is not None:
            _copy_out(chunks, outfile, callback)
            return
        os.makedirs(os.path.dirname(os.path.abspath(lpath)), exist_ok=True)
        with open(lpath, "wb") as out:
            _copy_out(chunks, out, callback)

    # -- writing -------------------------------------------------------------------------------

    def pipe_file(self, path: str, value: bytes, mode: str = "overwrite") -> None:
        """Write ``value`` as the whole content of ``path``; ``mode="create"`` refuses an
        existing file (checked first, not atomically)."""
        uri = self._check_create(path, mode)
        data = bytes(value)
        self.remote.write(uri, lambda: data, len(data))

    def put_file(
        self,
        lpath: str,
        rpath: str,
        callback: Callback = DEFAULT_CALLBACK,
        mode: str = "overwrite",
    ) -> None:
        """Upload local ``lpath`` as ``rpath``, streamed; a local directory becomes a
        directory. An ``rpath`` ending in ``/`` names a directory: the file goes into it under
        its own name (``x.txt`` to ``s3://b/dir/`` writes ``s3://b/dir/x.txt``), as with
        ``aws s3 cp`` and fsspec's ``put``."""
        if os.path.isdir(lpath):
            self.makedirs(rpath, exist_ok=True)
            return
        if str(rpath).endswith("/"):
            rpath = f"{rpath}{os.path.basename(os.fspath(lpath))}"
        uri = self._check_create(rpath, mode)
        size = os.path.getsize(lpath)
        callback.set_size(size)

        def body() -> Iterator[bytes]:
            with open(lpath, "rb") as source:
                while chunk := source.read(UPLOAD_CHUNK):
                    callback.relative_update(len(chunk))
                    yield chunk

        self.remote.write(uri, body, size)

    def _check_create(self, path: str, mode: str) -> str:
        uri = self._uri(path)
        if mode not in ("overwrite", "create"):
            raise ValueError(f"mode={mode!r}: expected 'overwrite' or 'create'")
        if mode == "create" and self.exists(uri, sync_interval="0"):
            raise AlreadyExists(f"cannot create {uri}: it already exists")
        return uri

    def cp_file(self, path1: str, path2: str) -> None:
        """Copy a file through the client (read in parallel chunks, written as one stream);
        a directory is created at the destination."""
        src, dst = self._uri(path1), self._uri(path2)
        details = self.info(src)
        if details["type"] == "directory":
            self.makedirs(dst, exist_ok=True)
            return
        size, version = details["size"], details["version"] or None
        self.remote.write(dst, lambda: self.reader.iter_pinned(src, 0, size, version), size)

    def mkdir(self, path: str, create_parents: bool = True) -> None:
        """Create a directory (an existing one is fine). Without ``create_parents`` the parent
        must exist."""
        uri = self._uri(path)
        parent = uris.parent(uri)
        if not create_parents and parent is not None and not self.isdir(parent):
            raise NotFound(f"cannot create {uri}: parent {parent} does not exist")
        self.remote.mkdir(uri)

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        """Create a directory and its parents; FileExistsError if it exists, unless
        ``exist_ok``."""
        uri = self._uri(path)
        if not exist_ok and self.exists(uri):
            raise AlreadyExists(f"cannot create {uri}: it already exists")
        self.remote.mkdir(uri)

    def rm_file(self, path: str) -> None:
        self.remote.delete(self._uri(path), recursive=False)

    def rmdir(self, path: str) -> None:
        """Delete an empty directory."""
        self.remote.delete(self._uri(path), recursive=False)

    def rm(
        self, path: str | list[str], recursive: bool = False, maxdepth: int | None = None
    ) -> None:
        """Delete files or directories (their contents too only with ``recursive``). Plain
        paths are one call each; globs and ``maxdepth`` are expanded first."""
        paths = path if isinstance(path, list) else [path]
        if maxdepth is None and not any(has_magic(p) for p in paths):
            for one in paths:
                self.remote.delete(self._uri(one), recursive)
            return
        for uri in reversed(self.expand_path(path, recursive=recursive, maxdepth=maxdepth)):
            try:
                self.remote.delete(uri, recursive)
            except NotFound:
                # Found moments ago: it went with a directory deleted before it (on an object
                # store a prefix disappears with its last object).
                continue

    def mv(
        self,
        path1: str | list[str],
        path2: str | list[str],
        recursive: bool = False,
        maxdepth: int | None = None,
        **kwargs: Any,
    ) -> None:
        """Move a file or directory with one rename on the worker (into ``path2`` when it is an
        existing directory or ends with ``/``); lists and globs go through fsspec's copy and
        delete."""
        if (
            isinstance(path1, list)
            or isinstance(path2, list)
            or has_magic(path1)
            or maxdepth is not None
        ):
            super().mv(path1, path2, recursive=recursive, maxdepth=maxdepth, **kwargs)
            return
        src, dst = self._uri(path1), self._uri(path2)
        if str(path2).endswith("/") or self.isdir(dst):
            dst = f"{dst}/{uris.name(src)}"
        if src != dst:
            self.remote.rename(src, dst)


def _copy_out(chunks: Iterator[bytes], out: Any, callback: Callback) -> None:
    for chunk in chunks:
        out.write(chunk)
        callback.relative_update(len(chunk))
