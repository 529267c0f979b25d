"""Two worker services in one process joined through a real etcd: changes made through one
reach the other's cache; the feed position lives in RocksDB beside the entries; a reset keeps
pages whose version a re-check confirms; the revision middleware waits, or syncs."""

import asyncio
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from pagestore.page import PageId
from tests.worker.conftest import open_service, pages_stored
from ufs.status import file_id
from worker.api.app import create_app
from worker.cluster.events import Event, Op
from worker.cluster.localetcd import LocalEtcd
from worker.cluster.node import MARKER, ClusterNode, MetaSink

from .support import wait_for


class Member:
    """A service with its cluster node, as the worker process wires them."""

    def __init__(self, work: Path, data: Path, etcd: LocalEtcd, port: int) -> None:
        self.service = open_service(
            work,
            f"file://{data}",
            f"dora.cluster.etcd.endpoints={etcd.endpoint}",
            "dora.cluster.lease.ttl=3s",
            "dora.user.file.metadata.sync.interval=-1",
        )
        node = ClusterNode.start(self.service.config, self.service, "127.0.0.1", port)
        assert node is not None
        self.node = node
        self.app = node.wrap(create_app(self.service))

    def close(self) -> None:
        self.node.close()
        self.service.close()


@pytest.fixture
def members(tmp_path: Path, data_dir: Path, etcd_server: LocalEtcd) -> Iterator[list[Member]]:
    made = [Member(tmp_path / f"work{i}", data_dir, etcd_server, 30000 + i) for i in range(2)]
    for member in made:
        wait_for(lambda m=member: m.node.follower.connected)  # type: ignore[misc]
    yield made
    for member in made:
        member.close()


def call(app: object, method: str, url: str, **kwargs: object) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
        async with httpx.AsyncClient(transport=transport, base_url="http://w") as client:
            return await client.request(method, url, **kwargs)  # type: ignore[arg-type]

    return asyncio.run(go())


def test_a_write_through_one_worker_drops_the_others_entry(
    members: list[Member], data_dir: Path
) -> None:
    a, b = members
    uri = f"file://{data_dir}/x.csv"
    (data_dir / "x.csv").write_bytes(b"old")
    assert b.service.status(uri).size == 3
    written = call(a.app, "PUT", "/v1/write", params={"path": uri}, content=b"newer")
    revision = int(written.headers["X-Dora-Revision"])
    assert revision > 0
    # B answers after applying the revision the client carries: the new size, no sync needed.
    answer = call(
        b.app, "GET", "/v1/status", params={"path": uri}, headers={"X-Dora-Revision": str(revision)}
    )
    assert answer.json()["size"] == 5
    assert int(answer.headers["X-Dora-Revision"]) >= revision


def test_a_bad_revision_header_is_a_clear_400(members: list[Member]) -> None:
    answer = call(members[0].app, "GET", "/healthz", headers={"X-Dora-Revision": "soon"})
    assert answer.status_code == 400
    assert answer.json() == {
        "error": "BadRequest",
        "message": "X-Dora-Revision: expected a non-negative integer, got 'soon'",
    }


def test_a_revision_not_reached_in_time_is_answered_by_a_sync(
    members: list[Member], data_dir: Path
) -> None:
    a, _ = members
    uri = f"file://{data_dir}/y"
    (data_dir / "y").write_bytes(b"1")
    assert a.service.status(uri).size == 1
    (data_dir / "y").write_bytes(b"22")  # outside the cache: only a sync sees it
    far = a.node.follower.applied + 1000
    answer = call(
        a.app, "GET", "/v1/status", params={"path": uri}, headers={"X-Dora-Revision": str(far)}
    )
    assert answer.json()["size"] == 2
    assert a.node.middleware is not None and a.node.middleware.outcomes["synced"] == 1


def test_a_sync_that_finds_a_change_is_published(members: list[Member], data_dir: Path) -> None:
    a, b = members
    uri = f"file://{data_dir}/z"
    (data_dir / "z").write_bytes(b"1")
    assert a.service.status(uri).size == 1 and b.service.status(uri).size == 1
    (data_dir / "z").write_bytes(b"22")
    assert a.service.status(uri, a.service.freshness(uri, 0)).size == 2
    wait_for(lambda: b.service.status(uri).size == 2)


def test_the_position_is_a_marker_beside_the_entries(members: list[Member], data_dir: Path) -> None:
    a, _ = members
    (data_dir / "m").write_bytes(b"1")
    a.service.write(f"file://{data_dir}/m", b"22")
    wait_for(lambda: a.node.follower.applied > 0 and a.service.meta.load_marker(MARKER) is not None)
    # Dropping everything under the mount root leaves the marker: no URI key can be it.
    a.service.invalidate(f"file://{data_dir}", recursive=True)
    assert a.service.meta.load_marker(MARKER) is not None


def test_a_reset_rechecks_but_keeps_confirmed_pages(
    members: list[Member], data_dir: Path, tmp_path: Path
) -> None:
    a, _ = members
    uri = f"file://{data_dir}/p"
    (data_dir / "p").write_bytes(b"x" * 1000)
    result = a.service.read(uri)
    assert b"".join(result.chunks) == b"x" * 1000
    calls = a.service.meta.counters()["ufs_calls"]
    # What the follower's sink does past a compaction: everything cached so far is unproven.
    a.service.meta.require_sync_before(int(time.time() * 1000) + 1)
    assert a.service.status(uri).size == 1000
    assert a.service.meta.counters()["ufs_calls"] == calls + 1
    assert pages_stored(tmp_path / "work0", uri)


@pytest.mark.parametrize(
    ("event", "kept"),
    [
        (Event(Op.DELETED, "/t", prefix=True), False),
        (Event(Op.INVALIDATED, "/t", prefix=True), False),
        # Collapsed updates: a page is served only for the version a status names.
        (Event(Op.UPDATED, "/t", prefix=True), True),
    ],
)
def test_a_prefix_event_drops_pages_no_status_names(
    tmp_path: Path, data_dir: Path, event: Event, kept: bool
) -> None:
    service = open_service(tmp_path / "work", f"file://{data_dir}")
    try:
        uri = f"file://{data_dir}/t/f"
        # Pages whose status this worker no longer holds (expired, or lost with a metastore).
        service.pages.put(PageId(file_id(uri), "v1", 0), b"y" * 100, uri)
        sink = MetaSink(service.meta, service.pages)
        sink.apply(replace(event, path=f"file://{data_dir}{event.path}"))
    finally:
        service.close()  # waits for the page files to be unlinked
    assert bool(pages_stored(tmp_path / "work", uri)) is kept
