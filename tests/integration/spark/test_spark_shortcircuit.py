"""Spark's short-circuit reads (``org.doracache.hadoop.DoraWebHdfsFileSystem``, built by
``worker.spark.hadoopjar``) against an in-process worker over a local-directory UFS, in
``local[2]``: a warm read comes from the page files with no data request to the worker, a page
file that is corrupt, replaced or gone is read over WebHDFS instead, never served wrong, small
files are read from the pack that holds their pages, and a listing carries its files' block
locations."""

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.integration.inprocess import serving
from tests.worker.conftest import open_service
from worker.service import WorkerService
from worker.spark.hadoopjar import CLASS
from worker.spark.session import local_session
from worker.spark.webhdfs import spark_conf, webhdfs_url

pytestmark = pytest.mark.integration
PAGE = 1 << 20


class Worker:
    def __init__(self, service: WorkerService, port: int, data: Path) -> None:
        self.service = service
        self.address = f"127.0.0.1:{port}"
        self.data = data

    def url(self, name: str) -> str:
        return webhdfs_url(self.address, f"file://{self.data}/{name}")

    def page_paths(self, name: str) -> list[Path]:
        """The paths of the files holding the file's cached pages, in page order."""
        located = self.service.locate(self.service.request(f"file://{self.data}/{name}"))
        return [Path(page.path) for page in located.locations.pages]


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    data = tmp_path_factory.mktemp("data")
    service = open_service(
        tmp_path_factory.mktemp("worker"),
        f"file://{data}",
        f"dora.worker.page.store.page.size={PAGE}",
        # Every open checks the file, as the demo's changed run needs.
        "dora.user.file.metadata.sync.interval=0",
    )
    try:
        with serving(service) as port:
            yield Worker(service, port, data)
    finally:
        service.close()


@pytest.fixture(scope="module")
def spark(worker: Worker) -> Iterator[Any]:
    # A session before, as other tests in this process may have had: its JVM lacks the jar,
    # and the next session must not reuse it.
    local_session(1, "doracache-before", progress=False).stop()
    conf = spark_conf(worker.address, None)
    assert conf["spark.hadoop.fs.webhdfs.impl"] == CLASS
    session = local_session(2, "doracache-short-circuit-tests", conf=conf, progress=False)
    yield session
    session.stop()


def counters(spark: Any) -> dict[str, int]:
    return dict(spark._jvm.org.doracache.hadoop.DoraWebHdfsFileSystem.counters())


def since(spark: Any, before: dict[str, int]) -> dict[str, int]:
    return {k: v - before[k] for k, v in counters(spark).items()}


