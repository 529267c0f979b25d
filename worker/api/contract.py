"""REST v1's contract, declared with FastAPI's own means so ``/openapi.json`` is the real one:
the query parameters (typed, described, validated by the rules of :mod:`worker.api.params`),
the JSON answers' models, and the error answers each route can give, taken from the error
catalogue (``worker.common.errors``). A request that breaks a declared rule is answered 400 by
the app (``worker.api.app``), in the error shape, naming the parameter.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Header, Query
from pydantic import BaseModel, BeforeValidator, Field
from starlette.responses import Response

from worker.api import params
from worker.common import errors as catalogue

# -- answers --------------------------------------------------------------------------------------


class ErrorBody(BaseModel):
    """Every REST v1 error answer."""

    error: str = Field(description="The error catalogue's code, e.g. NotFound.")
    message: str = Field(description="What was wrong, for a person.")


class FileStatus(BaseModel):
    """A file's or directory's status, as the UFS reports it, plus what the cache holds of it."""

    uri: str
    name: str
    is_dir: bool
    size: int
    mtime_ns: int
    version: str = Field(description="Content fingerprint: the ETag, else <size>-<mtime_ns>.")
    content_hash: str | None
    cached_bytes: int = Field(description="Bytes of this version in the page store.")
    pinned: bool = Field(
        False,
        description="Whether its pages are pinned: never evicted (dora fs pin, a rule's pin).",
    )
    age_ms: int | None = Field(
        None,
        description="/v1/status and /v1/list only: milliseconds since the worker last "
        "confirmed this status with the UFS (or wrote it); null when it cannot tell. A client "
        "may keep the status for a sync interval of N ms while age_ms plus its own time kept "
        "stays within N.",
    )
    sync_interval_ms: int | None = Field(
        None,
        description="/v1/status and /v1/list only: the sync interval (ms; -1 never, 0 always) "
        "a call to this path without sync_interval gets, from the per-path rules or the "
        "default; in a listing, the stricter of the directory's and the entry's own. A "
        "same-host client keeps the status by it.",
    )


class ListingAnswer(BaseModel):
    """A directory's children."""

    entries: list[FileStatus]


class Deleted(BaseModel):
    deleted: str = Field(description="The canonical URI deleted.")


class Invalidated(BaseModel):
    invalidated: int = Field(description="Metadata entries dropped.")


class LoadJobAnswer(BaseModel):
    """A prewarm job and its progress."""

    id: str
    path: str
    recursive: bool
    include: list[str]
    exclude: list[str]
    metadata_only: bool
    state: str
    files_total: int
    files_done: int
    files_failed: int
    dirs_failed: int
    bytes_total: int
    bytes_done: int
    submitted_at: float
    started_at: float | None
    finished_at: float | None
    errors: list[str]


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    ready: bool
    metastore: str
    pages: str
    feed: str | None = None  # in a cluster: following, disconnected (etcd down), failed


class OctetStream(Response):
    """File bytes (``/v1/read``)."""

    media_type = "application/octet-stream"


class PrometheusText(Response):
    """The Prometheus text exposition format (``/metrics``)."""

    media_type = "text/plain; version=0.0.4; charset=utf-8"


# -- parameters -----------------------------------------------------------------------------------

UfsPath = Annotated[
    str,
    Query(
        min_length=1,
        description="The file's full UFS URI (s3://bucket/key, file:///dir/name), under a "
        "mount root.",
    ),
]
SyncInterval = Annotated[
    str | None,
    Query(
        description="Re-check the UFS if the cached status is older than this: ms or a "
        "duration (500ms, 30s, 1h); 0 always, -1 never. Default: the worker's "
        "dora.user.file.metadata.sync.interval.",
        examples=["0", "30s", "-1"],
    ),
]
ServeStale = Annotated[
    bool | None,
    BeforeValidator(params.optional_truth),
    Query(
        description="Serve while revalidating: true answers a status the sync interval says "
        "to re-check at once from the cache while one background re-check runs (not past the "
        "status cache TTL); false never. Default: the path's rule, else the worker's "
        "dora.user.file.metadata.sync.serve.stale.",
    ),
]
Version = Annotated[
    str | None,
    Query(description="The version the caller expects; 412 if the file has another one."),
]
Offset = Annotated[
    int | None,
    BeforeValidator(params.optional_integer),
    Query(description="First byte (default 0); negative: 416. Ignored with a Range header."),
]
Length = Annotated[
    int | None,
    BeforeValidator(params.optional_integer),
    Query(description="Bytes to read (default: to the end); negative: 416."),
]
Recursive = Annotated[
    bool,
    BeforeValidator(params.truth),
    Query(description="true or false (also 1/0, yes/no)."),
]
MetadataOnly = Annotated[
    bool,
    BeforeValidator(params.truth),
    Query(description="Cache statuses and listings only, no file content (true or false)."),
]
Patterns = Annotated[
    list[str],
    Query(description="Glob patterns (repeatable, or comma separated)."),
]
ByteRangeHeader = Annotated[
    str | None,
    Header(
        alias="range",
        description="bytes=first-last, bytes=first- or bytes=-suffix: one range, answered 206 "
        "with Content-Range. Other units and several ranges are ignored (the whole file).",
    ),
]

# -- error answers --------------------------------------------------------------------------------

UFS_ERRORS = (400, 403, 404, 502, 503, 504)
"""What any call on a UFS path can answer: bad input, outside the mount roots, not found, the
UFS failing or unavailable."""


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The documented error answers with ``statuses``, each naming the catalogue's codes."""
    declared: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        codes = [kind.code for kind in catalogue.CATALOGUE if kind.status == status]
        answer: dict[str, Any] = {"model": ErrorBody, "description": ", ".join(codes)}
        if status == 503:
            answer["headers"] = {
                "Retry-After": {"description": "Seconds", "schema": {"type": "number"}}
            }
        if status == 416:
            answer["headers"] = {
                "Content-Range": {"description": "bytes */size", "schema": {"type": "string"}}
            }
        declared[status] = answer
    return declared


UNAUTHORIZED = errors(401)
"""The answer every route but the probes can give when the worker has a token."""

BYTES = {
    "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}
}
READ_ANSWERS: dict[int | str, dict[str, Any]] = {
    200: {"description": "The bytes asked for (offset/length, or the whole file).", **BYTES},
    206: {"description": "The bytes of the Range header's range.", **BYTES},
    **errors(*UFS_ERRORS, 412, 416),
}
WRITE_BODY = {
    "requestBody": {
        "required": True,
        "description": "The file's new content.",
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    }
}
