"""A thundering herd: 80 readers released at once on one cold file through one worker. Counted
at a proxy in front of S3, every byte is fetched from the UFS exactly once (runs of missing
pages come in one ranged GET each), and every reader gets the whole file right."""

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


def covered_once(ranges: list[str], size: int) -> bool:
    """Whether the GETs' ``bytes=first-last`` ranges cover ``[0, size)`` without overlap, each
    starting on a page boundary."""
    spans = sorted(tuple(int(n) for n in r.removeprefix("bytes=").split("-")) for r in ranges)
    at = 0
    for first, last in spans:
        if first != at or first % PAGE:
            return False
        at = last + 1
    return at == size


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
        gets = [r.range for r in requests if r.method == "GET"]
        heads += sum(r.method == "HEAD" for r in requests)
        assert covered_once(gets, SIZE), gets
        fetched[len(gets)] += 1
    figure("herds of 80 readers", rounds, "")
    figure("GETs per herd (max; 17 pages)", max(fetched), "")
    figure("HEADs per herd (mean)", heads / rounds, "")
