"""Two worker services in one process joined through a real etcd: changes made through one
reach the other's cache; the feed position lives in RocksDB beside the entries; a reset keeps
pages whose version a re-check confirms; the revision middleware waits, or syncs."""

import asyncio
import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from pagestore.page import PageId
from tests.worker.conftest import open_assembly, open_service, pages_stored
from ufs.status import file_id
from worker.api.app import create_app
from worker.cluster import layout
from worker.cluster.etcd import Etcd
from worker.cluster.events import Event, Op
from worker.cluster.node import MARKER, MetaSink
from worker.devlab.local.etcd import LocalEtcd
from worker.request import Exchange

from .support import wait_for


class Member:
    """A service with its cluster node, as the worker process wires them."""

    def __init__(self, work: Path, data: Path, etcd: LocalEtcd, port: int) -> None:
        self.assembly = open_assembly(
            work,
            f"file://{data}",
            f"dora.cluster.etcd.endpoints={etcd.endpoint}",
            "dora.cluster.lease.ttl=3s",
            "dora.user.file.metadata.sync.interval=-1",
        )
        self.service = self.assembly.service
        self.assembly.start("127.0.0.1", port)
        node = self.assembly.node
        assert node is not None
        self.node = node
        self.app = self.assembly.wrap(create_app(self.service))

    def close(self) -> None:
        self.assembly.close()


@pytest.fixture
def members(tmp_path: Path, data_dir: Path, etcd_server: LocalEtcd) -> Iterator[list[Member]]:
    made = [Member(tmp_path / f"work{i}", data_dir, etcd_server, 30000 + i) for i in range(2)]
    for member in made:
        wait_for(lambda m=member: m.node.follower.connected)  # type: ignore[misc]
    yield made
    for member in made:
        member.close()


Size = Callable[[Any], int]


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
    assert b.service.status(b.service.request(uri)).size == 3
    written = call(a.app, "PUT", "/v1/write", params={"path": uri}, content=b"newer")
    revision = int(written.headers["X-Dora-Revision"])
    assert revision > 0
    # B answers after applying the revision the client carries: the new size, no sync needed.
    answer = call(
        b.app, "GET", "/v1/status", params={"path": uri}, headers={"X-Dora-Revision": str(revision)}
    )
    assert answer.json()["size"] == 5
    assert int(answer.headers["X-Dora-Revision"]) >= revision


@pytest.mark.parametrize("value", [b"soon", "²".encode("latin-1"), b"9" * 5000])
def test_a_bad_revision_header_is_a_clear_400(members: list[Member], value: bytes) -> None:
    answer = call(members[0].app, "GET", "/healthz", headers={"X-Dora-Revision": value})
    assert answer.status_code == 400
    assert answer.json()["error"] == "BadRequest"
    shown = value.decode("latin-1")[:40]
    assert answer.json()["message"].startswith(
        f"X-Dora-Revision: expected a non-negative integer, got '{shown}"
    )


SIZE_BY_SURFACE: dict[str, Callable[[Path, str], tuple[str, dict[str, str], Size]]] = {
    "rest-v1": lambda data, uri: ("/v1/status", {"path": uri}, lambda body: body["size"]),
    "webhdfs": lambda data, uri: (
        f"/webhdfs/v1/file{data}/y",
        {"op": "GETFILESTATUS"},
        lambda body: body["FileStatus"]["length"],
    ),
    "alluxio": lambda data, uri: ("/v1/info", {"path": uri}, lambda body: body[0]["mLength"]),
}


@pytest.mark.parametrize("surface", sorted(SIZE_BY_SURFACE))
def test_a_revision_not_reached_in_time_is_answered_by_a_sync(
    members: list[Member], data_dir: Path, surface: str
) -> None:
    a, _ = members
    uri = f"file://{data_dir}/y"
    (data_dir / "y").write_bytes(b"1")
    assert a.service.status(a.service.request(uri)).size == 1
    (data_dir / "y").write_bytes(b"22")  # outside the cache: only a sync sees it
    far = a.node.follower.applied + 1000
    url, params, size = SIZE_BY_SURFACE[surface](data_dir, uri)
    answer = call(a.app, "GET", url, params=params, headers={"X-Dora-Revision": str(far)})
    assert size(answer.json()) == 2
    assert a.node.middleware is not None and a.node.middleware.outcomes["synced"] == 1


def test_a_sync_that_finds_a_change_is_published(members: list[Member], data_dir: Path) -> None:
    a, b = members
    uri = f"file://{data_dir}/z"
    (data_dir / "z").write_bytes(b"1")
    assert (
        a.service.status(a.service.request(uri)).size == 1
        and b.service.status(b.service.request(uri)).size == 1
    )
    (data_dir / "z").write_bytes(b"22")
    assert a.service.status(a.service.request(uri, 0)).size == 2
    wait_for(lambda: b.service.status(b.service.request(uri)).size == 2)


def bare(work: Callable[[], object]) -> None:
    """Run ``work`` in a new thread with an empty context: no context variable a caller set
    can carry anything to it."""
    thread = threading.Thread(target=contextvars.Context().run, args=(work,))
    thread.start()
    thread.join()


def feed_revision(etcd_server: LocalEtcd, member: Member) -> int:
    etcd = Etcd([etcd_server.endpoint], 2.0)
    try:
        feed = etcd.get(layout.feed_key(member.node.cluster))
    finally:
        etcd.close()
    assert feed is not None
    return feed.mod_revision


