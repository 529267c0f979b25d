"""The REST v1 contract of DESIGN.md, in process, over a local-directory UFS."""

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from config import load_config
from pagestore.factory import on_disk
from pagestore.options import PageStoreOptions
from tests.worker.conftest import Api, open_service
from ufs.adapter import Ufs
from ufs.status import UfsStatus, file_id
from worker.assembly import Assembly
from worker.keys import build_registry
from worker.meta.entry import Operation
from worker.meta.manager import MetadataManager
from worker.service import WorkerService

PAGE = 64 * 1024


def uri(data_dir: Path, name: str) -> str:
    return f"file://{data_dir}/{name}"


def test_status_list_and_read_through(api: Api, data_dir: Path) -> None:
    content = os.urandom(3 * PAGE + 123)
    (data_dir / "f.bin").write_bytes(content)
    (data_dir / "sub").mkdir()
    status = api.get("/v1/status", params={"path": uri(data_dir, "f.bin")}).json()
    assert status["size"] == len(content)
    assert status["cached_bytes"] == 0
    assert set(status) == {"uri", "name", "is_dir", "size", "mtime_ns", "version", "content_hash",
                           "cached_bytes", "pinned", "age_ms", "sync_interval_ms"}  # fmt: skip
    assert 0 <= status["age_ms"] < 60_000  # just loaded
    read = api.get("/v1/read", params={"path": uri(data_dir, "f.bin")})
    assert read.status_code == 200
    assert read.content == content
    assert read.headers["x-dora-version"] == status["version"]
    after = api.get("/v1/status", params={"path": uri(data_dir, "f.bin")}).json()
    assert after["cached_bytes"] == len(content)
    entries = api.get("/v1/list", params={"path": f"file://{data_dir}"}).json()["entries"]
    assert [(e["name"], e["is_dir"]) for e in entries] == [("f.bin", False), ("sub", True)]
    assert entries[0]["age_ms"] == entries[1]["age_ms"] is not None  # the listing's age
    assert [set(e) == set(status) for e in entries] == [True, True]
    assert [e["cached_bytes"] for e in entries] == [len(content), 0]


def test_names_outside_ascii_come_back_exactly(api: Api, data_dir: Path) -> None:
    # Answers are compact UTF-8 JSON (orjson), not ASCII escapes: any JSON parser reads both.
    name = 'año "q" 日本.bin'
    (data_dir / name).write_bytes(b"x")
    answer = api.get("/v1/list", params={"path": f"file://{data_dir}"})
    assert "año".encode() in answer.content and "日本".encode() in answer.content
    assert [e["name"] for e in answer.json()["entries"]] == [name]
    status = api.get("/v1/status", params={"path": uri(data_dir, name)}).json()
    assert (status["name"], status["uri"]) == (name, uri(data_dir, name))


def test_ranges_by_offset_and_header(api: Api, data_dir: Path) -> None:
    content = os.urandom(2 * PAGE)
    (data_dir / "r.bin").write_bytes(content)
    path = uri(data_dir, "r.bin")
    part = api.get("/v1/read", params={"path": path, "offset": PAGE - 10, "length": 20})
    assert part.content == content[PAGE - 10 : PAGE + 10]
    past_end = api.get("/v1/read", params={"path": path, "offset": 2 * PAGE - 5, "length": 99})
    assert past_end.content == content[-5:]
    ranged = api.get("/v1/read", params={"path": path}, headers={"Range": "bytes=100-199"})
    assert ranged.status_code == 206
    assert ranged.headers["content-range"] == f"bytes 100-199/{2 * PAGE}"
    assert ranged.content == content[100:200]
    suffix = api.get("/v1/read", params={"path": path}, headers={"Range": "bytes=-7"})
    assert suffix.content == content[-7:]
    open_ended = api.get("/v1/read", params={"path": path}, headers={"Range": f"bytes={PAGE}-"})
    assert open_ended.content == content[PAGE:]


