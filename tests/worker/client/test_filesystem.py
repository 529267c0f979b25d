"""The ``dora`` filesystem's primitives against the real worker app (in process) over a local
directory: metadata, reads, writes, errors, freshness and version pinning."""

import io
import os
from pathlib import Path

import httpx
import pytest

from tests.worker.client.conftest import (
    BeforeRead,
    client_config,
    dora_fs,
    replace_before_later_chunk,
    write_outside,
)
from worker.api.app import create_app
from worker.client import ClientStats, DoraFileSystem, VersionMismatch
from worker.client.bridge import SyncBridge
from worker.client.errors import AccessDenied, AlreadyExists, IsADirectory, NotFound
from worker.service import WorkerService


def test_info_ls_and_existence(fs: DoraFileSystem, root: str, data_dir: Path) -> None:
    (data_dir / "d" / "sub").mkdir(parents=True)
    (data_dir / "d" / "a.txt").write_bytes(b"aaa")
    info = fs.info(f"{root}/d/a.txt")
    assert (info["name"], info["size"], info["type"]) == (f"{root}/d/a.txt", 3, "file")
    assert info["version"] and info["mtime"] > 0
    assert fs.ls(f"{root}/d", detail=False) == [f"{root}/d/a.txt", f"{root}/d/sub"]
    assert [e["type"] for e in fs.ls(f"{root}/d")] == ["file", "directory"]
    assert fs.ls(f"{root}/d/a.txt", detail=False) == [f"{root}/d/a.txt"]
    assert fs.exists(f"{root}/d/a.txt") and fs.isfile(f"{root}/d/a.txt")
    assert fs.isdir(f"{root}/d/sub") and not fs.isfile(f"{root}/d/sub")
    assert not fs.exists(f"{root}/nope") and not fs.isdir(f"{root}/nope")
    with pytest.raises(NotFound):
        fs.info(f"{root}/nope")
    assert sorted(fs.find(root)) == [f"{root}/d/a.txt"]


def test_reads_ranges_and_negative_offsets(fs: DoraFileSystem, root: str, data_dir: Path) -> None:
    content = os.urandom(300_000)
    (data_dir / "r.bin").write_bytes(content)
    uri = f"{root}/r.bin"
    assert fs.cat_file(uri) == content
    assert fs.cat_file(uri, 10, 20) == content[10:20]
    assert fs.cat_file(uri, -100) == content[-100:]
    assert fs.cat_file(uri, 5, -5) == content[5:-5]
    assert fs.cat_file(uri, len(content) + 10) == b""
    assert fs.cat_file(uri, 100, 50) == b""
    with fs.open(uri) as f:
        f.seek(-8, 2)
        assert f.read() == content[-8:]
        f.seek(1000)
        assert f.read(5000) == content[1000:6000]
    assert fs.head(uri, 10) == content[:10] and fs.tail(uri, 10) == content[-10:]
    out = fs.cat_ranges([uri, uri, f"{root}/missing"], [0, 100, 0], [10, 200, 5])
    assert out[:2] == [content[:10], content[100:200]]
    assert isinstance(out[2], FileNotFoundError)
    with pytest.raises(IsADirectory):
        fs.open(root)


def test_large_reads_go_in_parallel_chunks(
    service: WorkerService, root: str, data_dir: Path
) -> None:
    # Over HTTP: this counts the chunked REST reads (the fast path would serve them locally).
    fs = dora_fs(service, "dora.user.client.read.chunk.size=256KB", short_circuit=False)
    content = os.urandom(2 * 1024 * 1024 + 17)
    (data_dir / "big.bin").write_bytes(content)
    reads: list[tuple[int, int]] = []
    original = fs.remote.read

    def spy(uri: str, offset: int, length: int | None, **kwargs: object) -> object:
        reads.append((offset, length or -1))
        return original(uri, offset, length, **kwargs)  # type: ignore[arg-type]

    fs.remote.read = spy  # type: ignore[method-assign]
    assert fs.cat_file(f"{root}/big.bin") == content
    assert len(reads) == 9  # 8 full chunks + 17 bytes
    assert reads[0] == (0, 256 * 1024)
    reads.clear()
    with fs.open(f"{root}/big.bin", cache_type="none") as f:
        f.seek(-8, 2)
        trailer = f.read(8)
        f.seek(len(content) - 40_000)
        footer = f.read(40_000 - 8)
    assert trailer + b"" == content[-8:] and footer == content[-40_000:-8]
    assert reads == [(len(content) - 64 * 1024, 64 * 1024)]  # one tail fetch serves both


