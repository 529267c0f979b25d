"""Three real worker processes and one real etcd (issue 13): changes through one worker reach
the others at once for a client that carries the revision, deletes too; a killed worker catches
up from its saved position, and past a compaction re-checks what it cannot prove; a running
client follows joins and leaves; with etcd down workers serve and clients keep their ring.
Forged values written into etcd (issue 23): a feed write that does not decode is skipped,
counted and answered with a reset, on a running worker and on one catching up after a restart,
and later changes still arrive; forged member entries reach no ring, no block location and no
traceback in ``dora cluster ls``."""

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.cluster.cluster_support import LEASE_TTL_S, ClusterWorker
from tests.integration.harness import DORA, wait_for
from worker.client.filesystem import DoraFileSystem
from worker.cluster import layout
from worker.cluster.etcd import Etcd
from worker.devlab.local.etcd import LocalEtcd

pytestmark = pytest.mark.integration


@pytest.fixture
def etcd_server(tmp_path: Path) -> Iterator[LocalEtcd]:
    server = LocalEtcd(tmp_path / "etcd").start()
    yield server
    server.stop()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


@pytest.fixture
def workers(tmp_path: Path, data: Path, etcd_server: LocalEtcd) -> Iterator[list[ClusterWorker]]:
    made = [ClusterWorker(tmp_path / f"w{i}", data, etcd_server) for i in range(3)]
    try:
        for worker in made:
            worker.start()
        for worker in made:
            wait_for(lambda w=worker: w.metric("dora_cluster_etcd_connected") == 1)  # type: ignore[misc]
        yield made
    finally:
        for worker in made:
            worker.stop()
            worker.http.close()


def client(etcd: LocalEtcd, *static: str) -> DoraFileSystem:
    from config import load_config
    from worker.keys import build_registry

    config = load_config(
        build_registry(),
        environ={},
        defines=[
            f"dora.cluster.etcd.endpoints={etcd.endpoint}",
            "dora.cluster.etcd.timeout=1s",
            f"dora.user.workers={','.join(static) or '127.0.0.1:9'}",
        ],
    )
    return DoraFileSystem(config=config, skip_instance_cache=True, fallback_to_ufs=False)


def test_a_write_through_a_is_visible_through_b_and_c(
    workers: list[ClusterWorker], data: Path
) -> None:
    a, b, c = workers
    uri = f"file://{data}/t.csv"
    (data / "t.csv").write_bytes(b"v1")
    for worker in (b, c):
        assert worker.status(uri).json()["size"] == 2  # cached, never re-checked (-1)
    written = a.http.put("/v1/write", params={"path": uri}, content=b"version2")
    revision = int(written.headers["X-Dora-Revision"])
    for worker in (b, c):
        answer = worker.status(uri, revision)
        assert answer.json()["size"] == 8
        assert int(answer.headers["X-Dora-Revision"]) >= revision
    # Without the client's revision they converge as the feed arrives.
    wait_for(lambda: c.status(uri).json()["size"] == 8)


def test_a_delete_through_b_is_404_on_a_and_c(workers: list[ClusterWorker], data: Path) -> None:
    a, b, c = workers
    uri = f"file://{data}/gone"
    (data / "gone").write_bytes(b"x")
    for worker in workers:
        assert worker.status(uri).status_code == 200
    deleted = b.http.delete("/v1/delete", params={"path": uri})
    revision = int(deleted.headers["X-Dora-Revision"])
    for worker in (a, c):
        assert worker.status(uri, revision).status_code == 404


def test_a_killed_worker_catches_up_from_its_saved_revision(
    workers: list[ClusterWorker], data: Path
) -> None:
    a, _, c = workers
    uri = f"file://{data}/k"
    (data / "k").write_bytes(b"1")
    assert c.status(uri).json()["size"] == 1
    wait_for(lambda: c.metric("dora_metadata_metastore_pending") == 0)  # in RocksDB
    c.kill()
    written = a.http.put("/v1/write", params={"path": uri}, content=b"22")
    revision = int(written.headers["X-Dora-Revision"])
    c.start()
    wait_for(lambda: c.metric("dora_cluster_feed_applied_revision") >= revision)
    assert c.status(uri).json()["size"] == 2
    assert c.metric("dora_cluster_feed_events_applied_total") >= 1
    assert c.metric("dora_cluster_feed_resets_total", '{reason="compacted"}') == 0
    assert c.metric("dora_cluster_feed_resets_total", '{reason="unknown_start"}') == 0


