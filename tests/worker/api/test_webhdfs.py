"""The WebHDFS surface in process, over a local-directory UFS: every operation against the JSON
shapes of Hadoop's WebHDFS REST API documentation, errors as RemoteException, auth, path
rules."""

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.worker.conftest import Api, page_files
from worker.api import webhdfs_listing
from worker.api.webhdfs_paths import TOKEN_PATH
from worker.common.ring import HashRing
from worker.service import WorkerService

PAGE = 64 * 1024
STATUS_FIELDS = {
    "accessTime": int,
    "blockSize": int,
    "group": str,
    "length": int,
    "modificationTime": int,
    "owner": str,
    "pathSuffix": str,
    "permission": str,
    "replication": int,
    "type": str,
}


def body(answer: httpx.Response) -> Any:
    """The JSON of an answer, which must carry no Content-Type (the Hadoop client fails on
    one)."""
    assert "content-type" not in answer.headers
    return json.loads(answer.content)


def remote(answer: httpx.Response) -> tuple[int, str]:
    error = body(answer)["RemoteException"]
    assert set(error) == {"exception", "javaClassName", "message"}
    assert error["javaClassName"].endswith("." + error["exception"])
    return answer.status_code, error["javaClassName"]


def check_status(entry: dict[str, Any]) -> None:
    for name, kind in STATUS_FIELDS.items():
        assert isinstance(entry[name], kind), name
    assert entry["type"] in ("FILE", "DIRECTORY")
    int(entry["permission"], 8)


def test_file_and_directory_status(web: Callable[..., httpx.Response], data_dir: Path) -> None:
    (data_dir / "d").mkdir()
    (data_dir / "d" / "f.bin").write_bytes(b"x" * 1000)
    file = body(web("GET", "/d/f.bin", "GETFILESTATUS"))["FileStatus"]
    check_status(file)
    assert (file["type"], file["length"], file["pathSuffix"]) == ("FILE", 1000, "")
    assert file["modificationTime"] == (data_dir / "d" / "f.bin").stat().st_mtime_ns // 10**6
    directory = body(web("GET", "/d", "GETFILESTATUS"))["FileStatus"]
    check_status(directory)
    assert (directory["type"], directory["length"]) == ("DIRECTORY", 0)


def test_paths_above_the_roots_are_directories_leading_to_them(
    service: WorkerService, data_dir: Path
) -> None:
    api = Api(service)
    try:
        root = body(api.get("/webhdfs/v1/", params={"op": "GETFILESTATUS"}))["FileStatus"]
        assert root["type"] == "DIRECTORY"
        listed = body(api.get("/webhdfs/v1/", params={"op": "LISTSTATUS"}))
        assert [e["pathSuffix"] for e in listed["FileStatuses"]["FileStatus"]] == ["file"]
        first = data_dir.parts[1]
        listed = body(api.get("/webhdfs/v1/file", params={"op": "LISTSTATUS"}))
        assert [e["pathSuffix"] for e in listed["FileStatuses"]["FileStatus"]] == [first]
        home = body(api.get("/webhdfs/v1/", params={"op": "GETHOMEDIRECTORY"}))
        assert home == {"Path": f"/file{data_dir}"}
        outside = api.get("/webhdfs/v1/file/etc/passwd", params={"op": "GETFILESTATUS"})
        assert remote(outside) == (403, "org.apache.hadoop.security.AccessControlException")
    finally:
        api.close()


