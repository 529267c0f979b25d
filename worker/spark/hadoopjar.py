"""The JVM half of Spark's short-circuit reads, ``org.doracache.hadoop.DoraWebHdfsFileSystem``
(sources in ``worker/spark/java``): Hadoop's ``WebHdfsFileSystem`` that reads cached pages
straight from the worker's page files on the worker's host, checking their XXH3-64 block
checksums, and over WebHDFS otherwise.

There is no Maven registry to fetch it from, so it is compiled on first use with the machine's
``javac`` against pyspark's own Hadoop jars, into a jar in the user's cache directory named by a
hash of the sources and of those jars' names (a change to either builds a new one). Without a
``javac`` (a JRE only) there is no jar, and Spark reads through the stock client.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from pagestore import modes

CLASS = "org.doracache.hadoop.DoraWebHdfsFileSystem"
SOURCES = Path(__file__).with_name("java")
# What the sources compile against, from pyspark's jars.
_COMPILE_JARS = ("hadoop-client-api-*.jar", "hadoop-client-runtime-*.jar", "slf4j-api-*.jar")
_COMPILE_TIMEOUT_S = 300

log = logging.getLogger(__name__)


def javac() -> str | None:
    """The Java compiler: ``$JAVA_HOME/bin/javac``, else the one on the PATH; None without."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(Path(home, "bin", "javac"), os.X_OK):
        return str(Path(home, "bin", "javac"))
    return shutil.which("javac")


def pyspark_jars() -> Path | None:
    """pyspark's ``jars`` directory, or None when pyspark is not installed."""
    try:
        import pyspark
    except ImportError:
        return None
    return Path(pyspark.__file__).parent / "jars"


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base, "doracache")


def jar_path() -> Path | None:
    """The built jar (built now if missing), or None when it cannot be built here (no javac
    or no pyspark; logged). Raises RuntimeError when javac rejects the sources."""
    compiler, jars = javac(), pyspark_jars()
    if compiler is None or jars is None:
        log.info("no %s: Spark reads over WebHDFS only", "javac" if jars else "pyspark")
        return None
    classpath = sorted(str(p) for pattern in _COMPILE_JARS for p in jars.glob(pattern))
    sources = sorted(SOURCES.rglob("*.java"))
    digest = hashlib.sha256()
    for jar in classpath:
        digest.update(Path(jar).name.encode())
    for source in sources:
        digest.update(source.read_bytes())
    target = cache_dir() / f"doracache-hadoop-{digest.hexdigest()[:16]}.jar"
    if not target.exists():
        _build(compiler, classpath, sources, target)
    return target


def _build(compiler: str, classpath: list[str], sources: list[Path], target: Path) -> None:
    """Compile into a temporary directory and move the jar into place in one rename, so that
    processes building at once never see half a jar."""
    modes.make_dirs(target.parent, modes.PUBLIC_DIR)
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        classes = Path(work, "classes")
        command = [compiler, "--release", "17", "-Xlint:all", "-Werror", "-encoding", "UTF-8"]
        command += ["-cp", os.pathsep.join(classpath), "-d", str(classes), *map(str, sources)]
        done = subprocess.run(
            command, check=False, capture_output=True, text=True, timeout=_COMPILE_TIMEOUT_S
        )
        if done.returncode != 0:
            raise RuntimeError(f"javac failed on {SOURCES}:\n{done.stdout}{done.stderr}")
        built = Path(work, target.name)
        with zipfile.ZipFile(built, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
            for path in sorted(classes.rglob("*.class")):
                jar.write(path, path.relative_to(classes).as_posix())
        os.chmod(built, modes.PUBLIC_FILE)  # zipfile's mode is the umask's
        os.replace(built, target)