def test_past_a_compaction_a_restarted_worker_rechecks_what_it_cannot_prove(
    workers: list[ClusterWorker], data: Path, etcd_server: LocalEtcd
) -> None:
    a, _, c = workers
    uri = f"file://{data}/old"
    (data / "old").write_bytes(b"1")
    assert c.status(uri).json()["size"] == 1
    wait_for(lambda: c.metric("dora_metadata_metastore_pending") == 0)
    c.kill()
    a.http.put("/v1/write", params={"path": uri}, content=b"22")
    etcd = Etcd([etcd_server.endpoint], 2.0)
    etcd.compact(etcd.put("/bump", b"x"))
    c.start()
    wait_for(lambda: c.metric("dora_cluster_feed_resets_total", '{reason="compacted"}') == 1)
    assert c.status(uri).json()["size"] == 2
    assert "compacted" in c.log() and "re-checked" in c.log()


def test_a_running_client_follows_joins_and_leaves(
    workers: list[ClusterWorker], data: Path, etcd_server: LocalEtcd, tmp_path: Path
) -> None:
    fs = client(etcd_server)
    names = {w.address for w in workers}
    wait_for(lambda: set(fs.client.ring.workers) == names)
    joining = ClusterWorker(tmp_path / "w3", data, etcd_server).start()
    try:
        wait_for(lambda: set(fs.client.ring.workers) == names | {joining.address})
        (data / "f").write_bytes(b"hello")
        owned = [f"file://{data}/f{i}" for i in range(200)]
        assert any(fs.worker_for(uri) == joining.address for uri in owned)
        joining.kill()  # no deregistration: the lease must lapse
        wait_for(lambda: set(fs.client.ring.workers) == names, seconds=4 * LEASE_TTL_S)
    finally:
        joining.kill()
        joining.http.close()
    assert fs.cat(f"file://{data}/f") == b"hello"


def test_with_etcd_down_workers_serve_and_clients_keep_their_ring(
    workers: list[ClusterWorker], data: Path, etcd_server: LocalEtcd
) -> None:
    fs = client(etcd_server)
    names = {w.address for w in workers}
    wait_for(lambda: set(fs.client.ring.workers) == names)
    (data / "e").write_bytes(b"during")
    etcd_server.kill()
    wait_for(lambda: fs.client.rings.etcd_available is False)
    assert set(fs.client.ring.workers) == names
    assert fs.cat(f"file://{data}/e") == b"during"
    for worker in workers:
        wait_for(lambda w=worker: w.metric("dora_cluster_etcd_connected") == 0)  # type: ignore[misc]
        assert worker.status(f"file://{data}/e").status_code == 200
        assert "etcd unavailable" in worker.log()
    # A write still succeeds; its event waits for etcd and reaches the others afterwards.
    fs.pipe(f"file://{data}/e", b"after outage")
    etcd_server.start()
    wait_for(lambda: fs.client.rings.etcd_available is True)
    for worker in workers:
        wait_for(lambda w=worker: w.status(f"file://{data}/e").json()["size"] == 12)  # type: ignore[misc]


CLUSTER = "DefaultAlluxioCluster"
FORGED_FEED = [
    b'{"w":"x","t":Infinity,"e":[]}',
    b'{"w":"x","t":1,"e":[["u","file:///x",NaN,0]]}',
    b'{"w":"x","t":1,"e":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    b'{"w":7,"t":"1","e":{"u":1}}',
]


def test_forged_feed_writes_are_skipped_and_later_changes_still_arrive(
    workers: list[ClusterWorker], data: Path, etcd_server: LocalEtcd
) -> None:
    a, b, _ = workers
    etcd = Etcd([etcd_server.endpoint], 2.0)
    uri = f"file://{data}/f"
    (data / "f").write_bytes(b"1")
    assert b.status(uri).json()["size"] == 1
    wait_for(lambda: b.metric("dora_metadata_metastore_pending") == 0)
    # Forged while B is down: after its restart it catches up through them, not dies on them.
    b.kill()
    for raw in FORGED_FEED:
        etcd.put(layout.feed_key(CLUSTER), raw)
    b.start()
    wait_for(lambda: b.metric("dora_cluster_feed_malformed_total") == len(FORGED_FEED))
    resets = '{reason="malformed"}'
    assert b.metric("dora_cluster_feed_resets_total", resets) == len(FORGED_FEED)
    # Forged while B runs.
    etcd.put(layout.feed_key(CLUSTER), FORGED_FEED[0])
    wait_for(lambda: b.metric("dora_cluster_feed_malformed_total") == len(FORGED_FEED) + 1)
    assert b.status(uri).json()["size"] == 1  # cached again after the resets' re-check
    # At sync interval -1 only the feed can tell B of a change made through A.
    a.http.put("/v1/write", params={"path": uri}, content=b"22")
    wait_for(lambda: b.status(uri).json()["size"] == 2)
    assert b.metric("dora_cluster_feed_follower_up") == 1
    assert b.metric("dora_cluster_feed_follower_failures_total") == 0
    ready = b.http.get("/readyz")
    assert ready.status_code == 200 and ready.json()["feed"] == "following"
    log = b.log()
    assert log.count("skipping the malformed write") == len(FORGED_FEED) + 1
    assert "Traceback" not in log


