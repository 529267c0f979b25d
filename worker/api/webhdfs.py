"""The WebHDFS REST surface, ``/webhdfs/v1/<path>?op=...``, over the same :class:`WorkerService`
as REST v1, so that Hadoop's own ``WebHdfsFileSystem`` (inside pyspark's jars) reads through the
cache: ``spark.read.parquet("webhdfs://worker:28080/s3/bucket/table")``.

Paths map to URIs by ``/<scheme>/<rest>`` (:mod:`worker.api.webhdfs_paths`). Freshness and
caching per path come from ``dora.worker.path.conf``, which the service applies, or from a
``sync_interval`` parameter for callers that can send one. ``OPEN``, ``CREATE`` and ``APPEND``
redirect to themselves with ``data=true`` as a NameNode redirects to a DataNode (:mod:`worker.
api.webhdfs_data`). Every JSON answer goes out without a Content-Type header, errors included
(:mod:`worker.api.webhdfs_errors`). What the shell and Spark ask of a NameNode besides files
(server defaults, trash root, file system status) is answered as HDFS would with trash off;
operations the worker does not offer are refused as a NameNode refuses one it lacks
(docs/spark.md, "Hadoop's and Python's own WebHDFS clients").

Auth, when ``dora.worker.security.token`` is set, is the app's token check with this surface's
credential: ``Authorization: Bearer <token>``, which the Hadoop client sends with its OAuth2
settings (its token provider fetches the access token from ``POST /webhdfs/oauth2/token`` with
the worker token as client secret; that path checks the secret itself), or ``delegation=<token>``.
``worker.spark.webhdfs.hadoop_conf`` gives the Hadoop settings.
"""

from __future__ import annotations

import functools
import hmac
import re
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from ufs import uri as uris
from ufs.errors import UfsNotFound, UfsOutsideRoots
from worker import keys
from worker.api import webhdfs_json as shapes
from worker.api.body import small_body
from worker.api.jsonbody import json_response
from worker.api.locate import pages_answer
from worker.api.params import Lean, Query
from worker.api.surface import Route, Surface, context
from worker.api.webhdfs_data import append_file, create_file, open_file, status_or_none
from worker.api.webhdfs_errors import (
    CREDENTIAL_HINT,
    DIALECT,
    credential,
    json_answer,
    render_error,
)
from worker.api.webhdfs_listing import ListingPages
from worker.api.webhdfs_locality import host_and_name
from worker.api.webhdfs_paths import PREFIX, TOKEN_PATH, Namespace, uri_of
from worker.common.errors import InvalidRequest, IsADirectory, UnsupportedOperation
from worker.request import RequestContext
from worker.service import WorkerService

TOKEN_LIFETIME_S = 3600
_FSACTION = re.compile(r"[r-][w-][x-]")
Op = Callable[["WebHdfs", Request, Query, str], Awaitable[Response]]
# Operations of the WebHDFS API (Hadoop 3.5's GetOpParam, PutOpParam, PostOpParam and
# DeleteOpParam) this surface does not offer: answered as such, not as unknown.
UNSUPPORTED = frozenset(
    {
        *("GETQUOTAUSAGE", "GETDELEGATIONTOKEN", "GET_BLOCK_LOCATIONS", "GETACLSTATUS"),
        *("GETXATTRS", "LISTXATTRS", "GETALLSTORAGEPOLICY", "GETSTORAGEPOLICY", "GETECPOLICY"),
        *("GETSNAPSHOTDIFF", "GETSNAPSHOTDIFFLISTING", "GETSNAPSHOTTABLEDIRECTORYLIST"),
        *("GETLINKTARGET", "GETFILELINKSTATUS", "GETECPOLICIES", "GETECCODECS", "GETTRASHROOTS"),
        *("GETSNAPSHOTLIST", "CREATESYMLINK", "SETREPLICATION", "SETOWNER", "SETPERMISSION"),
        *("SETTIMES", "RENEWDELEGATIONTOKEN", "CANCELDELEGATIONTOKEN", "MODIFYACLENTRIES"),
        *("REMOVEACLENTRIES", "REMOVEDEFAULTACL", "REMOVEACL", "SATISFYSTORAGEPOLICY", "SETACL"),
        *("SETXATTR", "REMOVEXATTR", "ENABLEECPOLICY", "DISABLEECPOLICY", "SETECPOLICY"),
        *("ALLOWSNAPSHOT", "DISALLOWSNAPSHOT", "CREATESNAPSHOT", "RENAMESNAPSHOT"),
        *("SETSTORAGEPOLICY", "SETQUOTA", "SETQUOTABYSTORAGETYPE", "CONCAT", "TRUNCATE"),
        *("UNSETECPOLICY", "UNSETSTORAGEPOLICY", "DELETESNAPSHOT"),
    }
)

