"""What Hadoop's and Python's own WebHDFS clients need of the surface beyond reading, in
process over a local directory: the server's defaults (trash off), trash root and status,
APPEND, redirects percent-encoded, CREATE checked before its redirect, unsupported operations
as an exception the client shows in one line, directory times, batched listings paged from one
listing. (The clients themselves run in ``tests/integration/clients/test_hadoop_clients.py``.)"""

import os
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.worker.api.test_webhdfs import body, remote
from worker.api import webhdfs_listing

IAE = "java.lang.IllegalArgumentException"


def test_server_defaults_trash_root_and_status(
    web: Callable[..., httpx.Response], data_dir: Path
) -> None:
    defaults = body(web("GET", "", "GETSERVERDEFAULTS"))["FsServerDefaults"]
    # Trash off: FsShell's -rm then deletes at once, as against a NameNode with trash off.
    assert defaults["trashInterval"] == 0
    assert defaults["blockSize"] > 0 and defaults["checksumType"] == 2
    assert body(web("GET", "/a", "GETTRASHROOT")) == {"Path": f"/file{data_dir}/.Trash"}
    status = body(web("GET", "", "GETSTATUS"))["FsStatus"]
    assert status == {"capacity": (1 << 63) - 1, "used": 0, "remaining": (1 << 63) - 1}


@pytest.mark.parametrize(
    ("method", "op"), [("PUT", "SETPERMISSION"), ("POST", "TRUNCATE"), ("GET", "GETACLSTATUS")]
)
def test_unsupported_operations_are_illegal_arguments(
    web: Callable[..., httpx.Response], method: str, op: str
) -> None:
    # Not UnsupportedOperationException, which the client rethrows unchecked (a stack trace).
    refused = web(method, "/f", op)
    assert remote(refused) == (400, IAE)
    assert body(refused)["RemoteException"]["message"] == (
        f"op={op} is not supported by the doracache worker"
    )


@pytest.mark.parametrize("name", ["with space.bin", "städte 日本.bin", "50% off+on&x=1.bin"])
def test_redirects_are_percent_encoded(
    web: Callable[..., httpx.Response], data_dir: Path, name: str
) -> None:
    (data_dir / name).write_bytes(b"content")
    for method, op in (("GET", "OPEN"), ("PUT", "CREATE"), ("POST", "APPEND")):
        first = web(method, f"/{name}", op, overwrite="true")
        assert first.status_code == 307, op
        location = first.headers["location"]
        assert location.isascii() and " " not in location, location
        # The location names the same file: the data step is served from it.
        assert httpx.URL(location).path == f"/webhdfs/v1/file{data_dir}/{name}"
    opened = web("GET", f"/{name}", "OPEN", data="true")
    assert opened.content == b"content"


def test_append_two_steps_in_place(web: Callable[..., httpx.Response], data_dir: Path) -> None:
    (data_dir / "log.txt").write_bytes(b"one\n")
    assert web("GET", "/log.txt", "GETFILESTATUS").status_code == 200  # cached now
    first = web("POST", "/log.txt", "APPEND")
    assert first.status_code == 307
    assert httpx.URL(first.headers["location"]).params["data"] == "true"
    appended = web("POST", "/log.txt", "APPEND", data="true", content=b"two\n")
    assert appended.status_code == 200
    assert (data_dir / "log.txt").read_bytes() == b"one\ntwo\n"
    # Read-your-writes: the cached status and bytes follow the append.
    assert body(web("GET", "/log.txt", "GETFILESTATUS"))["FileStatus"]["length"] == 8
    assert web("GET", "/log.txt", "OPEN", data="true").content == b"one\ntwo\n"
    assert remote(web("POST", "/missing", "APPEND"))[0] == 404
    (data_dir / "d").mkdir()
    assert remote(web("POST", "/d", "APPEND")) == (400, "java.io.FileNotFoundException")


def test_create_checks_the_path_before_redirecting(
    web: Callable[..., httpx.Response], data_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (data_dir / "link").symlink_to(outside)
    refused = {
        "/link/x": 403,  # through a link out of the roots
        "/%2e%2e/x": 400,  # traversal
    }
    for path, status in refused.items():
        first = web("PUT", path, "CREATE", overwrite="true")
        assert first.status_code == status, path
        assert "location" not in first.headers
    assert not list(outside.iterdir())


def test_directories_carry_their_modification_time(
    web: Callable[..., httpx.Response], data_dir: Path
) -> None:
    (data_dir / "d").mkdir()
    os.utime(data_dir / "d", ns=(0, 1_700_000_000_123_000_000))
    status = body(web("GET", "/d", "GETFILESTATUS"))["FileStatus"]
    assert status["modificationTime"] == 1_700_000_000_123
    listed = body(web("GET", "", "LISTSTATUS"))["FileStatuses"]["FileStatus"]
    assert [e["modificationTime"] for e in listed if e["pathSuffix"] == "d"] == [1_700_000_000_123]


def test_batches_continue_the_listing_they_started(
    web: Callable[..., httpx.Response], data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(webhdfs_listing, "BATCH_SIZE", 2)
    for name in ("a", "b", "c", "ü"):
        (data_dir / name).write_bytes(b"x")

    def names(**params: str) -> tuple[list[str], int]:
        answer = body(web("GET", "", "LISTSTATUS_BATCH", sync_interval="0", **params))
        listing = answer["DirectoryListing"]
        entries = listing["partialListing"]["FileStatuses"]["FileStatus"]
        return [e["pathSuffix"] for e in entries], listing["remainingEntries"]

    assert names() == (["a", "b"], 2)
    # Listed again per batch, a file made meanwhile would shift the pages under the client.
    (data_dir / "bb").write_bytes(b"x")
    assert names(startAfter="b") == (["c", "ü"], 0)
    assert names() == (["a", "b"], 3)
    assert names(startAfter="b") == (["bb", "c"], 1)
    assert names(startAfter="c") == (["ü"], 0)
