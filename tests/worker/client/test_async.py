"""The ``dora`` filesystem's coroutines (``asynchronous=True``) against the real worker app in
process over a local directory: each gives what its synchronous twin gives, errors included, the
UFS fallback and version pinning hold, and fsspec's batched calls are in flight together."""

import asyncio
import os
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import fsspec
import httpx
import pytest

from tests.worker.client.conftest import (
    client_config,
    dora_fs,
    refusing,
    replace_before_later_chunk,
    write_outside,
)
from worker.api.app import create_app
from worker.client import DoraFileSystem, VersionMismatch
from worker.client.errors import AlreadyExists, IsADirectory, NotFound
from worker.service import WorkerService

T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


@pytest.fixture
def afs(service: WorkerService) -> DoraFileSystem:
    return dora_fs(service, asynchronous=True)


def test_metadata_and_reads_match_the_synchronous_api(
    afs: DoraFileSystem, fs: DoraFileSystem, root: str, data_dir: Path
) -> None:
    (data_dir / "d" / "sub").mkdir(parents=True)
    content = os.urandom(300_000)
    (data_dir / "d" / "r.bin").write_bytes(content)
    uri = f"{root}/d/r.bin"

    async def scenario() -> None:
        assert await afs._info(uri) == fs.info(uri)
        assert await afs._ls(f"{root}/d", detail=False) == [uri, f"{root}/d/sub"]
        assert await afs._exists(uri) and await afs._isfile(uri)
        assert await afs._isdir(f"{root}/d/sub") and not await afs._exists(f"{root}/nope")
        assert await afs._find(root) == [uri]
        with pytest.raises(NotFound):
            await afs._info(f"{root}/nope")
        assert await afs._cat_file(uri) == content
        assert await afs._cat_file(uri, 10, 20) == content[10:20]
        assert await afs._cat_file(uri, -100) == content[-100:]
        assert await afs._cat_file(uri, len(content) + 10) == b""
        out = await afs._cat_ranges([uri, uri, f"{root}/missing"], [0, 100, 0], [10, 200, 5])
        assert out[:2] == [content[:10], content[100:200]]
        assert isinstance(out[2], FileNotFoundError)
        assert await afs._cat([uri, f"{root}/d/sub"], on_error="return") != {}

    run(scenario())


def test_writes_copies_moves_and_deletes(
    afs: DoraFileSystem, root: str, data_dir: Path, tmp_path: Path
) -> None:
    local = tmp_path / "x.txt"
    local.write_bytes(b"hello")

    async def scenario() -> None:
        await afs._pipe_file(f"{root}/w/a.txt", b"aaa")
        with pytest.raises(AlreadyExists):
            await afs._pipe_file(f"{root}/w/a.txt", b"bbb", mode="create")
        await afs._put_file(str(local), f"{root}/w/dir/")
        await afs._cp_file(f"{root}/w/a.txt", f"{root}/w/b.txt")
        await afs._mkdir(f"{root}/w/empty")
        await afs._makedirs(f"{root}/w/empty", exist_ok=True)
        with pytest.raises(FileExistsError):
            await afs._makedirs(f"{root}/w/empty")
        await afs._mv(f"{root}/w/b.txt", f"{root}/w/moved/")
        await afs._get_file(f"{root}/w/dir/x.txt", str(tmp_path / "back.txt"))
        await afs._rm_file(f"{root}/w/a.txt")
        await afs._rm(f"{root}/w/emp*", recursive=True)

    run(scenario())
    assert (data_dir / "w" / "dir" / "x.txt").read_bytes() == b"hello"
    assert (data_dir / "w" / "moved" / "b.txt").read_bytes() == b"aaa"
    assert (tmp_path / "back.txt").read_bytes() == b"hello"
    assert not (data_dir / "w" / "a.txt").exists() and not (data_dir / "w" / "empty").exists()


