"""The near-cache against the sync-interval contract, as a model test: random steps — a change
made outside the worker, a write through the worker, ``info``/``ls`` with a sync interval of
-1, 0 or a few ms, a pause — on one file under a real worker, with every answer checked against
the file's true history:

- with interval ``N >= 0`` the answer was the file's content at some moment no earlier than
  ``N`` ms before it was asked (``0``: the content when asked);
- whatever the interval, a write through the worker that ended before the ask is seen (another
  process on the host, whose change only the worker's generation counters report).

Answers come the way the client gets them (``worker.client.fastpath.NearCacheMetadata``): from
the near-cache when it may answer, else from the worker, then kept. Every write has a size of
its own, so an answer's size names the write it shows. Time is the real clock, since the worker
ages its entries by it; the checks bound staleness, they time nothing."""

import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from worker.client.nearcache import NearCache
from worker.common.generations import GenerationView
from worker.service import WorkerService

STEPS = 400
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

    def check(self, answer: dict[str, Any], asked_at: float, interval_ms: int, how: str) -> None:
        index = next(i for i, w in enumerate(self.writes) if w.size == answer["size"])
        where = f"seed {self.seed}, {how} with sync interval {interval_ms} ms, write #{index}"
        # Read your writes: a write through the worker that ended before the ask is seen.
        seen = [i for i, w in enumerate(self.writes) if w.through_worker and w.ended_at < asked_at]
        assert not seen or index >= seen[-1], f"{where}: missed write #{seen[-1]} via the worker"
        if interval_ms < 0 or index + 1 == len(self.writes):
            return
        # It stopped being the file's content once the next write had ended, at the latest.
        replaced_at = self.writes[index + 1].ended_at
        allowed = asked_at - interval_ms / 1000 - SLACK_S
        assert replaced_at >= allowed, (
            f"{where}: replaced {asked_at - replaced_at:.4f} s before it was asked"
        )


def ask_status(
    near: NearCache, service: WorkerService, path: str, interval_ms: int
) -> dict[str, Any]:
    key = near.key(path)
    assert key is not None
    kept = near.status(key, interval_ms)
    if kept is not None:
        return dict(kept)
    stamp, asked_at = near.stamp(key), near.now()
    status = service.status(service.request(path, interval_ms))
    answer = service.describe(status)
    near.put_status(
        key, stamp, asked_at, answer, service.meta.reads.status_age(path, status.version)
    )
    return answer


def ask_listing(
    near: NearCache, service: WorkerService, directory: str, interval_ms: int
) -> list[dict[str, Any]]:
    key = near.key(directory)
    assert key is not None
    kept = near.listing(key, interval_ms)
    if kept is not None:
        return [dict(entry) for entry in kept]
    stamp, asked_at = near.stamp(key), near.now()
    children = service.list(service.request(directory, interval_ms))
    entries = [service.describe(child) for child in children]
    age = service.meta.reads.listing_age(directory, children)
    near.put_listing(key, stamp, asked_at, [(e["uri"], e) for e in entries], age)
    return entries


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_every_answer_keeps_the_sync_interval_contract(
    service: WorkerService, data_dir: Path, seed: int
) -> None:
    assert service.generations is not None
    view = GenerationView(service.generations.path)
    near = NearCache(view, default_sync_interval_ms=-1, ttl_ms=1000)
    rng = random.Random(seed)
    model = Model(seed)
    directory = f"file://{data_dir}/d"
    path = f"{directory}/f"
    (data_dir / "d").mkdir()
    sizes = iter(range(1, STEPS + 2))

    def write_outside() -> None:
        size = next(sizes)
        with open(data_dir / "d" / "f.tmp", "wb") as out:
            out.write(b"o" * size)
        os.replace(data_dir / "d" / "f.tmp", data_dir / "d" / "f")
        model.wrote(size, through_worker=False)

    try:
        write_outside()
        for _ in range(STEPS):
            step = rng.random()
            interval = rng.choice(INTERVALS_MS)
            if step < 0.15:
                write_outside()
            elif step < 0.25:
                size = next(sizes)
                service.write(service.request(path), b"w" * size)
                model.wrote(size, through_worker=True)
            elif step < 0.6:
                asked_at = time.monotonic()
                model.check(ask_status(near, service, path, interval), asked_at, interval, "info")
            elif step < 0.85:
                asked_at = time.monotonic()
                (entry,) = ask_listing(near, service, directory, interval)
                model.check(entry, asked_at, interval, "ls")
            else:
                time.sleep(rng.choice((0.002, 0.01, 0.03)))
    finally:
        view.close()
