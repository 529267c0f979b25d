"""The ``dora`` filesystem's foundation: options, the worker client and the parts that resolve
what it reads, naming (full UFS URIs, or the inner form for an instance built from a chained URL;
see :mod:`worker.client.paths`) and metadata calls (status, listing, existence, keys,
invalidation), each synchronous and asynchronous over one flow (:mod:`worker.client.ops`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime
from typing import Any, TypeVar

import fsspec.asyn
import httpx
from fsspec.asyn import AsyncFileSystem
from fsspec.implementations.chained import ChainedFileSystem

from config import Config, load_config
from config.keys import PropertyKey
from ufs import uri as uris
from worker.client.fallback import UfsFallback
from worker.client.fastpath import LocalWorker, NearCacheMetadata, ShortCircuitRanges
from worker.client.flow import Flow
from worker.client.http import WorkerClient
from worker.client.ops import Operations
from worker.client.options import (
    ClientOptions,
    SyncInterval,
    client_registry,
    with_storage_options,
)
from worker.client.paths import PROTOCOL, StripProtocol, class_strip
from worker.client.reader import ChunkedReader
from worker.client.remote import Remote
from worker.client.resolvers import Metadata, Ranges
from worker.client.stats import ClientCounters, ClientStats
from worker.common import client_keys

T = TypeVar("T")


def resolvers(
    config: Config, remote: Remote, short_circuit: bool = False, near_cache: bool = False
) -> tuple[Metadata, Ranges]:
    """What resolves statuses and listings, and what resolves byte ranges, for a filesystem
    (see :mod:`worker.client.resolvers`): the workers' REST API, with the same-host fast path
    (:mod:`worker.client.fastpath`) in front where asked for."""
    if not (short_circuit or near_cache):
        return remote, remote
    local = LocalWorker(remote, short_circuit, near_cache)
    metadata: Metadata = NearCacheMetadata(local) if near_cache else remote
    ranges: Ranges = ShortCircuitRanges(local, metadata) if short_circuit else remote
    return metadata, ranges


def _client_config(
    config: Config | None, target_options: dict[str, Any] | None, settings: dict[str, object]
) -> Config:
    """The client's configuration: ``config`` (else the site properties and environment) with
    the storage options in ``settings`` over it. Options for the UFS behind dora are refused:
    workers, and the UFS fallback, use their own ``dora.ufs.*`` properties."""
    if target_options:
        raise ValueError(
            f"options for the UFS behind dora ({sorted(target_options)}) are not taken per "
            "URL: workers use their own dora.ufs.* properties, and so does the UFS fallback"
        )
    config = config if config is not None else load_config(client_registry())
    return with_storage_options(config, settings) if settings else config


def _switch(config: Config, name: str, given: bool | str | None, key: PropertyKey[bool]) -> bool:
    """A fast-path switch: the argument when given (text as the property's), else the property.
    ValueError naming the option for malformed text."""
    if given is None:
        return config.get(key)
    if isinstance(given, bool):
        return given
    try:
        return key.parse(given)
    except ValueError as exc:
        raise ValueError(f"{name}={given!r}: {exc}") from None


class DoraFileSystemBase(AsyncFileSystem, ChainedFileSystem):  # type: ignore[misc]  # untyped
    """Construction, naming and metadata of the ``dora`` filesystem; reads and writes are in
    :class:`worker.client.filesystem.DoraFileSystem`, the class to use. Thread-safe.

    ``short_circuit`` and ``near_cache`` turn on the same-host fast path
    (:mod:`worker.client.fastpath`): reads of cached pages straight from the worker's page
    files, and statuses and listings kept in this process while the worker's generation
    counters say nothing changed. Both take effect only with one worker whose ``/v1/local``
    names a generation file this process can read; otherwise calls go over HTTP as without
    them. Each defaults to its property (``dora.user.client.short.circuit.enabled``,
    ``dora.user.client.near.cache.enabled``, both true: on where it can take effect); True or
    False (or the text of either) overrides it.

    Every other client setting is a keyword too (``settings``, fsspec's storage options):
    ``etcd_endpoints=...``, ``read_chunk_size="4MB"``, or any ``dora.user.*`` key by name
    (:func:`worker.client.options.with_storage_options`)."""

    protocol = PROTOCOL
    root_marker = ""
    # ``fo`` is the path of a chained URL, not an option: leave it out of the instance token so
    # one instance serves every file.
    _strip_tokenize_options = ("fo",)
    _strip_protocol = StripProtocol()

    def __init__(
        self,
        workers: list[str] | str | None = None,
        *,
        sync_interval: SyncInterval | None = None,
        token: str | None = None,
        timeout: float | str | None = None,
        fallback_to_ufs: bool | str | None = None,
        virtual_nodes: int | str | None = None,
        transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
        config: Config | None = None,
        target_protocol: str | None = None,
        target_options: dict[str, Any] | None = None,
        fo: str | None = None,
        asynchronous: bool = False,
        loop: asyncio.AbstractEventLoop | None = None,
        batch_size: int | None = None,
        short_circuit: bool | str | None = None,
        near_cache: bool | str | None = None,
        **settings: object,
    ) -> None:
        super().__init__(asynchronous=asynchronous, loop=loop, batch_size=batch_size)
        config = _client_config(config, target_options, settings)
        self.target_protocol = target_protocol
        self.options = ClientOptions.resolve(
            config,
            workers=workers,
            token=token,
            timeout=timeout,
            sync_interval=sync_interval,
            fallback_to_ufs=fallback_to_ufs,
            virtual_nodes=virtual_nodes,
        )
        counters = ClientCounters()
        self.client = WorkerClient(self.options, transport, counters=counters)
        fallback = UfsFallback(config, counters) if self.options.fallback_to_ufs else None
        self.remote = Remote(self.client, fallback, self.options.serve_stale)
        metadata, ranges = resolvers(
            config,
            self.remote,
            _switch(config, "short_circuit", short_circuit, client_keys.USER_CLIENT_SHORT_CIRCUIT),
            _switch(config, "near_cache", near_cache, client_keys.USER_CLIENT_NEAR_CACHE),
        )
        self.reader = ChunkedReader(
            ranges, metadata, self.options.read_chunk_size, self.options.read_parallelism
        )
        self.ops = Operations(
            target_protocol, self.options.sync_interval, metadata, self.remote, self.reader
        )

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """Where fsspec runs the coroutines behind the synchronous methods this class leaves to
        it (``find``, ``glob``, ``du``, ``cat``, ``get``, ``put``...): fsspec's IO loop of this
        process, rebuilt by fsspec after a fork. The methods this class defines run in the
        calling thread and need no loop."""
        given: asyncio.AbstractEventLoop | None = self._loop
        return given if self.asynchronous else fsspec.asyn.get_loop()

    def _run(self, flow: Flow[T]) -> T:
        """Run ``flow`` in the calling thread."""
        return self.client.sync.run(flow)

    async def _arun(self, flow: Flow[T]) -> T:
        """Run ``flow`` on the running event loop."""
        return await self.client.aio.run(flow)

    # -- names ---------------------------------------------------------------------------------

    def _uri(self, path: Any) -> str:
        """The full UFS URI for ``path`` (what workers and the ring see)."""
        return self.ops.uri(path)

    def strip_path(self, path: Any) -> Any:
        """fsspec's ``_strip_protocol`` on an instance: ``path`` (or each of a list) in the form
        this filesystem shows names in: the full URI, or for a filesystem built from a chained
        URL the inner filesystem's form (``bucket/key``)."""
        if isinstance(path, list | tuple):
            return [self.strip_path(item) for item in path]
        return self.ops.shown({"name": self._uri(path)})["name"]

    def unstrip_protocol(self, name: str) -> str:
        """The URL that names ``name`` through dora from anywhere: ``dora://<full UFS URI>``.

        The ``scheme://`` form, not the chained ``dora::``: callers that route URLs by their
        scheme get back what they route (DuckDB expands globs through ``glob`` and this, then
        opens only ``dora://`` names through the filesystem), and fsspec opens both forms."""
        return f"{PROTOCOL}://{self._uri(name)}"

    @classmethod
    def _parent(cls, path: Any) -> str:
        name: str = class_strip(path)
        if "://" in name:
            return uris.parent(name) or name
        return name.rsplit("/", 1)[0] if "/" in name else cls.root_marker

    def worker_for(self, path: str) -> str:
        """The worker (``host:port``) that owns ``path`` on the ring."""
        return self.client.ring.owner(self._uri(path))

    def fallback_stats(self) -> ClientStats:
        """Failovers, UFS fallbacks, retries and unreachable workers seen by this instance."""
        return self.client.counters.snapshot()

    @property
    def failover_count(self) -> int:
        """Calls served by a worker other than the owner, or by the UFS directly."""
        stats = self.fallback_stats()
        return stats.failovers + stats.ufs_fallbacks

    # -- metadata ------------------------------------------------------------------------------

    def info(
        self, path: str, sync_interval: SyncInterval | None = None, version: str | None = None
    ) -> dict[str, Any]:
        """The status of ``path``: ``name`` (as :meth:`strip_path` shows it), ``size``,
        ``type``, ``mtime``, ``version``, ``content_hash``, ``cached_bytes``. NotFound if it
        does not exist."""
        return self._run(self.ops.info(path, sync_interval, version))

    async def _info(
        self,
        path: str,
        sync_interval: SyncInterval | None = None,
        version: str | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        return await self._arun(self.ops.info(path, sync_interval, version))

    def ls(
        self, path: str, detail: bool = True, sync_interval: SyncInterval | None = None
    ) -> list[dict[str, Any]] | list[str]:
        """The children of a directory (a file lists as itself), sorted by name."""
        return self._run(self.ops.ls(path, detail, sync_interval))

    async def _ls(
        self,
        path: str,
        detail: bool = True,
        sync_interval: SyncInterval | None = None,
        **kwargs: Any,
    ) -> list[dict[str, Any]] | list[str]:
        return await self._arun(self.ops.ls(path, detail, sync_interval))

    def exists(self, path: str, sync_interval: SyncInterval | None = None) -> bool:
        """Whether ``path`` exists. Only "not found" is False: other errors raise."""
        return self._run(self.ops.type_of(path, sync_interval)) is not None

    async def _exists(
        self, path: str, sync_interval: SyncInterval | None = None, **kwargs: Any
    ) -> bool:
        return await self._arun(self.ops.type_of(path, sync_interval)) is not None

    def lexists(self, path: str, sync_interval: SyncInterval | None = None) -> bool:
        return self.exists(path, sync_interval)

    def isdir(self, path: str) -> bool:
        return self._run(self.ops.type_of(path)) == "directory"

    async def _isdir(self, path: str) -> bool:
        return await self._arun(self.ops.type_of(path)) == "directory"

    def isfile(self, path: str) -> bool:
        return self._run(self.ops.type_of(path)) == "file"

    async def _isfile(self, path: str) -> bool:
        return await self._arun(self.ops.type_of(path)) == "file"

    def walk(
        self,
        path: str,
        maxdepth: int | None = None,
        topdown: bool = True,
        on_error: str | Callable[[BaseException], None] = "omit",
        **kwargs: Any,
    ) -> Iterator[Any]:
        """fsspec's walk, except that by default only a missing directory is skipped: fsspec
        would also skip an unreachable worker or a refused token, giving a silently short
        listing."""
        handler = _skip_only_missing if on_error == "omit" else on_error
        return super().walk(path, maxdepth, topdown, on_error=handler, **kwargs)  # type: ignore[no-any-return]

    async def _walk(
        self,
        path: str,
        maxdepth: int | None = None,
        topdown: bool = True,
        on_error: str | Callable[[BaseException], None] = "omit",
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        handler = _skip_only_missing if on_error == "omit" else on_error
        async for item in super()._walk(path, maxdepth, topdown, on_error=handler, **kwargs):
            yield item

    def ukey(self, path: str, sync_interval: SyncInterval | None = None) -> str:
        """A key that changes exactly when the file's version does."""
        return self._run(self.ops.ukey(path, sync_interval))

    def checksum(self, path: str) -> int:
        """An integer from the file's version (see :meth:`ukey`)."""
        return int(self.ukey(path)[:16], 16)

    def modified(self, path: str) -> datetime:
        return datetime.fromtimestamp(self.info(path)["mtime_ns"] / 1e9, tz=UTC)

    def invalidate_cache(self, path: str | None = None, recursive: bool = True) -> int:
        """Drop ``path`` (with ``recursive``, everything under it) from every worker's cache;
        the number of statuses dropped. Use it after changing files outside the cache.

        With no path this does nothing and returns 0: the client keeps no cache of its own, and
        fsspec's generic callers of ``invalidate_cache()`` never mean "empty every worker"."""
        if path is None:
            return 0
        return self._run(self.ops.invalidate(path, recursive))

    def pin(self, path: str, recursive: bool = False) -> None:
        """Pin ``path`` on every worker (with ``recursive``, everything under it): its pages
        are never evicted. Raises PinLimitExceeded past a worker's bound."""
        self._run(self.ops.pin(path, recursive, pinned=True))

    def unpin(self, path: str, recursive: bool = False) -> None:
        """Drop the pin of ``path`` (with ``recursive``, every pin under it too) everywhere."""
        self._run(self.ops.pin(path, recursive, pinned=False))


def _skip_only_missing(exc: BaseException) -> None:
    if not isinstance(exc, FileNotFoundError):
        raise exc
