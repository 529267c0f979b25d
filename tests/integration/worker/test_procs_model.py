"""The sync-interval contract across the worker's processes, as a model test: a worker of three
processes (the primary and two fronts, ``dora.worker.processes=3``) and random steps — a change
made outside the worker, a write through one process, a status, listing or read through another
(REST v1, or WebHDFS ``GETFILESTATUS`` and ``OPEN`` as Spark's readers send them) with a sync
interval of -1, 0 or a few ms, a pause — on one file, every answer checked against the file's
true history (the checks of ``tests/worker/client/test_nearcache_model.py``):

- with interval ``N >= 0`` the answer was the file's content at some moment no earlier than
  ``N`` ms before it was asked (``0``: the content when asked);
- whatever the interval, a write through any process that ended before the ask is seen by
  every process: a front keeps statuses in a near-cache that the primary's generation counters
  invalidate, and reads bytes from page files that a changed file no longer matches.

Every write has a size of its own, so an answer's size names the write it shows, and its bytes
say who wrote it (``w`` through the worker, ``o`` outside)."""

import os
import random
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.integration.worker.procs_support import MultiWorker, on_socket

pytestmark = pytest.mark.integration
STEPS = 300
INTERVALS_MS = (-1, 0, 10, 50)
SLACK_S = 0.002  # the worker ages entries in whole milliseconds


@dataclass(frozen=True)
class Write:
    size: int
    ended_at: float  # monotonic
    through_worker: bool


class Model:
    """The file's true history and the checks of each answer against it."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.writes: list[Write] = []

    def wrote(self, size: int, through_worker: bool) -> None:
        self.writes.append(Write(size, time.monotonic(), through_worker))

    def check(self, size: int, asked_at: float, interval_ms: int, how: str) -> None:
        index = next(i for i, w in enumerate(self.writes) if w.size == size)
        where = f"seed {self.seed}, {how} with sync interval {interval_ms} ms, write #{index}"
        seen = [i for i, w in enumerate(self.writes) if w.through_worker and w.ended_at < asked_at]
        assert not seen or index >= seen[-1], f"{where}: missed write #{seen[-1]} via the worker"
        if interval_ms < 0 or index + 1 == len(self.writes):
            return
        replaced_at = self.writes[index + 1].ended_at
        allowed = asked_at - interval_ms / 1000 - SLACK_S
        assert replaced_at >= allowed, (
            f"{where}: replaced {asked_at - replaced_at:.4f} s before it was asked"
        )

    def content(self, size: int) -> bytes:
        write = next(w for w in self.writes if w.size == size)
        return (b"w" if write.through_worker else b"o") * size


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[tuple[Path, MultiWorker]]:
    data = tmp_path / "data"
    (data / "d").mkdir(parents=True)
    process = MultiWorker(tmp_path, 3, f"dora.worker.ufs.roots=file://{data}")
    yield data, process
    process.stop()


@pytest.mark.parametrize("seed", [1, 2])
def test_every_process_keeps_the_sync_interval_contract(
    worker: tuple[Path, MultiWorker], seed: int
) -> None:
    data, multi = worker
    processes = [on_socket(path) for path in multi.sockets()]
    assert len(processes) == 3
    rng = random.Random(seed)
    model = Model(seed)
    directory = f"file://{data}/d"
    path = f"{directory}/f"
    sizes = iter(range(1, STEPS + 2))

    def write_outside() -> None:
        size = next(sizes)
        (data / "d" / "f.tmp").write_bytes(b"o" * size)
        os.replace(data / "d" / "f.tmp", data / "d" / "f")
        model.wrote(size, through_worker=False)

    def ask(process: httpx.Client, route: str, interval: int) -> httpx.Response:
        params = {"path": directory if route == "/v1/list" else path}
        answer = process.get(route, params={**params, "sync_interval": str(interval)})
        assert answer.status_code == 200, answer.text
        return answer

    def webhdfs(process: httpx.Client, op: str, interval: int) -> httpx.Response | None:
        """WebHDFS, as Spark's readers ask (OPEN: its redirect, then the pinned data). None
        for an OPEN whose redirect pinned a version an outside write had already replaced
        (named within the sync interval) and whose bytes were not cached: the data step
        refuses it (412), as one process does, rather than serve another version's bytes."""
        query = {"op": op, "sync_interval": str(interval)}
        answer = process.get(f"/webhdfs/v1/file{data}/d/f", params=query, follow_redirects=True)
        if answer.status_code == 412 and op == "OPEN" and not model.writes[-1].through_worker:
            return None
        assert answer.status_code == 200, answer.text
        return answer

    write_outside()
    for _ in range(STEPS):
        step, process = rng.random(), rng.choice(processes)
        interval = rng.choice(INTERVALS_MS)
        asked_at = time.monotonic()
        if step < 0.12:
            write_outside()
        elif step < 0.25:
            size = next(sizes)
            answer = process.put("/v1/write", params={"path": path}, content=b"w" * size)
            assert answer.status_code in (200, 201), answer.text
            model.wrote(size, through_worker=True)
        elif step < 0.4:
            status = ask(process, "/v1/status", interval).json()
            model.check(status["size"], asked_at, interval, "status")
        elif step < 0.5:
            found = webhdfs(process, "GETFILESTATUS", interval)
            assert found is not None
            status = found.json()["FileStatus"]
            model.check(status["length"], asked_at, interval, "WebHDFS GETFILESTATUS")
        elif step < 0.65:
            (entry,) = ask(process, "/v1/list", interval).json()["entries"]
            model.check(entry["size"], asked_at, interval, "list")
        elif step < 0.92:
            opened = step >= 0.8
            answer = (
                webhdfs(process, "OPEN", interval) if opened else ask(process, "/v1/read", interval)
            )
            if answer is None:
                continue
            content = answer.content
            model.check(len(content), asked_at, interval, "OPEN" if opened else "read")
            assert content == model.content(len(content)), f"seed {seed}: mixed bytes"
        else:
            time.sleep(rng.choice((0.002, 0.01, 0.03)))
    # The fronts answered from their near-caches (the model checked those answers too).
    hits = re.search(r'dora_front_near_cache_hits_total\{kind="status"\} (\S+)',
                     multi.http.get("/metrics").text)  # fmt: skip
    assert hits is not None and float(hits.group(1)) > 0
