"""The ``dora`` filesystem's foundation: options, the worker client, naming (full UFS URIs, or
the inner form for an instance built from a chained URL; see :mod:`worker.client.paths`) and
metadata calls (status, listing, existence, keys, invalidation)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
from fsspec.implementations.chained import ChainedFileSystem

from config import Config, load_config
from ufs import uri as uris
from worker.client.errors import (
    NotADirectory,
)
from worker.client.fallback import UfsFallback
from worker.client.http import WorkerClient
from worker.client.options import ClientOptions, SyncInterval, sync_interval_param
from worker.client.paths import PROTOCOL, StripProtocol, class_strip, display_name, to_uri
from worker.client.reader import ChunkedReader
from worker.client.remote import Remote
from worker.client.stats import ClientStats, Counters
from worker.keys import build_registry


class DoraFileSystemBase(ChainedFileSystem):  # type: ignore[misc]  # fsspec is untyped
    """Construction, naming and metadata of the ``dora`` filesystem; reads and writes are in
    :class:`worker.client.filesystem.DoraFileSystem`, the class to use. Thread-safe."""

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
    ) -> None:
        super().__init__()
        if target_options:
            raise ValueError(
                f"options for the UFS behind dora ({sorted(target_options)}) are not taken per "
                "URL: workers use their own dora.ufs.* properties, and so does the UFS fallback"
            )
        config = config if config is not None else load_config(build_registry())
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
        counters = Counters()
        self.client = WorkerClient(self.options, transport, counters=counters)
        fallback = UfsFallback(config, counters) if self.options.fallback_to_ufs else None
        self.remote = Remote(self.client, fallback)
        self.reader = ChunkedReader(
            self.remote, self.options.read_chunk_size, self.options.read_parallelism
        )

    # -- names ---------------------------------------------------------------------------------

    def _uri(self, path: Any) -> str:
        """The full UFS URI for ``path`` (what workers and the ring see)."""
        return to_uri(path, self.target_protocol)

    def strip_path(self, path: Any) -> Any:
        """fsspec's ``_strip_protocol`` on an instance: ``path`` (or each of a list) in the form
        this filesystem shows names in: the full URI, or for a filesystem built from a chained
        URL the inner filesystem's form (``bucket/key``)."""
        if isinstance(path, list | tuple):
            return [self.strip_path(item) for item in path]
        return display_name(self._uri(path), self.target_protocol)

    def _shown(self, info: dict[str, Any]) -> dict[str, Any]:
        info["name"] = display_name(info["name"], self.target_protocol)
        return info

    def _sync(self, value: SyncInterval | None) -> str | None:
        return self.options.sync_interval if value is None else sync_interval_param(value)

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
        return self._shown(self.remote.status(self._uri(path), self._sync(sync_interval), version))

    def ls(
        self, path: str, detail: bool = True, sync_interval: SyncInterval | None = None
    ) -> list[dict[str, Any]] | list[str]:
        """The children of a directory (a file lists as itself), sorted by name."""
        uri = self._uri(path)
        try:
            entries = self.remote.list(uri, self._sync(sync_interval))
        except NotADirectory:
            entries = [self.remote.status(uri, self._sync(sync_interval))]
        entries = sorted((self._shown(entry) for entry in entries), key=lambda e: str(e["name"]))
        return entries if detail else [str(entry["name"]) for entry in entries]

    def exists(self, path: str, sync_interval: SyncInterval | None = None) -> bool:
        """Whether ``path`` exists. Only "not found" is False: other errors raise."""
        return self._type_of(path, sync_interval) is not None

    def lexists(self, path: str, sync_interval: SyncInterval | None = None) -> bool:
        return self.exists(path, sync_interval)

    def isdir(self, path: str) -> bool:
        return self._type_of(path) == "directory"

    def isfile(self, path: str) -> bool:
        return self._type_of(path) == "file"

    def _type_of(self, path: str, sync_interval: SyncInterval | None = None) -> str | None:
        try:
            kind: str = self.info(path, sync_interval=sync_interval)["type"]
        except FileNotFoundError:
            return None
        return kind

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

    def ukey(self, path: str, sync_interval: SyncInterval | None = None) -> str:
        """A key that changes exactly when the file's version does."""
        uri = self._uri(path)
        version = self.info(uri, sync_interval=sync_interval)["version"]
        return hashlib.sha256(f"{uri}\n{version}".encode()).hexdigest()

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
        return self.remote.invalidate(self._uri(path), recursive)


def _skip_only_missing(exc: BaseException) -> None:
    if not isinstance(exc, FileNotFoundError):
        raise exc
