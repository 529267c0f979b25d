"""Which S3 operation a request is, and the S3 surface that serves them.

The S3 endpoint listens on a port of its own (``dora.worker.s3.port``), served by the worker's
one app: :func:`on_port` moves every request arriving there under :data:`PREFIX` (a
virtual-hosted one, ``BUCKET.<dora.worker.s3.domain>``, with its bucket put in the path first),
keeping what the signature covers (the path as sent, the Host). The surface's routes answer
only requests that came so: the same path on the worker's own port is no route.

Each request is verified (``worker.api.s3auth``) before anything else; then its method, its
address (bucket, key) and its query name one operation (:func:`operation`); anything S3 has
that this endpoint does not is 501 NotImplemented naming it. Errors are S3's XML
(``worker.api.s3.errors``), the catalogue's mapped once; each operation's count and latency
go into ``dora_request_seconds{route="s3:<Operation>"}``."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from worker.api.params import Lean
from worker.api.s3 import bucketops, listing, objects, uploadops
from worker.api.s3.call import Endpoint, S3Call
from worker.api.s3.errors import answer, not_implemented, render, request_id, translated
from worker.api.s3.forward import through_owner
from worker.api.surface import Route, Surface
from worker.common import errors as catalogue
from worker.request import UNKNOWN_CALLER, exchange

PREFIX = "/_s3"
"""Where the S3 port's requests are routed in the worker's app."""
SCOPE_KEY = "dora.s3"
"""The ASGI scope's record of an S3-port request (:class:`Arrival`)."""

Operation = Callable[[S3Call], Awaitable[Response]]

# Subresources S3 has and this endpoint does not: each names the operation it would be.
_SUBRESOURCES = {
    "acl": "Acl", "policy": "Policy", "policyStatus": "PolicyStatus", "cors": "Cors",
    "lifecycle": "LifecycleConfiguration", "versioning": "Versioning", "tagging": "Tagging",
    "website": "Website", "logging": "Logging", "notification": "NotificationConfiguration",
    "replication": "Replication", "encryption": "Encryption",
    "object-lock": "ObjectLockConfiguration",
    "retention": "Retention", "legal-hold": "LegalHold", "torrent": "Torrent", "restore": "Restore",
    "select": "SelectObjectContent", "versions": "Versions",
    "accelerate": "AccelerateConfiguration",
    "analytics": "AnalyticsConfiguration", "inventory": "InventoryConfiguration",
    "metrics": "MetricsConfiguration", "ownershipControls": "OwnershipControls",
    "publicAccessBlock": "PublicAccessBlock", "requestPayment": "RequestPayment",
    "intelligent-tiering": "IntelligentTieringConfiguration", "attributes": "Attributes",
    # The stores' versions are not served: a request naming one must not get the current.
    "versionId": "Version",
    "uploads": "Uploads", "delete": "Delete", "location": "Location",
}  # fmt: skip
_VERBS = {"GET": "Get", "HEAD": "Head", "PUT": "Put", "POST": "Post", "DELETE": "Delete"}


@dataclass(frozen=True)
class Arrival:
    """What :func:`on_port` keeps of an S3 request before moving it under the prefix: the
    path as the client sent it (the signature covers it) and the Host it named."""

    raw_path: str
    host: str


def _unsupported(method: str, bucket: str | None, key: str | None, query: Any) -> str:
    for name, title in _SUBRESOURCES.items():
        if name in query:
            return f"{_VERBS.get(method, method)}{'Object' if key else 'Bucket'}{title}"
    target = "Object" if key else "Bucket" if bucket else "Service"
    return f"{_VERBS.get(method, method)}{target}"


def operation(
    method: str, bucket: str | None, key: str | None, query: Any, headers: Any
) -> tuple[str, Operation]:
    """The name and handler of the operation a request is; NotImplemented for the others."""
    found: tuple[str, Operation] | None = None
    if bucket is None:
        if method == "GET":
            found = "ListBuckets", bucketops.list_buckets
    elif not key:
        found = _bucket_operation(method, query)
    else:
        found = _object_operation(method, query, headers)
    if found is None:
        raise not_implemented(_unsupported(method, bucket, key, query))
    return found


def _bucket_operation(method: str, query: Any) -> tuple[str, Operation] | None:
    if method == "HEAD":
        return "HeadBucket", bucketops.head_bucket
    if method == "GET":
        if "location" in query:
            return "GetBucketLocation", bucketops.bucket_location
        if "uploads" in query:
            return "ListMultipartUploads", uploadops.list_uploads
        if any(name in query for name in _SUBRESOURCES):
            return None
        if query.get("list-type") == "2":
            return "ListObjectsV2", bucketops.in_existing_bucket(listing.list_objects_v2)
        return "ListObjects", bucketops.in_existing_bucket(listing.list_objects)
    if method == "POST" and "delete" in query:
        return "DeleteObjects", objects.delete_objects
    if any(name in query for name in _SUBRESOURCES):
        return None
    if method == "PUT":
        return "CreateBucket", bucketops.create_bucket
    if method == "DELETE":
        return "DeleteBucket", bucketops.delete_bucket
    return None


