"""The invalidation chain end to end, for every UFS: subclasses provide ``service`` (a worker
over the UFS, page size 64KB, short TTLs), ``root`` (a fresh directory URI), ``work`` (the
worker's work dir) and ``outside`` (write/delete straight on the UFS)."""

import os
import time
from pathlib import Path
from typing import Protocol

import pytest

from tests.worker.conftest import page_files
from ufs.errors import UfsNotFound, UfsVersionChanged
from worker.meta.errors import MetaVersionMismatch
from worker.service import WorkerService

PAGE = 64 * 1024
TTL_DEFINES = (
    "dora.worker.page.store.page.size=64KB",
    "dora.worker.ufs.file.status.cache.ttl=1s",
    "dora.worker.metastore.rocksdb.ttl=1s",
)


class Outside(Protocol):
    def write(self, uri: str, data: bytes) -> None: ...
    def delete(self, uri: str) -> None: ...


def pages_left(work: Path, uri: str, version: str) -> list[Path]:
    """Page files of the version still on disk, once the store's background unlinks are done
    (deleting pages never blocks readers, so files go a moment after the index drops them)."""
    deadline = time.monotonic() + 10
    while (left := page_files(work, uri, version)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def read_all(
    service: WorkerService, uri: str, sync_interval: int | None = None, version: str | None = None
) -> bytes:
    return b"".join(service.read(service.request(uri, sync_interval, version)).chunks)


class InvalidationChain:
    def test_outside_overwrite_seen_with_sync_zero_and_old_pages_gone(
        self, service: WorkerService, root: str, work: Path, outside: Outside
    ) -> None:
        uri = f"{root}/chain.bin"
        old, new = os.urandom(3 * PAGE), os.urandom(2 * PAGE + 7)
        outside.write(uri, old)
        assert read_all(service, uri) == old
        old_version = service.status(service.request(uri)).version
        assert len(page_files(work, uri, old_version)) == 3
        outside.write(uri, new)
        assert read_all(service, uri, sync_interval=-1) == old  # cached, not re-checked
        assert read_all(service, uri, sync_interval=0) == new
        assert pages_left(work, uri, old_version) == []
        assert service.status(service.request(uri, -1)).version != old_version

    def test_never_sync_serves_cached_bytes_until_ttl(
        self, service: WorkerService, root: str, outside: Outside
    ) -> None:
        uri = f"{root}/ttl.bin"
        outside.write(uri, b"before" * 100)
        assert read_all(service, uri, sync_interval=-1) == b"before" * 100
        outside.write(uri, b"after!" * 50)
        assert read_all(service, uri, sync_interval=-1) == b"before" * 100
        time.sleep(1.5)  # both tiers' TTL is 1s: the status is gone, the next read reloads
        assert read_all(service, uri, sync_interval=-1) == b"after!" * 50

    def test_outside_delete_then_sync_is_not_found_and_pages_gone(
        self, service: WorkerService, root: str, work: Path, outside: Outside
    ) -> None:
        uri = f"{root}/del.bin"
        outside.write(uri, os.urandom(PAGE + 1))
        read_all(service, uri)
        version = service.status(service.request(uri)).version
        assert page_files(work, uri, version)
        outside.delete(uri)
        with pytest.raises(UfsNotFound):
            service.read(service.request(uri, 0))
        assert pages_left(work, uri, version) == []
        with pytest.raises(UfsNotFound):
            service.status(service.request(uri, -1))  # the negative entry answers

    def test_version_pin(self, service: WorkerService, root: str, outside: Outside) -> None:
        uri = f"{root}/pin.bin"
        outside.write(uri, b"v1" * 10)
        v1 = service.status(service.request(uri)).version
        assert read_all(service, uri, version=v1) == b"v1" * 10
        outside.write(uri, b"v2" * 11)
        # The caller knows which version it wants: the cached v1 is served with no UFS call.
        assert read_all(service, uri, version=v1, sync_interval=0) == b"v1" * 10
        v2 = service.ufs.status(uri).version
        assert read_all(service, uri, version=v2) == b"v2" * 11  # one sync finds v2
        with pytest.raises(MetaVersionMismatch):
            service.read(service.request(uri, version=v1))  # v1 is gone from the cache and the UFS
        with pytest.raises(MetaVersionMismatch):
            service.status(service.request(uri, version="no-such-version"))

    def test_change_mid_read_is_an_error_not_a_mix(
        self, service: WorkerService, root: str, outside: Outside
    ) -> None:
        uri = f"{root}/mid.bin"
        outside.write(uri, b"a" * (12 * PAGE))
        chunks = service.read(service.request(uri, 0)).chunks
        first = next(chunks)
        outside.write(uri, b"b" * (12 * PAGE))
        served = bytearray(first)
        with pytest.raises(UfsVersionChanged, match="changed during the read"):
            for chunk in chunks:
                served += chunk
        assert set(served) == {ord("a")}

    def test_a_change_found_mid_read_is_recorded(
        self, service: WorkerService, root: str, outside: Outside
    ) -> None:
        uri = f"{root}/found.bin"
        new = b"b" * (12 * PAGE + 5)
        outside.write(uri, b"a" * (12 * PAGE))
        old_version = service.status(service.request(uri)).version
        chunks = service.read(service.request(uri, -1)).chunks
        next(chunks)
        outside.write(uri, new)
        with pytest.raises(UfsVersionChanged):
            for _ in chunks:
                pass
        # The change is evidence: with "never sync", the next read serves the new version.
        assert service.status(service.request(uri, -1)).version != old_version
        assert read_all(service, uri, sync_interval=-1) == new

    def test_a_change_found_before_the_first_byte_serves_the_new_version(
        self, service: WorkerService, root: str, outside: Outside
    ) -> None:
        uri = f"{root}/before.bin"
        new = b"b" * (2 * PAGE + 1)
        outside.write(uri, b"a" * (3 * PAGE))
        old_version = service.status(service.request(uri)).version  # cached; no page is
        outside.write(uri, new)
        result = service.read(service.request(uri, -1))
        assert result.status.version != old_version
        assert (result.length, b"".join(result.chunks)) == (len(new), new)

    def test_a_change_under_a_pinned_version_is_refused_and_recorded(
        self, service: WorkerService, root: str, outside: Outside
    ) -> None:
        uri = f"{root}/pinned.bin"
        outside.write(uri, b"a" * (2 * PAGE))
        old_version = service.status(service.request(uri)).version
        outside.write(uri, b"b" * PAGE)
        with pytest.raises(UfsVersionChanged):
            service.read(service.request(uri, -1, old_version))
        assert read_all(service, uri, sync_interval=-1) == b"b" * PAGE
