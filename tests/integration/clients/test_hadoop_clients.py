"""Clients nobody on this project wrote, unchanged, against a real worker process's WebHDFS
surface over a local root and over SeaweedFS: Hadoop's own ``hadoop fs`` (FsShell, from the jars
inside pyspark), fsspec's ``webhdfs`` filesystem and HdfsCLI (``hdfs``). Plain paths, paths with
spaces and non-ASCII paths; empty and multi-page files. Every read is compared with the bytes in
the UFS, and the worker's log must hold no traceback at the end."""

import os
import re
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import fsspec
import hdfs
import httpx
import pyspark
import pytest
import s3fs

from tests.integration.conftest import BUCKET
from tests.integration.harness import WorkerProcess
from worker.api.webhdfs_paths import path_of
from worker.devlab.local.s3 import LocalS3

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PAGE = 64 << 10
JARS = Path(pyspark.__file__).parent / "jars"
DRIVER = Path(__file__).with_name("FsShellBatch.java")
MULTI_PAGE = os.urandom(3 * PAGE + 123)
TEXT = "zeilen\nüber zeilen\n".encode()
TAIL = b"+appended\n"
# One directory of each kind of name: plain, with spaces, non-ASCII (Latin and CJK).
DIRS = ("plain", "with space", "städte/日本")


@dataclass
class Lake:
    """A worker over one UFS root, and the root's own bytes as seen around the worker."""

    worker: WorkerProcess
    root: str
    s3: s3fs.S3FileSystem | None

    def path(self, rel: str) -> str:
        """The WebHDFS path of ``rel`` under the root."""
        return f"{path_of(self.root)}/{rel}"

    def read(self, rel: str) -> bytes:
        if self.s3 is None:
            return Path(self.root.removeprefix("file://"), rel).read_bytes()
        data: bytes = self.s3.cat_file(f"{self.root.removeprefix('s3://')}/{rel}")
        return data

    def exists(self, rel: str) -> bool:
        if self.s3 is None:
            return Path(self.root.removeprefix("file://"), rel).exists()
        return bool(self.s3.exists(f"{self.root.removeprefix('s3://')}/{rel}"))

    def write(self, rel: str, data: bytes) -> None:
        """Written from outside the worker."""
        if self.s3 is None:
            Path(self.root.removeprefix("file://"), rel).write_bytes(data)
        else:
            self.s3.pipe_file(f"{self.root.removeprefix('s3://')}/{rel}", data)

    def log(self) -> str:
        return (self.worker.state.parent / "worker.log").read_text(errors="replace")


@pytest.fixture(scope="module", params=["local", "s3"])
def lake(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Lake]:
    work = tmp_path_factory.mktemp("hadoop-clients")
    defines = [f"dora.worker.page.store.page.size={PAGE}"]
    s3 = None
    if request.param == "local":
        (work / "ufs").mkdir()
        root = f"file://{work / 'ufs'}"
    else:
        seaweedfs: LocalS3 = request.getfixturevalue("seaweedfs")
        root = f"s3://{BUCKET}/hadoop-clients-{uuid.uuid4().hex[:8]}"
        defines += seaweedfs.storage_defines()
        s3 = seaweedfs.client()
    process = WorkerProcess(work, f"dora.worker.ufs.roots={root}", *defines)
    try:
        yield Lake(process, root, s3)
    finally:
        process.stop()


@dataclass
class Ran:
    rc: int
    out: str
    err: str


def hadoop_fs(lake: Lake, tmp: Path, *commands: list[str]) -> list[Ran]:
    """Each command run by FsShell, all in one JVM, against the worker as ``fs.defaultFS``."""
    conf = tmp / "hadoop-conf"
    conf.mkdir(exist_ok=True)
    (conf / "core-site.xml").write_text(
        "<configuration><property><name>fs.defaultFS</name>"
        f"<value>webhdfs://{lake.worker.address}</value></property></configuration>"
    )
    utf8 = ("-Dfile.encoding=UTF-8", "-Dsun.stdout.encoding=UTF-8", "-Dsun.stderr.encoding=UTF-8")
    ran = subprocess.run(
        ["java", *utf8, "-cp", f"{conf}:{JARS}/*", str(DRIVER)],
        input="".join("\t".join(c) + "\n" for c in commands).encode(),
        capture_output=True,
        timeout=300,
        env={**os.environ, "LC_ALL": "C.UTF-8"},
        check=False,
    )
    marker = re.compile(r"<<<rc (-?\d+)>>>\n")
    outs = marker.split(ran.stdout.decode())
    errs = marker.split(ran.stderr.decode())
    assert len(outs) == 2 * len(commands) + 1, ran.stderr.decode()[-3000:]
    return [Ran(int(outs[2 * i + 1]), outs[2 * i], errs[2 * i]) for i in range(len(commands))]


