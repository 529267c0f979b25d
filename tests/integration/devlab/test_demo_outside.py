"""The demo's outside writes against a real SeaweedFS and a worker following its filer: the feed
lag the report prints is that of the outside writes' own events, not of the events the worker
heard before them (the demo's dataset upload, replayed with seconds of age when the
subscription starts)."""

import time
from pathlib import Path

import httpx
import pytest

from tests.integration.feeds.feed_support import wait_until
from tests.integration.feeds.test_feed_seaweedfs import seaweed_worker
from tests.integration.inprocess import serving
from worker.devlab.demo.outside import OutsideReader, measure, render
from worker.devlab.local.s3 import LocalS3

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EARLIER = 30
AGE_S = 3.0


def test_the_lag_printed_is_that_of_the_outside_writes(tmp_path: Path) -> None:
    server = LocalS3(tmp_path / "s3", buckets=("demo",)).start()
    try:
        client = server.client()
        # The "dataset": written before the worker follows the filer, so its events reach the
        # worker AGE_S old (a subscription starts a few seconds back).
        for n in range(EARLIER):
            client.pipe_file(f"s3://demo/data/part-{n}", b"x")
        time.sleep(AGE_S)
        service, feeds = seaweed_worker(tmp_path / "work", server, "demo")
        try:
            wait_until(lambda: service.changes.counters.snapshot()["received"] >= EARLIER)
            with (
                serving(service) as port,
                httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http,
            ):
                uri = "s3://demo/outside/probe.txt"
                report = measure(
                    lambda data: client.pipe_file(uri, data), uri, [OutsideReader("w", http)]
                )
        finally:
            feeds.close()
            service.close()
    finally:
        server.stop()
    assert report.served
    (lag,) = report.lag["w"].values()
    assert lag["events"] >= len(report.delays_ms["w"])  # each write's own events, no more
    assert lag["events"] < EARLIER
    # The writes were served within ms of their acknowledgement: their events' lag is not the
    # seconds of the events heard before them.
    assert lag["p99_ms"] < AGE_S * 1000 / 2
    assert "feed lag of these writes" in render(report)
