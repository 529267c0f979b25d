"""Handles: one contender's client in one process, speaking in object keys.

:class:`FsspecHandle` covers s3fs and fsspec's caching filesystems, :class:`DoraHandle` the
``dora`` client, :class:`HttpHandle` the worker's REST API through httpx, :class:`LocalHandle`
the local copy of the same bytes (the machine's limit).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from typing import Any, Protocol

import httpx

from bench.side.services import SceneInfo
from worker.client.filesystem import DoraFileSystem


class RandomReader(Protocol):
    """A file held open for positioned reads."""

    def read(self, offset: int, length: int) -> int:
        """Read ``length`` bytes at ``offset``; the number read."""

    def close(self) -> None: ...


class Handle(Protocol):
    """One contender's client in one process. Methods a contender does not take part in are
    never called. Thread-safe where the client under it is (fsspec filesystems and httpx
    clients are); a :class:`RandomReader` is for one thread."""

    def info(self, key: str) -> None: ...

    def ls(self, key: str) -> int:
        """List a directory; the number of entries."""

    def read_all(self, key: str) -> int:
        """Read a whole object into memory; the number of bytes."""

    def open_random(self, key: str) -> RandomReader: ...

    def drop(self, key: str) -> None:
        """Forget everything cached about ``key`` and below it, so the next access is cold."""

    def close(self) -> None: ...


class FileReader:
    """Positioned reads through a file object (seek, then read)."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    def read(self, offset: int, length: int) -> int:
        self._handle.seek(offset)
        return len(self._handle.read(length))

    def close(self) -> None:
        self._handle.close()


class FsspecHandle:
    """An fsspec filesystem built by ``build(cache_dir)``; ``path`` turns a key into its name.

    With ``cache_dirs`` (fsspec's per-process caches) each instance gets a new, empty cache
    directory from it, and dropping means a new instance over a new directory (the old one is
    removed). Without, ``cache_dir`` is None and dropping empties the instance's listings cache
    (``invalidate_cache()``: s3fs's with a path keeps the listings below it).
    """

    def __init__(
        self,
        build: Callable[[str | None], Any],
        path: Callable[[str], str],
        *,
        random_options: dict[str, Any] | None = None,
        cache_dirs: Callable[[], str] | None = None,
    ) -> None:
        self._build = build
        self._path = path
        self._random_options = random_options or {}
        self._cache_dirs = cache_dirs
        self._cache_dir = cache_dirs() if cache_dirs is not None else None
        self.fs = build(self._cache_dir)

    def info(self, key: str) -> None:
        self.fs.info(self._path(key))

    def ls(self, key: str) -> int:
        return len(self.fs.ls(self._path(key), detail=True))

    def read_all(self, key: str) -> int:
        return len(self.fs.cat_file(self._path(key)))

    def open_random(self, key: str) -> RandomReader:
        return FileReader(self.fs.open(self._path(key), "rb", **self._random_options))

    def drop(self, key: str) -> None:
        if self._cache_dirs is None:
            self.fs.invalidate_cache()
            return
        self._remove_cache()
        self._cache_dir = self._cache_dirs()
        self.fs = self._build(self._cache_dir)

    def close(self) -> None:
        self._remove_cache()

    def _remove_cache(self) -> None:
        if self._cache_dir is not None:
            shutil.rmtree(self._cache_dir, ignore_errors=True)


class DoraHandle(FsspecHandle):
    """The ``dora`` client with constructor ``options`` (the features switched on or off);
    dropping invalidates at the worker (metadata and pages), recursively."""

    def __init__(self, info: SceneInfo, features: dict[str, bool]) -> None:
        # Feature options are passed only when the client has them (see contenders).
        options: dict[str, Any] = {"skip_instance_cache": True, **features}
        super().__init__(
            lambda _: DoraFileSystem(workers=[info.worker_address], **options),
            lambda key: f"s3://{info.bucket}/{key}",
            # One ranged call per read, as s3fs does with the same option: no read-ahead.
            random_options={"cache_type": "none"},
        )

    def drop(self, key: str) -> None:
        self.fs.invalidate_cache(self._path(key), recursive=True)


def http_client(address: str, connections: int = 64) -> httpx.Client:
    return httpx.Client(
        base_url=f"http://{address}",
        timeout=300,
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
    )


class HttpRange:
    """Positioned reads as ``GET /v1/read?offset&length``."""

    def __init__(self, client: httpx.Client, uri: str) -> None:
        self._client, self._uri = client, uri

    def read(self, offset: int, length: int) -> int:
        params: dict[str, str | int] = {"path": self._uri, "offset": offset, "length": length}
        got = self._client.get("/v1/read", params=params)
        got.raise_for_status()
        return len(got.content)

    def close(self) -> None:
        pass


class HttpHandle:
    """The worker's REST API through one httpx client: ``/v1/status``, ``/v1/list``,
    ``/v1/read`` (a whole object streamed into one buffer sized from Content-Length)."""

    def __init__(self, info: SceneInfo) -> None:
        self._client = http_client(info.worker_address)
        self._prefix = f"s3://{info.bucket}/"

    def info(self, key: str) -> None:
        self._client.get("/v1/status", params={"path": self._prefix + key}).raise_for_status()

    def ls(self, key: str) -> int:
        got = self._client.get("/v1/list", params={"path": self._prefix + key})
        got.raise_for_status()
        return len(got.json()["entries"])

    def read_all(self, key: str) -> int:
        with self._client.stream("GET", "/v1/read", params={"path": self._prefix + key}) as got:
            got.raise_for_status()
            buffer = bytearray(int(got.headers["content-length"]))
            view, filled = memoryview(buffer), 0
            for chunk in got.iter_raw():
                view[filled : filled + len(chunk)] = chunk
                filled += len(chunk)
        return filled

    def open_random(self, key: str) -> RandomReader:
        return HttpRange(self._client, self._prefix + key)

    def drop(self, key: str) -> None:
        params = {"path": self._prefix + key, "recursive": "true"}
        self._client.post("/v1/invalidate", params=params).raise_for_status()

    def close(self) -> None:
        self._client.close()


class LocalRange:
    """Positioned reads with ``os.pread`` on one descriptor."""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_RDONLY)

    def read(self, offset: int, length: int) -> int:
        return len(os.pread(self._fd, length, offset))

    def close(self) -> None:
        os.close(self._fd)


class LocalHandle:
    """The local copy of the objects: ``os.stat``, ``os.scandir`` with a stat per entry, a
    whole-file read. Nothing to drop (the OS page cache is the only cache)."""

    def __init__(self, root: str) -> None:
        self._root = root

    def info(self, key: str) -> None:
        os.stat(os.path.join(self._root, key))

    def ls(self, key: str) -> int:
        with os.scandir(os.path.join(self._root, key)) as entries:
            return sum(1 for entry in entries if entry.stat())

    def read_all(self, key: str) -> int:
        with open(os.path.join(self._root, key), "rb") as handle:
            return len(handle.read())

    def open_random(self, key: str) -> RandomReader:
        return LocalRange(os.path.join(self._root, key))

    def drop(self, key: str) -> None:
        pass

    def close(self) -> None:
        pass
