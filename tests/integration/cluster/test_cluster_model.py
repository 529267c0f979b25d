"""A model-based test of the cross-worker guarantees (docs/consistency.md) on three worker
processes and a real etcd, with an outside writer mixed in.

Every write (through a worker or from outside) or delete gets the next index; a file's bytes
name the index that wrote them. Two clients call random workers through the real client
(``WorkerClient.send_to``, which carries ``X-Dora-Revision``). Checked after every read:

- read-your-writes and monotonic reads: a client never sees an index older than one it wrote
  or saw before, whichever worker answers;
- a read with ``sync_interval=0`` sees the newest index, outside writes included;
- nothing is invented: every answer is a state the file really had.

Outside writes are otherwise not promised to anyone (workers run with sync interval -1): that
is the documented contract, and the model allows it.
"""

import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from config import load_config
from tests.integration.cluster.cluster_support import ClusterWorker
from tests.integration.harness import wait_for
from worker.client.errors import NotFound
from worker.client.http import Call, WorkerClient
from worker.client.options import ClientOptions
from worker.devlab.local.etcd import LocalEtcd
from worker.keys import build_registry

pytestmark = pytest.mark.integration
FILES = ("f0", "f1", "f2")
ABSENT = 0  # the index of "no file" before anything was written


class Model:
    """The files' true histories: per file, the indexes and what each left (bytes or None)."""

    def __init__(self) -> None:
        self.index = 0
        self.history: dict[str, list[tuple[int, bytes | None]]] = {
            n: [(ABSENT, None)] for n in FILES
        }

    def next(self) -> tuple[int, bytes]:
        self.index += 1
        return self.index, f"{self.index:08d}".encode()

    def record(self, name: str, index: int, content: bytes | None) -> None:
        self.history[name].append((index, content))

    def latest(self, name: str) -> tuple[int, bytes | None]:
        return self.history[name][-1]

    def explain(self, name: str, content: bytes | None, at_least: int) -> int:
        """The index an answer corresponds to, at or after ``at_least``; fails if none."""
        for index, state in self.history[name]:
            if index >= at_least and state == content:
                return index
        raise AssertionError(
            f"{name}: answer {content!r} is no state at or after index {at_least}: "
            f"{self.history[name]}"
        )


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[Path, list[ClusterWorker]]]:
    etcd = LocalEtcd(tmp_path / "etcd").start()
    data = tmp_path / "data"
    data.mkdir()
    workers = [ClusterWorker(tmp_path / f"w{i}", data, etcd) for i in range(3)]
    try:
        for worker in workers:
            worker.start()
        for worker in workers:
            wait_for(lambda w=worker: w.metric("dora_cluster_etcd_connected") == 1)  # type: ignore[misc]
        yield data, workers
    finally:
        for worker in workers:
            worker.stop()
            worker.http.close()
        etcd.stop()


def new_client(workers: list[ClusterWorker]) -> WorkerClient:
    config = load_config(build_registry(), environ={}, defines=[])
    names = [w.address for w in workers]
    return WorkerClient(ClientOptions.resolve(config, workers=names, fallback_to_ufs=False))


def read(client: WorkerClient, worker: str, uri: str, sync: str) -> bytes | None:
    call = Call("GET", "/v1/read", uri, f"read {uri}", {"path": uri, "sync_interval": sync})
    try:
        return client.send_to(worker, call).content
    except NotFound:
        return None


@pytest.mark.parametrize("seed", [13, 2024])
def test_cross_worker_guarantees_hold_with_an_outside_writer(
    cluster: tuple[Path, list[ClusterWorker]], seed: int
) -> None:
    data, workers = cluster
    rng = random.Random(seed)
    model = Model()
    clients = [new_client(workers), new_client(workers)]
    seen = [dict.fromkeys(FILES, ABSENT) for _ in clients]
    names = [w.address for w in workers]
    for _ in range(60):
        name, who = rng.choice(FILES), rng.randrange(len(clients))
        uri, client, worker = f"file://{data}/{name}", clients[who], rng.choice(names)
        action = rng.random()
        if action < 0.3:
            index, content = model.next()
            client.send_to(worker, Call("PUT", "/v1/write", uri, "write", {"path": uri},
                                        False, lambda c=content: c))  # type: ignore[misc]  # fmt: skip
            model.record(name, index, content)
            seen[who][name] = index
        elif action < 0.4 and model.latest(name)[1] is not None:
            index, _ = model.next()
            client.send_to(
                worker, Call("DELETE", "/v1/delete", uri, "delete", {"path": uri}, False)
            )
            model.record(name, index, None)
            seen[who][name] = index
        elif action < 0.55:
            index, content = model.next()
            (data / name).write_bytes(content)  # the outside writer: no worker hears of it
            model.record(name, index, content)
        elif action < 0.6 and model.latest(name)[1] is not None:
            index, _ = model.next()
            os.remove(data / name)
            model.record(name, index, None)
        else:
            sync = "0" if rng.random() < 0.25 else "-1"
            answer = read(client, worker, uri, sync)
            index = model.explain(name, answer, seen[who][name])
            if sync == "0":
                assert index == model.latest(name)[0], f"{name}: a sync read missed the newest"
            seen[who][name] = index
