"""Alluxio's worker REST API as alluxiofs calls it (URLs formatted the way its source formats
them), in process, over a local-directory UFS with 64 KB pages."""

import asyncio
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.worker.conftest import Api
from worker.api.alluxio import objects_on_port
from worker.api.app import create_app
from worker.service import WorkerService

PAGE = 64 * 1024


def uri(data_dir: Path, name: str) -> str:
    return f"file://{data_dir}/{name}"


def pid(path: str) -> str:
    return hashlib.sha256(path.encode()).hexdigest()


def call(api: Api, method: str, route: str, path: str, query: str = "", **kw: Any) -> Any:
    """``/v1/<route>/<sha256(path)>?ufsFullPath=<path, unencoded>`` as alluxiofs builds it."""
    url = f"/v1/{route.format(id=pid(path))}?ufsFullPath={path}{query}"
    return api.request(method, url, **kw)


@pytest.fixture
def content(data_dir: Path) -> bytes:
    data = os.urandom(3 * PAGE + 123)
    (data_dir / "f.bin").write_bytes(data)
    return data


def test_info_and_files_records(api: Api, data_dir: Path, content: bytes) -> None:
    (data_dir / "sub").mkdir()
    path = uri(data_dir, "f.bin")
    [record] = api.get("/v1/info", params={"path": path}).json()
    assert record["mType"] == "file"
    assert record["mName"] == "f.bin"
    assert record["mPath"] == f"/file{data_dir}/f.bin"
    assert record["mUfsPath"] == path
    assert record["mLength"] == len(content)
    assert record["mHumanReadableFileSize"] == "192.12KB"
    assert record["mInAlluxioPercentage"] == 0
    assert record["mLastModificationTimeMs"] == (data_dir / "f.bin").stat().st_mtime_ns // 10**6
    call(api, "GET", "file/{id}/page/0", path)  # one page of four cached
    listing = api.get("/v1/files", params={"path": f"file://{data_dir}"}).json()
    assert [(r["mName"], r["mType"], r["mInAlluxioPercentage"]) for r in listing] == [
        ("f.bin", "file", PAGE * 100 // len(content)),
        ("sub", "directory", 0),
    ]
    assert [r["mUfsPath"] for r in api.get("/v1/files", params={"path": path}).json()] == [path]


def test_missing_file_info_is_500_as_alluxiofs_expects(api: Api, data_dir: Path) -> None:
    """alluxiofs maps only a 500 from /v1/info to FileNotFoundError (exists() -> False)."""
    answer = api.get("/v1/info", params={"path": uri(data_dir, "nope")})
    assert answer.status_code == 500
    assert answer.json()["error"] == "NotFound"
    assert api.get("/v1/files", params={"path": uri(data_dir, "nope")}).status_code == 404
    outside = api.get("/v1/info", params={"path": "file:///etc/passwd"})
    assert (outside.status_code, outside.json()["error"]) == (403, "OutsideMountRoots")


def test_reads_by_range_page_chunk_head_and_tail(api: Api, data_dir: Path, content: bytes) -> None:
    path = uri(data_dir, "f.bin")
    ranged = call(api, "GET", "range/{id}", path, f"&offset={PAGE - 5}&length=10")
    assert ranged.content == content[PAGE - 5 : PAGE + 5]
    assert call(api, "GET", "range/{id}", path, "&offset=0&length=999999").content == content
    assert call(api, "GET", "file/{id}/page/1", path).content == content[PAGE : 2 * PAGE]
    assert call(api, "GET", "file/{id}/page/3", path).content == content[3 * PAGE :]
    part = call(api, "GET", "file/{id}/page/2", path, "&offset=7&length=9")
    assert part.content == content[2 * PAGE + 7 : 2 * PAGE + 16]
    assert call(api, "GET", "file/{id}/page/4", path).status_code == 416
    assert call(api, "GET", "file/{id}/page/0", path, f"&offset={PAGE}").status_code == 416
    assert call(api, "GET", "chunk/{id}", path, "&chunkSize=1048576").content == content
    assert call(api, "GET", "head/{id}", path).content == content[:1024]
    assert call(api, "GET", "head/{id}", path, "&numOfBytes=1KB").content == content[:1024]
    assert call(api, "GET", "tail/{id}", path, "&numOfBytes=100").content == content[-100:]
    assert call(api, "GET", "tail/{id}", path, f"&numOfBytes={10**9}").content == content


@pytest.mark.parametrize(
    ("url", "status", "message"),
    [
        ("/v1/range/{id}?offset=0&length=1", 400, "missing query parameter 'ufsFullPath'"),
        ("/v1/range/0000?ufsFullPath={path}", 400, "is not the sha256"),
        ("/v1/range/{id}?ufsFullPath={path}&offset=x", 400, "offset='x'"),
        ("/v1/range/{id}?ufsFullPath={path}&offset=999999", 416, "past the end"),
        ("/v1/file/{id}/page/-1?ufsFullPath={path}", 400, "page index '-1'"),
        ("/v1/head/{id}?ufsFullPath={path}&numOfBytes=lots", 400, "numOfBytes='lots'"),
        ("/v1/chunk/{id}?ufsFullPath={path}%FF", 400, "not UTF-8"),
    ],
)
def test_bad_calls_get_precise_errors(
    api: Api, data_dir: Path, content: bytes, url: str, status: int, message: str
) -> None:
    path = uri(data_dir, "f.bin")
    answer = api.get(url.format(id=pid(path), path=path))
    assert answer.status_code == status
    assert message in answer.json()["message"]


def test_a_plus_in_a_path_is_a_plus(api: Api, data_dir: Path) -> None:
    """alluxiofs puts paths into URLs unencoded: '+' must not turn into a space."""
    (data_dir / "a+b c.txt").write_bytes(b"plus")
    (data_dir / "a b c.txt").write_bytes(b"space")
    path = uri(data_dir, "a+b c.txt")
    assert call(api, "GET", "chunk/{id}", path).content == b"plus"


def test_chunk_and_page_writes(api: Api, data_dir: Path) -> None:
    path = uri(data_dir, "w.bin")
    assert call(api, "POST", "chunk/{id}", path, content=b"x" * 10).status_code == 201
    assert (data_dir / "w.bin").read_bytes() == b"x" * 10
    assert call(api, "POST", "chunk/{id}", path, content=b"y" * 5).status_code == 200
    assert (data_dir / "w.bin").read_bytes() == b"y" * 5
    first, second = os.urandom(PAGE), os.urandom(100)
    paged = uri(data_dir, "p.bin")
    assert call(api, "POST", "file/{id}/page/0", paged, content=first).status_code == 201
    assert call(api, "POST", "file/{id}/page/1", paged, content=second).status_code == 200
    assert (data_dir / "p.bin").read_bytes() == first + second
    assert call(api, "POST", "file/{id}/page/0", paged, content=b"new").status_code == 200
    assert (data_dir / "p.bin").read_bytes() == b"new" + first[3:] + second
    hole = call(api, "POST", "file/{id}/page/3", paged, content=b"z")
    assert hole.status_code == 416
    assert (data_dir / "p.bin").read_bytes() == b"new" + first[3:] + second
    assert call(api, "GET", "file/{id}/page/1", paged).content == second


def test_mkdir_touch_rm_mv_and_copy(api: Api, data_dir: Path, service: WorkerService) -> None:
    made = uri(data_dir, "made")
    assert call(api, "POST", "mkdir/{id}", made).json() == {"success": True}
    assert (data_dir / "made").is_dir()
    touched = uri(data_dir, "made/t.txt")
    assert call(api, "POST", "touch/{id}", touched).status_code == 201
    assert (data_dir / "made/t.txt").read_bytes() == b""
    (data_dir / "made/t.txt").write_bytes(b"kept")
    assert call(api, "POST", "touch/{id}", touched).status_code == 200
    assert (data_dir / "made/t.txt").read_bytes() == b"kept"
    moved = uri(data_dir, "made/m.txt")
    mv = f"/v1/mv/{pid(touched)}?srcPath={touched}&dstPath={moved}"
    assert api.request("POST", mv).json() == {"success": True}
    assert (data_dir / "made/m.txt").read_bytes() == b"kept"
    copied = uri(data_dir, "c.txt")
    cp = f"/v1/copy/{pid(moved)}?srcPath={moved}&dstPath={copied}"
    assert api.request("POST", cp).status_code == 200
    assert (data_dir / "c.txt").read_bytes() == b"kept"
    (data_dir / "made/m.txt").write_bytes(b"newer")
    assert api.request("POST", cp).status_code == 409
    assert api.request("POST", cp + "&forced=True").status_code == 200
    assert (data_dir / "c.txt").read_bytes() == b"newer"
    tree = f"/v1/copy/{pid(made)}?srcPath={made}&dstPath={uri(data_dir, 'tree/')}"
    assert api.request("POST", tree).json()["error"] == "IsADirectory"
    assert api.request("POST", tree + "&recursive=True").status_code == 200
    assert (data_dir / "tree/m.txt").read_bytes() == b"newer"
    assert call(api, "POST", "rm/{id}", made, "&recursive=False").status_code == 400
    assert call(api, "POST", "rm/{id}", made, "&recursive=True").status_code == 200
    assert not (data_dir / "made").exists()


def test_rm_alluxio_only_drops_the_cache_and_keeps_the_file(
    api: Api, data_dir: Path, content: bytes
) -> None:
    path = uri(data_dir, "f.bin")
    call(api, "GET", "chunk/{id}", path)
    assert api.get("/v1/info", params={"path": path}).json()[0]["mInAlluxioPercentage"] == 100
    call(api, "POST", "rm/{id}", path, "&recursive=False&remove_alluxio_only=True")
    assert (data_dir / "f.bin").read_bytes() == content
    assert api.get("/v1/info", params={"path": path}).json()[0]["mInAlluxioPercentage"] == 0


def test_load_submit_progress_stop(api: Api, service: WorkerService, data_dir: Path) -> None:
    (data_dir / "d").mkdir()
    (data_dir / "d/x.bin").write_bytes(os.urandom(PAGE + 1))
    path = uri(data_dir, "d")

    def load(op: str, **extra: str) -> Any:
        return api.get("/v1/load", params={"path": path, "opType": op, **extra})

    assert load("progress").status_code == 404
    assert load("submit", verbose="true").json() == {"success": True}
    job = service.loads.latest(path)
    assert job is not None
    service.loads.wait(job.id, 30)
    progress = load("progress", verbose="true").json()
    assert progress["jobState"] == "SUCCEEDED"
    assert (progress["loadedByteCount"], progress["failures"]) == (PAGE + 1, [])
    assert load("stop").json() == {"success": False}  # nothing running any more
    assert load("pause").json()["message"].startswith("query parameter opType='pause'")
    # Our own load routes beside Alluxio's GET /v1/load answer as before.
    assert api.get(f"/v1/load/{job.id}").json()["state"] == "done"


def test_our_routes_with_the_same_names_keep_working(api: Api, data_dir: Path) -> None:
    made = api.request("POST", "/v1/mkdir", params={"path": uri(data_dir, "ours")})
    assert made.json()["is_dir"] is True
    submitted = api.request("POST", "/v1/load", params={"path": uri(data_dir, "ours")})
    assert submitted.status_code == 202


def test_node_names_this_worker_at_the_address_it_was_reached_by(api: Api, data_dir: Path) -> None:
    node = api.get("http://w1.example:28123/v1/node", params={"path": uri(data_dir, "x")})
    assert node.json() == {"Host": "w1.example", "HttpServerPort": 28123}


def test_node_answers_block_locations_for_alluxiofs_up_to_1_0_17(
    make_service: Callable[..., WorkerService],
) -> None:
    legacy = Api(make_service("dora.worker.alluxio.node.answer=locations"))
    try:
        [record] = legacy.get("http://w2.example:9/v1/node?path=s3://b/k").json()
    finally:
        legacy.close()
    location = record["mBlockInfo"]["mBlockInfo"]["mLocations"][0]["mWorkerAddress"]
    assert (location["Host"], location["HttpServerPort"]) == ("w2.example", 9)


def test_objects_by_namespace_path_with_ranges(api: Api, data_dir: Path, content: bytes) -> None:
    name = f"/v1/object/file{data_dir}/f.bin"
    assert api.get(name).content == content
    ranged = api.get(name, headers={"Range": "bytes=10-19"})
    assert (ranged.status_code, ranged.content) == (206, content[10:20])
    assert ranged.headers["content-range"] == f"bytes 10-19/{len(content)}"
    # alluxiofs 1.1.x asks for "to the end" as bytes=<start>-<start - 2>.
    assert api.get(name, headers={"Range": "bytes=0--2"}).content == content
    assert api.get(name, headers={"Range": "bytes=5-3"}).content == content[5:]
    assert api.get(name, headers={"Range": "bytes=-4"}).content == content[-4:]
    assert api.get(name, headers={"Range": "bytes=9-2"}).status_code == 416
    assert api.get("/v1/object/file").json()["error"] == "InvalidPath"


def test_the_s3_port_serves_objects_at_their_namespace_path(
    service: WorkerService, data_dir: Path, content: bytes
) -> None:
    app = objects_on_port(create_app(service), 29998)

    async def get(url: str, **kwargs: Any) -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as client:
            return await client.get(url, **kwargs)

    ranged = asyncio.run(
        get(f"http://w:29998/file{data_dir}/f.bin", headers={"Range": "bytes=1-2"})
    )
    assert ranged.content == content[1:3]
    assert asyncio.run(get("http://w:28080/healthz")).json() == {"status": "ok"}


def test_stop_reports_whether_it_stopped_a_running_job(
    api: Api, service: WorkerService, data_dir: Path
) -> None:
    (data_dir / "many").mkdir()
    for i in range(200):
        (data_dir / f"many/{i}.bin").write_bytes(os.urandom(PAGE))
    path = uri(data_dir, "many")
    api.get("/v1/load", params={"path": path, "opType": "submit"})
    stopped = api.get("/v1/load", params={"path": path, "opType": "stop"}).json()["success"]
    job = service.loads.latest(path)
    assert job is not None
    service.loads.wait(job.id, 30)
    state = api.get("/v1/load", params={"path": path, "opType": "progress"}).json()["jobState"]
    assert state == ("STOPPED" if stopped else "SUCCEEDED")


def test_the_token_guards_alluxios_routes_too(
    make_service: Callable[..., WorkerService], data_dir: Path
) -> None:
    service = make_service("dora.worker.security.token=s3cret")
    (data_dir / "f.txt").write_bytes(b"x")
    path = uri(data_dir, "f.txt")
    anonymous, holder = Api(service), Api(service, {"Authorization": "Bearer s3cret"})
    try:
        assert anonymous.get("/v1/info", params={"path": path}).status_code == 401
        assert call(anonymous, "GET", "chunk/{id}", path).status_code == 401
        assert call(holder, "GET", "chunk/{id}", path).content == b"x"
    finally:
        anonymous.close()
        holder.close()