FORGED_MEMBERS = {
    "infinity": b'{"WorkerNetAddress":{"Host":"10.9.9.9","HttpServerPort":Infinity}}',
    "string-port": b'{"WorkerNetAddress":{"Host":"10.9.9.9","HttpServerPort":"80"}}',
    "deep": b"[" * 100_000,
    "bad-host": b'{"WorkerNetAddress":{"Host":"a b/c","HttpServerPort":80}}',
}


def test_forged_members_reach_no_ring_location_or_traceback(
    workers: list[ClusterWorker], data: Path, etcd_server: LocalEtcd
) -> None:
    etcd = Etcd([etcd_server.endpoint], 2.0)
    for name, raw in FORGED_MEMBERS.items():
        etcd.put(layout.live_prefix(CLUSTER) + name, raw)
        etcd.put(layout.authorized_prefix(CLUSTER) + name, raw)
    # Well-formed, but filed under a key that is not its address's id.
    impostor = layout.WorkerInfo("10.9.9.9", 80, 0, 0).encode()
    etcd.put(layout.live_prefix(CLUSTER) + workers[0].address.replace(":", "-"), impostor)
    # A position of Unicode digits ("²" passes str.isdigit).
    position = layout.applied_prefix(CLUSTER) + layout.worker_id("127.0.0.1", workers[0].port)
    etcd.put(position, "²".encode())
    listed = subprocess.run(
        [DORA, "cluster", "ls", f"-Ddora.cluster.etcd.endpoints={etcd_server.endpoint}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    assert "Traceback" not in listed.stderr and "10.9.9.9" not in listed.stdout
    assert "3 of 3 workers online" in listed.stdout
    names = {w.address for w in workers}
    for i in range(20):  # enough files that a forged owner would have owned some
        (data / f"t{i}").write_bytes(b"x")
        answer = workers[i % 3].http.get(
            f"/webhdfs/v1/file{data}/t{i}", params={"op": "GETFILEBLOCKLOCATIONS"}
        )
        assert answer.status_code == 200, answer.text
        (block,) = answer.json()["BlockLocations"]["BlockLocation"]
        assert set(block["names"]) <= names and block["names"]
    assert all("Traceback" not in worker.log() for worker in workers)


def test_open_redirects_to_the_owner_that_block_locations_name(
    workers: list[ClusterWorker], data: Path, etcd_server: LocalEtcd
) -> None:
    """Issue 24: whichever worker a ``webhdfs://`` URL names, OPEN's data step goes to the
    file's owner on the ring, the host GETFILEBLOCKLOCATIONS names, so a task scheduled there
    reads from its own host's worker."""
    fs = client(etcd_server)
    names = {w.address for w in workers}
    wait_for(lambda: set(fs.client.ring.workers) == names)
    moved = 0
    for i in range(12):
        (data / f"o{i}").write_bytes(b"x" * i)
        uri, asked = f"file://{data}/o{i}", workers[i % 3]
        owner = fs.worker_for(uri)
        path = f"/webhdfs/v1/file{data}/o{i}"
        located = asked.http.get(path, params={"op": "GETFILEBLOCKLOCATIONS"}).json()
        assert [b["names"] for b in located["BlockLocations"]["BlockLocation"]] == (
            [[owner]] if i else []
        )
        opened = asked.http.get(path, params={"op": "OPEN"})
        assert opened.status_code == 307
        location = httpx.URL(opened.headers["Location"])
        assert f"{location.host}:{location.port}" == owner
        assert location.params["data"] == "true"
        moved += asked.address != owner
        assert httpx.get(location).content == b"x" * i
    assert moved > 0
