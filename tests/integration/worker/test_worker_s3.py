"""The invalidation chain and the REST API against a worker fronting SeaweedFS."""

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import s3fs

from tests.integration.conftest import BUCKET
from tests.worker.chain import TTL_DEFINES, InvalidationChain
from tests.worker.conftest import Api, open_service
from worker.devlab.local.s3 import LocalS3
from worker.service import WorkerService


class S3Outside:
    def __init__(self, fs: s3fs.S3FileSystem) -> None:
        self.fs = fs

    def write(self, uri: str, data: bytes) -> None:
        self.fs.pipe_file(uri.removeprefix("s3://"), data)

    def delete(self, uri: str) -> None:
        self.fs.rm_file(uri.removeprefix("s3://"))


class TestSeaweedChain(InvalidationChain):
    @pytest.fixture
    def work(self, tmp_path: Path) -> Path:
        return tmp_path / "work"

    @pytest.fixture
    def root(self, s3_root: str) -> str:
        return s3_root

    @pytest.fixture
    def service(self, work: Path, seaweedfs: LocalS3) -> Iterator[WorkerService]:
        service = open_service(work, f"s3://{BUCKET}", *TTL_DEFINES, *seaweedfs.storage_defines())
        yield service
        service.close()

    @pytest.fixture
    def outside(self, s3_raw: s3fs.S3FileSystem) -> S3Outside:
        return S3Outside(s3_raw)


def test_rest_api_over_s3(
    tmp_path: Path, seaweedfs: LocalS3, s3_root: str, s3_raw: s3fs.S3FileSystem
) -> None:
    service = open_service(tmp_path / "work", f"s3://{BUCKET}", *seaweedfs.storage_defines())
    api = Api(service)
    try:
        path = f"{s3_root}/api/object.bin"
        written = api.request("PUT", "/v1/write", params={"path": path}, content=b"payload" * 1000)
        assert written.status_code == 201
        assert written.json()["version"] == s3_raw.info(path.removeprefix("s3://"))["ETag"].strip(
            '"'
        )
        assert (
            api.get("/v1/read", params={"path": path, "offset": 7, "length": 7}).content
            == b"payload"
        )
        entries = api.get("/v1/list", params={"path": f"{s3_root}/api"}).json()["entries"]
        assert [e["name"] for e in entries] == ["object.bin"]
        s3_raw.pipe_file(f"{s3_root}/api/second.bin".removeprefix("s3://"), b"2")
        synced = api.get("/v1/list", params={"path": f"{s3_root}/api", "sync_interval": "0"}).json()
        assert [e["name"] for e in synced["entries"]] == ["object.bin", "second.bin"]
        outside = api.get("/v1/status", params={"path": f"s3://{BUCKET}-other/x"})
        assert (outside.status_code, outside.json()["error"]) == (403, "OutsideMountRoots")
    finally:
        api.close()
        service.close()


def test_every_surface_applies_the_path_rules_to_a_status(
    tmp_path: Path, seaweedfs: LocalS3, s3_root: str, s3_raw: s3fs.S3FileSystem
) -> None:
    """Issue 22 item 6: the event-loop fast path of /v1/status answered a memory hit under the
    default sync interval, skipping the per-path rule that asks for a re-check."""
    rule = f"dora.worker.path.conf={s3_root}/hot dora.user.file.metadata.sync.interval=0"
    service = open_service(tmp_path / "work", f"s3://{BUCKET}", rule, *seaweedfs.storage_defines())
    api = Api(service)
    hot, cold = f"{s3_root}/hot/f.bin", f"{s3_root}/cold/f.bin"
    webhdfs = "/webhdfs/v1/s3/"
    surfaces = {
        "/v1/status": lambda uri: api.get("/v1/status", params={"path": uri}).json()["size"],
        "/v1/list": lambda uri: api.get("/v1/list", params={"path": uri.rsplit("/", 1)[0]}).json()[
            "entries"
        ][0]["size"],
        "/v1/read": lambda uri: len(api.get("/v1/read", params={"path": uri}).content),
        "webhdfs": lambda uri: json.loads(
            api.get(webhdfs + uri.removeprefix("s3://"), params={"op": "GETFILESTATUS"}).content
        )["FileStatus"]["length"],
        "webhdfs OPEN": lambda uri: len(
            api.get(
                webhdfs + uri.removeprefix("s3://"), params={"op": "OPEN", "data": "true"}
            ).content
        ),
        "alluxio": lambda uri: api.get("/v1/info", params={"path": uri}).json()[0]["mLength"],
    }
    try:
        for name, size_of in surfaces.items():
            for uri in (hot, cold):
                s3_raw.pipe_file(uri.removeprefix("s3://"), b"old")
                service.invalidate(service.request(uri))
                assert size_of(uri) == 3, name
                assert size_of(uri) == 3, name  # now from the worker's memory
                s3_raw.pipe_file(uri.removeprefix("s3://"), b"changed")
            # The rule re-checks /hot on every call; elsewhere the default (-1) keeps the entry.
            assert (size_of(hot), size_of(cold)) == (7, 3), name
    finally:
        api.close()
        service.close()
