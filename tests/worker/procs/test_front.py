"""A front process's app (worker/procs/front.py) over a real primary app, both in process:
what it answers itself, what it passes on, and that a change made through the primary is
seen by the front at once."""

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.worker.conftest import Api
from worker.api.app import create_app
from worker.api.webhdfs_paths import Namespace
from worker.procs.front import FrontApp
from worker.procs.frontmetrics import FrontMetrics
from worker.service import WorkerService


@pytest.fixture
def front(service: WorkerService) -> Iterator[tuple[Api, FrontMetrics]]:
    primary = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(service)), base_url="http://primary"
    )
    metrics = FrontMetrics()
    api = Api(service, app=FrontApp(primary, None, metrics, Namespace(service.roots)))
    yield api, metrics
    api.loop.run_until_complete(primary.aclose())
    api.close()


def hits(metrics: FrontMetrics, kind: str) -> float:
    return metrics.near_hits.labels(kind)._value.get()


def test_a_kept_status_is_served_until_a_change_through_the_primary(
    front: tuple[Api, FrontMetrics], service: WorkerService, data_dir: Path
) -> None:
    api, metrics = front
    (data_dir / "f").write_bytes(b"a" * 10)
    uri = f"file://{data_dir}/f"
    assert api.get("/v1/status", params={"path": uri}).json()["size"] == 10
    kept = api.get("/v1/status", params={"path": uri}).json()
    assert kept["size"] == 10 and hits(metrics, "status") == 1
    assert kept["age_ms"] >= 0 and kept["sync_interval_ms"] == -1
    service.write(service.request(uri), b"b" * 20)  # through the primary: counters bumped
    assert api.get("/v1/status", params={"path": uri}).json()["size"] == 20
    assert api.get("/v1/read", params={"path": uri}).content == b"b" * 20
    # An outside change is the caller's sync interval's to see, as with the primary.
    (data_dir / "f").write_bytes(b"c" * 30)
    assert api.get("/v1/status", params={"path": uri}).json()["size"] == 20
    fresh = api.get("/v1/status", params={"path": uri, "sync_interval": "0"}).json()
    assert fresh["size"] == 30
    assert api.get("/v1/read", params={"path": uri, "sync_interval": "0"}).content == b"c" * 30


def test_reads_and_listings_are_answered_and_errors_are_the_primarys(
    front: tuple[Api, FrontMetrics], data_dir: Path
) -> None:
    api, metrics = front
    content = os.urandom(300_000)  # several 64 KB pages
    (data_dir / "f").write_bytes(content)
    uri = f"file://{data_dir}/f"
    for _ in range(2):  # cold (the primary fills the pages), then from the page files
        part = api.get("/v1/read", params={"path": uri, "offset": 70_000, "length": 100_000})
        assert part.status_code == 200 and part.content == content[70_000:170_000]
        assert api.get("/v1/read", params={"path": uri}).content == content
    for _ in range(2):
        (entry,) = api.get("/v1/list", params={"path": f"file://{data_dir}"}).json()["entries"]
        assert entry["size"] == len(content)
    assert hits(metrics, "list") == 1
    assert metrics.bytes_served._value.get() == 2 * (100_000 + len(content))
    assert api.get("/v1/read", params={"path": uri, "offset": len(content) + 1}).status_code == 416
    missing = api.get("/v1/status", params={"path": f"file://{data_dir}/nope"})
    assert missing.status_code == 404 and missing.json()["error"] == "NotFound"
    ranged = api.get("/v1/read", params={"path": uri}, headers={"Range": "bytes=5-9"})
    assert ranged.status_code == 206 and ranged.content == content[5:10]  # passed on


def test_writes_are_passed_on_and_seen_by_the_front(
    front: tuple[Api, FrontMetrics], data_dir: Path
) -> None:
    api, metrics = front
    uri = f"file://{data_dir}/new"
    assert (
        api.request("PUT", "/v1/write", params={"path": uri}, content=b"x" * 5).status_code == 201
    )
    assert (data_dir / "new").read_bytes() == b"x" * 5
    assert api.get("/v1/status", params={"path": uri}).json()["size"] == 5
    api.request("PUT", "/v1/write", params={"path": uri}, content=b"y" * 9)
    assert api.get("/v1/read", params={"path": uri}).content == b"y" * 9
    assert metrics.passed_on._value.get() == 2


def test_webhdfs_reads_are_answered_as_the_primary_answers_them(
    front: tuple[Api, FrontMetrics], service: WorkerService, data_dir: Path
) -> None:
    api, metrics = front
    primary = Api(service)
    content = os.urandom(200_000)
    (data_dir / "f").write_bytes(content)
    path = f"/webhdfs/v1/file{data_dir}/f"
    version = api.get("/v1/status", params={"path": f"file://{data_dir}/f"}).json()["version"]
    calls = [
        (path, {"op": "GETFILESTATUS"}),
        (f"/webhdfs/v1/file{data_dir}", {"op": "LISTSTATUS"}),
        (path, {"op": "OPEN", "offset": "7"}),
        (path, {"op": "OPEN", "data": "true", "version": version, "offset": "7", "length": "9"}),
    ]
    for url, query in calls:
        mine, theirs = api.get(url, params=query), primary.get(url, params=query)
        assert (mine.status_code, mine.content) == (theirs.status_code, theirs.content), url
        assert mine.headers.get("location") == theirs.headers.get("location")
        assert "content-type" not in mine.headers or query["op"] == "OPEN"
    assert metrics.passed_on._value.get() == 0
    assert hits(metrics, "status") >= 3  # the status of GETFILESTATUS, kept, served the rest
    missing = api.get(f"/webhdfs/v1/file{data_dir}/nope", params={"op": "GETFILESTATUS"})
    assert missing.json()["RemoteException"]["exception"] == "FileNotFoundException"
    assert metrics.passed_on._value.get() == 1
    primary.close()
