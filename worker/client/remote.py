"""The worker's REST operations as typed calls: statuses, listings, ranged reads, mutations.

Reads (status, list, read) fall back to the UFS when no worker is reachable and fallback is on.
Mutations go to the owner of the path; then the workers that may cache the path or its parent
are told to drop them (:meth:`Remote._propagate`), so a status or listing asked of any worker
reflects the change (read-your-writes across the ring).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from ufs import uri as uris
from worker.client.answers import ReadResult, to_info, ufs_info
from worker.client.errors import AccessDenied, WorkerUnavailable
from worker.client.fallback import UfsFallback
from worker.client.http import Answer, Body, Call, NoWorkerReachable, WorkerClient

log = logging.getLogger(__name__)


class Remote:
    """Typed REST operations over a :class:`WorkerClient`, with an optional UFS fallback.

    Thread-safe: it holds no state beyond its (thread-safe) parts.
    """

    def __init__(self, client: WorkerClient, fallback: UfsFallback | None) -> None:
        self.client = client
        self.fallback = fallback

    # -- reads ---------------------------------------------------------------------------------

    def status(
        self, uri: str, sync_interval: str | None = None, version: str | None = None
    ) -> dict[str, Any]:
        """The info dict of ``uri``; NotFound if it does not exist."""
        params = _params(path=uri, sync_interval=sync_interval, version=version)
        call = Call("GET", "/v1/status", uri, f"status {uri}", params)
        try:
            return to_info(self.client.send(call).response.json())
        except NoWorkerReachable:
            if self.fallback is None:
                raise
            return ufs_info(self.fallback.status(uri, version))

    def list(self, uri: str, sync_interval: str | None = None) -> list[dict[str, Any]]:
        """The info dicts of the children of directory ``uri``."""
        call = Call(
            "GET", "/v1/list", uri, f"list {uri}", _params(path=uri, sync_interval=sync_interval)
        )
        try:
            entries = self.client.send(call).response.json()["entries"]
        except NoWorkerReachable:
            if self.fallback is None:
                raise
            return [ufs_info(status) for status in self.fallback.list(uri)]
        return [to_info(entry) for entry in entries]

    def read(
        self,
        uri: str,
        offset: int,
        length: int | None,
        *,
        version: str | None = None,
        sync_interval: str | None = None,
    ) -> ReadResult:
        """Bytes ``[offset, offset+length)`` (to the end when ``length`` is None), cut at the end
        of the file, and the version served. RangeNotSatisfiable if ``offset`` is past the end;
        VersionMismatch if ``version`` is given and the file no longer has it."""
        params = _params(
            path=uri,
            offset=str(offset),
            length=None if length is None else str(length),
            version=version,
            sync_interval=sync_interval,
        )
        call = Call(
            "GET", "/v1/read", uri, f"read {uri} [{offset}+{length}]", params, pin_on_cut=True
        )
        try:
            response = self.client.send(call).response
        except NoWorkerReachable:
            if self.fallback is None:
                raise
            return self.fallback.read(uri, offset, length, version)
        return ReadResult(response.content, response.headers.get("X-Dora-Version") or version)

    # -- mutations -----------------------------------------------------------------------------

    def write(self, uri: str, body: Body, size: int | None = None) -> dict[str, Any]:
        """Create or replace ``uri`` with the bytes ``body`` builds; its new info dict."""
        headers = {"Content-Length": str(size)} if size is not None else {}
        call = Call(
            "PUT", "/v1/write", uri, f"write {uri}", _params(path=uri), False, body, headers
        )
        answer = self.client.send(call)
        self._propagate(answer, [uri], parents=answer.response.status_code == 201)
        return to_info(answer.response.json())

    def delete(self, uri: str, recursive: bool) -> None:
        """Delete a file, or a directory (its contents too only with ``recursive``)."""
        params = _params(path=uri, recursive=_flag(recursive))
        answer = self.client.send(Call("DELETE", "/v1/delete", uri, f"delete {uri}", params, False))
        self._propagate(answer, [uri], parents=True, everywhere=recursive)

    def rename(self, src: str, dst: str) -> dict[str, Any]:
        """Move a file or directory; the info dict of the destination."""
        params = _params(src=src, dst=dst)
        answer = self.client.send(
            Call("POST", "/v1/rename", src, f"rename {src} to {dst}", params, False)
        )
        info = to_info(answer.response.json())
        self._propagate(answer, [src, dst], parents=True, everywhere=info["type"] == "directory")
        return info

    def mkdir(self, uri: str) -> dict[str, Any]:
        """Create a directory and its parents (an existing one is fine); its info dict."""
        call = Call("POST", "/v1/mkdir", uri, f"mkdir {uri}", _params(path=uri), idempotent=True)
        answer = self.client.send(call)
        self._propagate(answer, [uri], parents=True)
        return to_info(answer.response.json())

    def invalidate(self, uri: str, recursive: bool) -> int:
        """Drop ``uri`` (with ``recursive``, everything under it) from every worker's cache: a
        file may have been cached by any worker that served it during a failover. The number of
        statuses dropped. Raises WorkerUnavailable naming the workers that could not be told."""
        total, missed = 0, []
        for worker in self.client.ring.workers:
            try:
                total += int(self._invalidate_on(worker, uri, recursive).json()["invalidated"])
            except WorkerUnavailable as exc:
                missed.append(f"{worker} ({exc})")
        if missed:
            raise WorkerUnavailable(
                f"invalidate {uri}: not dropped on {', '.join(missed)}; "
                f"dropped {total} entries on the others"
            )
        return total

    def _invalidate_on(self, worker: str, uri: str, recursive: bool) -> Any:
        params = _params(path=uri, recursive=_flag(recursive))
        call = Call("POST", "/v1/invalidate", uri, f"invalidate {uri} on {worker}", params)
        return self.client.send_to(worker, call)

    def _propagate(
        self, answer: Answer, changed: Iterable[str], *, parents: bool, everywhere: bool = False
    ) -> None:
        """After a mutation ``answer.worker`` made, have the workers that may cache what changed
        drop it:

        - the owner of each changed path, when another worker made the change (a failover);
        - with ``parents`` (a path was created or removed), the owner of each parent when
          another worker made the change: that owner may hold the parent's listing or a cached
          "not found" of it (the worker that made the change drops both itself);
        - with ``everywhere`` (a directory tree changed), every other worker, recursively.

        A worker that cannot be told is counted and logged: the mutation itself succeeded, so
        it is not an error to the caller."""
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
                self._invalidate_on(worker, uri, recursive)
            except AccessDenied as exc:
                if exc.code != "OutsideMountRoots":
                    raise
                # The parent of a mount root: no worker caches anything there.
            except WorkerUnavailable as exc:
                self.client.counters.add("missed_invalidations")
                log.warning("could not drop %s from worker %s after a change: %s", uri, worker, exc)


def _params(**values: str | None) -> Mapping[str, str]:
    return {name: value for name, value in values.items() if value is not None}


def _flag(value: bool) -> str:
    return "true" if value else "false"
