"""Local directories (``file://``) as a UFS backend, through the ``os`` module: statuses carry
the exact ``st_mtime_ns`` (fsspec's float seconds would let a same-size rewrite keep its
version), a read pinned to a version checks it on the descriptor it reads from, a symlink is
followed the same way by status, listing and read, and a write replaces the file in one
rename and answers the status of the file it wrote (so a delete or a replace by someone else
right after cannot change the answer)."""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import suppress
from functools import partial

import fsspec
from fsspec.spec import AbstractFileSystem

from ufs import uri as uris
from ufs.deadline import Deadline, ThreadRunner
from ufs.errors import UfsInvalidPath, UfsVersionChanged
from ufs.status import UfsStatus, dir_status, file_status, make_version

# Entries a listing leaves out: gone since the scan, a dangling link, a symlink loop.
_UNSERVABLE = frozenset({errno.ENOENT, errno.ELOOP})
# Linux's descriptor that only names a file; 0 where the platform has none.
_O_PATH = getattr(os, "O_PATH", 0)


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
            real = _resolve_existing(head)
        except (FileNotFoundError, NotADirectoryError):
            if os.path.islink(head):
                return os.path.join(os.path.realpath(head), *reversed(missing))
            parent, name = os.path.split(head)
            if parent == head:
                raise
            missing.append(name)
            head = parent
        else:
            return os.path.join(real, *reversed(missing)) if missing else real


def _resolve_existing(path: str) -> str:
    """The kernel's own resolution of an existing path (an ``O_PATH`` descriptor, named by
    /proc), which cannot disagree with what the kernel follows later; ``os.path.realpath``
    where either is missing. Three system calls, measured 2-5 times cheaper than
    ``os.path.realpath``'s ``lstat`` per component in Python (bench/experiments/roots_bench.py)."""
    if not _O_PATH:
        os.stat(path)
        return os.path.realpath(path)
    fd = os.open(path, _O_PATH | os.O_CLOEXEC)
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return os.path.realpath(path)
    finally:
        os.close(fd)


