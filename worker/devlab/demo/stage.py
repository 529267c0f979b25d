"""Where the demo's data lives (its UFS): a local S3 server (SeaweedFS, reached by the worker
through a :mod:`worker.devlab.demo.link` proxy) or a local directory. Datasets are named directories
under ``base``; a stage uploads and copies them, overwrites one file "from outside" the cache,
and reads files back directly for the reference answer. The worker follows SeaweedFS's change
feed (the filer's subscription), so outside writes reach it without a re-check."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from ufs import uri as uris
from worker.devlab.demo.link import UfsLink, open_link
from worker.devlab.demo.outside import feed_define
from worker.devlab.local.s3 import LocalS3

BUCKET = "demo"
Progress = Callable[[int, int], None]


class Stage(Protocol):
    """The demo's under storage. ``base`` is the URI datasets live under; ``link`` the proxy
    between worker and store, if any."""

    base: str
    link: UfsLink | None

    def defines(self) -> list[str]:
        """Worker settings (``key=value``) that let a worker serve ``base``."""
        ...

    def upload(self, name: str, files: list[Path], progress: Progress) -> None: ...

    def copy(self, source: str, target: str) -> None:
        """Copy dataset ``source`` to ``target`` within the store."""
        ...

    def overwrite(self, name: str, file: str, table: pa.Table) -> None: ...

    def read_table(self, name: str, file: str, columns: list[str]) -> pa.Table: ...

    def close(self) -> None: ...


class S3Stage:
    """A fresh SeaweedFS server (``weed mini``) under ``data_dir``, stopped by PID on close. The
    worker reaches it through a proxy adding ``latency_ms`` and follows its filer's change feed
    (directly); the stage itself goes direct."""

    def __init__(self, data_dir: Path, latency_ms: int = 0) -> None:
        self.server = LocalS3(data_dir, buckets=(BUCKET,))
        self.base = f"s3://{BUCKET}"
        self.latency_ms = latency_ms
        self.link: UfsLink | None = None
        self._client: Any = None

    def start(self) -> S3Stage:
        self.server.start()
        self._client = self.server.client()
        self.link = open_link(self.server.endpoint, self.latency_ms)
        return self

    def defines(self) -> list[str]:
        storage = self.server.storage_defines()
        if self.link is not None:
            endpoint = f"dora.ufs.s3.endpoint={self.server.endpoint}"
            storage = [f"dora.ufs.s3.endpoint={self.link.url}" if d == endpoint else d
                       for d in storage]  # fmt: skip
        feed = feed_define(self.server.host, self.server.ports["filer.port.grpc"], BUCKET)
        return [f"dora.worker.ufs.roots={self.base}", *storage, feed]

    def _key(self, name: str, file: str = "") -> str:
        return f"{BUCKET}/{name}/{file}".rstrip("/")

    def upload(self, name: str, files: list[Path], progress: Progress) -> None:
        for done, path in enumerate(files, start=1):
            self._client.put_file(str(path), self._key(name, path.name))
            progress(done, len(files))

    def copy(self, source: str, target: str) -> None:
        for key in self._client.find(self._key(source)):
            self._client.copy(key, self._key(target, key.rsplit("/", 1)[-1]))

    def overwrite(self, name: str, file: str, table: pa.Table) -> None:
        with self._client.open(self._key(name, file), "wb") as out:
            pq.write_table(table, out, compression="snappy")

    def put(self, key: str, data: bytes) -> None:
        """Write ``data`` at ``key`` in the bucket, straight to S3 (not through the cache)."""
        self._client.pipe_file(f"{BUCKET}/{key}", data)

    def read_table(self, name: str, file: str, columns: list[str]) -> pa.Table:
        with self._client.open(self._key(name, file), "rb") as handle:
            return pq.read_table(handle, columns=columns)

    def close(self) -> None:
        if self.link is not None:
            self.link.stop()
        self.server.stop()


class DirStage:
    """Datasets in a local directory (copied in, so that overwriting a file never touches the
    cached dataset). No proxy: a local directory has no latency to add."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory.absolute()
        self.base = uris.normalize("file://" + str(self.directory))
        self.link: UfsLink | None = None

    def defines(self) -> list[str]:
        return [f"dora.worker.ufs.roots={self.base}"]

    def upload(self, name: str, files: list[Path], progress: Progress) -> None:
        (self.directory / name).mkdir(parents=True, exist_ok=True)
        for done, path in enumerate(files, start=1):
            shutil.copyfile(path, self.directory / name / path.name)
            progress(done, len(files))

    def copy(self, source: str, target: str) -> None:
        shutil.copytree(self.directory / source, self.directory / target)

    def overwrite(self, name: str, file: str, table: pa.Table) -> None:
        overwrite_local(self.directory / name / file, table)

    def read_table(self, name: str, file: str, columns: list[str]) -> pa.Table:
        return pq.read_table(self.directory / name / file, columns=columns)

    def close(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def overwrite_local(path: Path, table: pa.Table) -> None:
    """Replace a local Parquet file atomically (a new inode and mtime, as real writers do)."""
    temp = path.with_name(f".{path.name}.tmp")
    pq.write_table(table, temp, compression="snappy")
    temp.replace(path)
