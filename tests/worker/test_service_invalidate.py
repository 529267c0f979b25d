"""Invalidation drops pages by what the page store knows, whatever the metadata remembers."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.worker.chain import read_all
from tests.worker.conftest import open_service, page_files
from worker.service import WorkerService

PAGE = 64 * 1024


def worker(tmp_path: Path, data_dir: Path, metastore: str) -> WorkerService:
    return open_service(
        tmp_path / "work",
        f"file://{data_dir}",
        "dora.worker.page.store.page.size=64KB",
        f"dora.worker.metastore.rocksdb.dir={tmp_path / metastore}",
    )


@pytest.fixture
def cached(tmp_path: Path, data_dir: Path) -> Iterator[dict[str, str]]:
    """Files read through one worker, then a worker with the same pages and an empty metastore
    (its metadata is gone, as after expiry). Yields each file's URI and version."""
    versions = {}
    first = worker(tmp_path, data_dir, "meta-1")
    for name in ("a/x.bin", "a/deep/y.bin", "ab/z.bin", "b.bin"):
        (data_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (data_dir / name).write_bytes(os.urandom(2 * PAGE))
        uri = f"file://{data_dir}/{name}"
        read_all(first, uri)
        versions[uri] = first.status(first.request(uri)).version
    first.close()
    yield versions


@pytest.mark.parametrize("drop", ["invalidate", "delete"])
def test_a_prefix_invalidation_or_deletion_drops_pages_whose_metadata_is_gone(
    tmp_path: Path, data_dir: Path, cached: dict[str, str], drop: str
) -> None:
    second = worker(tmp_path, data_dir, "meta-2")
    getattr(second, drop)(second.request(f"file://{data_dir}/a"), recursive=True)
    second.close()  # waits for the page files to be unlinked
    for uri, version in cached.items():
        left = page_files(tmp_path / "work", uri, version)
        if "/a/" in uri:
            assert left == [], uri
        else:  # b.bin and ab/z.bin are not under a/, whatever their names start with
            assert len(left) == 2, uri


def test_a_file_invalidation_drops_every_version_it_has_pages_of(
    tmp_path: Path, data_dir: Path, cached: dict[str, str]
) -> None:
    uri = f"file://{data_dir}/b.bin"
    second = worker(tmp_path, data_dir, "meta-2")
    (data_dir / "b.bin").write_bytes(os.urandom(PAGE))  # a second version, cached too
    read_all(second, uri, sync_interval=0)
    assert len(page_files(tmp_path / "work", uri)) == 3
    second.invalidate(second.request(uri))
    second.close()  # waits for the page files to be unlinked
    assert page_files(tmp_path / "work", uri) == []