LEAN = Lean(request=True)
"""Every WebHDFS call is served as a plain route: ``dispatch`` reads its own parameters, and
Spark's reads make many small calls (a positioned read is one)."""


async def dispatch(state: WebHdfs, request: Request) -> Response:
    """Every ``/webhdfs/v1`` call: on the method and ``op``."""
    query = Query(request.query_params, DIALECT)
    op = (query.text("op") or "").upper()
    handler = OPS.get((request.method, op))
    if handler is None:
        raise _refusal(request.method, op)
    return await handler(state, request, query, "/" + request.path_params.get("path", ""))


def _refusal(method: str, op: str) -> Exception:
    if not op:
        return InvalidRequest('Missing webhdfs parameter "op"')
    if op in UNSUPPORTED:
        return UnsupportedOperation(f"op={op} is not supported by the doracache worker")
    if any(op == known for _, known in OPS):
        return InvalidRequest(f"op={op} is not a {method} operation")
    return InvalidRequest(
        f'Invalid value for webhdfs parameter "op": {op!r} is not a WebHDFS operation'
    )


async def issue_token(state: WebHdfs, request: Request) -> Response:
    """OAuth2 client-credentials grant (RFC 6749, 4.4) for the Hadoop client's token provider:
    the client secret is the worker token, and so is the access token. Answered in OAuth2's
    shape (RFC 6749, 5.2), not as a RemoteException."""
    token = (state.service.config.get(keys.TOKEN) or "").encode()
    form = parse_qs((await small_body(request)).decode("utf-8", "replace"))
    secret = (form.get("client_secret") or [""])[0]
    if token and not hmac.compare_digest(secret.encode(), token):
        body = {"error": "invalid_client", "error_description": "wrong client_secret"}
        return json_response(body, 401)
    answer = {
        "access_token": token.decode() or "none",
        "token_type": "Bearer",
        "expires_in": TOKEN_LIFETIME_S,
    }
    return json_response(answer)


