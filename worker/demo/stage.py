"""Where the demo's data lives (its UFS): a local S3 server (SeaweedFS) or a local directory.
Both take the dataset, overwrite one file "from outside" the cache, and read files back
directly for the reference answer."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from ufs import uri as uris
from worker.locals3 import LocalS3

BUCKET = "demo"
Progress = Callable[[int, int], None]


class Stage(Protocol):
    """The demo's under storage. ``root`` is the URI of the dataset directory."""

    root: str

    def defines(self) -> list[str]:
        """Worker settings (``key=value``) that let a worker serve ``root``."""
        ...

    def upload(self, files: list[Path], progress: Progress) -> None: ...

    def overwrite(self, name: str, table: pa.Table) -> None: ...

    def read_table(self, name: str, columns: list[str]) -> pa.Table: ...

    def close(self) -> None: ...


class S3Stage:
    """A fresh SeaweedFS server (``weed mini``) under ``data_dir``, stopped by PID on close."""

    def __init__(self, data_dir: Path, prefix: str) -> None:
        self.server = LocalS3(data_dir, buckets=(BUCKET,))
        self.root = f"s3://{BUCKET}/{prefix}"
        self._client: Any = None

    def start(self) -> S3Stage:
        self.server.start()
        self._client = self.server.client()
        return self

    def defines(self) -> list[str]:
        return [f"dora.worker.ufs.roots=s3://{BUCKET}", *self.server.storage_defines()]

    def _key(self, name: str) -> str:
        return f"{self.root.removeprefix('s3://')}/{name}"

    def upload(self, files: list[Path], progress: Progress) -> None:
        for done, path in enumerate(files, start=1):
            self._client.put_file(str(path), self._key(path.name))
            progress(done, len(files))

    def overwrite(self, name: str, table: pa.Table) -> None:
        with self._client.open(self._key(name), "wb") as out:
            pq.write_table(table, out, compression="snappy")

    def read_table(self, name: str, columns: list[str]) -> pa.Table:
        with self._client.open(self._key(name), "rb") as handle:
            return pq.read_table(handle, columns=columns)

    def close(self) -> None:
        self.server.stop()


class DirStage:
    """A copy of the dataset in a local directory (copied so that overwriting a file never
    touches the cached dataset)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory.absolute()
        self.root = uris.normalize("file://" + str(self.directory))

    def defines(self) -> list[str]:
        return [f"dora.worker.ufs.roots={self.root}"]

    def upload(self, files: list[Path], progress: Progress) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        for done, path in enumerate(files, start=1):
            shutil.copyfile(path, self.directory / path.name)
            progress(done, len(files))

    def overwrite(self, name: str, table: pa.Table) -> None:
        temp = self.directory / f".{name}.tmp"
        pq.write_table(table, temp, compression="snappy")
        temp.replace(self.directory / name)

    def read_table(self, name: str, columns: list[str]) -> pa.Table:
        return pq.read_table(self.directory / name, columns=columns)

    def close(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
