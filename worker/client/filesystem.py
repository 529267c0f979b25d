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

Asynchronous callers (zarr 3, fsspec's batched ``_cat``/``_cat_ranges``, anything built on
``AsyncFileSystem``) get the same operations as coroutines (``_info``, ``_cat_file``, ...) on an
instance built with ``asynchronous=True``, running concurrently on their event loop::

    zarr.open_array("dora::s3://bucket/a.zarr", storage_options={"workers": "h1:28080"})
    xarray.open_zarr("dora::s3://bucket/d.zarr", storage_options={"workers": "h1:28080"})

Names returned by ``ls``/``info``/``find`` are full UFS URIs (for an instance built from a chained
URL, the inner filesystem's form: see :mod:`worker.client.paths`). Each call goes to the worker that
owns the URI on a consistent hash ring; see :mod:`worker.client.http` for failover and retries
and :mod:`worker.client.fallback` for reads straight from the UFS when no worker is reachable.
"""

from __future__ import annotations

from glob import has_magic
from typing import Any

from fsspec.asyn import _get_batch_size
from fsspec.callbacks import DEFAULT_CALLBACK, Callback
from fsspec.utils import isfilelike

from worker.client.base import DoraFileSystemBase
from worker.client.file import AsyncDoraFile, DoraFile
from worker.client.options import SyncInterval


class DoraFileSystem(DoraFileSystemBase):
    """The ``dora`` fsspec filesystem.

    Options (constructor or fsspec ``storage_options``), each defaulting to the client's site
    properties (``dora.user.workers``, ``dora.user.client.*``): ``workers`` (``host:port``
    list, or one comma-separated string), ``sync_interval`` (ms, a duration such as ``30s``,
    ``-1`` or ``0``; unset leaves the worker's default), ``token``, ``timeout`` (seconds or a
    duration), ``fallback_to_ufs``, ``virtual_nodes``, ``short_circuit`` and ``near_cache`` (the
    same-host fast path, on by default where it can take effect), each of these also as a string;
    ``tls_ca_file``, ``tls_cert_file`` and ``tls_key_file`` (over ``dora.user.tls.*.file``: the
    CA that ``https://`` workers are verified with, the system's store by default, and a client
    certificate for workers that require one); ``transport`` (an httpx transport, e.g.
    ``httpx.ASGITransport`` in tests) and ``config`` (a :class:`config.Config`, instead of
    loading one from the environment); fsspec's ``asynchronous``, ``loop`` and ``batch_size``.
    ``info``, ``ls``, ``open`` and ``cat_file`` also take ``sync_interval=`` and ``version=``
    per call.

    Every operation exists twice over one implementation (:mod:`worker.client.ops`): as a
    method that runs in the calling thread (``info``) and as a coroutine for event loops
    (``_info``). The methods run without an event loop whatever ``asynchronous`` says; the
    coroutines need a running loop.

    Errors are :class:`worker.client.errors.DoraError` subclasses of the usual builtins;
    ``exists``/``isfile``/``isdir`` answer False only for a path that does not exist.

    Thread-safe; fsspec caches one instance per thread and per process. After a fork the HTTP
    connection pools and the thread pool are rebuilt in the child.
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
        DoraFile.check_mode(mode)
        details = self._run(self.ops.open_details(path, mode, sync_interval, version))
        return DoraFile(
            self, self._uri(path), mode, details, block_size, autocommit, cache_type, cache_options
        )

    async def open_async(
        self,
        path: str,
        mode: str = "rb",
        sync_interval: SyncInterval | None = None,
        version: str | None = None,
        **kwargs: Any,
    ) -> AsyncDoraFile:
        """An unbuffered file for event loops (``rb`` or ``wb``: fsspec's asynchronous file writes
        only in ``wb``), as :meth:`_open`."""
        AsyncDoraFile.check_mode(mode)
        details = await self._arun(self.ops.open_details(path, mode, sync_interval, version))
        return AsyncDoraFile(self, self._uri(path), mode, details, **kwargs)

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
        return self._run(self.ops.cat_file(path, start, end, sync_interval, version))

    async def _cat_file(
        self,
        path: str,
        start: int | None = None,
        end: int | None = None,
        sync_interval: SyncInterval | None = None,
        version: str | None = None,
        **kwargs: Any,
    ) -> bytes:
        return await self._arun(self.ops.cat_file(path, start, end, sync_interval, version))

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
        _no_gaps(max_gap)
        limit = self.options.read_parallelism
        return self._run(self.ops.cat_ranges(paths, starts, ends, on_error, limit, **kwargs))

    async def _cat_ranges(
        self,
        paths: list[str],
        starts: list[int | None] | int | None,
        ends: list[int | None] | int | None,
        max_gap: int | None = None,
        batch_size: int | None = None,
        on_error: str = "return",
        **kwargs: Any,
    ) -> list[bytes | BaseException]:
        """As :meth:`cat_ranges`, all in flight at once up to fsspec's batch size."""
        _no_gaps(max_gap)
        limit = batch_size or self.batch_size or _get_batch_size(nofiles=True)
        return await self._arun(self.ops.cat_ranges(paths, starts, ends, on_error, limit, **kwargs))

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
        outfile = lpath if outfile is None and isfilelike(lpath) else outfile
        self._run(self.ops.get_file(rpath, lpath, callback, outfile, sync_interval, version))

    async def _get_file(
        self,
        rpath: str,
        lpath: Any,
        callback: Callback = DEFAULT_CALLBACK,
        outfile: Any = None,
        sync_interval: SyncInterval | None = None,
        version: str | None = None,
        **kwargs: Any,
    ) -> None:
        outfile = lpath if outfile is None and isfilelike(lpath) else outfile
        await self._arun(self.ops.get_file(rpath, lpath, callback, outfile, sync_interval, version))

    # -- writing -------------------------------------------------------------------------------

    def pipe_file(self, path: str, value: bytes, mode: str = "overwrite") -> None:
        """Write ``value`` as the whole content of ``path``; ``mode="create"`` refuses an
        existing file (checked first, not atomically)."""
        self._run(self.ops.pipe_file(path, value, mode))

    async def _pipe_file(
        self, path: str, value: bytes, mode: str = "overwrite", **kwargs: Any
    ) -> None:
        await self._arun(self.ops.pipe_file(path, value, mode))

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
        self._run(self.ops.put_file(lpath, rpath, callback, mode))

    async def _put_file(
        self,
        lpath: str,
        rpath: str,
        callback: Callback = DEFAULT_CALLBACK,
        mode: str = "overwrite",
        **kwargs: Any,
    ) -> None:
        await self._arun(self.ops.put_file(lpath, rpath, callback, mode))

    def cp_file(self, path1: str, path2: str) -> None:
        """Copy a file through the client (read in parallel chunks, written as one stream);
        a directory is created at the destination."""
        self._run(self.ops.cp_file(path1, path2))

    async def _cp_file(self, path1: str, path2: str, **kwargs: Any) -> None:
        await self._arun(self.ops.cp_file(path1, path2))

    def mkdir(self, path: str, create_parents: bool = True) -> None:
        """Create a directory (an existing one is fine). Without ``create_parents`` the parent
        must exist."""
        self._run(self.ops.mkdir(path, create_parents))

    async def _mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        await self._arun(self.ops.mkdir(path, create_parents))

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        """Create a directory and its parents; FileExistsError if it exists, unless
        ``exist_ok``."""
        self._run(self.ops.makedirs(path, exist_ok))

    async def _makedirs(self, path: str, exist_ok: bool = False) -> None:
        await self._arun(self.ops.makedirs(path, exist_ok))

    def rm_file(self, path: str) -> None:
        self._run(self.ops.rm([path], recursive=False))

    async def _rm_file(self, path: str, **kwargs: Any) -> None:
        await self._arun(self.ops.rm([path], recursive=False))

    def rmdir(self, path: str) -> None:
        """Delete an empty directory."""
        self._run(self.ops.rm([path], recursive=False))

    def rm(
        self, path: str | list[str], recursive: bool = False, maxdepth: int | None = None
    ) -> None:
        """Delete files or directories (their contents too only with ``recursive``). Plain
        paths are one call each; globs and ``maxdepth`` are expanded first."""
        paths = path if isinstance(path, list) else [path]
        if maxdepth is None and not any(has_magic(p) for p in paths):
            self._run(self.ops.rm(paths, recursive))
            return
        found = self.expand_path(path, recursive=recursive, maxdepth=maxdepth)
        self._run(self.ops.rm(found, recursive, found=True))

    async def _rm(
        self,
        path: str | list[str],
        recursive: bool = False,
        batch_size: int | None = None,
        maxdepth: int | None = None,
        **kwargs: Any,
    ) -> None:
        paths = path if isinstance(path, list) else [path]
        if maxdepth is None and not any(has_magic(p) for p in paths):
            await self._arun(self.ops.rm(paths, recursive))
            return
        found = await self._expand_path(path, recursive=recursive, maxdepth=maxdepth)
        await self._arun(self.ops.rm(found, recursive, found=True))

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
        if _one_move(path1, path2, maxdepth):
            self._run(self.ops.mv(path1, path2))
            return
        super().mv(path1, path2, recursive=recursive, maxdepth=maxdepth, **kwargs)

    async def _mv(
        self,
        path1: str | list[str],
        path2: str | list[str],
        recursive: bool = False,
        maxdepth: int | None = None,
        **kwargs: Any,
    ) -> None:
        if _one_move(path1, path2, maxdepth):
            await self._arun(self.ops.mv(path1, path2))
            return
        await self._copy(path1, path2, recursive=recursive, maxdepth=maxdepth, **kwargs)
        await self._rm(path1, recursive=recursive)


def _one_move(path1: Any, path2: Any, maxdepth: int | None) -> bool:
    """Whether a move is one rename: a single plain path, no depth limit."""
    return not (
        isinstance(path1, list)
        or isinstance(path2, list)
        or has_magic(path1)
        or maxdepth is not None
    )


def _no_gaps(max_gap: int | None) -> None:
    if max_gap is not None:
        raise NotImplementedError("max_gap: ranges are fetched separately and in parallel")