def read_all(spark: Any, worker: Worker, name: str, fs: Any = None) -> bytes:
    """The file's bytes as Hadoop's client for ``webhdfs://`` (or ``fs``) reads them."""
    jvm = spark._jvm
    url = worker.url(name)
    if fs is None:
        fs = jvm.org.apache.hadoop.fs.FileSystem.get(
            jvm.java.net.URI(url), spark._jsc.hadoopConfiguration()
        )
    stream = fs.open(jvm.org.apache.hadoop.fs.Path(url))
    try:
        return bytes(jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
    finally:
        stream.close()


def test_a_warm_parquet_read_comes_from_the_page_files(spark: Any, worker: Worker) -> None:
    n = 400_000
    table = pa.table({"id": pa.array(range(n), pa.int64()), "x": pa.array(os.urandom(n))})
    (worker.data / "wide").mkdir()
    pq.write_table(table, worker.data / "wide" / "part-0.parquet", compression="none")
    assert (worker.data / "wide" / "part-0.parquet").stat().st_size > 3 * PAGE
    expected = sorted(spark.read.parquet(f"file://{worker.data}/wide").collect())

    assert sorted(spark.read.parquet(worker.url("wide")).collect()) == expected
    before = counters(spark)
    assert sorted(spark.read.parquet(worker.url("wide")).collect()) == expected
    warm = since(spark, before)
    assert warm["short_circuit_bytes"] > 3 * PAGE
    assert warm["http_bytes"] == 0
    assert warm["misses"] == 0


def test_a_listing_carries_the_block_locations(spark: Any, worker: Worker) -> None:
    (worker.data / "listed").mkdir()
    for name in ("a.bin", "b.bin"):
        (worker.data / "listed" / name).write_bytes(b"x" * 10)
    jvm = spark._jvm
    url = worker.url("listed")
    fs = jvm.org.apache.hadoop.fs.FileSystem.get(
        jvm.java.net.URI(url), spark._jsc.hadoopConfiguration()
    )
    for status in fs.listStatus(jvm.org.apache.hadoop.fs.Path(url)):
        assert status.getClass().getName() == "org.apache.hadoop.fs.LocatedFileStatus"
        (block,) = status.getBlockLocations()
        assert (list(block.getHosts()), block.getLength()) == (["127.0.0.1"], 10)


def test_a_file_read_whole_is_exact_across_pages(spark: Any, worker: Worker) -> None:
    data = os.urandom(3 * PAGE + 12345)
    (worker.data / "whole.bin").write_bytes(data)
    assert read_all(spark, worker, "whole.bin") == data  # cold: over HTTP, and cached
    before = counters(spark)
    assert read_all(spark, worker, "whole.bin") == data
    assert since(spark, before)["short_circuit_bytes"] == len(data)


def test_seeks_read_the_right_bytes_from_cached_and_missing_pages(
    spark: Any, worker: Worker
) -> None:
    data = os.urandom(3 * PAGE + 999)
    (worker.data / "seeks.bin").write_bytes(data)
    read_all(spark, worker, "seeks.bin")
    pages = worker.page_paths("seeks.bin")
    pages[2].unlink()  # the third page is read over HTTP, the others from their files
    jvm = spark._jvm
    url = worker.url("seeks.bin")
    fs = jvm.org.apache.hadoop.fs.FileSystem.get(
        jvm.java.net.URI(url), spark._jsc.hadoopConfiguration()
    )
    block = 16 << 10
    spans = [(0, 1), (block - 1, 2), (PAGE - 5, 10), (PAGE, block), (2 * PAGE - 3, PAGE + 6)]
    spans += [(len(data) - 8, 8), (5, 3 * PAGE), (2 * PAGE + 1, 100), (123_457, 1)]
    stream = fs.open(jvm.org.apache.hadoop.fs.Path(url))
    try:
        for offset, length in spans:
            stream.seek(offset)
            got = bytes(jvm.org.apache.commons.io.IOUtils.toByteArray(stream, length))
            assert got == data[offset : offset + length], (offset, length)
            assert stream.getPos() == offset + length
        stream.seek(len(data))
        assert stream.read() == -1
    finally:
        stream.close()


def test_the_setting_off_reads_everything_over_http(spark: Any, worker: Worker) -> None:
    data = os.urandom(PAGE + 7)
    (worker.data / "off.bin").write_bytes(data)
    assert read_all(spark, worker, "off.bin") == data
    jvm = spark._jvm
    conf = jvm.org.apache.hadoop.conf.Configuration(spark._jsc.hadoopConfiguration())
    conf.set("dora.user.client.short.circuit.enabled", "false")
    off = jvm.org.apache.hadoop.fs.FileSystem.newInstance(jvm.java.net.URI(worker.url("")), conf)
    try:
        before = counters(spark)
        assert read_all(spark, worker, "off.bin", off) == data
        assert since(spark, before)["short_circuit_bytes"] == 0
    finally:
        off.close()


def corrupt(page: Path) -> None:
    raw = bytearray(page.read_bytes())
    raw[-100] ^= 0xFF
    page.write_bytes(bytes(raw))


def test_small_files_are_read_from_their_pack(spark: Any, worker: Worker) -> None:
    (worker.data / "small").mkdir()
    texts = {f"f{n}.txt": f"line {n}\n" * (n + 1) for n in range(20)}
    for name, text in texts.items():
        (worker.data / "small" / name).write_text(text)
    expected = sorted(spark.read.text(f"file://{worker.data}/small").collect())
    assert sorted(spark.read.text(worker.url("small")).collect()) == expected
    (pack,) = {page for name in texts for page in worker.page_paths(f"small/{name}")}
    assert pack.name.endswith(".pack")
    before = counters(spark)
    assert sorted(spark.read.text(worker.url("small")).collect()) == expected
    warm = since(spark, before)
    assert warm["short_circuit_bytes"] == sum(len(text) for text in texts.values())
    assert (warm["http_bytes"], warm["misses"]) == (0, 0)
    # A page in the pack with a flipped byte is read over HTTP; its neighbours are not.
    located = worker.service.locate(worker.service.request(f"file://{worker.data}/small/f7.txt"))
    (page,) = located.locations.pages
    raw = bytearray(pack.read_bytes())
    raw[page.offset + located.locations.header_size + 3] ^= 0xFF
    pack.write_bytes(bytes(raw))
    before = counters(spark)
    assert sorted(spark.read.text(worker.url("small")).collect()) == expected
    damaged = since(spark, before)
    assert (damaged["misses"], damaged["http_bytes"]) == (1, len(texts["f7.txt"]))


@pytest.mark.parametrize("damage", ["corrupt", "gone", "another page", "fifo"])
def test_a_damaged_page_file_is_read_over_http_instead(
    spark: Any, worker: Worker, damage: str
) -> None:
    name = f"damaged-{damage.replace(' ', '-')}.bin"
    data = os.urandom(3 * PAGE)
    (worker.data / name).write_bytes(data)
    assert read_all(spark, worker, name) == data
    pages = worker.page_paths(name)
    assert len(pages) == 3
    first, second = pages[:2]
    if damage == "corrupt":
        corrupt(second)
    elif damage == "gone":
        second.unlink()
    elif damage == "fifo":  # opened blocking, it would wait for a writer: the JVM's, the worker's
        second.unlink()
        os.mkfifo(second)
    else:
        # A well-formed page file of the same size under this page's name.
        second.write_bytes(first.read_bytes())
    before = counters(spark)
    assert hashlib.sha256(read_all(spark, worker, name)).digest() == hashlib.sha256(data).digest()
    after = since(spark, before)
    assert after["http_bytes"] >= PAGE
    assert after["short_circuit_bytes"] >= PAGE
    if damage != "gone":
        assert after["misses"] >= 1


def test_an_open_right_after_a_status_reads_the_version_it_named(
    spark: Any, worker: Worker
) -> None:
    path = worker.data / "status-then-open.bin"
    first = os.urandom(PAGE + 3)
    path.write_bytes(first)
    read_all(spark, worker, "status-then-open.bin")
    jvm = spark._jvm
    url = worker.url("status-then-open.bin")
    fs = jvm.org.apache.hadoop.fs.FileSystem.get(
        jvm.java.net.URI(url), spark._jsc.hadoopConfiguration()
    )
    before = counters(spark)
    status = fs.getFileStatus(jvm.org.apache.hadoop.fs.Path(url))
    path.write_bytes(os.urandom(PAGE + 30))  # changed outside between the status and the open
    assert read_all(spark, worker, "status-then-open.bin", fs) == first
    assert status.getLen() == len(first)
    assert since(spark, before)["locates"] == 1  # one call for the status and the open


def test_a_changed_file_is_read_at_its_new_version(spark: Any, worker: Worker) -> None:
    path = worker.data / "changing.bin"
    path.write_bytes(os.urandom(PAGE + 10))
    read_all(spark, worker, "changing.bin")
    read_all(spark, worker, "changing.bin")
    changed = os.urandom(PAGE + 20)
    path.write_bytes(changed)
    assert read_all(spark, worker, "changing.bin") == changed
