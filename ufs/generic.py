"""Any fsspec filesystem as a UFS backend (``memory://``, ``gcs://``, ...): the default for a
scheme no dedicated backend claims, and the base of the S3 backend."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from fsspec.spec import AbstractFileSystem

from ufs import uri as uris
from ufs.backend import WRITE_CHUNK
from ufs.errors import UfsInvalidPath, UfsNotADirectory
from ufs.status import UfsStatus, dir_status, make_version

_MTIME_FIELDS = ("LastModified", "last_modified", "mtime", "created", "updated")


class FsspecBackend:
    """A :class:`ufs.backend.UfsBackend` over one fsspec filesystem instance. Object-store
    semantics: no directory renames, versions from an ETag where the listing carries one.
    Thread-safe as far as the filesystem is (fsspec's are safe to share)."""

    pins_versions = False
    has_directories = False

    def __init__(self, scheme: str, filesystem: AbstractFileSystem) -> None:
        self.scheme = scheme
        self._fs = filesystem

    @property
    def filesystem(self) -> AbstractFileSystem:
        return self._fs

    def path(self, uri: str) -> str:
        """The filesystem's path for ``uri``."""
        return uris.split(uri)[1].rstrip("/")

    def status(self, uri: str) -> UfsStatus:
        return self.status_from_info(self._fs.info(self.path(uri)))

    def status_from_info(self, info: dict[str, Any]) -> UfsStatus:
        """A status from one fsspec ``info`` dict."""
        uri = uris.normalize(f"{self.scheme}://{str(info['name']).lstrip('/')}")
        if info.get("type") == "directory":
            return dir_status(uri, uris.name(uri))
        size = int(info.get("size") or 0)
        etag = info.get("ETag") or info.get("etag") or info.get("e_tag")
        etag = str(etag).strip('"') if etag else None
        mtime_ns = _mtime_ns(info)
        return UfsStatus(
            uri, uris.name(uri), False, size, mtime_ns, make_version(size, mtime_ns, etag), etag
        )

    def children(self, uri: str, infos: list[dict[str, Any]]) -> list[UfsStatus]:
        """The children of ``uri`` from an fsspec listing of it."""
        statuses: list[UfsStatus] = []
        for info in infos:
            try:
                statuses.append(self.status_from_info(info))
            except UfsInvalidPath:
                continue  # a name no canonical URI can address: it cannot be served either
        if len(statuses) == 1 and statuses[0].uri == uri and not statuses[0].is_dir:
            raise UfsNotADirectory(f"cannot list {uri!r}: it is a file")
        if not statuses:
            # Listing a file names the file itself (above), so an empty answer is an empty
            # directory — or nothing at all, which status() reports as not found. Object
            # stores may describe an emptied prefix oddly (SeaweedFS keeps it as a 0-byte
            # entry).
            self.status(uri)
        return [s for s in statuses if s.uri != uri]

    def list(self, uri: str) -> list[UfsStatus]:
        return self.children(uri, self._fs.ls(self.path(uri), detail=True))

    def read(self, uri: str, offset: int, length: int, version: str | None) -> bytes:
        return bytes(self._fs.cat_file(self.path(uri), start=offset, end=offset + length))

    def write(self, uri: str, data: bytes) -> None:
        self._fs.pipe_file(self.path(uri), data)

    def write_stream(self, uri: str, chunks: Iterator[bytes]) -> None:
        with self._fs.open(self.path(uri), "wb", block_size=WRITE_CHUNK) as out:
            for chunk in chunks:
                out.write(chunk)

    def delete(self, uri: str, recursive: bool) -> None:
        self._fs.rm(self.path(uri), recursive=recursive)

    def move(self, src: str, dst: str) -> None:
        self._fs.mv(self.path(src), self.path(dst))

    def mkdir(self, uri: str) -> None:
        self._fs.makedirs(self.path(uri), exist_ok=True)


def _mtime_ns(info: dict[str, Any]) -> int:
    for field in _MTIME_FIELDS:
        value = info.get(field)
        if isinstance(value, datetime):
            return int(value.timestamp() * 1_000_000) * 1000
        if isinstance(value, int | float):
            return int(value * 1_000_000) * 1000
        if isinstance(value, str) and value:
            return int(datetime.fromisoformat(value).timestamp() * 1_000_000) * 1000
    return 0
