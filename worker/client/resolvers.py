"""The two places where the client resolves what it reads, so a faster source can be put in
front of the workers' REST API without touching any filesystem method:

- :class:`Ranges`: the bytes of a range of a file, at a version when one is pinned. Every read
  of file content goes through one (``cat_file``, ``cat_ranges``, open files, ``get_file``,
  copies; sync and async alike). A short-circuit reader that serves cached pages from the
  worker's page files wraps the HTTP one and asks it for what it cannot serve.
- :class:`Metadata`: the status of a path and the listing of a directory. Every status or
  listing the filesystem needs goes through one. A per-process near-cache wraps the HTTP one; it
  learns of the changes made through this client from :attr:`worker.client.remote.Remote.
  listeners`.

Both return flows (:mod:`worker.client.flow`), so one implementation serves the synchronous and
the asynchronous API; blocking work (opening page files) goes in a ``Blocking`` effect. Which
implementation a filesystem uses is decided in one place,
:func:`worker.client.base.resolvers`.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from worker.client.answers import ReadAnswer
from worker.client.flow import Flow


class Ranges(Protocol):
    """Resolves byte ranges. Implementations are thread-safe."""

    def read(
        self,
        uri: str,
        offset: int,
        length: int | None,
        *,
        version: str | None = None,
        sync_interval: str | None = None,
    ) -> Flow[ReadAnswer]:
        """Bytes ``[offset, offset+length)`` of ``uri`` (to the end when ``length`` is None), cut
        at the end of the file, with the version they belong to and, when known, the file's
        size. With ``version`` the bytes must be of that version: VersionMismatch if the file
        no longer has it. RangeNotSatisfiable if ``offset`` is past the end; NotFound,
        IsADirectory and the other :class:`worker.client.errors.DoraError` as the worker
        answers them."""
        ...


@runtime_checkable
class DirectRanges(Ranges, Protocol):
    """Ranges that can also fill a caller's buffer in place (the short-circuit reader), so a
    large read costs one buffer and no chunk fan-out when its pages are local."""

    remote: Ranges
    """What reads the gaps :meth:`fill` leaves, over HTTP."""

    def pin(
        self, uri: str, version: str | None, sync_interval: str | None, offset: int
    ) -> Flow[tuple[str, int] | None]:
        """The version (``version`` when given) and size to :meth:`fill` ``uri`` at; None when
        this source cannot serve ``uri`` (read through :meth:`read`). Raises as :meth:`read`."""
        ...

    def fill(
        self, uri: str, version: str, offset: int, buffer: memoryview
    ) -> Flow[list[tuple[int, int]]]:
        """Fill ``buffer`` with the bytes of ``uri`` at ``version`` from ``offset`` (within the
        file) where it can; the ranges (file offset, length) left to read from :attr:`remote`."""
        ...

    def locate(self, uri: str, version: str, offset: int, length: int) -> Flow[object]:
        """Find out where the pages of ``[offset, offset + length)`` are, for those not known
        (what :meth:`fill` does first): parallel fills of one range then ask once, not once
        each. Raises as :meth:`read`."""
        ...

    def small_now(self, uri: str, version: str, offset: int, length: int) -> bytes | None:
        """The bytes of a small range within one page, read in the calling thread from what is
        known already; None, having counted nothing, when that is not enough (then
        :meth:`fill_now`)."""
        ...

    def fill_now(
        self, uri: str, version: str, offset: int, buffer: memoryview
    ) -> list[tuple[int, int]] | None:
        """As :meth:`fill`, in the calling thread and only from what is known already (no call
        to a worker); None, having read nothing, when that is not enough to start."""
        ...


class Metadata(Protocol):
    """Resolves statuses and listings (fsspec info dicts with full URIs as names).
    Implementations are thread-safe."""

    def status(
        self, uri: str, sync_interval: str | None = None, version: str | None = None
    ) -> Flow[dict[str, Any]]:
        """The info dict of ``uri``, no older than ``sync_interval`` allows (None: the worker's
        default); with ``version``, VersionMismatch if the file no longer has it. NotFound if
        it does not exist."""
        ...

    def list(self, uri: str, sync_interval: str | None = None) -> Flow[list[dict[str, Any]]]:
        """The info dicts of the children of directory ``uri``; NotADirectory for a file,
        NotFound if it does not exist."""
        ...