def test_listings_plain_batched_and_of_a_file(
    web: Callable[..., httpx.Response], data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("c", "a", "b"):
        (data_dir / name).write_bytes(name.encode())
    (data_dir / "sub").mkdir()
    listing = body(web("GET", "", "LISTSTATUS"))["FileStatuses"]["FileStatus"]
    assert [(e["pathSuffix"], e["type"]) for e in listing] == [
        ("a", "FILE"), ("b", "FILE"), ("c", "FILE"), ("sub", "DIRECTORY"),
    ]  # fmt: skip
    for entry in listing:
        check_status(entry)
    of_file = body(web("GET", "/a", "LISTSTATUS"))["FileStatuses"]["FileStatus"]
    assert [(e["pathSuffix"], e["length"]) for e in of_file] == [("", 1)]
    monkeypatch.setattr(webhdfs_listing, "BATCH_SIZE", 2)
    first = body(web("GET", "", "LISTSTATUS_BATCH"))["DirectoryListing"]
    names = [e["pathSuffix"] for e in first["partialListing"]["FileStatuses"]["FileStatus"]]
    assert (names, first["remainingEntries"]) == (["a", "b"], 2)
    rest = body(web("GET", "", "LISTSTATUS_BATCH", startAfter="b"))["DirectoryListing"]
    names = [e["pathSuffix"] for e in rest["partialListing"]["FileStatuses"]["FileStatus"]]
    assert (names, rest["remainingEntries"]) == (["c", "sub"], 0)


def test_open_redirects_to_a_pinned_data_url_then_streams(
    web: Callable[..., httpx.Response], data_dir: Path
) -> None:
    content = os.urandom(3 * PAGE + 17)
    (data_dir / "f.bin").write_bytes(content)
    first = web("GET", "/f.bin", "OPEN", buffersize=4096)
    assert first.status_code == 307
    location = httpx.URL(first.headers["location"])
    assert location.params["data"] == "true"
    assert location.params["buffersize"] == "4096"
    version = location.params["version"]
    no_redirect = body(web("GET", "/f.bin", "OPEN", noredirect="true"))
    assert httpx.URL(no_redirect["Location"]).params["version"] == version
    whole = web("GET", "/f.bin", "OPEN", data="true", version=version)
    assert (whole.status_code, whole.content) == (200, content)
    tail = web("GET", "/f.bin", "OPEN", data="true", offset=PAGE + 5)
    assert tail.headers["content-length"] == str(len(content) - PAGE - 5)
    assert tail.content == content[PAGE + 5 :]
    part = web("GET", "/f.bin", "OPEN", data="true", offset=10, length=PAGE)
    assert part.content == content[10 : PAGE + 10]
    at_end = web("GET", "/f.bin", "OPEN", data="true", offset=len(content))
    assert (at_end.status_code, at_end.content) == (200, b"")
    past_end = web("GET", "/f.bin", "OPEN", data="true", offset=len(content) + 1)
    assert remote(past_end) == (416, "java.io.EOFException")


def test_an_opened_stream_reads_one_version(
    web: Callable[..., httpx.Response], data_dir: Path
) -> None:
    (data_dir / "f.bin").write_bytes(b"first version")
    version = httpx.URL(web("GET", "/f.bin", "OPEN").headers["location"]).params["version"]
    (data_dir / "f.bin").write_bytes(b"the second one!")
    changed = web("GET", "/f.bin", "OPEN", data="true", version=version)
    assert remote(changed) == (412, "java.io.IOException")


def test_page_locations_name_the_cached_pages_of_a_pinned_version(
    web: Callable[..., httpx.Response], data_dir: Path
) -> None:
    content = os.urandom(3 * PAGE + 17)
    (data_dir / "f.bin").write_bytes(content)
    answer = body(web("GET", "/f.bin", "GETPAGELOCATIONS"))
    assert answer["FileStatus"] == body(web("GET", "/f.bin", "GETFILESTATUS"))["FileStatus"]
    cold = answer["PageLocations"]
    assert (cold["pages"], cold["missing"], cold["length"]) == ([], [0, 1, 2, 3], len(content))
    assert (cold["page_size"], cold["format"], cold["block_size"]) == (PAGE, 3, 16 << 10)
    version = cold["version"]
    web("GET", "/f.bin", "OPEN", data="true", version=version, offset=PAGE, length=PAGE)
    warm = body(web("GET", "/f.bin", "GETPAGELOCATIONS", version=version, offset=PAGE))
    pages = warm["PageLocations"]["pages"]
    assert [(index, size, offset) for index, _, size, offset in pages] == [(1, PAGE, 0)]
    assert Path(pages[0][1]).is_file()
    assert warm["PageLocations"]["missing"] == [2, 3]
    (data_dir / "f.bin").write_bytes(b"changed")
    changed = body(web("GET", "/f.bin", "GETPAGELOCATIONS", sync_interval=0))["PageLocations"]
    assert changed["version"] != version
    assert (changed["pages"], changed["missing"], changed["length"]) == ([], [0], 7)
    (data_dir / "d").mkdir()
    directory = body(web("GET", "/d", "GETPAGELOCATIONS"))
    assert directory == body(web("GET", "/d", "GETFILESTATUS"))
    assert remote(web("GET", "/nope", "GETPAGELOCATIONS")) == (
        404,
        "java.io.FileNotFoundException",
    )


def test_block_locations_of_a_whole_directory_in_one_call(
    web: Callable[..., httpx.Response], data_dir: Path
) -> None:
    (data_dir / "d" / "sub").mkdir(parents=True)
    (data_dir / "d" / "a.bin").write_bytes(b"a" * 100)
    (data_dir / "d" / "empty.bin").write_bytes(b"")
    listing = body(web("GET", "/d", "LISTBLOCKLOCATIONS"))["BlockLocationsByName"]
    assert sorted(listing) == ["a.bin", "empty.bin"]
    one = body(web("GET", "/d/a.bin", "GETFILEBLOCKLOCATIONS"))
    assert listing["a.bin"] == one
    assert listing["empty.bin"] == {"BlockLocations": {"BlockLocation": []}}
    of_a_file = body(web("GET", "/d/a.bin", "LISTBLOCKLOCATIONS"))["BlockLocationsByName"]
    assert of_a_file == {"a.bin": one}
    assert remote(web("GET", "/nope", "LISTBLOCKLOCATIONS")) == (
        404,
        "java.io.FileNotFoundException",
    )


def test_reading_a_directory_is_file_not_found(
    web: Callable[..., httpx.Response], data_dir: Path
) -> None:
    (data_dir / "d").mkdir()
    assert remote(web("GET", "/d", "OPEN")) == (400, "java.io.FileNotFoundException")
    assert remote(web("GET", "/nope", "OPEN")) == (404, "java.io.FileNotFoundException")


def test_block_locations_name_the_ring_owner(
    make_service: Callable[..., WorkerService], data_dir: Path
) -> None:
    workers = ["hosta:28080", "hostb:28080", "hostc:28080"]
    service = make_service(f"dora.user.workers={','.join(workers)}")
    api = Api(service)
    try:
        (data_dir / "f.bin").write_bytes(b"x" * 5000)
        (data_dir / "empty").write_bytes(b"")
        path = f"/webhdfs/v1/file{data_dir}"
        answer = api.get(path + "/f.bin", params={"op": "GETFILEBLOCKLOCATIONS"})
        blocks = body(answer)["BlockLocations"]["BlockLocation"]
        owner = HashRing(workers, 200).owner(f"file://{data_dir}/f.bin")
        assert len(blocks) == 1
        assert blocks[0]["hosts"] == [owner.split(":")[0]]
        assert blocks[0]["names"] == [owner]
        assert (blocks[0]["offset"], blocks[0]["length"], blocks[0]["corrupt"]) == (0, 5000, False)
        empty = api.get(path + "/empty", params={"op": "GETFILEBLOCKLOCATIONS"})
        assert body(empty) == {"BlockLocations": {"BlockLocation": []}}
    finally:
        api.close()


def test_without_a_cluster_or_worker_list_block_locations_name_this_worker(
    web: Callable[..., httpx.Response], data_dir: Path
) -> None:
    (data_dir / "f.bin").write_bytes(b"x" * 10)
    blocks = body(web("GET", "/f.bin", "GETFILEBLOCKLOCATIONS"))["BlockLocations"]["BlockLocation"]
    assert (blocks[0]["hosts"], blocks[0]["names"]) == (["worker"], ["worker"])


def test_content_summary_checksum_and_access(
    web: Callable[..., httpx.Response], data_dir: Path
) -> None:
    (data_dir / "d" / "e").mkdir(parents=True)
    (data_dir / "d" / "a").write_bytes(b"12345")
    (data_dir / "d" / "e" / "b").write_bytes(b"123")
    summary = body(web("GET", "/d", "GETCONTENTSUMMARY"))["ContentSummary"]
    assert (summary["length"], summary["fileCount"], summary["directoryCount"]) == (8, 2, 2)
    assert (summary["quota"], summary["spaceQuota"]) == (-1, -1)
    checksum = body(web("GET", "/d/a", "GETFILECHECKSUM"))["FileChecksum"]
    assert checksum["algorithm"] == "MD5-of-0MD5-of-0CRC32C"
    assert (checksum["length"], len(bytes.fromhex(checksum["bytes"]))) == (28, 28)
    (data_dir / "d" / "a").write_bytes(b"1234567")
    again = body(web("GET", "/d/a", "GETFILECHECKSUM", sync_interval="0"))["FileChecksum"]
    assert again["bytes"] != checksum["bytes"]
    allowed = web("GET", "/d/a", "CHECKACCESS", fsaction="r-x")
    assert (allowed.status_code, allowed.content) == (200, b"")
    bad = web("GET", "/d/a", "CHECKACCESS", fsaction="read")
    assert remote(bad) == (400, "java.lang.IllegalArgumentException")


def test_create_mkdirs_rename_delete_through_the_cache(
    web: Callable[..., httpx.Response], data_dir: Path
) -> None:
    first = web("PUT", "/out/new.bin", "CREATE", overwrite="false")
    assert first.status_code == 307
    location = httpx.URL(first.headers["location"])
    assert location.params["data"] == "true"
    created = web("PUT", "/out/new.bin", "CREATE", data="true", content=b"payload")
    assert (created.status_code, created.content) == (201, b"")
    assert (data_dir / "out" / "new.bin").read_bytes() == b"payload"
    assert body(web("GET", "/out/new.bin", "GETFILESTATUS"))["FileStatus"]["length"] == 7
    taken = web("PUT", "/out/new.bin", "CREATE", data="true", content=b"other")
    assert remote(taken) == (409, "org.apache.hadoop.fs.FileAlreadyExistsException")
    replaced = web("PUT", "/out/new.bin", "CREATE", data="true", overwrite="true", content=b"v2")
    assert replaced.status_code == 201
    assert body(web("PUT", "/dir/sub", "MKDIRS")) == {"boolean": True}
    assert (data_dir / "dir" / "sub").is_dir()
    # Renaming onto a directory moves the source into it, as HDFS does.
    assert body(web("PUT", "/out/new.bin", "RENAME", destination=f"/file{data_dir}/dir")) == {
        "boolean": True
    }
    assert (data_dir / "dir" / "new.bin").read_bytes() == b"v2"
    missing = web("PUT", "/out/new.bin", "RENAME", destination=f"/file{data_dir}/x")
    assert body(missing) == {"boolean": False}
    outside = web("PUT", "/dir/new.bin", "RENAME", destination="/file/tmp/elsewhere")
    assert remote(outside) == (403, "org.apache.hadoop.security.AccessControlException")
    assert body(web("DELETE", "/dir", "DELETE", recursive="true")) == {"boolean": True}
    assert not (data_dir / "dir").exists()
    assert body(web("DELETE", "/dir", "DELETE")) == {"boolean": False}
    assert remote(web("GET", "/dir/new.bin", "GETFILESTATUS"))[0] == 404


def test_a_body_over_the_limit_is_refused(
    make_service: Callable[..., WorkerService], data_dir: Path
) -> None:
    api = Api(make_service("dora.worker.http.max.write.size=10B"))
    try:
        answer = api.request(
            "PUT",
            f"/webhdfs/v1/file{data_dir}/big",
            params={"op": "CREATE", "data": "true"},
            content=b"x" * 11,
        )
        assert remote(answer) == (413, "java.io.IOException")
        assert not (data_dir / "big").exists()
    finally:
        api.close()


@pytest.mark.parametrize(
    ("method", "path", "params", "expected"),
    [
        ("GET", "/f", {}, (400, "java.lang.IllegalArgumentException")),
        ("GET", "/f", {"op": "NOSUCHOP"}, (400, "java.lang.IllegalArgumentException")),
        ("PUT", "/f", {"op": "SETPERMISSION"}, (400, "java.lang.IllegalArgumentException")),
        ("PUT", "/f", {"op": "OPEN"}, (400, "java.lang.IllegalArgumentException")),
        ("GET", "/f", {"op": "OPEN", "data": "maybe"}, (400, "java.lang.IllegalArgumentException")),
        ("GET", "/f", {"op": "OPEN", "offset": "-1"}, (400, "java.lang.IllegalArgumentException")),
        ("GET", "/f", {"op": "GETFILESTATUS", "sync_interval": "soon"},
         (400, "java.lang.IllegalArgumentException")),
        ("GET", "/%2e%2e/etc", {"op": "GETFILESTATUS"},
         (400, "java.lang.IllegalArgumentException")),
        ("PUT", "/f", {"op": "RENAME"}, (400, "java.lang.IllegalArgumentException")),
    ],
)  # fmt: skip
def test_bad_calls_get_remote_exceptions(
    web: Callable[..., httpx.Response],
    data_dir: Path,
    method: str,
    path: str,
    params: dict[str, str],
    expected: tuple[int, str],
) -> None:
    (data_dir / "f").write_bytes(b"data")
    op = params.pop("op", "")
    assert remote(web(method, path, op, **params)) == expected


def test_path_rules_and_the_sync_interval_parameter(
    make_service: Callable[..., WorkerService], data_dir: Path
) -> None:
    (data_dir / "fresh").mkdir()
    (data_dir / "fresh" / "f").write_bytes(b"one")
    (data_dir / "f").write_bytes(b"one")
    rule = f"dora.worker.path.conf=file://{data_dir}/fresh dora.user.file.metadata.sync.interval=0"
    api = Api(make_service(rule))
    base = f"/webhdfs/v1/file{data_dir}"

    def length(path: str, **params: str) -> int:
        answer = api.get(base + path, params={"op": "GETFILESTATUS", **params})
        return int(body(answer)["FileStatus"]["length"])

    try:
        assert (length("/fresh/f"), length("/f")) == (3, 3)
        (data_dir / "fresh" / "f").write_bytes(b"three")
        (data_dir / "f").write_bytes(b"three")
        # The rule re-checks /fresh on every call; elsewhere the default (-1) keeps the entry.
        assert (length("/fresh/f"), length("/f")) == (5, 3)
        assert length("/f", sync_interval="0") == 5
    finally:
        api.close()


def test_a_no_cache_rule_serves_pass_through(
    make_service: Callable[..., WorkerService], data_dir: Path, tmp_path: Path
) -> None:
    content = os.urandom(2 * PAGE)
    (data_dir / "raw").mkdir()
    (data_dir / "raw" / "f").write_bytes(content)
    (data_dir / "f").write_bytes(content)
    rule = f"dora.worker.path.conf=file://{data_dir}/raw dora.user.file.readtype.default=NO_CACHE"
    service = make_service("dora.worker.page.store.page.size=64KB", rule)
    api = Api(service)
    try:
        for path in ("/raw/f", "/f"):
            answer = api.get(
                f"/webhdfs/v1/file{data_dir}{path}", params={"op": "OPEN", "data": "true"}
            )
            assert answer.content == content
        assert page_files(tmp_path / "work", f"file://{data_dir}/raw/f") == []
        assert len(page_files(tmp_path / "work", f"file://{data_dir}/f")) == 2
        assert service.stats()["passthrough_reads"] == 1
    finally:
        api.close()


def test_token_by_bearer_header_delegation_parameter_or_oauth2_grant(
    make_service: Callable[..., WorkerService], data_dir: Path
) -> None:
    (data_dir / "f").write_bytes(b"data")
    api = Api(make_service("dora.worker.security.token=s3cret"))
    path = f"/webhdfs/v1/file{data_dir}/f"
    try:
        refused = api.get(path, params={"op": "GETFILESTATUS"})
        assert remote(refused) == (401, "org.apache.hadoop.security.AccessControlException")
        assert "delegation=<token>" in body(refused)["RemoteException"]["message"]
        wrong = api.get(path, params={"op": "GETFILESTATUS", "delegation": "guess"})
        assert wrong.status_code == 401
        by_param = api.get(path, params={"op": "GETFILESTATUS", "delegation": "s3cret"})
        assert by_param.status_code == 200
        grant = api.request(
            "POST",
            TOKEN_PATH,
            content=b"grant_type=client_credentials&client_id=dora&client_secret=s3cret",
        )
        token = grant.json()
        assert (token["token_type"], token["expires_in"]) == ("Bearer", 3600)
        bearer = {"Authorization": f"Bearer {token['access_token']}"}
        assert api.get(path, params={"op": "GETFILESTATUS"}, headers=bearer).status_code == 200
        bad_grant = api.request("POST", TOKEN_PATH, content=b"client_secret=guess")
        assert (bad_grant.status_code, bad_grant.json()["error"]) == (401, "invalid_client")
    finally:
        api.close()