def test_writes(fs: DoraFileSystem, root: str, data_dir: Path, tmp_path: Path) -> None:
    fs.pipe_file(f"{root}/w/p.txt", b"piped")
    assert (data_dir / "w" / "p.txt").read_bytes() == b"piped"
    with pytest.raises(AlreadyExists):
        fs.pipe_file(f"{root}/w/p.txt", b"again", mode="create")
    with fs.open(f"{root}/w/o.txt", "wb") as f:
        f.write(b"x" * 10)
        f.write(b"y" * 5)
    assert fs.cat_file(f"{root}/w/o.txt") == b"x" * 10 + b"y" * 5
    with pytest.raises(FileExistsError):
        fs.open(f"{root}/w/o.txt", "xb")
    local = tmp_path / "local.bin"
    local.write_bytes(os.urandom(100_000))
    fs.put_file(str(local), f"{root}/w/up.bin")
    assert (data_dir / "w" / "up.bin").read_bytes() == local.read_bytes()
    fs.get_file(f"{root}/w/up.bin", str(tmp_path / "down" / "d.bin"))
    assert (tmp_path / "down" / "d.bin").read_bytes() == local.read_bytes()
    sink = io.BytesIO()
    fs.get_file(f"{root}/w/p.txt", sink)
    assert sink.getvalue() == b"piped"
    fs.cp_file(f"{root}/w/up.bin", f"{root}/w/copy.bin")
    assert fs.cat_file(f"{root}/w/copy.bin") == local.read_bytes()
    with pytest.raises(NotImplementedError, match="mode 'ab'"):
        fs.open(f"{root}/w/p.txt", "ab")


def test_uploads_into_a_directory_keep_their_names(
    fs: DoraFileSystem, root: str, data_dir: Path, tmp_path: Path
) -> None:
    local = tmp_path / "x.txt"
    local.write_bytes(b"hello")
    fs.put_file(str(local), f"{root}/dir/")
    assert (data_dir / "dir" / "x.txt").read_bytes() == b"hello"
    fs.put(str(local), f"{root}/other/")
    assert (data_dir / "other" / "x.txt").read_bytes() == b"hello"
    (tmp_path / "tree" / "sub").mkdir(parents=True)
    (tmp_path / "tree" / "a.txt").write_bytes(b"a")
    (tmp_path / "tree" / "sub" / "b.txt").write_bytes(b"b")
    fs.put(str(tmp_path / "tree"), f"{root}/copied", recursive=True)
    assert (data_dir / "copied" / "a.txt").read_bytes() == b"a"
    assert (data_dir / "copied" / "sub" / "b.txt").read_bytes() == b"b"


def test_directories_moves_and_deletes(fs: DoraFileSystem, root: str, data_dir: Path) -> None:
    fs.makedirs(f"{root}/m/n")
    assert fs.isdir(f"{root}/m/n")
    with pytest.raises(FileExistsError):
        fs.makedirs(f"{root}/m/n")
    fs.makedirs(f"{root}/m/n", exist_ok=True)
    with pytest.raises(FileNotFoundError):
        fs.mkdir(f"{root}/nope/x", create_parents=False)
    fs.pipe_file(f"{root}/m/f.txt", b"f")
    fs.mv(f"{root}/m/f.txt", f"{root}/m/n")  # into an existing directory
    assert fs.cat_file(f"{root}/m/n/f.txt") == b"f"
    assert not fs.exists(f"{root}/m/f.txt")
    fs.mv(f"{root}/m/n", f"{root}/m/renamed")
    assert fs.ls(f"{root}/m", detail=False) == [f"{root}/m/renamed"]
    with pytest.raises(OSError):
        fs.rm(f"{root}/m")  # not empty, not recursive
    fs.rm(f"{root}/m", recursive=True)
    assert not fs.exists(f"{root}/m")
    assert not (data_dir / "m").exists()


def test_outside_changes_are_seen_with_sync_interval_zero(
    fs: DoraFileSystem, root: str, data_dir: Path
) -> None:
    target = data_dir / "o.txt"
    write_outside(target, b"first")
    uri = f"{root}/o.txt"
    assert fs.cat_file(uri) == b"first"
    old = fs.info(uri)
    write_outside(target, b"second!")
    # The default (-1) trusts the cache; sync_interval=0 re-checks the UFS.
    assert fs.info(uri)["version"] == old["version"]
    assert fs.cat_file(uri) == b"first"
    assert fs.info(uri, sync_interval=0)["size"] == 7
    assert fs.cat_file(uri, sync_interval=0) == b"second!"
    assert fs.ukey(uri) != "" and fs.ukey(uri) == fs.ukey(uri)
    assert fs.info(uri)["version"] != old["version"]