@pytest.mark.parametrize(
    ("params", "headers", "status", "code"),
    [
        ({"offset": 10**9}, {}, 416, "RangeNotSatisfiable"),
        ({"offset": -1}, {}, 416, "RangeNotSatisfiable"),
        ({"offset": "ten"}, {}, 400, "BadRequest"),
        ({}, {"Range": "bytes=9-3"}, 416, "RangeNotSatisfiable"),
        ({"sync_interval": "soon"}, {}, 400, "BadRequest"),
        ({"version": "not-the-version"}, {}, 412, "VersionMismatch"),
    ],
)
def test_bad_reads_get_precise_errors(
    api: Api,
    data_dir: Path,
    params: dict[str, object],
    headers: dict[str, str],
    status: int,
    code: str,
) -> None:
    (data_dir / "e.bin").write_bytes(b"0123456789")
    answer = api.get("/v1/read", params={"path": uri(data_dir, "e.bin"), **params}, headers=headers)
    assert answer.status_code == status
    body = answer.json()
    assert body["error"] == code
    assert body["message"]


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("file:///etc/passwd", 403, "OutsideMountRoots"),
        ("{data}/../etc/passwd", 400, "InvalidPath"),
        ("{data}/%2e%2e/etc/passwd", 400, "InvalidPath"),
        ("{data}/missing", 404, "NotFound"),
        ("relative/path", 400, "InvalidPath"),
        ("", 400, "BadRequest"),
    ],
)
def test_paths_are_checked(api: Api, data_dir: Path, path: str, status: int, code: str) -> None:
    answer = api.get("/v1/status", params={"path": path.format(data=f"file://{data_dir}")})
    assert (answer.status_code, answer.json()["error"]) == (status, code)


def test_write_then_read_your_writes(api: Api, data_dir: Path) -> None:
    path = uri(data_dir, "w/new.txt")
    created = api.request("PUT", "/v1/write", params={"path": path}, content=b"first")
    assert created.status_code == 201
    assert api.get("/v1/read", params={"path": path}).content == b"first"
    updated = api.request("PUT", "/v1/write", params={"path": path}, content=b"second!")
    assert updated.status_code == 200
    assert updated.json()["size"] == 7
    assert api.get("/v1/read", params={"path": path}).content == b"second!"
    names = [
        e["name"]
        for e in api.get("/v1/list", params={"path": uri(data_dir, "w")}).json()["entries"]
    ]
    assert names == ["new.txt"]


def test_delete_rename_mkdir(api: Api, data_dir: Path) -> None:
    (data_dir / "d").mkdir()
    (data_dir / "d" / "a.txt").write_bytes(b"a")
    api.get("/v1/read", params={"path": uri(data_dir, "d/a.txt")})
    moved = api.request(
        "POST",
        "/v1/rename",
        params={"src": uri(data_dir, "d/a.txt"), "dst": uri(data_dir, "d/b.txt")},
    )
    assert moved.json()["name"] == "b.txt"
    assert api.get("/v1/status", params={"path": uri(data_dir, "d/a.txt")}).status_code == 404
    assert api.get("/v1/read", params={"path": uri(data_dir, "d/b.txt")}).content == b"a"
    made = api.request("POST", "/v1/mkdir", params={"path": uri(data_dir, "d/e/f")})
    assert made.json()["is_dir"] is True
    refused = api.request("DELETE", "/v1/delete", params={"path": uri(data_dir, "d")})
    assert (refused.status_code, refused.json()["error"]) == (400, "IsADirectory")
    gone = api.request(
        "DELETE", "/v1/delete", params={"path": uri(data_dir, "d"), "recursive": "true"}
    )
    assert gone.json() == {"deleted": uri(data_dir, "d")}
    assert api.get("/v1/read", params={"path": uri(data_dir, "d/b.txt")}).status_code == 404
    assert not (data_dir / "d").exists()
    bad = api.request(
        "DELETE", "/v1/delete", params={"path": uri(data_dir, "x"), "recursive": "maybe"}
    )
    assert (bad.status_code, bad.json()["error"]) == (400, "BadRequest")


def test_invalidate_drops_metadata_and_pages(
    api: Api, service: WorkerService, data_dir: Path
) -> None:
    (data_dir / "i.bin").write_bytes(os.urandom(PAGE * 2))
    path = uri(data_dir, "i.bin")
    version = api.get("/v1/status", params={"path": path}).json()["version"]
    api.get("/v1/read", params={"path": path})
    assert service.pages.cached_bytes(file_id(path), version) == PAGE * 2
    answer = api.request("POST", "/v1/invalidate", params={"path": path})
    assert answer.json()["invalidated"] >= 1
    assert service.pages.cached_bytes(file_id(path), version) == 0


