"""What load jobs use of the worker: its lookups and reads, and what its page store holds.

``worker.service.WorkerService`` is one; the assembly (``worker.assembly``) hands it to the
:class:`worker.load.manager.LoadManager` it builds, so load jobs import nothing of the service.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ufs.status import UfsStatus

if TYPE_CHECKING:
    # Not at run time: the key registry (worker.keys) imports this package, and the reader
    # would bring the metrics library into every `dora` command.
    from worker.reader import ReadResult
    from worker.request import RequestContext


class LoadSource(Protocol):
    """The worker as a load job sees it. Thread-safe: jobs call it from their threads."""

    page_size: int

    def request(self, uri: str, sync_interval: int | None = None) -> RequestContext:
        """The context of a call to ``uri`` (``WorkerService.request``)."""

    def status(self, call: RequestContext) -> UfsStatus:
        """The status of ``call.uri``, checked against the mount roots."""

    def list(self, call: RequestContext) -> list[UfsStatus]:
        """The children of directory ``call.uri`` within the mount roots."""

    def read(self, call: RequestContext, offset: int = 0, length: int | None = None) -> ReadResult:
        """A read through the cache, which stores what its rules admit."""

    def cache_whole(self, files: Sequence[UfsStatus]) -> Sequence[UfsStatus]:
        """Cache small files many at a time; those left to :meth:`read`."""

    def cached_bytes(self, files: Sequence[UfsStatus]) -> builtins.list[int]:
        """Bytes of each of ``files`` (at its version) the page store holds."""