class WebHdfs:
    """The WebHDFS operations over one service, made once when the app is built (the
    surface's ``bind``). Thread-safe: it holds the service and immutable or thread-safe
    parts."""

    def __init__(self, service: WorkerService) -> None:
        self.service = service
        self.namespace = Namespace(service.roots)
        self.listings = ListingPages()

    # -- metadata ------------------------------------------------------------------------------

    def _uri(self, path: str) -> str:
        """The URI of a non-virtual path (virtual directories are handled by each op)."""
        return uri_of(path)

    def _owner(self, uri: str, here: tuple[str, str]) -> tuple[str, str]:
        """``(host, host:port)`` of the worker whose host a task reading ``uri`` should run
        on: its owner on the cluster's ring, else ``here`` (the worker asked)."""
        owner = self.service.owner_of(uri)
        return here if owner is None else host_and_name(owner)

    async def get_file_status(self, request: Request, query: Query, path: str) -> Response:
        if self._virtual(path):
            return json_answer(shapes.status_answer(shapes.directory("")))
        call = self._call(request, query, path)
        status = await run_in_threadpool(self.service.status, call)
        return json_answer(shapes.status_answer(shapes.file_status(status, "")))

    def _call(
        self, request: Request, query: Query, path: str, version: str | None = None
    ) -> RequestContext:
        """The context of a call to non-virtual ``path`` (its ``sync_interval`` and
        ``serve_stale``, else the path's rules)."""
        sync_interval, serve_stale = query.sync_interval(), query.optional_boolean("serve_stale")
        return context(self.service, request, uri_of(path), sync_interval, version, serve_stale)

    def _virtual(self, path: str) -> bool:
        return path.strip("/") == "" or self.namespace.is_virtual(path)

    async def _entries(self, request: Request, query: Query, path: str) -> list[dict[str, Any]]:
        """The statuses a listing of ``path`` shows: the children of a directory, or the file
        itself with an empty suffix (as HDFS answers for a file)."""
        if self._virtual(path):
            return [shapes.directory(name) for name in self.namespace.children(path)]
        call = self._call(request, query, path)

        def work() -> list[dict[str, Any]]:
            status = self.service.status(call)
            if not status.is_dir:
                return [shapes.file_status(status, "")]
            return [shapes.file_status(s, s.name) for s in self.service.list(call)]

        return await run_in_threadpool(work)

    async def list_status(self, request: Request, query: Query, path: str) -> Response:
        return json_answer(shapes.statuses(await self._entries(request, query, path)))

    async def list_status_batch(self, request: Request, query: Query, path: str) -> Response:
        after = query.text("startafter")
        if self._virtual(path):
            names = [
                name for name in self.namespace.children(path) if after is None or name > after
            ]
            return json_answer(shapes.directory_listing([shapes.directory(n) for n in names], 0))
        call = self._call(request, query, path)

        def work() -> dict[str, Any]:
            status = self.service.status(call)
            if not status.is_dir:
                return shapes.directory_listing([shapes.file_status(status, "")], 0)
            return self.listings.page(status.uri, after, lambda: self.service.list(call))

        return json_answer(await run_in_threadpool(work))

    async def block_locations(self, request: Request, query: Query, path: str) -> Response:
        call = self._call(request, query, path)
        offset, length = query.natural("offset", 0), query.natural("length", 1 << 62)
        status = await run_in_threadpool(self.service.status, call)
        if status.is_dir:
            raise IsADirectory(f"Path is not a file: {path}")
        owner = await run_in_threadpool(self._owner, status.uri, _this_worker(request))
        return json_answer(shapes.block_locations(status, offset, length, owner))

    async def list_block_locations(self, request: Request, query: Query, path: str) -> Response:
        """``LISTBLOCKLOCATIONS``, doracache's own op for its JVM client's located listing
        (``org.doracache.hadoop.DoraWebHdfsFileSystem.listLocatedStatus``): the block locations
        of every file in a directory (of the file itself, for a file), by name, as
        ``GETFILEBLOCKLOCATIONS`` answers each: one call where Spark's listing made one per
        file."""
        if self._virtual(path):
            return json_answer({"BlockLocationsByName": {}})
        call, here = self._call(request, query, path), _this_worker(request)

        def work() -> dict[str, Any]:
            status = self.service.status(call)
            files = [status] if not status.is_dir else self.service.list(call)
            return {
                f.name: shapes.block_locations(f, 0, f.size, self._owner(f.uri, here))
                for f in files
                if not f.is_dir
            }

        return json_answer({"BlockLocationsByName": await run_in_threadpool(work)})

    async def content_summary(self, request: Request, query: Query, path: str) -> Response:
        call = self._call(request, query, path)

        def work() -> dict[str, Any]:
            status = self.service.status(call)
            if not status.is_dir:
                return shapes.content_summary(status.size, 1, 0)
            length = files = 0
            directories, pending = 1, [status.uri]
            while pending:
                # Each directory as its own path rules say (a subtree may have its own).
                directory = pending.pop()
                below = context(self.service, request, directory, query.sync_interval())
                for child in self.service.list(below):
                    if child.is_dir:
                        directories += 1
                        pending.append(child.uri)
                    else:
                        files += 1
                        length += child.size
            return shapes.content_summary(length, files, directories)

        return json_answer(await run_in_threadpool(work))

    async def checksum(self, request: Request, query: Query, path: str) -> Response:
        status = await run_in_threadpool(self.service.status, self._call(request, query, path))
        if status.is_dir:
            raise IsADirectory(f"Path is not a file: {path}")
        return json_answer(shapes.checksum(status))

    async def home_directory(self, request: Request, query: Query, path: str) -> Response:
        return json_answer(shapes.path_answer(self.namespace.home()))

    async def trash_root(self, request: Request, query: Query, path: str) -> Response:
        """Where HDFS keeps the caller's trash: ``.Trash`` in the home directory. Nothing is
        moved there (``GETSERVERDEFAULTS`` says trash is off)."""
        return json_answer(shapes.path_answer(self.namespace.home().rstrip("/") + "/.Trash"))

    async def server_defaults(self, request: Request, query: Query, path: str) -> Response:
        return json_answer(shapes.server_defaults())

    async def fs_status(self, request: Request, query: Query, path: str) -> Response:
        return json_answer(shapes.fs_status())

    async def check_access(self, request: Request, query: Query, path: str) -> Response:
        fsaction = query.required("fsaction")
        if not _FSACTION.fullmatch(fsaction):
            raise query.invalid("fsaction", fsaction, "an action such as r-x")
        if not self._virtual(path):
            await run_in_threadpool(self.service.status, self._call(request, query, path))
        return Response(b"", 200)

    # -- data ----------------------------------------------------------------------------------

    async def open(self, request: Request, query: Query, path: str) -> Response:
        if self._virtual(path):
            raise IsADirectory(f"Path is not a file: {path}")
        call = self._call(request, query, path, query.text("version"))
        live = functools.partial(self.service.owner_of, live=True)
        return await open_file(self.service, request, query, call, live)

    async def page_locations(self, request: Request, query: Query, path: str) -> Response:
        """``GETPAGELOCATIONS``, doracache's own op for its JVM short-circuit reader
        (``org.doracache.hadoop.DoraWebHdfsFileSystem``): the path's ``FileStatus`` as
        ``GETFILESTATUS`` answers it and, for a file, where the cached pages of ``[offset,
        offset + length)`` of that version are (``PageLocations``: the ``/v1/locate`` answer
        with the file's length). ``version`` pins it; without one the path's sync interval
        applies. One call serves the client's status and the open that follows it."""
        if self._virtual(path):
            return json_answer(shapes.status_answer(shapes.directory("")))
        call = self._call(request, query, path, query.text("version"))
        offset, length = query.natural("offset", 0), query.optional_natural("length")

        def work() -> dict[str, Any]:
            status = self.service.status(call)
            answer = shapes.status_answer(shapes.file_status(status, ""))
            if not status.is_dir:
                # Pinned to the version just resolved: no second look at the UFS.
                pinned = replace(call, version=status.version)
                located = self.service.locate(pinned, offset, length)
                body = pages_answer(located)
                body["length"] = located.status.size
                answer["PageLocations"] = body
            return answer

        return json_answer(await run_in_threadpool(work))

    async def create(self, request: Request, query: Query, path: str) -> Response:
        self._refuse_virtual(path, "create a file")
        return await create_file(self.service, request, query, self._uri(path), path)

    async def append(self, request: Request, query: Query, path: str) -> Response:
        self._refuse_virtual(path, "append to a file")
        return await append_file(self.service, request, query, self._uri(path))

    # -- mutations -----------------------------------------------------------------------------

    def _refuse_virtual(self, path: str, what: str) -> None:
        if self._virtual(path):
            raise UfsOutsideRoots(f"cannot {what} at {path}: it lies above the mount roots")

    async def mkdirs(self, request: Request, query: Query, path: str) -> Response:
        if not self._virtual(path):
            call = context(self.service, request, self._uri(path))
            await run_in_threadpool(self.service.mkdir, call)
        return json_answer(shapes.boolean(True))

    async def rename(self, request: Request, query: Query, path: str) -> Response:
        """HDFS semantics: false (not an error) when the source is missing or the target is
        taken; a target that is a directory receives the source under its own name."""
        self._refuse_virtual(path, "rename")
        destination = query.required("destination")
        if not destination.startswith("/"):
            raise InvalidRequest(f"destination {destination!r} is not an absolute path")
        self._refuse_virtual(destination, "rename")
        src, dst = self._uri(path), self._uri(destination)
        # Each end as its own rules say: the two ends of a rename may have different ones.
        interval = query.sync_interval()
        ends = (context(self.service, request, uri, interval) for uri in (src, dst))
        return json_answer(shapes.boolean(await run_in_threadpool(self._rename, *ends)))

    def _rename(self, src: RequestContext, dst: RequestContext) -> bool:
        # The target is looked up as the path rules say, not forced fresh: a directory made
        # through the worker on an object store exists only in the worker's metadata.
        source = status_or_none(self.service, src)
        if source is None:
            return False
        target = dst
        existing = status_or_none(self.service, dst)
        if existing is not None:
            if not existing.is_dir:
                return False
            inner = f"{existing.uri}/{source.name}"
            target = self.service.request(
                inner,
                dst.fresh.sync_interval,
                exchange=dst.exchange,
                caller=dst.caller,
                deadline=dst.deadline,
            )
            if status_or_none(self.service, target) is not None:
                return False
        if uris.is_under(target.uri, source.uri):
            return False
        self.service.rename(src, target)
        return True

    async def delete(self, request: Request, query: Query, path: str) -> Response:
        """True when something was deleted, false when nothing was there (as HDFS answers)."""
        self._refuse_virtual(path, "delete")
        call = context(self.service, request, self._uri(path))
        recursive = query.boolean("recursive")

        def work() -> bool:
            try:
                self.service.delete(call, recursive)
            except UfsNotFound:
                return False
            return True

        return json_answer(shapes.boolean(await run_in_threadpool(work)))