def test_load_job_with_globs_and_progress(api: Api, service: WorkerService, data_dir: Path) -> None:
    (data_dir / "l").mkdir()
    for name in ("a.parquet", "b.parquet", "c.csv"):
        (data_dir / "l" / name).write_bytes(os.urandom(PAGE + 1))
    job = api.request(
        "POST", "/v1/load", params={"path": uri(data_dir, "l"), "include": "*.parquet"}
    )
    assert job.status_code == 202
    service.loads.wait(job.json()["id"], timeout=60)
    progress = api.get(f"/v1/load/{job.json()['id']}").json()
    assert progress["state"] == "done"
    assert (progress["files_total"], progress["files_done"]) == (2, 2)
    assert progress["bytes_done"] == 2 * (PAGE + 1)
    for name, cached in (("a.parquet", PAGE + 1), ("c.csv", 0)):
        assert (
            api.get("/v1/status", params={"path": uri(data_dir, f"l/{name}")}).json()[
                "cached_bytes"
            ]
            == cached
        )
    assert api.get("/v1/load/load-999").status_code == 404


def test_a_metadata_only_load_job_caches_no_data(
    api: Api, service: WorkerService, data_dir: Path
) -> None:
    (data_dir / "m").mkdir()
    (data_dir / "m" / "a.bin").write_bytes(os.urandom(PAGE))
    params = {"path": uri(data_dir, "m"), "metadata_only": "true"}
    job = api.request("POST", "/v1/load", params=params).json()
    assert job["metadata_only"] is True
    done = service.loads.wait(job["id"], timeout=60)
    assert done is not None
    assert (done.to_dict()["files_done"], done.to_dict()["bytes_done"]) == (1, 0)
    status = api.get("/v1/status", params={"path": uri(data_dir, "m/a.bin")}).json()
    assert status["cached_bytes"] == 0


def test_probes_metrics_and_stats(api: Api, data_dir: Path) -> None:
    assert api.get("/healthz").json() == {"status": "ok"}
    assert api.get("/readyz").json() == {
        "ready": True,
        "metastore": "persisting",
        "pages": "ready",
    }
    (data_dir / "m.bin").write_bytes(b"x" * 100)
    api.get("/v1/read", params={"path": uri(data_dir, "m.bin")})
    api.get("/v1/read", params={"path": uri(data_dir, "m.bin")})
    text = api.get("/metrics").text
    assert 'dora_bytes_served_total{source="ufs"} 100.0' in text
    assert 'dora_bytes_served_total{source="cache"} 100.0' in text
    assert 'dora_metadata_hits_total{tier="memory"}' in text
    assert "dora_ufs_call_seconds_bucket" in text
    assert "dora_page_store_capacity_bytes" in text
    # The 100-byte file's page is in a pack, with its entry's and page's headers.
    (pack_bytes,) = re.findall(r"^dora_page_store_pack_bytes (\S+)$", text, re.MULTILINE)
    assert float(pack_bytes) > 100
    stats = api.get("/v1/stats").json()
    assert (stats["bytes_from_ufs"], stats["bytes_from_cache"]) == (100, 100)


def test_write_size_is_bounded(make_service: Callable[..., WorkerService], data_dir: Path) -> None:
    client = Api(make_service("dora.worker.http.max.write.size=1KB"))
    answer = client.request(
        "PUT", "/v1/write", params={"path": uri(data_dir, "big")}, content=b"x" * 2048
    )
    assert (answer.status_code, answer.json()["error"]) == (413, "PayloadTooLarge")
    assert not (data_dir / "big").exists()
    client.close()


def test_excluded_files_pass_through_uncached(
    make_service: Callable[..., WorkerService], data_dir: Path
) -> None:
    service = make_service("dora.worker.cache.exclude=*.tmp")
    client = Api(service)
    (data_dir / "x.tmp").write_bytes(b"scratch")
    path = uri(data_dir, "x.tmp")
    assert client.get("/v1/read", params={"path": path}).content == b"scratch"
    assert client.get("/v1/status", params={"path": path}).json()["cached_bytes"] == 0
    assert service.stats()["passthrough_reads"] == 1
    client.close()