def test_the_revisions_of_a_mutation_and_of_a_sync_reach_the_callers_exchange(
    members: list[Member], data_dir: Path, etcd_server: LocalEtcd
) -> None:
    a, _ = members
    (data_dir / "d").mkdir()
    (data_dir / "d" / "r").write_bytes(b"1")
    uri, written, synced, listed = f"file://{data_dir}/d/r", Exchange(), Exchange(), Exchange()
    bare(lambda: a.service.write(a.service.request(uri, exchange=written), b"22"))
    assert written.revision == feed_revision(etcd_server, a) > 0
    # Found by a lookup's sync (outside the cache), and by a listing's.
    (data_dir / "d" / "r").write_bytes(b"333")
    bare(lambda: a.service.status(a.service.request(uri, 0, exchange=synced)))
    assert synced.revision == feed_revision(etcd_server, a) > written.revision
    a.service.list(a.service.request(f"file://{data_dir}/d"))
    (data_dir / "d" / "r").unlink()
    bare(lambda: a.service.list(a.service.request(f"file://{data_dir}/d", 0, exchange=listed)))
    assert listed.revision == feed_revision(etcd_server, a) > synced.revision


def test_the_position_is_a_marker_beside_the_entries(members: list[Member], data_dir: Path) -> None:
    a, _ = members
    (data_dir / "m").write_bytes(b"1")
    a.service.write(a.service.request(f"file://{data_dir}/m"), b"22")
    wait_for(lambda: a.node.follower.applied > 0 and a.service.meta.load_marker(MARKER) is not None)
    # Dropping everything under the mount root leaves the marker: no URI key can be it.
    a.service.invalidate(a.service.request(f"file://{data_dir}"), recursive=True)
    assert a.service.meta.load_marker(MARKER) is not None


def test_a_reset_rechecks_but_keeps_confirmed_pages(
    members: list[Member], data_dir: Path, tmp_path: Path
) -> None:
    a, _ = members
    uri = f"file://{data_dir}/p"
    (data_dir / "p").write_bytes(b"x" * 1000)
    result = a.service.read(a.service.request(uri))
    assert b"".join(result.chunks) == b"x" * 1000
    calls = a.service.meta.counters()["ufs_calls"]
    # What the follower's sink does past a compaction: everything cached so far is unproven.
    a.service.meta.writes.require_sync_before(int(time.time() * 1000) + 1)
    assert a.service.status(a.service.request(uri)).size == 1000
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
        sink = MetaSink(service.meta.writes, service.pages, service.changes.lag.arrived)
        sink.apply(replace(event, path=f"file://{data_dir}{event.path}"))
    finally:
        service.close()  # waits for the page files to be unlinked
    assert bool(pages_stored(tmp_path / "work", uri)) is kept


def test_answers_promise_only_feed_revisions(
    members: list[Member], data_dir: Path, etcd_server: LocalEtcd
) -> None:
    a, b = members
    uri = f"file://{data_dir}/promise"
    (data_dir / "promise").write_bytes(b"1")
    a.service.write(a.service.request(uri), b"22")
    etcd = Etcd([etcd_server.endpoint], 2.0)
    feed = etcd.get(layout.feed_key(a.node.cluster))
    assert feed is not None
    # Writes that are no feed event (membership, positions) move etcd's revision on; progress
    # notifications carry it to the follower.
    for i in range(5):
        etcd.put(f"/elsewhere/{i}", b"x")
    wait_for(lambda: a.node.follower.applied > feed.mod_revision)
    answer = call(a.app, "GET", "/v1/status", params={"path": uri})
    assert int(answer.headers["X-Dora-Revision"]) == feed.mod_revision
    # Carried to B, it names an event B has: B answers without waiting it out or syncing.
    assert b.node.follower.wait_applied(feed.mod_revision, 10)
    carried = {"X-Dora-Revision": answer.headers["X-Dora-Revision"]}
    assert (
        call(b.app, "GET", "/v1/status", params={"path": uri}, headers=carried).json()["size"] == 2
    )
    assert b.node.middleware is not None and b.node.middleware.outcomes["synced"] == 0
    etcd.close()


def test_a_failed_follower_is_unready_and_restarts(
    members: list[Member], data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = members
    uri = f"file://{data_dir}/fails"
    (data_dir / "fails").write_bytes(b"1")
    assert b.service.status(b.service.request(uri)).size == 1
    apply, healed = MetaSink.apply, threading.Event()

    def fails_until_healed(sink: MetaSink, event: Event) -> None:
        if not healed.is_set():
            raise RuntimeError("the disk went away")
        apply(sink, event)

    monkeypatch.setattr(MetaSink, "apply", fails_until_healed)
    a.service.write(a.service.request(uri), b"22")
    wait_for(lambda: b.node.follower.failures >= 2)  # restarted, and failed on it again
    wait_for(lambda: call(b.app, "GET", "/readyz").status_code == 503)
    assert call(b.app, "GET", "/readyz").json()["feed"] == "failed"
    assert "dora_cluster_feed_follower_up 0.0" in call(b.app, "GET", "/metrics").text
    assert (
        b.service.status(b.service.request(uri)).size == 1
    )  # not applied: which is why it is not ready
    healed.set()
    wait_for(
        lambda: b.service.status(b.service.request(uri)).size == 2
    )  # restarted from its position
    ready = call(b.app, "GET", "/readyz")
    assert ready.status_code == 200 and ready.json()["feed"] == "following"
    assert "dora_cluster_feed_follower_up 1.0" in call(b.app, "GET", "/metrics").text
