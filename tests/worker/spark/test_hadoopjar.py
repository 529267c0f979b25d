"""The JVM short-circuit client's jar: built with the machine's javac against pyspark's jars,
once per source version, and its XXH3-64 equal to the Python ``xxhash`` package's (the page
files' checksums) in every length class."""

import os
import subprocess
import tempfile
import zipfile
from pathlib import Path

import pytest
import xxhash

from tests.conftest import writable_by_others
from tests.worker.tls.certs import CA
from worker.spark import hadoopjar
from worker.spark.session import log_config
from worker.spark.truststore import truststore
from worker.spark.webhdfs import spark_conf

# Calls the package-private hash on (offset, length) spans of a file, one digest per line.
HARNESS = """
package org.doracache.hadoop;

public final class HashSpans {
    public static void main(String[] args) throws Exception {
        byte[] data = java.nio.file.Files.readAllBytes(java.nio.file.Paths.get(args[0]));
        StringBuilder out = new StringBuilder();
        for (int i = 1; i < args.length; i++) {
            String[] span = args[i].split(":");
            long digest = Xxh3.hash(data, Integer.parseInt(span[0]), Integer.parseInt(span[1]));
            out.append(Long.toUnsignedString(digest)).append('\\n');
        }
        System.out.print(out);
    }
}
"""


@pytest.fixture(scope="module")
def jar() -> Path:
    built = hadoopjar.jar_path()
    assert built is not None, "no javac or no pyspark: make installs both"
    return built


def test_the_jar_is_built_once_and_holds_the_file_system(jar: Path) -> None:
    assert hadoopjar.jar_path() == jar
    with zipfile.ZipFile(jar) as opened:
        assert "org/doracache/hadoop/DoraWebHdfsFileSystem.class" in opened.namelist()
    conf = spark_conf("127.0.0.1:1", None)
    assert conf["spark.hadoop.fs.webhdfs.impl"] == hadoopjar.CLASS
    assert conf["spark.executor.extraClassPath"] == str(jar)
    assert "spark.hadoop.fs.webhdfs.impl" not in spark_conf("127.0.0.1:1", None, False)


def test_xxh3_matches_the_python_package_in_every_length_class(jar: Path, tmp_path: Path) -> None:
    source = tmp_path / "org" / "doracache" / "hadoop" / "HashSpans.java"
    source.parent.mkdir(parents=True)
    source.write_text(HARNESS)
    javac = hadoopjar.javac()
    assert javac is not None
    subprocess.run([javac, "-cp", str(jar), "-d", str(tmp_path), str(source)], check=True)
    data = os.urandom(3 << 20)
    (tmp_path / "data").write_bytes(data)
    # 0, 1-3, 4-8, 9-16, 17-128, 129-240 and the long path around its 1,024-byte blocks,
    # at an odd offset too, a page file's 16 KiB blocks and a whole page.
    spans = [(0, n) for n in range(0, 300)] + [(7, n) for n in range(0, 300, 7)]
    spans += [(0, n) for n in (1023, 1024, 1025, 2048, 16383, 16384, 16385, 1 << 20)]
    spans += [(5, 1 << 20), (1, 3 << 19)]
    classpath = os.pathsep.join([str(tmp_path), str(jar)])
    done = subprocess.run(
        [str(Path(javac).with_name("java")), "-cp", classpath, "org.doracache.hadoop.HashSpans"]
        + [str(tmp_path / "data")]
        + [f"{offset}:{length}" for offset, length in spans],
        capture_output=True,
        text=True,
        check=True,
    )
    digests = [int(line) for line in done.stdout.split()]
    expected = [xxhash.xxh3_64_intdigest(data[o : o + n]) for o, n in spans]
    assert digests == expected


def test_the_jar_truststore_and_log_configuration_are_writable_by_no_one_else_under_umask_000(
    umask_000: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36 item 2: made under umask 000 they were 0666 (and their directories 0777), so
    another user could plant a class, a CA or a logging configuration the JVM would load."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir(mode=0o700)
    built = hadoopjar.jar_path()
    assert built is not None and built.is_relative_to(tmp_path / "cache")
    store = truststore(CA(tmp_path / "ca").file)
    config = log_config()
    assert store.is_file() and config.is_file()
    assert writable_by_others(tmp_path / "cache") == []
    assert writable_by_others(tmp_path / "tmp") == []