def test_hadoop_fs_shell(lake: Lake, tmp_path: Path) -> None:
    local = tmp_path / "local"
    local.mkdir()
    (local / "multi.bin").write_bytes(MULTI_PAGE)
    (local / "text.txt").write_bytes(TEXT)
    (local / "tail.txt").write_bytes(TAIL)
    got = tmp_path / "got"
    got.mkdir()
    p = lake.path
    commands: list[list[str]] = [["-mkdir", "-p", *(p(d) for d in DIRS), p("gone ä/sub")]]
    for i, d in enumerate(DIRS):
        commands += [
            ["-put", str(local / "multi.bin"), p(f"{d}/multi ü.bin")],
            ["-put", str(local / "text.txt"), p(f"{d}/text.txt")],
            ["-touchz", p(f"{d}/empty")],
            ["-appendToFile", str(local / "tail.txt"), p(f"{d}/text.txt")],
            ["-cat", p(f"{d}/text.txt")],
            ["-get", p(f"{d}/multi ü.bin"), str(got / f"multi{i}.bin")],
            ["-get", p(f"{d}/empty"), str(got / f"empty{i}")],
            ["-stat", "%F|%b|%y|%n", p(d), p(f"{d}/multi ü.bin"), p(f"{d}/empty")],
            ["-checksum", p(f"{d}/multi ü.bin")],
            ["-test", "-f", p(f"{d}/multi ü.bin")],
            ["-test", "-d", p(d)],
            ["-test", "-e", p(f"{d}/nothing")],
        ]
    commands += [
        ["-put", str(local / "text.txt"), p("gone ä/sub/t.txt")],
        ["-put", str(local / "text.txt"), p("städte/rm me.txt")],
        ["-ls", "-R", p("")],
        ["-du", "-s", p("städte")],
        ["-count", p("")],
        ["-mv", p("plain/text.txt"), p("städte/日本/moved text.txt")],
        ["-cp", p("with space/multi ü.bin"), p("städte/日本/copy.bin")],
        ["-rm", p("städte/rm me.txt")],
        ["-rm", "-r", p("gone ä")],
        ["-chmod", "600", p("plain/empty")],
        ["-df", p("")],
    ]
    ran = iter(hadoop_fs(lake, tmp_path, *commands))
    assert next(ran).rc == 0
    for i, d in enumerate(DIRS):
        put, put_text, touch, append, cat, get, get_empty = (next(ran) for _ in range(7))
        assert [r.rc for r in (put, put_text, touch, append, get, get_empty)] == [0] * 6, d
        assert (cat.rc, cat.out.encode()) == (0, TEXT + TAIL), d
        assert lake.read(f"{d}/multi ü.bin") == MULTI_PAGE
        assert (got / f"multi{i}.bin").read_bytes() == MULTI_PAGE
        assert lake.read(f"{d}/empty") == b"" == (got / f"empty{i}").read_bytes()
        stat = next(ran)
        rows = [line.split("|") for line in stat.out.splitlines()]
        assert [(kind, size) for kind, size, _, _ in rows] == [
            ("directory", "0"), ("regular file", str(len(MULTI_PAGE))),
            ("regular file", "0"),
        ], d  # fmt: skip
        if lake.s3 is None:  # an object store's prefix has no time of its own
            assert not rows[0][2].startswith("1970"), rows
        checksum = next(ran)
        assert checksum.rc == 0 and "MD5-of-0MD5-of-0CRC32C" in checksum.out
        assert [next(ran).rc for _ in range(3)] == [0, 0, 1], d
    put_gone, put_rm, listing, du, count, mv, cp, rm, rm_r, chmod, df = ran
    assert put_gone.rc == put_rm.rc == 0
    assert listing.rc == 0
    for name in ("städte/日本/multi ü.bin", "with space/text.txt", "plain/empty"):
        assert p(name) in listing.out, name
    all_dirs = len(MULTI_PAGE) + len(TEXT + TAIL)
    assert du.rc == 0 and du.out.split()[0] == str(all_dirs + len(TEXT))
    # Directories: the root, plain, with space, städte, 日本, gone ä, sub.
    assert count.rc == 0
    assert count.out.split()[:3] == ["7", "11", str(3 * all_dirs + 2 * len(TEXT))]
    assert mv.rc == cp.rc == 0
    assert lake.read("städte/日本/moved text.txt") == TEXT + TAIL
    assert not lake.exists("plain/text.txt")
    assert lake.read("städte/日本/copy.bin") == MULTI_PAGE
    # Deleted at once (the worker's server defaults say trash is off), with no -skipTrash.
    assert rm.rc == rm_r.rc == 0 and "Deleted" in rm.out
    assert not lake.exists("städte/rm me.txt") and not lake.exists("gone ä/sub/t.txt")
    # An operation the worker does not offer: one line, no Java stack trace.
    assert chmod.rc == 1 and "SETPERMISSION is not supported" in chmod.err
    assert "\tat " not in chmod.err
    # GETSTATUS: a store with no capacity to report, as S3A reports one.
    assert df.rc == 0 and df.out.splitlines()[1].split()[1:3] == [str((1 << 63) - 1), "0"]
    assert "Traceback" not in lake.log()


