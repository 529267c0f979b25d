"""The under-storage adapter: one object that serves any fsspec URI, with errors translated once.

It never caches: s3fs's listing cache is off and files are opened without read-ahead caches, so
a file written from outside is visible at once (s3fs issue #851). The worker's cache is the only
cache.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import IO, Any, TypeVar

import fsspec
from botocore.exceptions import ClientError
from fsspec.asyn import sync
from fsspec.spec import AbstractFileSystem

from config import Config
from ufs import keys
from ufs import uri as uris
from ufs.errors import (
    UfsError,
    UfsIsADirectory,
    UfsNotADirectory,
    UfsNotFound,
    UfsUnavailable,
    UfsVersionChanged,
)
from ufs.mapping import translate
from ufs.status import UfsStatus, make_version

T = TypeVar("T")
log = logging.getLogger(__name__)

DIR_VERSION = "dir"
S3_SCHEMES = ("s3", "s3a")
WRITE_CHUNK = 8 << 20


@dataclass(frozen=True)
class UfsOptions:
    """How to reach the under storage; built from properties with :meth:`from_config`."""

    s3_endpoint: str | None = None
    s3_region: str | None = None
    s3_access_key_id: str | None = None
    s3_secret_access_key: str | None = None
    s3_anonymous: bool = False
    retry_attempts: int = 3
    retry_base_delay_ms: int = 100
    connect_timeout_ms: int = 5000
    read_timeout_ms: int = 60000

    @classmethod
    def from_config(cls, config: Config) -> UfsOptions:
        return cls(
            s3_endpoint=config.get(keys.S3_ENDPOINT) or None,
            s3_region=config.get(keys.S3_REGION) or None,
            s3_access_key_id=config.get(keys.S3_ACCESS_KEY_ID) or None,
            s3_secret_access_key=config.get(keys.S3_SECRET_ACCESS_KEY) or None,
            s3_anonymous=config.get(keys.S3_ANONYMOUS),
            retry_attempts=config.get(keys.RETRY_ATTEMPTS),
            retry_base_delay_ms=config.get(keys.RETRY_BASE_DELAY),
            connect_timeout_ms=config.get(keys.CONNECT_TIMEOUT),
            read_timeout_ms=config.get(keys.READ_TIMEOUT),
        )

    def storage_options(self, scheme: str) -> dict[str, Any]:
        """fsspec constructor options for ``scheme``; every cache fsspec offers is off."""
        if scheme in S3_SCHEMES:
            client_kwargs: dict[str, Any] = {}
            if self.s3_endpoint:
                client_kwargs["endpoint_url"] = self.s3_endpoint
            if self.s3_region:
                client_kwargs["region_name"] = self.s3_region
            return {
                "anon": self.s3_anonymous,
                "key": self.s3_access_key_id,
                "secret": self.s3_secret_access_key,
                "client_kwargs": client_kwargs,
                "config_kwargs": {
                    "connect_timeout": self.connect_timeout_ms / 1000,
                    "read_timeout": self.read_timeout_ms / 1000,
                    # Retries are ours (bounded, counted); botocore's would multiply them.
                    "retries": {"max_attempts": 1, "mode": "standard"},
                },
                "use_listings_cache": False,
                "default_cache_type": "none",
                "skip_instance_cache": True,
            }
        if scheme == "file":
            return {"auto_mkdir": True, "skip_instance_cache": True}
        return {"skip_instance_cache": True}


class Ufs:
    """Serves any fsspec URI: statuses, listings, ranged reads, writes, deletes, renames.

    Every method takes a canonical URI (see :mod:`ufs.uri`) and raises only the errors in
    :mod:`ufs.errors`; calls that fail because the UFS is unavailable are retried with bounded,
    doubling backoff before :class:`UfsUnavailable` is raised. Thread-safe: filesystem instances
    are created once per scheme under a lock, and fsspec's filesystems are safe to share.
    """

    def __init__(
        self, options: UfsOptions | None = None, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.options = options or UfsOptions()
        self._sleep = sleep
        self._filesystems: dict[str, AbstractFileSystem] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: Config) -> Ufs:
        return cls(UfsOptions.from_config(config))

    def filesystem(self, scheme: str) -> AbstractFileSystem:
        """The fsspec filesystem for ``scheme``, created on first use."""
        with self._lock:
            fs = self._filesystems.get(scheme)
            if fs is None:
                try:
                    fs = fsspec.filesystem(scheme, **self.options.storage_options(scheme))
                except (ImportError, ValueError) as exc:
                    raise UfsError(f"cannot use scheme {scheme!r}: {exc}") from exc
                if scheme in S3_SCHEMES:
                    # s3fs retries some errors itself (5 times); ours are the bounded ones.
                    fs.retries = 1
                self._filesystems[scheme] = fs
            return fs

    def _locate(self, uri: str) -> tuple[str, AbstractFileSystem, str]:
        scheme, path = uris.split(uri)
        fs = self.filesystem(scheme)
        return scheme, fs, path if scheme == "file" else path.rstrip("/")

    def _call(self, what: str, uri: str, fn: Callable[[], T], retry: bool = True) -> T:
        """``fn()`` with its errors translated; with ``retry``, an unavailable UFS is retried
        with bounded, doubling backoff."""
        attempts = self.options.retry_attempts if retry else 1
        for attempt in range(1, attempts + 1):
            try:
                return fn()
            except UfsError:
                raise
            except Exception as exc:
                error = translate(exc, what, uri)
                if isinstance(error, UfsUnavailable) and attempt < attempts:
                    delay = self.options.retry_base_delay_ms * (2 ** (attempt - 1)) / 1000
                    log.info(
                        "UFS %s %s failed (%s); retry %d in %.2fs", what, uri, exc, attempt, delay
                    )
                    self._sleep(delay)
                    continue
                raise error from exc
        raise AssertionError("unreachable: the loop returns or raises")

    def _status_from_info(
        self, scheme: str, fs: AbstractFileSystem, info: dict[str, Any]
    ) -> UfsStatus:
        path = str(info["name"])
        uri = uris.normalize(_to_uri(scheme, path))
        if info.get("type") == "directory":
            return UfsStatus(uri, uris.name(uri), True, 0, 0, DIR_VERSION, None)
        size = int(info.get("size") or 0)
        etag = info.get("ETag") or info.get("etag") or info.get("e_tag")
        etag = str(etag).strip('"') if etag else None
        mtime_ns = _mtime_ns(scheme, path, info)
        return UfsStatus(
            uri, uris.name(uri), False, size, mtime_ns, make_version(size, mtime_ns, etag), etag
        )

    def status(self, uri: str) -> UfsStatus:
        """The status of a file or directory; UfsNotFound if absent."""
        scheme, fs, path = self._locate(uri)
        return self._call("status", uri, lambda: self._status_from_info(scheme, fs, fs.info(path)))

    def list(self, uri: str) -> list[UfsStatus]:
        """The children of directory ``uri`` with full status, sorted by URI."""
        scheme, fs, path = self._locate(uri)
        statuses = self._call(
            "list",
            uri,
            lambda: [self._status_from_info(scheme, fs, e) for e in fs.ls(path, detail=True)],
        )
        if len(statuses) == 1 and statuses[0].uri == uri and not statuses[0].is_dir:
            raise UfsNotADirectory(f"cannot list {uri!r}: it is a file")
        if not statuses:
            # Listing a file names the file itself (above), so an empty answer is an empty
            # directory — or nothing at all, which status() reports as not found. Object stores
            # may describe an emptied prefix oddly (SeaweedFS keeps it as a 0-byte entry).
            self.status(uri)
        return sorted((s for s in statuses if s.uri != uri), key=lambda s: s.uri)

    def read(self, uri: str, offset: int, length: int, version: str | None = None) -> bytes:
        """Bytes ``[offset, offset+length)``, fewer at the end of the file.

        With ``version``, the bytes are guaranteed to come from that version: S3 reads carry
        ``If-Match``; other stores are re-checked after the read. A different version raises
        :class:`UfsVersionChanged`.
        """
        scheme, fs, path = self._locate(uri)
        if version is not None and scheme in S3_SCHEMES and version != DIR_VERSION:
            bucket, key = path.split("/", 1)
            return self._call(
                "read", uri, lambda: _s3_read_if_match(fs, bucket, key, offset, length, version)
            )
        data = self._call("read", uri, lambda: fs.cat_file(path, start=offset, end=offset + length))
        if version is not None:
            current = self.status(uri).version
            if current != version:
                raise UfsVersionChanged(uri, version, current)
        return bytes(data)

    def open(self, uri: str) -> IO[bytes]:
        """A file object for streaming the whole file, without fsspec read-ahead caching."""
        _, fs, path = self._locate(uri)
        handle: IO[bytes] = self._call("open", uri, lambda: fs.open(path, "rb", cache_type="none"))
        return handle

    def write(self, uri: str, data: bytes | Iterable[bytes]) -> UfsStatus:
        """Write (create or replace) a file from bytes or an iterable of chunks; its new status."""
        _, fs, path = self._locate(uri)
        if isinstance(data, bytes | bytearray | memoryview):
            payload = bytes(data)
            self._call("write", uri, lambda: fs.pipe_file(path, payload))
        else:
            # A stream cannot be replayed, so it is written once, without retries.
            chunks = iter(data)
            self._call("write", uri, lambda: _copy_chunks(fs, path, chunks), retry=False)
        return self.status(uri)

    def delete(self, uri: str, recursive: bool = False) -> None:
        """Delete a file, or a directory (its contents too only with ``recursive``)."""
        status = self.status(uri)
        _, fs, path = self._locate(uri)
        if status.is_dir and not recursive and self.list(uri):
            raise UfsIsADirectory(f"cannot delete {uri!r}: a non-empty directory needs recursive")
        self._call("delete", uri, lambda: fs.rm(path, recursive=status.is_dir))

    def rename(self, src: str, dst: str) -> UfsStatus:
        """Move a file or directory; the destination's new status."""
        status = self.status(src)
        scheme, fs, src_path = self._locate(src)
        _, _, dst_path = self._locate(dst)
        if status.is_dir and scheme != "file":
            # Object stores have no directories to rename: move each object under the prefix.
            for child in list(self.walk_files(src)):
                target = dst + child.uri[len(src) :]
                self._call(
                    "rename",
                    child.uri,
                    partial(fs.mv, self._locate(child.uri)[2], self._locate(target)[2]),
                )
        else:
            self._call("rename", src, lambda: fs.mv(src_path, dst_path, recursive=status.is_dir))
        try:
            return self.status(dst)
        except UfsNotFound:
            # Object stores have no empty directories: a moved empty prefix leaves no trace.
            return UfsStatus(dst, uris.name(dst), True, 0, 0, DIR_VERSION, None)

    def mkdir(self, uri: str) -> None:
        """Create a directory and its parents; an existing one is fine."""
        _, fs, path = self._locate(uri)
        self._call("mkdir", uri, lambda: fs.makedirs(path, exist_ok=True))

    def walk_files(self, uri: str) -> Iterator[UfsStatus]:
        """Every file under directory ``uri``, depth first (for prefix loads)."""
        stack = [uri]
        while stack:
            for child in self.list(stack.pop()):
                if child.is_dir:
                    stack.append(child.uri)
                else:
                    yield child


