"""The worker's REST operations as typed calls: statuses, listings, ranged reads, mutations.

Reads (status, list, read) fall back to the UFS when no worker is reachable and fallback is on.
Mutations go to the owner of the path; then the workers that may cache the path or its parent
are told to drop them (:meth:`Remote._propagate`), so a status or listing asked of any worker
reflects the change (read-your-writes across the ring), and this client's own listeners are
told (:attr:`Remote.listeners`: where a near-cache drops what changed).

Every operation is a flow (:mod:`worker.client.flow`); :class:`Remote` is the HTTP
implementation of both resolvers of :mod:`worker.client.resolvers`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ufs import uri as uris
from worker.client.answers import ReadAnswer, body_of, to_info, ufs_info
from worker.client.errors import AccessDenied, WorkerUnavailable
from worker.client.fallback import UfsFallback
from worker.client.flow import Body, Flow, blocking
from worker.client.http import Answer, Call, NoWorkerReachable, WorkerClient

log = logging.getLogger(__name__)

# Told, after a mutation or an invalidation through this client, the URIs that changed and
# whether everything under them may have changed too.
ChangeListener = Callable[[Sequence[str], bool], None]


class Remote:
    """Typed REST operations over a :class:`WorkerClient`, with an optional UFS fallback.

    ``serve_stale`` (None: the worker decides) is sent with every status and read call.

    Thread-safe: it holds no state beyond its (thread-safe) parts; ``listeners`` are added
    while the filesystem is built, before any call, and must be thread-safe themselves.
    """

    def __init__(
        self, client: WorkerClient, fallback: UfsFallback | None, serve_stale: bool | None = None
    ) -> None:
        self.client = client
        self.fallback = fallback
        self.listeners: list[ChangeListener] = []
        self._serve_stale = None if serve_stale is None else _flag(serve_stale)

    # -- reads ---------------------------------------------------------------------------------

    def status(
        self,
        uri: str,
        sync_interval: str | None = None,
        version: str | None = None,
        aged: bool = False,
    ) -> Flow[dict[str, Any]]:
        """The info dict of ``uri`` (with ``aged``, the worker's ``age_ms`` of it too, see
        :func:`to_info`); NotFound if it does not exist."""
        params = _params(
            path=uri, sync_interval=sync_interval, version=version, serve_stale=self._serve_stale
        )
        call = Call("GET", "/v1/status", uri, f"status {uri}", params)
        try:
            answer = yield from self.client.call(call)
        except NoWorkerReachable:
            if (fallback := self.fallback) is None:
                raise
            return ufs_info((yield from blocking(lambda: fallback.status(uri, version))))
        return to_info(body_of(answer.response), aged)

    def list(
        self, uri: str, sync_interval: str | None = None, aged: bool = False
    ) -> Flow[list[dict[str, Any]]]:
        """The info dicts of the children of directory ``uri`` (``aged``: as :meth:`status`)."""
        call = Call(
            "GET", "/v1/list", uri, f"list {uri}", _params(path=uri, sync_interval=sync_interval)
        )
        try:
            answer = yield from self.client.call(call)
        except NoWorkerReachable:
            if (fallback := self.fallback) is None:
                raise
            statuses = yield from blocking(lambda: fallback.list(uri))
            return [ufs_info(status) for status in statuses]
        return [to_info(entry, aged) for entry in body_of(answer.response)["entries"]]

    def read(
        self,
        uri: str,
        offset: int,
        length: int | None,
        *,
        version: str | None = None,
        sync_interval: str | None = None,
    ) -> Flow[ReadAnswer]:
        """Bytes ``[offset, offset+length)`` (to the end when ``length`` is None), cut at the end
        of the file, and the version served. RangeNotSatisfiable if ``offset`` is past the end;
        VersionMismatch if ``version`` is given and the file no longer has it."""
        params = _params(
            path=uri,
            offset=str(offset),
            length=None if length is None else str(length),
            version=version,
            sync_interval=sync_interval,
            serve_stale=self._serve_stale,
        )
        call = Call(
            "GET", "/v1/read", uri, f"read {uri} [{offset}+{length}]", params, pin_on_cut=True
        )
        try:
            answer = yield from self.client.call(call)
        except NoWorkerReachable:
            if (fallback := self.fallback) is None:
                raise
            return (yield from blocking(lambda: fallback.read(uri, offset, length, version)))
        response = answer.response
        return ReadAnswer(response.content, response.headers.get("X-Dora-Version") or version)

    def locate(self, uri: str, version: str, offset: int, length: int) -> Flow[dict[str, Any]]:
        """The worker's ``/v1/locate`` answer for a range of ``uri`` at ``version`` (where its
        cached pages are, for a short-circuit read); VersionMismatch if the file no longer has
        it."""
        params = _params(path=uri, version=version, offset=str(offset), length=str(length))
        answer = yield from self.client.call(
            Call("GET", "/v1/locate", uri, f"locate {uri} [{offset}+{length}]", params)
        )
        data: dict[str, Any] = body_of(answer.response)
        return data

    def local(self, uri: str) -> Flow[dict[str, Any]]:
        """The same-host facts (``/v1/local``) of the worker that owns ``uri``."""
        answer = yield from self.client.call(Call("GET", "/v1/local", uri, "same-host facts"))
        data: dict[str, Any] = body_of(answer.response)
        return data

    # -- mutations -----------------------------------------------------------------------------

    def write(self, uri: str, body: Body, size: int | None = None) -> Flow[dict[str, Any]]:
        """Create or replace ``uri`` with the bytes ``body`` builds; its new info dict."""
        headers = {"Content-Length": str(size)} if size is not None else {}
        call = Call(
            "PUT", "/v1/write", uri, f"write {uri}", _params(path=uri), False, body, headers
        )
        answer = yield from self.client.call(call)
        yield from self._propagate(answer, [uri], parents=answer.response.status_code == 201)
        return to_info(body_of(answer.response))

    def delete(self, uri: str, recursive: bool) -> Flow[None]:
        """Delete a file, or a directory (its contents too only with ``recursive``)."""
        params = _params(path=uri, recursive=_flag(recursive))
        answer = yield from self.client.call(
            Call("DELETE", "/v1/delete", uri, f"delete {uri}", params, False)
        )
        yield from self._propagate(answer, [uri], parents=True, everywhere=recursive)

    def rename(self, src: str, dst: str) -> Flow[dict[str, Any]]:
        """Move a file or directory; the info dict of the destination."""
        params = _params(src=src, dst=dst)
        answer = yield from self.client.call(
            Call("POST", "/v1/rename", src, f"rename {src} to {dst}", params, False)
        )
        info = to_info(body_of(answer.response))
        yield from self._propagate(
            answer, [src, dst], parents=True, everywhere=info["type"] == "directory"
        )
        return info

    def mkdir(self, uri: str) -> Flow[dict[str, Any]]:
        """Create a directory and its parents (an existing one is fine); its info dict."""
        call = Call("POST", "/v1/mkdir", uri, f"mkdir {uri}", _params(path=uri), idempotent=True)
        answer = yield from self.client.call(call)
        yield from self._propagate(answer, [uri], parents=True)
        return to_info(body_of(answer.response))

    def invalidate(self, uri: str, recursive: bool) -> Flow[int]:
        """Drop ``uri`` (with ``recursive``, everything under it) from every worker's cache: a
        file may have been cached by any worker that served it during a failover. The number of
        statuses dropped. Raises WorkerUnavailable naming the workers that could not be told."""
        self._tell_listeners([uri], recursive)
        total, missed = 0, []
        for worker in self.client.ring.workers:
            try:
                answer = yield from self._invalidate_on(worker, uri, recursive)
                total += int(body_of(answer)["invalidated"])
            except WorkerUnavailable as exc:
                missed.append(f"{worker} ({exc})")
        if missed:
            raise WorkerUnavailable(
                f"invalidate {uri}: not dropped on {', '.join(missed)}; "
                f"dropped {total} entries on the others"
            )
        return total

    def _invalidate_on(self, worker: str, uri: str, recursive: bool) -> Flow[Any]:
        params = _params(path=uri, recursive=_flag(recursive))
        call = Call("POST", "/v1/invalidate", uri, f"invalidate {uri} on {worker}", params)
        return (yield from self.client.call_on(worker, call))

    def pin(self, uri: str, recursive: bool, pinned: bool) -> Flow[None]:
        """Pin ``uri`` (with ``recursive``, everything under it) on every worker, or unpin it:
        any worker may cache its pages. Raises what a worker answers (PinLimitExceeded past a
        worker's bound) and WorkerUnavailable naming the workers that could not be told."""
        route, what = ("/v1/pin", "pin") if pinned else ("/v1/unpin", "unpin")
        params = _params(path=uri, recursive=_flag(recursive))
        missed = []
        for worker in self.client.ring.workers:
            call = Call("POST", route, uri, f"{what} {uri} on {worker}", params)
            try:
                yield from self.client.call_on(worker, call)
            except WorkerUnavailable as exc:
                missed.append(f"{worker} ({exc})")
        if missed:
            raise WorkerUnavailable(f"{what} {uri}: not told to {', '.join(missed)}")

    def _tell_listeners(self, changed: Sequence[str], recursive: bool) -> None:
        for listener in self.listeners:
            listener(changed, recursive)

    def _propagate(
        self, answer: Answer, changed: Sequence[str], *, parents: bool, everywhere: bool = False
    ) -> Flow[None]:
        """After a mutation ``answer.worker`` made, have the workers that may cache what changed
        drop it:

        - the owner of each changed path, when another worker made the change (a failover);
        - with ``parents`` (a path was created or removed), the owner of each parent when
          another worker made the change: that owner may hold the parent's listing or a cached
          "not found" of it (the worker that made the change drops both itself);
        - with ``everywhere`` (a directory tree changed), every other worker, recursively.

        A worker that cannot be told is counted and logged: the mutation itself succeeded, so
        it is not an error to the caller."""
        self._tell_listeners(
            [*changed, *_parents(changed)] if parents else changed, recursive=everywhere
        )
        ring = self.client.ring
        targets: dict[tuple[str, str], bool] = {}
        for uri in changed:
            if everywhere:
                targets.update({(w, uri): True for w in ring.workers if w != answer.worker})
            if ring.owner(uri) != answer.worker:
                targets.setdefault((ring.owner(uri), uri), False)
            parent = uris.parent(uri)
            if parents and parent is not None and ring.owner(parent) != answer.worker:
                targets.setdefault((ring.owner(parent), parent), False)
        for (worker, uri), recursive in targets.items():
            try:
                yield from self._invalidate_on(worker, uri, recursive)
            except AccessDenied as exc:
                if exc.code != "OutsideMountRoots":
                    raise
                # The parent of a mount root: no worker caches anything there.
            except WorkerUnavailable as exc:
                self.client.counters.add("missed_invalidations")
                log.warning("could not drop %s from worker %s after a change: %s", uri, worker, exc)


def _parents(uris_: Iterable[str]) -> list[str]:
    return [parent for uri in uris_ if (parent := uris.parent(uri)) is not None]


def _params(**values: str | None) -> Mapping[str, str]:
    return {name: value for name, value in values.items() if value is not None}


def _flag(value: bool) -> str:
    return "true" if value else "false"
