"""What the UFS says about one file or directory."""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from typing import Any

from ufs import uri as uris

DIR_VERSION = "dir"
"""The version of every directory: directories have no content to fingerprint."""


@dataclass(frozen=True, slots=True)
class UfsStatus:
    """A file's or directory's status as the UFS reports it.

    ``version`` is the content fingerprint pages are keyed by: the S3 ETag where the UFS gives one,
    else ``"<size>-<mtime_ns>"``. ``content_hash`` is the ETag when there is one, else None.
    """

    uri: str
    name: str
    is_dir: bool
    size: int
    mtime_ns: int
    version: str
    content_hash: str | None

    def to_dict(self) -> dict[str, Any]:
        # By hand: dataclasses.asdict copies recursively and was most of a listing's cost.
        return {
            "uri": self.uri,
            "name": self.name,
            "is_dir": self.is_dir,
            "size": self.size,
            "mtime_ns": self.mtime_ns,
            "version": self.version,
            "content_hash": self.content_hash,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> UfsStatus:
        return cls(
            uri=str(data["uri"]),
            name=str(data["name"]),
            is_dir=bool(data["is_dir"]),
            size=int(data["size"]),
            mtime_ns=int(data["mtime_ns"]),
            version=str(data["version"]),
            content_hash=None if data.get("content_hash") is None else str(data["content_hash"]),
        )


@functools.lru_cache(maxsize=65536)
def file_id(uri: str) -> str:
    """The stable id of a file: sha256 of its full URI (the same in every process and host).
    Cached: a listing asks it for every entry (8% of a warm 1,000-entry listing's CPU), and a
    worker sees a bounded set of hot files."""
    return hashlib.sha256(uri.encode("utf-8")).hexdigest()


def dir_status(uri: str, name: str, mtime_ns: int = 0) -> UfsStatus:
    """The status of directory ``uri`` (named ``name``), modified at ``mtime_ns`` where the
    storage tells (0: it does not; an object store's prefix has no time). A directory's
    version never changes: its time is shown, not compared."""
    return UfsStatus(uri, name, True, 0, mtime_ns, DIR_VERSION, None)


def file_status(uri: str, size: int, mtime_ns: int, etag: str | None = None) -> UfsStatus:
    """The status of file ``uri`` of ``size`` bytes, modified at ``mtime_ns``, with ``etag``
    where the UFS gives one."""
    return UfsStatus(
        uri, uris.name(uri), False, size, mtime_ns, make_version(size, mtime_ns, etag), etag
    )


def make_version(size: int, mtime_ns: int, etag: str | None) -> str:
    """DESIGN.md's version: the ETag where given, else size and mtime."""
    if etag:
        return etag
    return f"{size}-{mtime_ns}"
