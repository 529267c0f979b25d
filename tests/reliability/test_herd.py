"""A thundering herd: 80 readers released at once on one cold file through one worker. Counted
at a proxy in front of S3, every page is fetched from the UFS exactly once, and every reader
gets the whole file right."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.reliability.conftest import Scene
from tests.reliability.support import RecordFigure, content

pytestmark = pytest.mark.reliability

READERS = 80
PAGE = 64 << 10
SIZE = 16 * PAGE + 1000  # 17 pages, the last one short


def page_ranges(size: int) -> set[str]:
    return {f"bytes={a}-{min(a + PAGE, size) - 1}" for a in range(0, size, PAGE)}


def test_eighty_readers_on_a_cold_file_fetch_each_page_once(
    scene: Scene, soak: bool, figure: RecordFigure
) -> None:
    # A little latency on the link widens the window in which the readers pile up.
    scene.proxy.latency = 0.02
    worker = scene.worker(f"dora.worker.page.store.page.size={PAGE}")
    rounds = 10 if soak else 1
    fetched: Counter[int] = Counter()
    heads = 0
    for n in range(rounds):
        uri = f"{scene.prefix}/herd-{n}.bin"
        data = content(uri, SIZE)
        scene.put(uri, data)
        scene.proxy.reset_counts()
        start = threading.Barrier(READERS)

        def read(_: int, uri: str = uri, start: threading.Barrier = start) -> bytes:
            start.wait()
            return worker.read(uri).raise_for_status().content

        with ThreadPoolExecutor(READERS) as pool:
            bodies = list(pool.map(read, range(READERS)))
        assert all(body == data for body in bodies)
        requests = scene.requests(uri)
        gets = Counter(r.range for r in requests if r.method == "GET")
        heads += sum(r.method == "HEAD" for r in requests)
        assert set(gets) == page_ranges(SIZE) and set(gets.values()) == {1}, gets
        fetched.update(gets.values())
    figure("herds of 80 readers", rounds, "")
    figure("page GETs per page (max)", max(fetched), "")
    figure("HEADs per herd (mean)", heads / rounds, "")
