"""The JSON shapes and names of Alluxio's worker REST API, built from our statuses and jobs.

What alluxiofs reads (confirmed in its 1.0.17, 1.0.22 and 1.1.17 sources):

- a file record (``/v1/info`` answers ``[record]``, ``/v1/files`` a list of them): Alluxio's
  ``m``-prefixed field names; ``mPath`` is a path in Alluxio's namespace, which for us is the
  URI laid out as ``/<scheme>/<rest>`` (``s3://b/k`` is ``/s3/b/k``, ``file:///d/x`` is
  ``/file/d/x``), the same rule the WebHDFS surface uses; 1.1.x sends it back as the URL path of
  its ranged reads;
- ``/v1/node``: ``{"Host", "HttpServerPort"}`` (1.0.18 on), or, for 1.0.17 and earlier, a list
  whose first record carries the worker under ``mBlockInfo.mBlockInfo.mLocations[0]``;
- load progress: ``{"jobState": RUNNING | SUCCEEDED | STOPPED | FAILED, ...}``.

Pure functions: no HTTP, no service.
"""

from __future__ import annotations

from typing import Any

from ufs.errors import UfsInvalidPath
from ufs.status import UfsStatus
from worker.load import JobState, LoadJob

_UNITS = ("KB", "MB", "GB", "TB", "PB")
_JOB_STATES = {
    JobState.RUNNING: "RUNNING",
    JobState.DONE: "SUCCEEDED",
    JobState.CANCELLED: "STOPPED",
    JobState.FAILED: "FAILED",
}


def namespace_path(uri: str) -> str:
    """A canonical URI as a path in Alluxio's namespace: ``s3://b/k`` -> ``/s3/b/k``."""
    scheme, _, rest = uri.partition("://")
    return f"/{scheme}/{rest.lstrip('/')}".rstrip("/")


def uri_of(path: str) -> str:
    """The URI a namespace path names (the inverse of :func:`namespace_path`); the mount roots
    are checked by the service, not here. Raises UfsInvalidPath for a path without a scheme."""
    scheme, _, rest = path.lstrip("/").partition("/")
    if not scheme or not rest:
        raise UfsInvalidPath(f"invalid path {path!r}: expected /<scheme>/<bucket or dir>/...")
    return f"file:///{rest}" if scheme == "file" else f"{scheme}://{rest}"


def human_size(size: int) -> str:
    """Alluxio's ``FormatUtils.getSizeFromBytes``: ``512B``, ``75.72KB``, ``1.00MB``."""
    if size < 1024:
        return f"{size}B"
    value = size / 1024
    for unit in _UNITS[:-1]:
        if value < 1024:
            return f"{value:.2f}{unit}"
        value /= 1024
    return f"{value:.2f}{_UNITS[-1]}"


def file_record(status: UfsStatus, cached_bytes: int) -> dict[str, Any]:
    """One status as Alluxio's file info; ``mInAlluxioPercentage`` is the share of the file's
    bytes in the page store (an empty file counts as fully cached, a directory as not)."""
    mtime_ms = status.mtime_ns // 1_000_000
    if status.is_dir:
        percent = 0
    elif status.size == 0:
        percent = 100
    else:
        percent = min(100, cached_bytes * 100 // status.size)
    return {
        "mType": "directory" if status.is_dir else "file",
        "mName": status.name,
        "mPath": namespace_path(status.uri),
        "mUfsPath": status.uri,
        "mLength": 0 if status.is_dir else status.size,
        "mHumanReadableFileSize": human_size(0 if status.is_dir else status.size),
        "mCompleted": True,
        "mFolder": status.is_dir,
        "mOwner": "",
        "mGroup": "",
        "mMode": "drwxr-xr-x" if status.is_dir else "-rw-r--r--",
        "mCreationTimeMs": mtime_ms,
        "mLastModificationTimeMs": mtime_ms,
        "mLastAccessTimeMs": mtime_ms,
        "mPersisted": True,
        "mInAlluxioPercentage": percent,
        "mContentHash": status.content_hash or status.version,
    }


def node_address(host: str, port: int) -> dict[str, Any]:
    """``/v1/node`` for alluxiofs 1.0.18 and later."""
    return {"Host": host, "HttpServerPort": port}


def node_locations(host: str, port: int, path: str) -> list[dict[str, Any]]:
    """``/v1/node`` for alluxiofs 1.0.17 and earlier: the worker as the file's only block
    location."""
    address = {"Host": host, "HttpServerPort": port, "WebPort": port}
    location = {"mWorkerAddress": address, "mTierAlias": "MEM"}
    return [{"mUfsPath": path, "mBlockInfo": {"mBlockInfo": {"mLocations": [location]}}}]


def load_progress(job: LoadJob, verbose: bool) -> dict[str, Any]:
    """A load job as Alluxio's progress report. A finished job with failed files is FAILED
    (alluxiofs's ``load()`` then answers False instead of claiming the data is cached)."""
    state = _JOB_STATES[job.state]
    if job.state is JobState.DONE and job.files_failed:
        state = "FAILED"
    progress: dict[str, Any] = {
        "jobState": state,
        "path": job.path,
        "filesTotal": job.files_total,
        "filesLoaded": job.files_done,
        "filesFailed": job.files_failed,
        "loadedByteCount": job.bytes_done,
        "totalByteCount": job.bytes_total,
    }
    if verbose:
        progress["failures"] = list(job.errors)
    return progress
