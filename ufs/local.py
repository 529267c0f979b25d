"""Local directories (``file://``) as a UFS backend, through the ``os`` module: statuses carry
the exact ``st_mtime_ns`` (fsspec's float seconds would let a same-size rewrite keep its
version), and a symlink is followed the same way by status, listing and read."""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Iterator

import fsspec
from fsspec.spec import AbstractFileSystem

from ufs import uri as uris
from ufs.errors import UfsInvalidPath
from ufs.status import UfsStatus, dir_status, make_version

# Entries a listing leaves out: gone since the scan, a dangling link, a symlink loop.
_UNSERVABLE = frozenset({errno.ENOENT, errno.ELOOP})


def path_of(uri: str) -> str:
    """The local path of a canonical ``file`` URI."""
    return uris.split(uri)[1]


def resolve(path: str) -> str:
    """The absolute path ``path`` names once every symlink in it is followed: what an
    operation on ``path`` would act on. For a path that does not exist yet, its deepest
    existing ancestor is resolved (where a create would land); a dangling link is followed
    by its text.

    Raises OSError when the kernel refuses to resolve it (ELOOP for a symlink loop, EACCES
    for an unsearchable directory); the operation itself would fail the same way.
    """
    missing: list[str] = []
    head = path
    while True:
        try:
            return os.path.join(_resolve_existing(head), *reversed(missing))
        except (FileNotFoundError, NotADirectoryError):
            if os.path.islink(head):
                return os.path.join(os.path.realpath(head), *reversed(missing))
            parent, name = os.path.split(head)
            if parent == head:
                raise
            missing.append(name)
            head = parent


def _resolve_existing(path: str) -> str:
    """The kernel's own resolution of an existing path (an ``O_PATH`` descriptor, named by
    /proc), which cannot disagree with what the kernel follows later; ``os.path.realpath``
    where either is missing."""
    if not hasattr(os, "O_PATH"):
        os.stat(path)
        return os.path.realpath(path)
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return os.path.realpath(path)
    finally:
        os.close(fd)


class LocalBackend:
    """A :class:`ufs.backend.UfsBackend` for ``file://`` URIs. Thread-safe (no state)."""

    pins_versions = False
    has_directories = True

    def __init__(self) -> None:
        self._fs: AbstractFileSystem = fsspec.filesystem(
            "file", auto_mkdir=True, skip_instance_cache=True
        )

    @property
    def filesystem(self) -> AbstractFileSystem:
        return self._fs

    def status(self, uri: str) -> UfsStatus:
        return _status(uri, os.stat(path_of(uri)))

    def list(self, uri: str) -> list[UfsStatus]:
        base = uri if uri.endswith("/") else uri + "/"
        statuses: list[UfsStatus] = []
        with os.scandir(path_of(uri)) as entries:
            for entry in entries:
                try:
                    child = uris.normalize(base + entry.name)
                    statuses.append(_status(child, entry.stat()))
                except UfsInvalidPath:
                    continue  # a name no canonical URI can address cannot be served
                except OSError as exc:
                    if exc.errno not in _UNSERVABLE:
                        raise
        return statuses

    def read(self, uri: str, offset: int, length: int, version: str | None) -> bytes:
        fd = os.open(path_of(uri), os.O_RDONLY | os.O_CLOEXEC)
        try:
            parts: list[bytes] = []
            while length > 0:
                part = os.pread(fd, length, offset)
                if not part:
                    break
                parts.append(part)
                offset += len(part)
                length -= len(part)
            return b"".join(parts)
        finally:
            os.close(fd)

    def write(self, uri: str, data: bytes) -> None:
        self.write_stream(uri, iter((data,)))

    def write_stream(self, uri: str, chunks: Iterator[bytes]) -> None:
        path = path_of(uri)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as out:
            for chunk in chunks:
                out.write(chunk)

    def delete(self, uri: str, recursive: bool) -> None:
        path = path_of(uri)
        # A link is removed itself, never what it points to.
        if recursive and os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.isdir(path) and not os.path.islink(path):
            os.rmdir(path)
        else:
            os.remove(path)

    def move(self, src: str, dst: str) -> None:
        target = path_of(dst)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.move(path_of(src), target)

    def mkdir(self, uri: str) -> None:
        os.makedirs(path_of(uri), exist_ok=True)


def _status(uri: str, st: os.stat_result) -> UfsStatus:
    if stat.S_ISDIR(st.st_mode):
        return dir_status(uri, uris.name(uri))
    size, mtime_ns = st.st_size, st.st_mtime_ns
    return UfsStatus(
        uri, uris.name(uri), False, size, mtime_ns, make_version(size, mtime_ns, None), None
    )