def test_fsspec_and_hdfscli(lake: Lake, tmp_path: Path) -> None:
    host, port = lake.worker.address.rsplit(":", 1)
    fs = fsspec.filesystem("webhdfs", host=host, port=int(port), skip_instance_cache=True)
    cli = hdfs.InsecureClient(f"http://{lake.worker.address}")
    content = os.urandom(2 * PAGE + 7)
    for d in ("py plain", "py ä/日本"):
        base = lake.path(d)
        fs.mkdir(base)
        # fsspec writes by CREATE of an empty file, then APPEND of each block.
        with fs.open(f"{base}/w.bin", "wb", block_size=PAGE) as out:
            out.write(content)
        assert lake.read(f"{d}/w.bin") == content
        local = tmp_path / "up.bin"
        local.write_bytes(content[:1000])
        fs.put(str(local), f"{base}/put.bin")
        assert lake.read(f"{d}/put.bin") == content[:1000]
        assert sorted(fs.ls(base, detail=False)) == [f"{base}/put.bin", f"{base}/w.bin"]
        assert fs.info(f"{base}/w.bin")["size"] == len(content)
        assert fs.cat(f"{base}/w.bin") == lake.read(f"{d}/w.bin")
        assert (
            fs.cat_file(f"{base}/w.bin", start=PAGE - 3, end=PAGE + 5)
            == content[PAGE - 3 : PAGE + 5]
        )
        with fs.open(f"{base}/w.bin") as f:
            f.seek(2 * PAGE)
            assert f.read() == content[2 * PAGE :]
        fs.mv(f"{base}/put.bin", f"{base}/moved.bin")
        assert lake.read(f"{d}/moved.bin") == content[:1000] and not lake.exists(f"{d}/put.bin")
        fs.rm(f"{base}/moved.bin")
        assert not lake.exists(f"{d}/moved.bin")
        # HdfsCLI: the same operations through its own client.
        cli.write(f"{base}/cli.txt", data=b"hello", overwrite=True)
        cli.write(f"{base}/cli.txt", data=b" world", append=True)
        assert lake.read(f"{d}/cli.txt") == b"hello world"
        with cli.read(f"{base}/cli.txt", offset=3, length=5) as reader:
            assert reader.read() == b"lo wo"
        with cli.read(f"{base}/w.bin") as reader:
            assert reader.read() == content
        assert cli.status(f"{base}/w.bin")["length"] == len(content)
        assert sorted(cli.list(base)) == ["cli.txt", "w.bin"]
        cli.makedirs(f"{base}/sub dir")
        cli.rename(f"{base}/cli.txt", f"{base}/sub dir/cli.txt")
        assert lake.read(f"{d}/sub dir/cli.txt") == b"hello world"
        cli.upload(f"{base}/uploaded.bin", str(local))
        assert lake.read(f"{d}/uploaded.bin") == content[:1000]
        assert cli.delete(f"{base}/sub dir", recursive=True)
        assert not lake.exists(f"{d}/sub dir/cli.txt")
    assert "Traceback" not in lake.log()


def test_a_file_changed_under_an_open_stream_cuts_it_without_a_traceback(lake: Lake) -> None:
    lake.write("changing.bin", os.urandom(8 << 20))
    with httpx.Client(base_url=f"http://{lake.worker.address}", timeout=60) as client:
        first = client.get("/webhdfs/v1" + lake.path("changing.bin"), params={"op": "OPEN"})
        with client.stream("GET", first.headers["location"]) as stream:
            chunks = stream.iter_bytes()
            received = len(next(chunks))
            lake.write("changing.bin", os.urandom(8 << 20))
            # The stream is pinned to the version it opened: cut short, never mixed bytes.
            with pytest.raises(httpx.RemoteProtocolError):
                for chunk in chunks:
                    received += len(chunk)
    assert received < 8 << 20
    log = lake.log()
    assert "answer cut short" in log and "changed during the read" in log
    assert "Traceback" not in log
    assert "without completing response" not in log  # the cut is told once, as a warning
