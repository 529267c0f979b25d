"""Spark's own readers over ``swebhdfs://`` (Hadoop's ``SWebHdfsFileSystem`` from pyspark's
jars) from a worker serving TLS with a token, trusting only the CA file given to
``spark_conf`` (on the driver and on executors in JVMs of their own); the Python ``dora`` data
source over ``https://``; and Hadoop's ``FsShell`` over ``swebhdfs://``, with the truststore
``spark_conf`` made."""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.integration.harness import WorkerProcess
from tests.integration.tls.tls_support import tls_defines
from tests.worker.tls.certs import CA
from worker.spark.hadoopjar import pyspark_jars
from worker.spark.session import local_session
from worker.spark.webhdfs import hadoop_conf, spark_conf, webhdfs_url

pytestmark = [pytest.mark.integration, pytest.mark.slow]
TOKEN = "swebhdfs-token"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data")
    table = pa.table({"id": list(range(500)), "name": [f"n{i % 7}" for i in range(500)]})
    pq.write_table(table, path / "t.parquet", row_group_size=100)
    return path


@pytest.fixture(scope="module")
def worker(
    tls_ca: CA, data: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    process = WorkerProcess(
        tmp_path_factory.mktemp("w"), f"dora.worker.ufs.roots=file://{data}",
        *tls_defines(tls_ca.issue("server")), f"dora.worker.security.token={TOKEN}",
    )  # fmt: skip
    yield process
    process.stop()


def address(worker: WorkerProcess) -> str:
    return f"localhost:{worker.port}"


@pytest.fixture(scope="module")
def spark(tls_ca: CA, worker: WorkerProcess) -> Iterator[Any]:
    conf = spark_conf(address(worker), TOKEN, short_circuit=False, ca_file=str(tls_ca.file))
    # Executors in JVMs of their own: their truststore comes through spark.files.
    session = local_session(
        2, "doracache-swebhdfs-tests", conf=conf, progress=False, master="local-cluster[2,1,1024]"
    )
    yield session
    session.stop()


def expected_rows(data: Path) -> list[tuple[Any, ...]]:
    return sorted((row["id"], row["name"]) for row in pq.read_table(data / "t.parquet").to_pylist())


def test_spark_reads_parquet_over_swebhdfs(spark: Any, worker: WorkerProcess, data: Path) -> None:
    url = webhdfs_url(address(worker), f"file://{data}/t.parquet", secure=True)
    assert url.startswith("swebhdfs://")
    frame: Any = spark.read.parquet(url)
    assert sorted(tuple(row) for row in frame.collect()) == expected_rows(data)


def test_the_dora_data_source_reads_over_https(
    spark: Any, tls_ca: CA, worker: WorkerProcess, data: Path
) -> None:
    frame: Any = (
        spark.read.format("dora")
        .option("format", "parquet")
        .option("workers", worker.url("localhost"))
        .option("token", TOKEN)
        .option("dora.user.tls.ca.file", str(tls_ca.file))
        .load(f"file://{data}/t.parquet")
    )
    assert sorted(tuple(row) for row in frame.collect()) == expected_rows(data)


def fs_shell(
    worker: WorkerProcess, conf_dir: Path, java_options: str, *args: str
) -> subprocess.CompletedProcess[str]:
    """``FsShell`` from pyspark's jars, configured as ``hadoop_conf`` says through a
    ``core-site.xml`` (which Hadoop requires on the class path)."""
    jars = pyspark_jars()
    assert jars is not None
    properties = "".join(
        f"<property><name>{escape(key)}</name><value>{escape(value)}</value></property>"
        for key, value in hadoop_conf(address(worker), TOKEN, secure=True).items()
    )
    conf_dir.mkdir(exist_ok=True)
    (conf_dir / "core-site.xml").write_text(f"<configuration>{properties}</configuration>")
    command = ["java", *shlex.split(java_options), "-cp", f"{conf_dir}:{jars}/*",
               "org.apache.hadoop.fs.FsShell", *args]  # fmt: skip
    return subprocess.run(command, capture_output=True, timeout=180, check=False)


def test_fs_shell_lists_and_reads_over_swebhdfs(
    tls_ca: CA, worker: WorkerProcess, data: Path, tmp_path: Path
) -> None:
    conf = spark_conf(address(worker), TOKEN, short_circuit=False, ca_file=str(tls_ca.file))
    trusting = conf["spark.driver.extraJavaOptions"]
    root = webhdfs_url(address(worker), f"file://{data}", secure=True)
    listed = fs_shell(worker, tmp_path, trusting, "-ls", root)
    assert listed.returncode == 0, listed.stderr.decode()
    assert f"{root}/t.parquet" in listed.stdout.decode()
    copied = fs_shell(worker, tmp_path, trusting, "-cat", f"{root}/t.parquet")
    assert copied.returncode == 0, copied.stderr.decode()[-2000:]
    assert copied.stdout == (data / "t.parquet").read_bytes()
    # The JDK's CAs only: the token's fetch over TLS fails first, and Hadoop says only that.
    untrusting = fs_shell(worker, tmp_path, "", "-ls", root)
    assert untrusting.returncode != 0
    assert "Unable to obtain access token" in untrusting.stderr.decode()
    assert untrusting.stdout == b""