def test_unreachable_ufs_is_503_with_retry_after(
    make_service: Callable[..., WorkerService],
) -> None:
    from worker.devlab.local.s3 import free_port

    service = make_service(
        "dora.worker.ufs.roots=s3://bucket",
        f"dora.ufs.s3.endpoint=http://127.0.0.1:{free_port()}",
        "dora.ufs.s3.access.key.id=k",
        "dora.ufs.s3.secret.access.key=s",
        "dora.ufs.retry.max.attempts=1",
    )
    client = Api(service)
    answer = client.get("/v1/status", params={"path": "s3://bucket/key"})
    assert (answer.status_code, answer.json()["error"]) == (503, "UfsUnavailable")
    assert int(answer.headers["retry-after"]) >= 1
    client.close()


@pytest.mark.parametrize(
    "query",
    [
        "offset=%D9%A3",  # ٣, ARABIC-INDIC DIGIT THREE: int() reads it as 3
        "offset=%205",  # " 5": int() strips the space
        "offset=5_0",
        "offset=%2B5",
        "offset=%C2%B2",
        "length=%D9%A3",
        "sync_interval=%D9%A3",
        "sync_interval=%205",
        "sync_interval=5%20s",
    ],
)
def test_numbers_are_ascii_digits_only(api: Api, data_dir: Path, query: str) -> None:
    (data_dir / "n.bin").write_bytes(b"0123456789")
    answer = api.get(f"/v1/read?path=file://{data_dir}/n.bin&{query}")
    assert (answer.status_code, answer.json()["error"]) == (400, "BadRequest")
    assert query.split("=", maxsplit=1)[0] in answer.json()["message"]


TEN = b"0123456789"


@pytest.mark.parametrize(
    ("content", "header", "status", "content_range", "body"),
    [
        (b"", "bytes=0-", 416, "bytes */0", None),
        (b"", "bytes=-5", 416, "bytes */0", None),
        (TEN, "bytes=-0", 416, "bytes */10", None),
        (TEN, "bytes=10-", 416, "bytes */10", None),
        (TEN, "bytes=5-", 206, "bytes 5-9/10", b"56789"),
        (TEN, "bytes=0-999", 206, "bytes 0-9/10", TEN),
        (TEN, "bytes=-20", 206, "bytes 0-9/10", TEN),
        (TEN, "bytes=9-9", 206, "bytes 9-9/10", b"9"),
        (TEN, "Bytes=2-3", 206, "bytes 2-3/10", b"23"),
        # RFC 9110 §14.2: an unknown unit must be ignored; several ranges may be (no multipart).
        (TEN, "lines=1-2", 200, None, TEN),
        (TEN, "bytes=0-1,4-5", 200, None, TEN),
    ],
)
def test_range_edges_follow_rfc_9110(
    api: Api,
    data_dir: Path,
    content: bytes,
    header: str,
    status: int,
    content_range: str | None,
    body: bytes | None,
) -> None:
    (data_dir / "r.bin").write_bytes(content)
    answer = api.get("/v1/read", params={"path": uri(data_dir, "r.bin")}, headers={"Range": header})
    assert answer.status_code == status
    assert answer.headers.get("content-range") == content_range
    if body is None:
        assert answer.json()["error"] == "RangeNotSatisfiable"
    else:
        assert answer.content == body


@pytest.mark.parametrize("header", ["bytes=-", "bytes=a-b", "bytes=٣-4", "bytes=0-1-2"])
def test_malformed_byte_ranges_are_refused(api: Api, data_dir: Path, header: str) -> None:
    (data_dir / "m.bin").write_bytes(TEN)
    answer = api.get(
        "/v1/read",
        params={"path": uri(data_dir, "m.bin")},
        headers={"Range": header.encode()},
    )
    assert (answer.status_code, answer.json()["error"]) == (416, "RangeNotSatisfiable")


