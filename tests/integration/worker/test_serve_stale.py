"""Serve while revalidating (issue 26 item 5) against a worker fronting real SeaweedFS, changed by
an outside writer: an expired status is answered at once while one background re-check runs,
the next call sees the new version and only its bytes, never past the status cache TTL, and
nothing changes for a caller that did not opt in (per call, per path rule, fsspec client)."""

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
import s3fs

from tests.integration.conftest import BUCKET, frozen
from tests.worker.client.conftest import dora_fs
from tests.worker.conftest import Api, open_service
from tests.worker.meta.support import wait_until
from ufs.deadline import Deadline
from ufs.status import UfsStatus, file_id
from worker.devlab.local.s3 import LocalS3
from worker.service import WorkerService

pytestmark = pytest.mark.integration

PAGE = 64 * 1024
OLD, NEW = b"o" * (2 * PAGE + 100), b"n" * (2 * PAGE + 100)  # three pages, same size
STALE = {"sync_interval": "0", "serve_stale": "true"}


class Worker(NamedTuple):
    service: WorkerService
    api: Api


@pytest.fixture
def open_worker(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[..., Worker]]:
    """``open_worker(*defines, s3=None, root=...)``: a worker over ``s3`` (None: the shared
    SeaweedFS) serving ``root``, with these site properties besides the page size (a rules
    file, a status cache TTL, a UFS deadline), and an API client into it; both closed after the
    test."""
    opened: list[Worker] = []

    def open_(*defines: str, s3: LocalS3 | None = None, root: str = f"s3://{BUCKET}") -> Worker:
        server: LocalS3 = s3 or request.getfixturevalue("seaweedfs")
        page = f"dora.worker.page.store.page.size={PAGE // 1024}KB"
        service = open_service(tmp_path / "work", root, page, *server.storage_defines(), *defines)
        opened.append(Worker(service, Api(service)))
        return opened[-1]

    yield open_
    for worker in opened:
        worker.api.close()
        worker.service.close()


@pytest.fixture
def worker(open_worker: Callable[..., Worker]) -> Worker:
    return open_worker()


@pytest.fixture
def service(worker: Worker) -> WorkerService:
    return worker.service


@pytest.fixture
def api(worker: Worker) -> Api:
    return worker.api


Outside = Callable[[str, bytes], None]


@pytest.fixture
def outside(s3_raw: s3fs.S3FileSystem) -> Outside:
    """``outside(uri, content)``: ``uri`` written by a writer other than the worker."""
    return lambda uri, content: s3_raw.pipe_file(uri.removeprefix("s3://"), content)


class GatedStatus:
    """The service's UFS adapter with its status calls counted, and held (after SeaweedFS
    answered) while ``gate`` is closed: a background re-check kept in flight."""

    def __init__(self, service: WorkerService) -> None:
        self.calls: list[str] = []
        self.answered = threading.Event()
        self.gate = threading.Event()
        self.gate.set()
        real = service.ufs.status

        def gated(uri: str, *, deadline: Deadline | None = None) -> UfsStatus:
            self.calls.append(uri)
            try:
                return real(uri, deadline=deadline)
            finally:
                self.answered.set()
                assert self.gate.wait(60), "the gate was never opened"

        service.ufs.status = gated  # type: ignore[method-assign]


def _meta(service: WorkerService, name: str) -> int:
    return service.meta.counters()[name]


def test_the_stale_answer_comes_at_once_one_recheck_runs_then_only_new_bytes(
    service: WorkerService, api: Api, s3_root: str, outside: Outside
) -> None:
    uri = f"{s3_root}/f.bin"
    outside(uri, OLD)
    assert api.get("/v1/read", params={"path": uri}).content == OLD  # status and pages cached
    old = api.get("/v1/status", params={"path": uri}).json()["version"]
    outside(uri, NEW)
    ufs = GatedStatus(service)
    ufs.gate.clear()
    try:
        stale = api.get("/v1/status", params={"path": uri, **STALE})
        assert stale.json()["version"] == old
        read = api.get("/v1/read", params={"path": uri, **STALE})
        assert (read.headers["X-Dora-Version"], read.content) == (old, OLD)
        wait_until(ufs.answered.is_set)
        assert _meta(service, "revalidations") == 1
        assert ufs.calls == [uri]  # the second caller started no second re-check
    finally:
        ufs.gate.set()
    wait_until(lambda: _meta(service, "syncs_changed") == 1)
    status = api.get("/v1/status", params={"path": uri}).json()
    assert status["version"] != old
    assert api.get("/v1/read", params={"path": uri}).content == NEW
    # The old version's pages went as for any sync.
    assert service.pages.cached_bytes_many([(file_id(uri), old)]) == [0]
    assert _meta(service, "revalidations_failed") == 0


def test_a_stale_status_whose_pages_are_not_cached_serves_only_the_new_bytes(
    service: WorkerService, api: Api, s3_root: str, outside: Outside
) -> None:
    uri = f"{s3_root}/f.bin"
    outside(uri, OLD)
    old = api.get("/v1/status", params={"path": uri}).json()["version"]  # no pages cached
    outside(uri, NEW)
    read = api.get("/v1/read", params={"path": uri, **STALE})
    # The stale status pinned the old version; the UFS no longer has it, so the read syncs
    # before its first byte and serves the new version whole.
    assert read.headers["X-Dora-Version"] != old
    assert read.content == NEW
    assert _meta(service, "stale_served") == 1


