"""When no worker is reachable: reads fall back to the UFS (counted, logged), mutations and
disabled fallback raise; and a forked child gets its own connections."""

import logging
import os
from pathlib import Path

import fsspec
import httpx
import pytest

from tests.worker.client.conftest import client_config, refusing, replace_before_later_chunk
from worker.client import DoraFileSystem, VersionMismatch, WorkerUnavailable


def offline(*defines: str) -> DoraFileSystem:
    return DoraFileSystem(
        transport=refusing(),
        config=client_config(*defines, workers="w1:1,w2:1"),
        skip_instance_cache=True,
    )


def test_reads_fall_back_to_the_ufs_counted_and_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    content = os.urandom(50_000)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f.bin").write_bytes(content)
    fs = offline("dora.user.client.read.chunk.size=16KB")
    uri = f"file://{tmp_path}/d/f.bin"
    with caplog.at_level(logging.WARNING, logger="worker.client"):
        assert fs.info(uri)["size"] == 50_000
        assert fs.ls(f"file://{tmp_path}/d", detail=False) == [uri]
        assert fs.cat_file(uri) == content
        with fs.open(uri) as f:
            f.seek(1000)
            assert f.read(20_000) == content[1000:21_000]
        assert not fs.exists(f"file://{tmp_path}/missing")
    stats = fs.fallback_stats()
    assert stats.ufs_fallbacks >= 5
    # Every call tries both workers before falling back; each is logged once, then counted.
    assert set(stats.unreachable) == {"w1:1", "w2:1"}
    assert min(stats.unreachable.values()) >= stats.ufs_fallbacks
    messages = [r.getMessage() for r in caplog.records]
    assert len([m for m in messages if "UFS directly" in m]) == 1
    assert len([m for m in messages if "unreachable" in m]) == 2
    assert fs.failover_count >= stats.ufs_fallbacks


def test_every_fallback_is_logged_once_the_first_as_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "f.bin").write_bytes(b"x" * 100)
    fs = offline()
    uri = f"file://{tmp_path}/f.bin"
    with caplog.at_level(logging.INFO, logger="worker.client.fallback"):
        fs.info(uri)
        fs.cat_file(uri)
    records = [r for r in caplog.records if r.name == "worker.client.fallback"]
    assert len(records) == fs.fallback_stats().ufs_fallbacks >= 2
    assert [r.levelno for r in records] == [logging.WARNING] + [logging.INFO] * (len(records) - 1)
    assert records[1].getMessage().startswith("UFS fallback 2: ")
    assert all(uri in r.getMessage() for r in records)


def test_a_pinned_version_is_honoured_in_fallback(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"abc")
    fs = offline()
    with pytest.raises(VersionMismatch):
        fs.cat_file(f"file://{tmp_path}/f", version="other")


def test_a_file_replaced_between_chunks_raises_instead_of_mixing_versions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two chunks, the second read after the replacement: with more, a later chunk's own
    # version check could notice the replacement first and hide the mix.
    old, new = b"a" * 30_000, b"b" * 30_000
    path = tmp_path / "f.bin"
    path.write_bytes(old)

    def replace() -> None:
        (tmp_path / "next").write_bytes(new)
        stat = path.stat()
        # Same size: only the mtime tells the versions apart, so make sure it differs.
        os.utime(tmp_path / "next", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
        os.replace(tmp_path / "next", path)

    replace_before_later_chunk(monkeypatch, replace)
    fs = offline("dora.user.client.read.chunk.size=16KB")
    with pytest.raises(VersionMismatch):
        fs.cat_file(f"file://{path}")
    assert fs.cat_file(f"file://{path}") == new  # a fresh read sees the new version whole


def test_mutations_never_fall_back(tmp_path: Path) -> None:
    fs = offline()
    with pytest.raises(WorkerUnavailable):
        fs.pipe_file(f"file://{tmp_path}/new", b"x")
    assert not (tmp_path / "new").exists()


def test_without_fallback_reads_and_exists_raise(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"abc")
    fs = offline("dora.user.client.fallback.to.ufs=false")
    with pytest.raises(ConnectionError):
        fs.cat_file(f"file://{tmp_path}/f")
    with pytest.raises(ConnectionError):
        fs.exists(f"file://{tmp_path}/f")  # never a silent False
    assert fs.fallback_stats().ufs_fallbacks == 0


def test_a_forked_child_builds_its_own_connection_pool() -> None:
    pids: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        pids.append(os.getpid())
        return httpx.Response(
            200,
            json={
                "uri": "s3://b/k",
                "name": "k",
                "is_dir": False,
                "size": 1,
                "mtime_ns": 0,
                "version": "v",
                "content_hash": None,
                "cached_bytes": 0,
            },
        )

    config = client_config()
    fs = fsspec.filesystem("dora", transport=httpx.MockTransport(handler), config=config)
    fs.info("s3://b/k")
    parent_pool = fs.client.sync.peek()
    assert parent_pool is not None
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        try:
            fresh = fs.client.sync.peek() is None
            fs.info("s3://b/k")
            rebuilt = fs.client.sync.peek() is not parent_pool
            again = fsspec.filesystem("dora", transport=fs.client.transport, config=config)
            separate = again is not fs
            os.write(write_end, f"{fresh} {rebuilt} {separate} {pids[-1] == os.getpid()}".encode())
        finally:
            os._exit(0)
    os.close(write_end)
    answer = os.read(read_end, 100).decode()
    os.waitpid(child, 0)
    assert answer == "True True True True"
    assert fs.client.sync.peek() is parent_pool  # the parent's pool is untouched
