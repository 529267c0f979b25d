"""The worker service: config + UFS + metadata + pages joined into the cache agent's operations.

Every operation takes a caller's URI, checks it against the mount roots, and answers with plain
data or raises the UFS / metadata errors the API maps to status codes. Nothing here knows HTTP.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from config import Config
from pagestore.api import PageStore
from pagestore.options import PageStoreOptions
from pagestore.store import LocalPageStore
from ufs import keys as ufs_keys
from ufs import uri as uris
from ufs.adapter import DIR_VERSION, Ufs
from ufs.errors import UfsNotFound
from ufs.status import UfsStatus, file_id
from worker import keys
from worker.load import LoadManager
from worker.meta.entry import Operation
from worker.meta.manager import MetadataManager
from worker.metrics import Metrics
from worker.reader import CachePolicy, Reader

log = logging.getLogger(__name__)


class RangeNotSatisfiable(ValueError):
    """A read range that does not fit the file (the API answers 416)."""


@dataclass(frozen=True)
class ReadResult:
    """A read ready to stream: the pinned status, the range served and its bytes."""

    status: UfsStatus
    offset: int
    length: int
    chunks: Iterator[bytes]


class WorkerService:
    """The cache agent's operations. Thread-safe: its parts are, and it holds no state of its
    own beyond them. ``close()`` stops load jobs, then flushes the metastore and page store."""

    def __init__(
        self,
        config: Config,
        ufs: Ufs,
        meta: MetadataManager,
        pages: PageStore,
        page_size: int,
    ) -> None:
        self.config = config
        self.ufs = ufs
        self.meta = meta
        self.pages = pages
        roots: list[str] = config.get(ufs_keys.ROOTS)
        self.roots = uris.MountRoots(roots)
        self.metrics = Metrics()
        include: list[str] = config.get(keys.CACHE_INCLUDE)
        exclude: list[str] = config.get(keys.CACHE_EXCLUDE)
        policy = CachePolicy(tuple(include), tuple(exclude))
        self.reader = Reader(ufs, pages, page_size, policy, self.metrics)
        self.loads = LoadManager(self)
        self._closed = False
        meta.add_listener(self._drop_pages)
        self.metrics.watch(meta.counters, pages, self.loads.states)

    @classmethod
    def from_config(cls, config: Config) -> WorkerService:
        """Open the metastore and page store the config names and start the page restore."""
        ufs = Ufs.from_config(config)
        options = PageStoreOptions.from_config(config)
        pages = LocalPageStore(options)
        meta = MetadataManager.from_config(config, ufs)
        pages.start()
        return cls(config, ufs, meta, pages, options.page_size)

    def close(self) -> None:
        """Idempotent."""
        if self._closed:
            return
        self._closed = True
        self.loads.close()
        self.reader.close()
        self.meta.close()
        self.pages.close()

    def _drop_pages(self, uri: str, version: str) -> None:
        self.pages.delete_file(file_id(uri), version)

    # -- metadata ------------------------------------------------------------------------------

    def describe(self, status: UfsStatus) -> dict[str, Any]:
        """A status as the API shows it: the UFS fields plus bytes of it in the page store."""
        data = status.to_dict()
        cached = (
            0 if status.is_dir else self.pages.cached_bytes(file_id(status.uri), status.version)
        )
        data["cached_bytes"] = cached
        return data

    def status(
        self, uri: str, sync_interval: int | None = None, version: str | None = None
    ) -> UfsStatus:
        return self.meta.get_status(self.roots.check(uri), sync_interval, version)

    def list(self, uri: str, sync_interval: int | None = None) -> list[UfsStatus]:
        return self.meta.list_status(self.roots.check(uri), sync_interval)

    # -- data ----------------------------------------------------------------------------------

    def read(
        self,
        uri: str,
        offset: int = 0,
        length: int | None = None,
        sync_interval: int | None = None,
        version: str | None = None,
    ) -> ReadResult:
        """Resolve the status (sync interval and version as the caller asks), check the range
        and return the bytes to stream. ``length`` None reads to the end; a range past the end
        is cut at the end; an offset past the end is RangeNotSatisfiable."""
        status = self.status(uri, sync_interval, version)
        if status.is_dir:
            raise IsADirectoryError(f"cannot read {status.uri!r}: it is a directory")
        if offset < 0 or (length is not None and length < 0):
            raise RangeNotSatisfiable(f"bad range offset={offset} length={length}")
        if offset > status.size or (offset == status.size and status.size and length != 0):
            raise RangeNotSatisfiable(
                f"offset {offset} is past the end of {status.uri!r} ({status.size} bytes)"
            )
        available = status.size - offset
        length = available if length is None else min(length, available)
        return ReadResult(status, offset, length, self.reader.chunks(status, offset, length))

    def stream(
        self, status: UfsStatus, offset: int, length: int | None = None, *, cache: bool = True
    ) -> Iterator[bytes]:
        """The bytes of ``status``'s version from ``offset`` (to the end, or ``length`` of them),
        for a client that reads what it needs and hangs up (WebHDFS ``OPEN``): read-ahead
        starts at one page and grows while the client keeps reading, and closing the iterator
        cancels the fills not yet started. ``status`` comes from :meth:`status` (roots
        checked, version pinned); ``cache=False`` serves it pass-through.

        Raises IsADirectoryError, RangeNotSatisfiable for an offset outside ``[0, size]``."""
        if status.is_dir:
            raise IsADirectoryError(f"cannot read {status.uri!r}: it is a directory")
        if not 0 <= offset <= status.size:
            raise RangeNotSatisfiable(
                f"offset {offset} is outside {status.uri!r} ({status.size} bytes)"
            )
        end = status.size if length is None else min(status.size, offset + length)
        return self.reader.chunks(status, offset, end - offset, cache=cache, ramp=True)

    # -- mutations -----------------------------------------------------------------------------

    def write(self, uri: str, data: bytes | Iterable[bytes]) -> tuple[UfsStatus, bool]:
        """Write through to the UFS; the new status and whether the file was created."""
        uri = self.roots.check(uri)
        created = not self._exists(uri)
        status = self.ufs.write(uri, data)
        self.meta.record_write(uri, status, Operation.CREATED if created else Operation.UPDATED)
        return status, created

    def _exists(self, uri: str) -> bool:
        try:
            self.meta.get_status(uri, sync_interval=0)
        except UfsNotFound:
            return False
        return True

    def delete(self, uri: str, recursive: bool = False) -> str:
        """Delete through to the UFS; the canonical URI deleted."""
        uri = self.roots.check(uri)
        self.ufs.delete(uri, recursive)
        # A deleted directory's entries go too: record_write drops everything under it.
        self.meta.record_write(uri, None, Operation.DELETED)
        return uri

    def rename(self, src: str, dst: str) -> UfsStatus:
        src, dst = self.roots.check(src), self.roots.check(dst)
        status = self.ufs.rename(src, dst)
        self.meta.record_write(src, None, Operation.DELETED)
        self.meta.record_write(dst, status, Operation.CREATED)
        return status

    def mkdir(self, uri: str) -> UfsStatus:
        uri = self.roots.check(uri)
        self.ufs.mkdir(uri)
        try:
            status = self.ufs.status(uri)
        except UfsNotFound:
            # Object stores keep no empty directories; the prefix exists once written under.
            status = UfsStatus(uri, uris.name(uri), True, 0, 0, DIR_VERSION, None)
        self.meta.record_write(uri, status, Operation.CREATED)
        return status

    def invalidate(self, uri: str, recursive: bool = False) -> int:
        """Drop metadata and pages for a path, or everything under a prefix."""
        uri = self.roots.check(uri)
        dropped = self.meta.invalidate(uri, recursive)
        # Pages of a file whose status already left the caches are dropped by id as well.
        self.pages.delete_file(file_id(uri))
        return dropped

    # -- state ---------------------------------------------------------------------------------

    def ready(self) -> bool:
        return self.pages.ready

    def stats(self) -> dict[str, int]:
        """A JSON-friendly summary for dashboards and the demo."""
        reads = self.reader.counters.snapshot()
        meta = self.meta.counters()
        page_stats = self.pages.stats()
        return {
            "bytes_from_cache": reads["bytes_from_cache"],
            "bytes_from_ufs": reads["bytes_from_ufs"],
            "page_hits": reads["page_hits"],
            "page_misses": reads["page_misses"],
            "passthrough_reads": reads["passthrough"],
            "metadata_hits": meta.get("memory_hits", 0) + meta.get("metastore_hits", 0),
            "metadata_misses": meta.get("misses", 0),
            "metadata_ufs_calls": meta.get("ufs_calls", 0),
            "pages_cached": page_stats.pages,
            "page_store_used_bytes": page_stats.used_bytes,
            "page_store_capacity_bytes": page_stats.capacity_bytes,
        }