def plain_entries(
    path: str, names: Collection[str] | None = None
) -> tuple[str, frozenset[str]] | None:
    """The absolute path directory ``path`` resolves to (every symlink followed) and the
    names in it that are not symlinks, both read through one descriptor of that very
    directory, so no change of the names leading to it can make them disagree. One scan
    (``getdents``, whose entry types the kernel gives for free) instead of an ``lstat`` per
    name; with ``names``, only those, one ``lstat`` each through the descriptor, for a few
    names of what may be a large directory (a name that is gone is left out). None where the
    platform cannot name a descriptor (no /proc). Raises OSError as ``os.open`` and
    ``os.scandir`` do (ENOENT, ENOTDIR, ELOOP, EACCES)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return None
        if names is not None:
            return real, frozenset(name for name in names if _plain_at(fd, name))
        with os.scandir(fd) as entries:
            return real, frozenset(entry.name for entry in entries if not entry.is_symlink())
    finally:
        os.close(fd)


def _plain_at(directory_fd: int, name: str) -> bool:
    try:
        st = os.stat(name, dir_fd=directory_fd, follow_symlinks=False)
    except OSError:
        return False
    return not stat.S_ISLNK(st.st_mode)


class LocalBackend:
    """A :class:`ufs.backend.UfsBackend` for ``file://`` URIs. Every system call runs on
    ``threads`` so a hung mount (NFS, FUSE) costs a caller its deadline, not a thread forever.
    Thread-safe (no state of its own)."""

    pins_versions = True
    has_directories = True

    def __init__(self, threads: ThreadRunner) -> None:
        self._threads = threads
        self._fs: AbstractFileSystem = fsspec.filesystem(
            "file", auto_mkdir=True, skip_instance_cache=True
        )

    @property
    def filesystem(self) -> AbstractFileSystem:
        return self._fs

    def status(self, uri: str, deadline: Deadline) -> UfsStatus:
        path = path_of(uri)
        return self._threads.run(lambda: _status(uri, os.stat(path)), deadline)

    def list(self, uri: str, deadline: Deadline) -> list[UfsStatus]:
        return self._threads.run(partial(_scan, uri), deadline)

    def read(
        self, uri: str, offset: int, length: int, version: str | None, deadline: Deadline
    ) -> bytes:
        return self._threads.run(partial(_pread, uri, offset, length, version), deadline)

    def read_whole(
        self, files: Sequence[tuple[str, int, str]], deadline: Deadline
    ) -> Sequence[bytes | Exception]:
        # One hop to a UFS thread for them all: for small files the hop costs more than the
        # read (a load job reads 100k of them).
        return self._threads.run(partial(_read_whole, files), deadline)

    def write(self, uri: str, data: bytes, deadline: Deadline) -> UfsStatus:
        return self._upload(uri, iter((data,)), lambda: deadline)

    def write_stream(
        self, uri: str, chunks: Iterator[bytes], step: Callable[[], Deadline]
    ) -> UfsStatus:
        return self._upload(uri, chunks, step)

    def _upload(
        self, uri: str, chunks: Iterator[bytes], deadline: Callable[[], Deadline]
    ) -> UfsStatus:
        upload = _Upload(path_of(uri))
        try:
            self._threads.run(upload.open, deadline())
            for chunk in chunks:
                self._threads.run(partial(upload.write, chunk), deadline())
            written = self._threads.run(upload.commit, deadline())
        except BaseException:
            self._threads.spawn(upload.discard)
            raise
        return _status(uri, written)

    def append(self, status: UfsStatus, data: Iterable[bytes], deadline: Deadline) -> UfsStatus:
        """In place (``O_APPEND``); cut back to the old size if the write fails."""
        appended = self._threads.run(partial(_append, status.uri, data, status.version), deadline)
        return _status(status.uri, appended)

    def delete(self, uri: str, recursive: bool, deadline: Deadline) -> None:
        self._threads.run(partial(_delete, path_of(uri), recursive), deadline)

    def move(self, src: str, dst: str, deadline: Deadline) -> None:
        self._threads.run(partial(_move, path_of(src), path_of(dst)), deadline)

    def mkdir(self, uri: str, deadline: Deadline) -> None:
        self._threads.run(partial(os.makedirs, path_of(uri), exist_ok=True), deadline)


def _status(uri: str, st: os.stat_result) -> UfsStatus:
    if stat.S_ISDIR(st.st_mode):
        return dir_status(uri, uris.name(uri), st.st_mtime_ns)
    return file_status(uri, st.st_size, st.st_mtime_ns)


def _scan(uri: str) -> list[UfsStatus]:
    statuses: list[UfsStatus] = []
    with os.scandir(path_of(uri)) as entries:
        for entry in entries:
            try:
                statuses.append(_status(uris.child(uri, entry.name), entry.stat()))
            except UfsInvalidPath:
                continue  # a name no canonical URI can address cannot be served
            except OSError as exc:
                if exc.errno not in _UNSERVABLE:
                    raise
    return statuses


def _pread(uri: str, offset: int, length: int, version: str | None) -> bytes:
    # O_NONBLOCK: opening a FIFO planted in a root must not hold a thread until a writer comes.
    fd = os.open(path_of(uri), os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        before = os.fstat(fd)
        if stat.S_ISDIR(before.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), uri)
        if not stat.S_ISREG(before.st_mode):
            raise UfsInvalidPath(f"cannot read {uri!r}: not a regular file")
        _check_version(uri, before, version)
        parts: list[bytes] = []
        while length > 0:
            part = os.pread(fd, length, offset)
            if not part:
                break
            parts.append(part)
            offset += len(part)
            length -= len(part)
        # Written to in place while read: the bytes may mix versions.
        _check_version(uri, os.fstat(fd), version)
        return b"".join(parts)
    finally:
        os.close(fd)


def _append(uri: str, data: Iterable[bytes], version: str) -> os.stat_result:
    fd = os.open(path_of(uri), os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            raise UfsInvalidPath(f"cannot append to {uri!r}: not a regular file")
        _check_version(uri, before, version)
        try:
            for chunk in data:
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view) :]
        except BaseException:
            # Size and time back as they were: the file keeps its version, so what is
            # cached of it stays valid.
            os.ftruncate(fd, before.st_size)
            os.utime(fd, ns=(before.st_atime_ns, before.st_mtime_ns))
            raise
        return os.fstat(fd)
    finally:
        os.close(fd)


def _read_whole(files: Sequence[tuple[str, int, str]]) -> list[bytes | Exception]:
    outcomes: list[bytes | Exception] = []
    for uri, size, version in files:
        try:
            outcomes.append(_pread(uri, 0, size, version))
        except Exception as exc:  # noqa: BLE001 - one file's error is its outcome, not the batch's
            outcomes.append(exc)
    return outcomes


def _check_version(uri: str, st: os.stat_result, version: str | None) -> None:
    """The version is checked on the descriptor read from, not on the path: a file swapped
    for another (or for a link) after its status was taken is a change, never its bytes."""
    current = make_version(st.st_size, st.st_mtime_ns, None)
    if version is not None and current != version:
        raise UfsVersionChanged(uri, version, current)


def _delete(path: str, recursive: bool) -> None:
    # A link is removed itself, never what it points to; rmtree works on descriptors and
    # never follows the links it meets.
    if os.path.isdir(path) and not os.path.islink(path):
        if recursive:
            shutil.rmtree(path)
        else:
            os.rmdir(path)
    else:
        os.remove(path)


def _move(src: str, dst: str) -> None:
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.move(src, dst)


class _Upload:
    """A file written under a temporary name beside its target and renamed over it at the
    end, so that readers see the old file or the new one, never a part, and a write that
    fails leaves the old file. Written through a link, the link's target is replaced (the
    link stays); a replaced file keeps its permission bits. :meth:`commit` answers the
    written file's own status (``fstat`` before the rename, which changes neither its size
    nor its mtime), so what a write reports never depends on the name after it.

    Its steps may run on different threads one after another; its lock also makes
    :meth:`discard` wait for a step that overran its deadline to return."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._temp: str | None = None
        self._target = path

    def open(self) -> None:
        with self._lock:
            self._target = resolve(self._path)
            directory, name = os.path.split(self._target)
            os.makedirs(directory, exist_ok=True)
            temp = os.path.join(directory, f".{name}.dora-{secrets.token_hex(6)}.tmp")
            self._fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            self._temp = temp
            with suppress(FileNotFoundError):
                os.fchmod(self._fd, stat.S_IMODE(os.stat(self._target).st_mode))

    def write(self, chunk: bytes) -> None:
        with self._lock:
            assert self._fd is not None, "open() first"
            view = memoryview(chunk)
            while view:
                view = view[os.write(self._fd, view) :]

    def commit(self) -> os.stat_result:
        with self._lock:
            assert self._fd is not None and self._temp is not None, "open() first"
            fd, self._fd = self._fd, None
            try:
                written = os.fstat(fd)
            finally:
                os.close(fd)
            os.replace(self._temp, self._target)
            self._temp = None
            return written

    def discard(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            if self._temp is not None:
                with suppress(FileNotFoundError):
                    os.unlink(self._temp)
                self._temp = None
