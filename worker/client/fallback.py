"""Reading the UFS directly when no worker can be reached.

Only reads fall back (status, listing, bytes): a write that bypassed the workers would leave
their cached status stale. Every fallback is counted (``ufs_fallbacks``) and logged: the first
one of a filesystem instance as a warning, so a run that silently lost its cache cannot pass
unnoticed, the others at INFO, so the log says which paths bypassed the cache. The UFS is
reached with the client's own properties (``dora.ufs.s3.*``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from config import Config
from ufs import errors as ufs_errors
from ufs.status import UfsStatus
from worker.client import errors
from worker.client.answers import ReadAnswer
from worker.client.stats import ClientCounters
from worker.common import errors as catalogue
from worker.common.forksafe import ProcessLocal

if TYPE_CHECKING:
    from ufs.adapter import Ufs

T = TypeVar("T")
log = logging.getLogger(__name__)


def _adapter(config: Config) -> Ufs:
    # Imported when a client first falls back: most clients never do, and the adapter (with
    # the UFS libraries it reaches on use) is the client's heaviest import.
    from ufs.adapter import Ufs

    return Ufs.from_config(config)


class UfsFallback:
    """Status, listing and ranged reads straight from the UFS, with UFS errors translated into
    the client's error tree.

    Thread-safe: the adapter is (see :class:`ufs.adapter.Ufs`); it is built on first use, once
    per process.
    """

    def __init__(self, config: Config, counters: ClientCounters) -> None:
        self._ufs = ProcessLocal(lambda: _adapter(config))
        self._counters = counters
        self._lock = threading.Lock()
        self._taken = 0

    def status(self, uri: str, version: str | None = None) -> UfsStatus:
        """The UFS status of ``uri``; VersionMismatch if ``version`` is given and differs."""
        self._count("status", uri)
        status = self._translated(lambda: self._ufs.get().status(uri))
        if version is not None and status.version != version:
            raise errors.VersionMismatch(
                f"status {uri}: the UFS has version {status.version!r}, not {version!r}"
            )
        return status

    def list(self, uri: str) -> list[UfsStatus]:
        """The children of directory ``uri``."""
        self._count("list", uri)
        return self._translated(lambda: self._ufs.get().list(uri))

    def read(self, uri: str, offset: int, length: int | None, version: str | None) -> ReadAnswer:
        """Bytes ``[offset, offset+length)`` (to the end when ``length`` is None) and the version
        they belong to. The status is checked first so a pinned version is honoured and a
        directory is refused, as a worker would; the read itself is pinned to that version too
        (S3: ``If-Match``; elsewhere a re-check), so a file replaced in between raises
        VersionMismatch instead of answering bytes of another version under this one's name."""
        self._count("read", uri)
        ufs = self._ufs.get()
        status = self._translated(lambda: ufs.status(uri))
        if status.is_dir:
            raise errors.IsADirectory(f"read {uri}: it is a directory")
        if version is not None and status.version != version:
            raise errors.VersionMismatch(
                f"read {uri}: the UFS has version {status.version!r}, not {version!r}"
            )
        if offset > status.size:
            raise errors.RangeNotSatisfiable(f"read {uri}: offset {offset} > size {status.size}")
        wanted = status.size - offset if length is None else length
        data = self._translated(lambda: ufs.read(uri, offset, wanted, version=status.version))
        return ReadAnswer(data, status.version, status.size)

    def _count(self, what: str, uri: str) -> None:
        self._counters.add("ufs_fallbacks")
        with self._lock:
            self._taken += 1
            taken = self._taken
        if taken == 1:
            log.warning("no dora worker reachable: %s %s read from the UFS directly", what, uri)
        else:
            log.info("UFS fallback %d: %s %s read from the UFS directly", taken, what, uri)

    @staticmethod
    def _translated(call: Callable[[], T]) -> T:
        try:
            return call()
        except ufs_errors.UfsError as exc:
            raise catalogue.client_error_for(exc, f"UFS fallback: {exc}") from exc