def test_an_offset_past_the_end_names_the_size(api: Api, data_dir: Path) -> None:
    (data_dir / "o.bin").write_bytes(TEN)
    answer = api.get("/v1/read", params={"path": uri(data_dir, "o.bin"), "offset": 11})
    assert answer.status_code == 416
    assert answer.headers["content-range"] == "bytes */10"
    empty = api.get("/v1/read", params={"path": uri(data_dir, "o.bin"), "offset": 10})
    assert empty.status_code == 416


def test_a_file_replaced_since_its_status_was_cached_is_served_new(
    api: Api, data_dir: Path
) -> None:
    (data_dir / "c.bin").write_bytes(b"a" * (3 * PAGE))
    path = uri(data_dir, "c.bin")
    old = api.get("/v1/status", params={"path": path}).json()["version"]
    (data_dir / "c.tmp").write_bytes(b"b" * PAGE)
    (data_dir / "c.tmp").replace(data_dir / "c.bin")
    answer = api.get("/v1/read", params={"path": path, "sync_interval": "-1"})
    assert answer.status_code == 200  # not 412: no byte was sent and no version was asked for
    assert answer.content == b"b" * PAGE
    assert answer.headers["x-dora-version"] != old


@pytest.mark.parametrize("pinned", [True, False], ids=["version-given", "no-version"])
def test_a_file_deleted_since_its_status_was_cached_is_recorded_by_the_read(
    api: Api, data_dir: Path, pinned: bool
) -> None:
    (data_dir / "d.bin").write_bytes(b"a" * (3 * PAGE))
    path = uri(data_dir, "d.bin")
    version = api.get("/v1/status", params={"path": path}).json()["version"]
    (data_dir / "d.bin").unlink()
    asked = {"path": path, "sync_interval": "-1"} | ({"version": version} if pinned else {})
    assert api.get("/v1/read", params=asked).status_code == 404
    # The read found the file gone: the cached status must not answer for it any more.
    later = api.get("/v1/status", params=asked)
    assert (later.status_code, later.json()["error"]) == (404, "NotFound")


def test_ready_while_the_page_restore_runs(tmp_path: Path, data_dir: Path) -> None:
    config = load_config(
        build_registry(),
        environ={},
        defines=[f"dora.work.dir={tmp_path / 'w'}", f"dora.worker.ufs.roots=file://{data_dir}"],
    )
    ufs = Ufs.from_config(config)
    pages = on_disk(PageStoreOptions.from_config(config))  # its restore has not finished
    service = Assembly(
        config, ufs, MetadataManager.from_config(config, ufs), pages, pages.page_size
    ).service
    client = Api(service)
    try:
        answer = client.get("/readyz")
        assert answer.status_code == 200
        assert answer.json() == {"ready": True, "metastore": "persisting", "pages": "restoring"}
    finally:
        client.close()
        service.close()


def test_a_memory_hit_status_is_answered_on_the_loop_as_the_thread_path_would(
    tmp_path: Path, data_dir: Path
) -> None:
    # No object store runs: a memory hit answers alone, anything else fails in the UFS.
    service = open_service(
        tmp_path / "work", "s3://bucket/data", "dora.ufs.s3.endpoint=http://127.0.0.1:9",
        "dora.worker.security.token=s3cret",
    )  # fmt: skip
    status = UfsStatus("s3://bucket/data/a", "a", False, 3, 1, '"etag"', '"etag"')
    service.meta.writes.record_write(status.uri, status, Operation.CREATED)
    api, stranger = Api(service, {"Authorization": "Bearer s3cret"}), Api(service)
    try:
        answer = api.get("/v1/status", params={"path": status.uri, "version": '"etag"'})
        assert answer.status_code == 200
        aged = answer.json()
        assert 0 <= aged.pop("age_ms") < 60_000  # just written
        assert aged == {
            **status.to_dict(),
            "cached_bytes": 0,
            "pinned": False,
            "sync_interval_ms": -1,
        }
        refused = api.get("/v1/status", params={"path": status.uri, "version": "other"})
        outside = api.get("/v1/status", params={"path": "s3://bucket/elsewhere"})
        assert refused.status_code != 200  # another version: asked of the UFS, which is down
        assert outside.status_code == 403
        assert stranger.get("/v1/status", params={"path": status.uri}).status_code == 401
    finally:
        api.close()
        stranger.close()
        service.close()