def test_not_opted_in_an_expired_status_is_rechecked_first(
    service: WorkerService, api: Api, s3_root: str, outside: Outside
) -> None:
    uri = f"{s3_root}/f.bin"
    outside(uri, OLD)
    assert api.get("/v1/read", params={"path": uri}).content == OLD
    outside(uri, NEW)
    assert api.get("/v1/read", params={"path": uri, "sync_interval": "0"}).content == NEW
    refused = {"sync_interval": "0", "serve_stale": "false"}
    outside(uri, OLD)
    assert api.get("/v1/read", params={"path": uri, **refused}).content == OLD
    assert _meta(service, "revalidations") == 0


def test_past_the_status_cache_ttl_no_stale_answer(
    open_worker: Callable[..., Worker], s3_root: str, outside: Outside
) -> None:
    ttl_ms = 300
    service, api = open_worker(f"dora.worker.ufs.file.status.cache.ttl={ttl_ms}ms")
    uri = f"{s3_root}/f.bin"
    outside(uri, OLD)
    old = api.get("/v1/status", params={"path": uri}).json()["version"]
    loaded_by = time.time_ns() // 1_000_000  # the worker's clock, after it loaded
    outside(uri, NEW)
    wait_until(lambda: time.time_ns() // 1_000_000 - loaded_by > ttl_ms)
    answer = api.get("/v1/status", params={"path": uri, **STALE}).json()
    assert answer["version"] != old
    assert _meta(service, "revalidations") == 0


def test_a_path_rule_serves_stale_on_every_surface_and_a_caller_can_refuse(
    open_worker: Callable[..., Worker],
    tmp_path: Path,
    s3_root: str,
    outside: Outside,
) -> None:
    rules = tmp_path / "rules"
    rules.write_text(f"{s3_root}/hot/** max-age=0 serve-stale\n")
    service, api = open_worker(f"dora.worker.path.rules.file={rules}")
    webhdfs = "/webhdfs/v1/s3/"
    surfaces = {
        "/v1/status": lambda uri: api.get("/v1/status", params={"path": uri}).json()["size"],
        "webhdfs": lambda uri: json.loads(
            api.get(webhdfs + uri.removeprefix("s3://"), params={"op": "GETFILESTATUS"}).content
        )["FileStatus"]["length"],
        "alluxio": lambda uri: api.get("/v1/info", params={"path": uri}).json()[0]["mLength"],
    }
    for n, (name, size_of) in enumerate(surfaces.items()):
        uri = f"{s3_root}/hot/{n}.bin"
        outside(uri, b"old")
        assert size_of(uri) == 3, name
        outside(uri, b"changed")
        assert size_of(uri) == 3, name  # at once, the rule's re-check in the background
        wait_until(lambda done=n + 1: _meta(service, "syncs_changed") == done)
        assert size_of(uri) == 7, name
    started = _meta(service, "revalidations")
    refused = {"path": f"{s3_root}/hot/refused.bin", "serve_stale": "false"}
    outside(refused["path"], b"old")
    assert api.get("/v1/status", params=refused).json()["size"] == 3
    outside(refused["path"], b"refused!")
    assert api.get("/v1/status", params=refused).json()["size"] == 8
    assert _meta(service, "revalidations") == started


def test_the_client_storage_option_serves_stale(
    service: WorkerService, s3_root: str, outside: Outside
) -> None:
    uri = f"{s3_root}/f.bin"
    outside(uri, OLD)
    fs = dora_fs(service, sync_interval=0, file_metadata_sync_serve_stale="true")
    assert fs.cat_file(uri) == OLD
    outside(uri, NEW)
    ufs = GatedStatus(service)
    ufs.gate.clear()
    try:
        # At once, all of it the old version. (Had the re-check landed between the client's
        # status and its bytes, the read would end with VersionMismatch, as for any outside
        # write mid-read; held here so that it cannot.)
        assert fs.cat_file(uri) == OLD
    finally:
        ufs.gate.set()
    wait_until(lambda: _meta(service, "syncs_changed") == 1)
    assert fs.cat_file(uri) == NEW


def test_a_failing_recheck_logs_one_line_and_the_next_call_rechecks(
    private_s3: LocalS3, open_worker: Callable[..., Worker], caplog: pytest.LogCaptureFixture
) -> None:
    # private_s3 first: set up before the worker, so stopped only after the worker is closed.
    service, api = open_worker("dora.ufs.call.deadline=1s", s3=private_s3, root="s3://private")
    uri = "s3://private/f.bin"
    private_s3.client().pipe_file("private/f.bin", b"one")
    # A SeaweedFS just started may answer an error for a moment (not the worker's doing).
    loaded = {"path": uri, "sync_interval": "0"}
    wait_until(lambda: api.get("/v1/status", params=loaded).status_code == 200)
    old = api.get("/v1/status", params={"path": uri}).json()["version"]
    with frozen(private_s3), caplog.at_level(logging.WARNING, "worker.meta.revalidate"):
        assert api.get("/v1/status", params={"path": uri, **STALE}).json()["version"] == old
        wait_until(lambda: _meta(service, "revalidations_failed") == 1)
        lines = [r.getMessage() for r in caplog.records if r.name == "worker.meta.revalidate"]
        assert len(lines) == 1 and uri in lines[0] and "\n" not in lines[0]
        assert api.get("/v1/status", params={"path": uri, **STALE}).status_code == 503
    assert api.get("/v1/status", params={"path": uri, **STALE}).json()["version"] == old
    assert _meta(service, "revalidations") == 1
