"""The one-host demo's outside writes, without its Spark runs: the demo's SeaweedFS stage and
its worker (which follows the filer's change feed), writes straight to S3, and the worker
serving each one's bytes at sync interval -1, as ``make demo`` prints it."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from worker.demo.outside import ROUNDS, render
from worker.demo.report import Progress
from worker.demo.run import DemoOptions, Worker, outside_writes, start_worker
from worker.demo.stage import S3Stage
from worker.spark.sidecar import stop_worker

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
def stage(tmp_path: Path) -> Iterator[S3Stage]:
    started = S3Stage(tmp_path / "seaweedfs").start()
    yield started
    started.close()


@pytest.fixture
def worker(tmp_path: Path, stage: S3Stage) -> Iterator[Worker]:
    yield start_worker(DemoOptions(work_dir=tmp_path), stage, tmp_path / "sidecar")
    stop_worker(tmp_path / "sidecar")


def test_outside_writes_reach_the_demo_s_worker_through_the_filer_s_feed(
    stage: S3Stage, worker: Worker, tmp_path: Path
) -> None:
    with (tmp_path / "progress.txt").open("w") as out:
        report = outside_writes(stage, worker, Progress(out))
    assert report is not None
    assert report.served  # every write's bytes, at sync interval -1
    assert [len(delays) for delays in report.delays_ms.values()] == [ROUNDS]
    assert report.consumers == ["worker"]
    (lag,) = report.lag["worker"].values()
    assert lag["events"] >= ROUNDS
    shown = render(report)
    assert "consumed by: worker" in shown
    assert "stale" not in shown
