"""``webhdfs://`` with separate executor JVMs (``local-cluster[2,1,1024]``): every executor reads
through the worker, and the rows equal Spark's read of the same files on local disk."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.integration.inprocess import serving
from tests.worker.conftest import open_service
from worker.spark.session import local_session
from worker.spark.webhdfs import spark_conf, webhdfs_url

pytestmark = pytest.mark.integration
TOKEN = "cluster-test-token"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("data")
    for zone in range(1, 5):
        (root / "t" / f"zone={zone}").mkdir(parents=True)
        table = pa.table({"id": list(range(zone * 1000, zone * 1000 + 500)), "v": [zone] * 500})
        pq.write_table(table, root / "t" / f"zone={zone}" / "part-0.parquet")
    return root


@pytest.fixture(scope="module")
def address(data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    service = open_service(
        tmp_path_factory.mktemp("work"), f"file://{data}", f"dora.worker.security.token={TOKEN}"
    )
    try:
        with serving(service) as port:
            yield f"127.0.0.1:{port}"
    finally:
        service.close()


@pytest.fixture(scope="module")
def spark(address: str) -> Iterator[Any]:
    session = local_session(
        2,
        "doracache-webhdfs-cluster",
        conf=spark_conf(address, TOKEN),
        progress=False,
        master="local-cluster[2,1,1024]",
    )
    yield session
    session.stop()


def test_executors_read_through_the_worker(spark: Any, address: str, data: Path) -> None:
    through = spark.read.parquet(webhdfs_url(address, f"file://{data}/t"))
    local = spark.read.parquet(f"file://{data}/t")
    query = "zone >= 2"
    assert sorted(through.filter(query).collect()) == sorted(local.filter(query).collect())
    assert through.rdd.getNumPartitions() >= 2