def test_open_async_reads_pinned_ranges_and_writes_on_close(
    afs: DoraFileSystem, root: str, data_dir: Path
) -> None:
    content = os.urandom(200_000)
    (data_dir / "f.bin").write_bytes(content)

    async def scenario() -> None:
        async with await afs.open_async(f"{root}/f.bin") as f:
            assert await f.read(10) == content[:10]
            f.seek(-8, 2)
            assert await f.read() == content[-8:]
        async with await afs.open_async(f"{root}/g.bin", "wb") as g:
            await g.write(b"new ")
            await g.write(b"file")
        with pytest.raises(IsADirectory):
            await afs.open_async(root)
        f = await afs.open_async(f"{root}/f.bin")
        write_outside(data_dir / "f.bin", b"changed")
        afs.invalidate_cache(f"{root}/f.bin")
        with pytest.raises(VersionMismatch):
            await f.read(10)
        await f.close()

    run(scenario())
    assert (data_dir / "g.bin").read_bytes() == b"new file"


def test_an_asynchronous_instance_is_built_from_a_url_and_pickles(service: WorkerService) -> None:
    """zarr 3 and fsspec's ``url_to_fs`` pass ``asynchronous=True`` to the filesystem."""
    import pickle

    fs, path = fsspec.url_to_fs(
        "dora::file:///data/x",
        asynchronous=True,
        config=client_config(),
        transport=httpx.ASGITransport(app=create_app(service)),
    )
    assert isinstance(fs, DoraFileSystem) and fs.async_impl and fs.asynchronous
    assert path == "/data/x"
    copy = pickle.loads(pickle.dumps(DoraFileSystem(asynchronous=True, config=client_config())))
    assert copy.asynchronous and copy.options == fs.options


def test_without_a_reachable_worker_reads_fall_back_to_the_ufs(
    root: str, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (data_dir / "a.txt").write_bytes(b"from the ufs")
    config = client_config(f"dora.worker.ufs.roots={root}")
    offline = DoraFileSystem(
        transport=refusing(), config=config, asynchronous=True, skip_instance_cache=True
    )
    assert run(offline._cat_file(f"{root}/a.txt")) == b"from the ufs"
    assert run(offline._info(f"{root}/a.txt"))["size"] == 12
    assert offline.fallback_stats().ufs_fallbacks == 2

    # Pinned across chunks: an object replaced between two chunks is a VersionMismatch.
    (data_dir / "b.bin").write_bytes(b"a" * 30_000)
    replace_before_later_chunk(
        monkeypatch, lambda: write_outside(data_dir / "b.bin", b"b" * 30_000)
    )
    pinned = DoraFileSystem(
        transport=refusing(),
        config=client_config(
            f"dora.worker.ufs.roots={root}", "dora.user.client.read.chunk.size=16KB"
        ),
        asynchronous=True,
        skip_instance_cache=True,
    )
    with pytest.raises(VersionMismatch):
        run(pinned._cat_file(f"{root}/b.bin"))
    assert run(pinned._cat_file(f"{root}/b.bin")) == b"b" * 30_000


class InFlight:
    """ASGI middleware counting the reads in flight at once (the most ever seen)."""

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app
        self.now = 0
        self.most = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        counted = scope["type"] == "http" and scope["path"] == "/v1/read"
        if counted:
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            await self.app(scope, receive, send)
        finally:
            if counted:
                self.now -= 1


def test_fsspec_batched_ranges_are_in_flight_together(
    service: WorkerService, root: str, data_dir: Path
) -> None:
    content = os.urandom(64 * 4096)
    (data_dir / "ranges.bin").write_bytes(content)
    counter = InFlight(create_app(service))
    afs = DoraFileSystem(
        transport=httpx.ASGITransport(app=counter),
        config=client_config(),
        asynchronous=True,
        skip_instance_cache=True,
    )
    uri = f"{root}/ranges.bin"
    starts = [i * 4096 for i in range(64)]
    out = run(afs._cat_ranges([uri] * 64, starts, [s + 100 for s in starts]))
    assert out == [content[s : s + 100] for s in starts]
    # 64 reads of one file; the sync API would have at most read.parallelism in flight.
    assert counter.most > afs.options.read_parallelism
