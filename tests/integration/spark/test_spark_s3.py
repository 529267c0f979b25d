"""The ``dora`` data source over a real S3 server (SeaweedFS): rows equal to a direct read, and
an object replaced in the bucket seen with ``sync_interval=0`` but not with ``-1``."""

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from worker.devlab.demo import pipeline
from worker.devlab.demo.dataset import trips
from worker.devlab.demo.spec import DatasetSpec
from worker.devlab.local.s3 import LocalS3
from worker.spark.session import local_session
from worker.spark.sidecar import stop_worker

pytestmark = pytest.mark.integration
SPEC = DatasetSpec(files=3, rows_per_file=2500, seed=5)


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = local_session(2, "doracache-s3-tests", progress=False)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    state = str(tmp_path_factory.mktemp("sidecar"))
    yield state
    stop_worker(state)


def upload(s3: Any, key: str, table: pa.Table) -> None:
    with s3.open(key, "wb") as out:
        pq.write_table(table, out)


def direct(s3: Any, prefix: str) -> pa.Table:
    keys = sorted(k for k in s3.ls(prefix, detail=False) if k.endswith(".parquet"))
    tables = []
    for key in keys:
        with s3.open(key, "rb") as handle:
            tables.append(pq.read_table(handle))
    return pa.concat_tables(tables)


def test_s3_reads_equal_a_direct_read_and_follow_the_sync_interval(
    spark: Any, seaweedfs: LocalS3, s3_raw: Any, s3_root: str, state_dir: str
) -> None:
    prefix = s3_root.removeprefix("s3://")
    for index in range(SPEC.files):
        upload(s3_raw, f"{prefix}/{SPEC.file_name(index)}", trips(SPEC, index))

    def load(sync_interval: str) -> Any:
        reader = (
            spark.read.format("dora")
            .option("format", "parquet")
            .option("sync_interval", sync_interval)
            .option("state_dir", state_dir)
            .option("dora.worker.ufs.roots", "s3://" + prefix.split("/")[0])
        )
        for define in seaweedfs.storage_defines():
            key, _, value = define.partition("=")
            reader = reader.option(key, value)
        return reader.load(s3_root)

    expected = direct(s3_raw, prefix)
    df = load("-1")
    assert sorted(tuple(r) for r in df.collect()) == sorted(
        tuple(r.values()) for r in expected.to_pylist()
    )
    before = pipeline.arrow_aggregate([expected])
    assert pipeline.spark_aggregate(df) == before

    upload(s3_raw, f"{prefix}/{SPEC.file_name(1)}", trips(SPEC, 1, revision=1))
    after = pipeline.arrow_aggregate([direct(s3_raw, prefix)])
    assert after != before
    assert pipeline.spark_aggregate(load("-1")) == before
    assert pipeline.spark_aggregate(load("0")) == after
