"""Spark's own readers through the cache (``webhdfs://``) over a real S3 server (SeaweedFS), in
``local[2]``: rows equal Spark's read of a local copy for Parquet, CSV, JSON and a SQL table;
partition pruning reads only the chosen partition from the UFS; path rules decide whether an
outside change is seen; a write lands in the UFS; errors are Hadoop's exceptions; and Hadoop's
own client parses every operation's answer."""

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.integration.conftest import BUCKET
from tests.integration.inprocess import UfsReads, serving
from tests.worker.conftest import open_service
from worker.devlab.local.s3 import LocalS3
from worker.service import WorkerService
from worker.spark.session import local_session
from worker.spark.webhdfs import spark_conf, webhdfs_url

pytestmark = pytest.mark.integration
TOKEN = "spark-test-token"
SYNC = "dora.user.file.metadata.sync.interval"


class Worker:
    """The in-process worker these tests read through, with the UFS bytes it fetched."""

    def __init__(self, service: WorkerService, port: int, prefix: str) -> None:
        self.service = service
        self.address = f"127.0.0.1:{port}"
        self.prefix = prefix
        self.reads = UfsReads(service)

    def url(self, name: str) -> str:
        return webhdfs_url(self.address, f"{self.prefix}/{name}")


@pytest.fixture(scope="module")
def worker(seaweedfs: LocalS3, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    prefix = f"s3://{BUCKET}/webhdfs-{uuid.uuid4().hex[:8]}"
    rules = f"dora.worker.path.conf={prefix}/fresh {SYNC}=0, {prefix}/stale {SYNC}=-1"
    service = open_service(
        tmp_path_factory.mktemp("worker"),
        f"s3://{BUCKET}",
        *seaweedfs.storage_defines(),
        f"dora.worker.security.token={TOKEN}",
        rules,
    )
    try:
        with serving(service) as port:
            yield Worker(service, port, prefix)
    finally:
        service.close()


@pytest.fixture(scope="module")
def spark(worker: Worker) -> Iterator[Any]:
    session = local_session(
        2, "doracache-webhdfs-tests", conf=spark_conf(worker.address, TOKEN), progress=False
    )
    yield session
    session.stop()


def put_parquet(s3: Any, key: str, table: pa.Table) -> None:
    with s3.open(key, "wb") as out:
        pq.write_table(table, out)


def rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(row) for row in df.collect())


def trips(seed: int, n: int = 300) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(seed * n, seed * n + n), pa.int64()),
            "fare": pa.array([round(i * 0.37 + seed, 2) for i in range(n)]),
            "kind": pa.array([f"k{i % 7}" for i in range(n)]),
        }
    )


def copy_locally(s3: Any, prefix: str, target: Path) -> str:
    """A local copy of everything under ``prefix``, for Spark's read of the same files."""
    s3.get(prefix.removeprefix("s3://"), str(target), recursive=True)
    return f"file://{target}"


def test_formats_and_sql_tables_equal_a_local_read(
    spark: Any, worker: Worker, s3_raw: Any, tmp_path: Path
) -> None:
    base = worker.prefix.removeprefix("s3://") + "/formats"
    table = pa.concat_tables([trips(1), trips(2)])
    put_parquet(s3_raw, f"{base}/parquet/part-0.parquet", trips(1))
    put_parquet(s3_raw, f"{base}/parquet/part-1.parquet", trips(2))
    s3_raw.pipe(f"{base}/csv/a.csv", table.to_pandas().to_csv(index=False).encode())
    s3_raw.pipe(
        f"{base}/json/a.json", table.to_pandas().to_json(orient="records", lines=True).encode()
    )
    local = copy_locally(s3_raw, f"s3://{base}", tmp_path / "copy")
    for fmt in ("parquet", "csv", "json"):
        reader = spark.read.format(fmt).option("header", "true")
        through_cache = rows(reader.load(worker.url(f"formats/{fmt}")))
        assert through_cache == rows(reader.load(f"{local}/{fmt}")), fmt
        assert len(through_cache) == table.num_rows
    spark.sql(
        f"CREATE TABLE trips_webhdfs USING parquet LOCATION '{worker.url('formats/parquet')}'"
    )
    try:
        answer = rows(
            spark.sql("SELECT kind, count(*), sum(fare) FROM trips_webhdfs GROUP BY kind")
        )
        direct = (
            spark.read.parquet(f"{local}/parquet")
            .groupBy("kind")
            .agg({"*": "count", "fare": "sum"})
        )
        assert answer == rows(direct.select("kind", "count(1)", "sum(fare)"))
    finally:
        spark.sql("DROP TABLE trips_webhdfs")


def test_a_partition_filter_reads_only_that_partition(
    spark: Any, worker: Worker, s3_raw: Any
) -> None:
    base = worker.prefix.removeprefix("s3://") + "/zones"
    for zone in range(1, 5):
        put_parquet(s3_raw, f"{base}/zone={zone}/part-0.parquet", trips(zone))
    df = spark.read.parquet(worker.url("zones"))
    assert sorted(df.columns) == ["fare", "id", "kind", "zone"]
    worker.reads.reset()
    assert df.filter("zone = 3").count() == 300
    assert rows(df.filter("zone = 3").select("id")) == [(i,) for i in range(900, 1200)]
    zone3 = worker.reads.under(f"{worker.prefix}/zones/zone=3/")
    assert zone3 > 0
    assert worker.reads.under(f"{worker.prefix}/zones/") == zone3


