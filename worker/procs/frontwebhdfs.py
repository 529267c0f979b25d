"""WebHDFS's hot read operations, answered by a front process as the primary's WebHDFS
surface answers them (:mod:`worker.api.webhdfs`): ``GETFILESTATUS``, ``LISTSTATUS`` and
``OPEN`` (the redirect step, and the data step from ``offset`` for ``length``, pinned to the
version the redirect named) — what Spark's readers send for every file they read.

The statuses, listings and bytes come from the front's near-cache and page reads
(:class:`~worker.procs.front.FrontApp`), under the same freshness (the call's
``sync_interval``, else the path's), and the bodies from the primary's own shapes
(:mod:`worker.api.webhdfs_json`, :func:`worker.api.webhdfs_data.redirect`). Every other
operation, a path above the mount roots, ``serve_stale``, ``LISTSTATUS_BATCH`` (its pages are
kept by the primary), ``OPEN``'s redirect in a cluster (it names the file's owner, which the
primary tracks) and every error (not found, a directory, an offset past the end, a bad
parameter, a version gone) is passed to the primary, so its answer is the primary's own
``RemoteException``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from ufs.status import UfsStatus
from worker.api import webhdfs_json as shapes
from worker.api.params import Query
from worker.api.webhdfs_data import redirect
from worker.api.webhdfs_errors import DIALECT, json_answer
from worker.api.webhdfs_paths import PREFIX, Namespace, uri_of
from worker.common.errors import DoraError

if TYPE_CHECKING:
    from worker.procs.front import FrontApp

_OCTETS = b"application/octet-stream"


class FrontWebHdfs:
    """The WebHDFS operations a front answers. Stateless beyond the front it answers for
    (whose near-cache and reader are thread-safe); runs on the front's event loop."""

    def __init__(self, front: FrontApp, namespace: Namespace, redirects: bool) -> None:
        self.front = front
        self.namespace = namespace
        # False in a cluster: OPEN's redirect then names the owner's host, which the primary
        # knows from etcd's membership and a front does not.
        self.redirects = redirects

    async def answer(self, scope: Scope, receive: Receive, send: Send) -> bool:
        """Whether the call was answered here (False: nothing was sent; pass it on)."""
        query = Query(QueryParams(scope["query_string"]), DIALECT)
        path = "/" + scope["path"][len(PREFIX) + 1 :]
        if path.strip("/") == "" or self.namespace.is_virtual(path):
            return False
        given = {"path": uri_of(path)}
        try:
            op = (query.text("op") or "").upper()
            if query.text("serve_stale") is not None:
                return False
            if (interval := query.text("sync_interval")) is not None:
                given["sync_interval"] = interval
            if op == "GETFILESTATUS":
                return await self._file_status(scope, receive, send, given)
            if op == "LISTSTATUS":
                return await self._list_status(scope, receive, send, given)
            if op == "OPEN":
                if (version := query.text("version")) is not None:
                    given["version"] = version
                if query.boolean("data"):
                    return await self._data(scope, send, query, given)
                return await self._redirect(scope, receive, send, query, given)
        except DoraError:
            return False  # a parameter the primary refuses, in its words
        return False

    async def _file_status(
        self, scope: Scope, receive: Receive, send: Send, given: Mapping[str, str]
    ) -> bool:
        status = await self.front.status_of(scope, given)
        if status is None:
            return False
        body = shapes.status_answer(shapes.file_status(_ufs(status), ""))
        await json_answer(body)(scope, receive, send)
        return True

    async def _list_status(
        self, scope: Scope, receive: Receive, send: Send, given: Mapping[str, str]
    ) -> bool:
        """The children of a directory, or the file itself with an empty suffix, as the
        primary answers (a status first, then the listing of a directory)."""
        status = await self.front.status_of(scope, given)
        if status is None:
            return False
        if not status["is_dir"]:
            entries = [shapes.file_status(_ufs(status), "")]
        else:
            listing = await self.front.listing_of(scope, given)
            if listing is None:
                return False
            entries = [shapes.file_status(_ufs(entry), entry["name"]) for entry in listing]
        await json_answer(shapes.statuses(entries))(scope, receive, send)
        return True

    async def _redirect(
        self, scope: Scope, receive: Receive, send: Send, query: Query, given: Mapping[str, str]
    ) -> bool:
        """OPEN's first step: 307 to the data step pinned to the version the status names."""
        if not self.redirects:
            return False
        status = await self.front.status_of(scope, given)
        if status is None or status["is_dir"]:
            return False
        extra = {"data": "true", "version": str(status["version"])}
        await redirect(Request(scope), query, extra)(scope, receive, send)
        return True

    async def _data(self, scope: Scope, send: Send, query: Query, given: Mapping[str, str]) -> bool:
        """OPEN's data step: ``[offset, offset + length)`` of the version asked for (a length
        past the end stops at the end)."""
        offset, length = query.natural("offset", 0), query.optional_natural("length")
        status = await self.front.status_of(scope, given)
        if status is None or status["is_dir"]:
            return False
        size = int(status["size"])
        end = size if length is None else min(size, offset + length)
        if offset >= end:
            return False  # an empty answer or an error: the primary's
        headers = [(b"content-length", str(end - offset).encode()), (b"content-type", _OCTETS)]
        return await self.front.stream(scope, send, status, (offset, end), headers)


def _ufs(status: Mapping[str, Any]) -> UfsStatus:
    """The :class:`UfsStatus` a REST v1 status answer shows."""
    return UfsStatus(
        uri=status["uri"],
        name=status["name"],
        is_dir=status["is_dir"],
        size=status["size"],
        mtime_ns=status["mtime_ns"],
        version=status["version"],
        content_hash=status["content_hash"],
    )