def test_exists_right_after_an_outside_write(fs: DoraFileSystem, root: str, data_dir: Path) -> None:
    uri = f"{root}/late.txt"
    assert not fs.exists(uri)  # a negative entry is now cached
    write_outside(data_dir / "late.txt", b"here")
    assert fs.exists(uri, sync_interval=0)
    assert fs.cat_file(uri, sync_interval="0s") == b"here"


def test_invalidate_cache_drops_stale_entries(
    fs: DoraFileSystem, root: str, data_dir: Path
) -> None:
    write_outside(data_dir / "i.txt", b"one")
    uri = f"{root}/i.txt"
    key = fs.ukey(uri)
    assert fs.cat_file(uri) == b"one"
    write_outside(data_dir / "i.txt", b"two2")
    assert fs.invalidate_cache(uri) >= 1
    assert fs.cat_file(uri) == b"two2"
    assert fs.ukey(uri) != key
    assert fs.invalidate_cache() == 0  # fsspec's generic hook: nothing of ours to drop


def test_an_open_file_stays_on_its_version(fs: DoraFileSystem, root: str, data_dir: Path) -> None:
    write_outside(data_dir / "v.bin", b"a" * 200_000)
    uri = f"{root}/v.bin"
    with fs.open(uri, cache_type="none") as f:
        assert f.read(10) == b"a" * 10
        write_outside(data_dir / "v.bin", b"b" * 200_000)
        with pytest.raises(VersionMismatch):
            f.read()
    with pytest.raises(VersionMismatch):
        fs.cat_file(uri, version="not-the-version", sync_interval=0)
    version = fs.info(uri, sync_interval=0)["version"]
    assert fs.cat_file(uri, 0, 3, version=version) == b"bbb"


def changed_mid_read(
    service: WorkerService, data_dir: Path, monkeypatch: pytest.MonkeyPatch, sync_before: int
) -> tuple[DoraFileSystem, str]:
    """An 800 KB file (thirteen 64 KB pages: more than one read-ahead batch, so the worker reads
    it from the UFS in more than one request) that is replaced once the worker has started
    streaming it, and a client of the worker that sends each read in one request. With
    ``sync_before``, the worker is synced with the UFS (as another caller's ``sync_interval=0``
    would) just before the client sends its read number ``sync_before``."""
    path = data_dir / "changing.bin"
    path.write_bytes(os.urandom(800_000))
    uri = f"file://{path}"
    replace_before_later_chunk(monkeypatch, lambda: write_outside(path, os.urandom(800_000)))
    transport = BeforeRead(
        SyncBridge(httpx.ASGITransport(app=create_app(service))),
        sync_before,
        lambda: service.status(service.request(uri, 0)),
    )
    fs = DoraFileSystem(transport=transport, config=client_config(), skip_instance_cache=True)
    return fs, uri


@pytest.mark.parametrize(
    "sync_before",
    [
        # Another caller syncs the worker between the cut and the client's second ask.
        pytest.param(2, id="worker-synced-meanwhile"),
        # The worker itself records the change it found when it cut the read.
        pytest.param(0, id="worker-records-the-cut"),
    ],
)
def test_a_read_cut_by_a_change_mid_stream_raises_version_mismatch_without_failover(
    service: WorkerService, data_dir: Path, monkeypatch: pytest.MonkeyPatch, sync_before: int
) -> None:
    fs, uri = changed_mid_read(service, data_dir, monkeypatch, sync_before)
    with pytest.raises(VersionMismatch):
        fs.cat_file(uri)
    assert fs.fallback_stats() == ClientStats()  # no failover, no fallback, no worker down
    assert fs.cat_file(uri, sync_interval=0) == (data_dir / "changing.bin").read_bytes()


def test_paths_outside_the_mount_roots_raise_permission_error(fs: DoraFileSystem) -> None:
    with pytest.raises(AccessDenied) as info:
        fs.exists("file:///etc/passwd")  # never False: the worker refused
    assert isinstance(info.value, PermissionError)
    assert info.value.code == "OutsideMountRoots"


def test_a_wrong_token_raises_permission_error(make_service, root: str) -> None:  # type: ignore[no-untyped-def]
    service = make_service("dora.worker.security.token=right")
    with pytest.raises(PermissionError):
        dora_fs(service, "dora.user.client.token=wrong").exists(f"{root}/x")
    assert not dora_fs(service, "dora.user.client.token=right").exists(f"{root}/x")