def _this_worker(request: Request) -> tuple[str, str]:
    """``(host, host:port)`` of the address the request reached this worker at (the socket's,
    not the name the client used, which Hadoop's client canonicalizes)."""
    server = request.scope.get("server")
    if server is None:
        return host_and_name(request.url.netloc)
    host, port = server[0], server[1]
    if port is None:
        return host, host
    return host, f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


OPS: dict[tuple[str, str], Op] = {
    ("GET", "GETFILESTATUS"): WebHdfs.get_file_status,
    ("GET", "LISTSTATUS"): WebHdfs.list_status,
    ("GET", "LISTSTATUS_BATCH"): WebHdfs.list_status_batch,
    ("GET", "OPEN"): WebHdfs.open,
    ("GET", "GETFILEBLOCKLOCATIONS"): WebHdfs.block_locations,
    ("GET", "LISTBLOCKLOCATIONS"): WebHdfs.list_block_locations,
    ("GET", "GETCONTENTSUMMARY"): WebHdfs.content_summary,
    ("GET", "GETFILECHECKSUM"): WebHdfs.checksum,
    ("GET", "GETHOMEDIRECTORY"): WebHdfs.home_directory,
    ("GET", "CHECKACCESS"): WebHdfs.check_access,
    ("GET", "GETTRASHROOT"): WebHdfs.trash_root,
    ("GET", "GETSERVERDEFAULTS"): WebHdfs.server_defaults,
    ("GET", "GETSTATUS"): WebHdfs.fs_status,
    ("GET", "GETPAGELOCATIONS"): WebHdfs.page_locations,
    ("PUT", "CREATE"): WebHdfs.create,
    ("POST", "APPEND"): WebHdfs.append,
    ("PUT", "MKDIRS"): WebHdfs.mkdirs,
    ("PUT", "RENAME"): WebHdfs.rename,
    ("DELETE", "DELETE"): WebHdfs.delete,
}
"""The operations offered, by HTTP method and ``op``."""

SURFACE = Surface(
    name="webhdfs",
    prefix="/webhdfs",
    routes=(
        *(
            Route(method, path, dispatch, lean=LEAN)
            for path in (PREFIX, PREFIX + "/{path:path}")
            for method in ("GET", "PUT", "POST", "DELETE")
        ),
        Route("POST", TOKEN_PATH, issue_token),
    ),
    render_error=render_error,
    credential=credential,
    credential_hint=CREDENTIAL_HINT,
    open_paths=frozenset({TOKEN_PATH}),
    bind=WebHdfs,
)
"""WebHDFS: errors as RemoteException, the token by bearer header or ``delegation=``."""