def _s3_read_if_match(
    fs: AbstractFileSystem, bucket: str, key: str, offset: int, length: int, etag: str
) -> bytes:
    async def get() -> bytes:
        response = await fs._call_s3(
            "get_object",
            Bucket=bucket,
            Key=key,
            Range=f"bytes={offset}-{offset + length - 1}",
            IfMatch=f'"{etag}"',
        )
        try:
            body: bytes = await response["Body"].read()
            return body
        finally:
            response["Body"].close()

    try:
        data: bytes = sync(fs.loop, get)
        return data
    except OSError as exc:
        if _precondition_failed(exc):
            raise UfsVersionChanged(f"s3://{bucket}/{key}", etag, None) from exc
        raise


def _precondition_failed(exc: BaseException) -> bool:
    """s3fs turns S3's 412 into a generic OSError; the ClientError it came from says 412."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ClientError):
            meta = cause.response.get("ResponseMetadata", {})
            code = cause.response.get("Error", {}).get("Code")
            return bool(meta.get("HTTPStatusCode") == 412 or code == "PreconditionFailed")
        cause = cause.__cause__ or cause.__context__
    return False


def _copy_chunks(fs: AbstractFileSystem, path: str, chunks: Iterator[bytes]) -> None:
    with fs.open(path, "wb", block_size=WRITE_CHUNK) as out:
        for chunk in chunks:
            out.write(chunk)


def _to_uri(scheme: str, path: str) -> str:
    if scheme == "file":
        return "file://" + path
    return f"{scheme}://{path.lstrip('/')}"


def _mtime_ns(scheme: str, path: str, info: dict[str, Any]) -> int:
    if scheme == "file":
        # fsspec reports float seconds; the exact ns keeps same-size rewrites apart.
        return os.stat(path).st_mtime_ns
    for field in ("LastModified", "last_modified", "mtime", "created", "updated"):
        value = info.get(field)
        if isinstance(value, datetime):
            return int(value.timestamp() * 1_000_000) * 1000
        if isinstance(value, int | float):
            return int(value * 1_000_000) * 1000
        if isinstance(value, str) and value:
            return int(datetime.fromisoformat(value).timestamp() * 1_000_000) * 1000
    return 0