def _object_operation(method: str, query: Any, headers: Any) -> tuple[str, Operation] | None:
    upload = "uploadId" in query
    copy = "x-amz-copy-source" in headers
    if any(name in query for name in _SUBRESOURCES if name != "uploads"):
        return None
    if method == "GET":
        return ("ListParts", uploadops.list_parts) if upload else ("GetObject", objects.get_object)
    if method == "HEAD":
        return "HeadObject", objects.head_object
    if method == "PUT":
        if upload:
            if copy:
                return "UploadPartCopy", uploadops.upload_part_copy
            return "UploadPart", uploadops.upload_part
        return ("CopyObject", objects.copy_object) if copy else ("PutObject", objects.put_object)
    if method == "POST":
        if "uploads" in query:
            return "CreateMultipartUpload", uploadops.create
        if upload:
            return "CompleteMultipartUpload", uploadops.complete
        return None
    if method == "DELETE":
        if upload:
            return "AbortMultipartUpload", uploadops.abort
        return "DeleteObject", objects.delete_object
    return None


def _address(path: str) -> tuple[str | None, str | None]:
    """Bucket and key of a path under the prefix (None where the path has none)."""
    rest = path[len(PREFIX) :].lstrip("/")
    bucket, sep, key = rest.partition("/")
    return (bucket or None), (key if sep else None)


def _has_body(request: Request) -> bool:
    headers = request.headers
    return headers.get("content-length", "0") != "0" or "transfer-encoding" in headers


async def serve(endpoint: Endpoint, request: Request) -> Response:
    """One S3 request, answered: its operation's answer, or its error in S3's XML."""
    started = time.perf_counter()
    arrival: Arrival | None = request.scope.get(SCOPE_KEY)
    rid, name = request_id(), "Unknown"
    resource = arrival.raw_path if arrival else request.scope["path"]
    head = request.method == "HEAD"
    try:
        if arrival is None:
            raise catalogue.NotFound(f"{request.url.path}: the S3 endpoint is on its own port")
        verified = endpoint.verifier.verify(
            request.method,
            arrival.raw_path,
            request.scope.get("query_string", b"").decode("latin-1"),
            {name.lower(): value for name, value in request.headers.items()},
            arrival.host,
        )
        exchange(request.scope).caller = verified.principal.access_key_id or UNKNOWN_CALLER
        bucket, key = _address(request.scope["path"])
        name, handler = operation(request.method, bucket, key, request.query_params,
                                  request.headers)  # fmt: skip
        call = S3Call(endpoint, request, bucket, key, verified.principal, verified.body)
        response = await through_owner(endpoint.forwarder, name, handler, call, resource)
    except Exception as exc:  # noqa: BLE001 — each error becomes S3's answer; bugs go on up
        error = translated(exc)
        endpoint.service.metrics.error_answered(error.code, str(exc))
        response = answer(error, resource, head, rid)
        if _has_body(request):
            # The body may be unread (a client that sent ``Expect: 100-continue`` sends none
            # after an error answer), and what follows on the connection is then not a request:
            # the connection ends with the answer.
            response.headers["Connection"] = "close"
    response.headers["x-amz-request-id"] = rid
    latency = endpoint.service.metrics.request_latency.labels(f"s3:{name}")
    latency.observe(time.perf_counter() - started)
    return response


# Not in the worker's OpenAPI document: S3's API is documented by S3, and served on its port.
# Lean: served without FastAPI's per-request dependency solving (the handler reads the request).
ROUTES = tuple(
    Route(method, path, serve, {"include_in_schema": False}, Lean(request=True))
    for method in ("GET", "HEAD", "PUT", "POST", "DELETE")
    for path in (PREFIX + "/", PREFIX + "/{path:path}")
)

SURFACE = Surface(
    name="s3",
    prefix=PREFIX,
    routes=ROUTES,
    render_error=render,
    own_credentials=True,
    bind=Endpoint.bind,
)
"""S3's REST API. Its requests carry S3 signatures, not the worker token."""


def on_port(app: ASGIApp, port: int, domain: str | None = None) -> ASGIApp:
    """``app`` with every request that arrives on ``port`` routed under :data:`PREFIX`, a
    virtual-hosted one (``Host: BUCKET.<domain>``) with its bucket first in the path."""
    suffix = f".{domain.lower().strip('.')}" if domain else None

    async def dispatch(scope: Scope, receive: Receive, send: Send) -> None:
        server = scope.get("server")
        if scope["type"] == "http" and server is not None and server[1] == port:
            host = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), "")
            raw: bytes = scope.get("raw_path") or scope["path"].encode()
            path, moved = scope["path"], raw
            name = host.rpartition(":")[0] if host.count(":") == 1 else host
            if suffix and name.lower().endswith(suffix) and len(name) > len(suffix):
                bucket = name[: -len(suffix)]
                path, moved = f"/{bucket}{path}", f"/{bucket}".encode() + raw
            scope = dict(scope)
            scope[SCOPE_KEY] = Arrival(raw.decode("latin-1"), host)
            scope["path"] = PREFIX + path
            scope["raw_path"] = PREFIX.encode() + moved
        await app(scope, receive, send)

    return dispatch
