"""``dora demo --hosts 3``'s outside writes, without its Spark runs: the demo's lab (three worker
hosts, etcd and SeaweedFS in namespaces), its workers following the filer's change feed. One
worker, elected through etcd, consumes the filer's events and republishes them; every worker
serves each write made straight to S3 at sync interval -1, and measures the feed's lag."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from worker.devlab.demo.hosts import FeedLab, outside_writes
from worker.devlab.demo.outside import ROUNDS, render
from worker.devlab.lab.netns import LabUnavailable, unavailable_reason

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[FeedLab]:
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    made = FeedLab(tmp_path, 3)
    try:
        made.start()
    except LabUnavailable as exc:
        pytest.skip(str(exc))
    try:
        yield made
    finally:
        made.stop()


def test_one_elected_consumer_feeds_every_host_s_worker(lab: FeedLab) -> None:
    report = outside_writes(lab)
    assert report.served  # by every worker, every write, at sync interval -1
    assert sorted(report.delays_ms) == sorted(lab.addresses)
    assert all(len(delays) == ROUNDS for delays in report.delays_ms.values())
    assert len(report.consumers) == 1  # the others heard it through the etcd feed
    for address in lab.addresses:
        (lag,) = report.lag[address].values()  # measured on every worker, one source
        assert lag["events"] >= ROUNDS
    assert f"consumed by: {report.consumers[0]}" in render(report)
    for worker in lab.workers:
        assert "Traceback" not in worker.log.read_text()