@pytest.mark.parametrize(("rule", "sees_change"), [("fresh", True), ("stale", False)])
def test_an_outside_change_is_seen_under_a_zero_rule_only(
    spark: Any, worker: Worker, s3_raw: Any, rule: str, sees_change: bool
) -> None:
    key = f"{worker.prefix.removeprefix('s3://')}/{rule}/data/part-0.parquet"
    put_parquet(s3_raw, key, trips(1))

    def total() -> float:
        return float(spark.read.parquet(worker.url(f"{rule}/data")).agg({"fare": "sum"}).first()[0])

    before = total()
    put_parquet(s3_raw, key, trips(5))
    after = total()
    assert (after != before) is sees_change


def test_a_dataframe_written_through_the_worker_lands_in_the_ufs(
    spark: Any, worker: Worker, s3_raw: Any
) -> None:
    df = spark.createDataFrame(trips(3).to_pandas()).repartition(2)
    df.write.parquet(worker.url("written"))
    keys = s3_raw.find(worker.prefix.removeprefix("s3://") + "/written")
    names = sorted(key.rsplit("/", 1)[-1] for key in keys)
    assert "_SUCCESS" in names
    assert len([n for n in names if n.endswith(".parquet")]) == 2
    assert not any("_temporary" in key for key in keys)
    assert rows(spark.read.parquet(worker.url("written"))) == rows(df)


def java_class(error: BaseException) -> str:
    return str(error.java_exception.getClass().getName())  # type: ignore[attr-defined]


def test_errors_are_hadoop_exceptions(spark: Any, worker: Worker) -> None:
    from py4j.protocol import Py4JJavaError

    jvm = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path
    conf = spark._jsc.hadoopConfiguration()
    fs = jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI(worker.url("")), conf)
    with pytest.raises(Py4JJavaError) as missing:
        fs.getFileStatus(path(worker.url("no/such/file")))
    assert java_class(missing.value) == "java.io.FileNotFoundException"
    with pytest.raises(Py4JJavaError) as outside:
        fs.getFileStatus(path("/s3/another-bucket/x"))
    assert java_class(outside.value) == "org.apache.hadoop.security.AccessControlException"
    anonymous = jvm.org.apache.hadoop.conf.Configuration(conf)
    anonymous.set("dfs.webhdfs.oauth2.enabled", "false")
    no_token = jvm.org.apache.hadoop.fs.FileSystem.newInstance(
        jvm.java.net.URI(worker.url("")), anonymous
    )
    try:
        with pytest.raises(Py4JJavaError) as refused:
            no_token.listStatus(path(worker.url("")))
        assert java_class(refused.value) == "org.apache.hadoop.security.AccessControlException"
    finally:
        no_token.close()


def test_hadoops_client_parses_every_operation(spark: Any, worker: Worker, s3_raw: Any) -> None:
    base = worker.prefix.removeprefix("s3://") + "/ops"
    s3_raw.pipe(f"{base}/a/one.bin", b"x" * 1000)
    s3_raw.pipe(f"{base}/a/two.bin", b"y" * 24)
    jvm = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path
    fs = jvm.org.apache.hadoop.fs.FileSystem.get(
        jvm.java.net.URI(worker.url("")), spark._jsc.hadoopConfiguration()
    )
    ops = path(worker.url("ops"))
    summary = fs.getContentSummary(ops)
    assert (summary.getLength(), summary.getFileCount(), summary.getDirectoryCount()) == (
        1024,
        2,
        2,
    )
    one = path(worker.url("ops/a/one.bin"))
    checksum = fs.getFileChecksum(one)
    assert checksum.getAlgorithmName() == "MD5-of-0MD5-of-0CRC32C"
    batch = fs.listStatusIterator(path(worker.url("ops/a")))
    names = []
    while batch.hasNext():
        names.append(batch.next().getPath().getName())
    assert names == ["one.bin", "two.bin"]
    fs.access(one, jvm.org.apache.hadoop.fs.permission.FsAction.READ)
    assert fs.getHomeDirectory().toUri().getPath() == f"/s3/{BUCKET}"
    hosts = [list(b.getHosts()) for b in fs.getFileBlockLocations(fs.getFileStatus(one), 0, 1000)]
    assert hosts == [["127.0.0.1"]]
    stream = fs.open(one)
    try:
        stream.seek(990)
        assert stream.read() == ord("x")
    finally:
        stream.close()
    assert fs.mkdirs(path(worker.url("ops/b")))
    assert fs.rename(one, path(worker.url("ops/b")))
    assert fs.exists(path(worker.url("ops/b/one.bin")))
    assert fs.delete(path(worker.url("ops/b")), True)
    assert not fs.exists(path(worker.url("ops/b/one.bin")))
    assert not s3_raw.exists(f"{base}/b/one.bin")
