"""Spark's own readers through the cache: ``webhdfs://`` URLs for UFS URIs (``swebhdfs://``
for a worker over TLS), and the Hadoop settings that let ``WebHdfsFileSystem`` and
``SWebHdfsFileSystem`` (inside pyspark's jars) authenticate to a worker and trust it.

    conf = spark_conf("127.0.0.1:28080", token)            # session settings
    spark.read.parquet(webhdfs_url("127.0.0.1:28080", "s3://bucket/trips"))

    conf = spark_conf("w1:28080", token, ca_file="/etc/dora/ca.pem")     # over TLS
    spark.read.parquet(webhdfs_url("w1:28080", "s3://bucket/trips", secure=True))

The token reaches the worker as ``Authorization: Bearer``: Hadoop's OAuth2 support fetches it
from the worker's token endpoint with the token as client secret (the only way to make the
stock client send a header; its ``delegation=`` parameter needs Kerberos-era token plumbing).
Importing this module imports neither PySpark nor FastAPI.
"""

from __future__ import annotations

from typing import Any

from ufs import uri as uris
from worker.api.webhdfs_paths import TOKEN_PATH, path_of
from worker.spark import hadoopjar, truststore

SCHEME = "webhdfs"
SECURE_SCHEME = "swebhdfs"
_PROVIDER = "org.apache.hadoop.hdfs.web.oauth2.ConfCredentialBasedAccessTokenProvider"


def webhdfs_url(address: str, uri: str, secure: bool = False) -> str:
    """``webhdfs://<address>/<scheme>/<rest>`` for a UFS URI and a worker's ``host:port``
    (``swebhdfs://`` with ``secure``: the worker serves TLS)."""
    return f"{SECURE_SCHEME if secure else SCHEME}://{address}{path_of(uris.normalize(uri))}"


# WebHdfsFileSystem has no vectored reads, so Parquet's vectored path falls back to one
# positioned read per column chunk, and every positioned read is a new HTTP request that the
# worker answers by streaming to the end of the file. With it off, Parquet reads each row
# group's consecutive column chunks in one read: the demo's scan made 119 requests instead of
# 227 (bench/RESULTS.md, "Spark through the cache").
READS = {"parquet.hadoop.vectored.io.enabled": "false"}


def hadoop_conf(address: str, token: str | None, secure: bool = False) -> dict[str, str]:
    """Hadoop settings for reading from a worker at ``host:port`` that wants ``token`` (over
    TLS with ``secure``): how Parquet should read over WebHDFS, and the token's OAuth2
    settings (none without one)."""
    if not token:
        return dict(READS)
    return {
        **READS,
        "dfs.webhdfs.oauth2.enabled": "true",
        "dfs.webhdfs.oauth2.access.token.provider": _PROVIDER,
        "dfs.webhdfs.oauth2.client.id": "dora",
        "dfs.webhdfs.oauth2.credential": token,
        "dfs.webhdfs.oauth2.refresh.url": f"{'https' if secure else 'http'}://{address}{TOKEN_PATH}",
    }


def spark_conf(
    address: str, token: str | None, short_circuit: bool = True, ca_file: str | None = None
) -> dict[str, str]:
    """:func:`hadoop_conf` as Spark session settings (``spark.hadoop.`` prefixed), and, with
    ``short_circuit`` and where the machine can build it (:mod:`worker.spark.hadoopjar`), the
    JVM client that reads cached pages straight from the worker's page files when it runs on
    the worker's host (``webhdfs://`` URLs stay as they are).

    With ``ca_file`` (a PEM CA bundle) the worker is reached over TLS (``swebhdfs://`` URLs):
    the JVMs trust a truststore made from it (:mod:`worker.spark.truststore`). The driver
    reads it where it was made; executors get it through ``spark.files`` (into their working
    directory, before their first task), so this setting replaces a ``spark.files`` of the
    caller's, and ``spark.*.extraJavaOptions`` too."""
    secure = ca_file is not None
    settings = hadoop_conf(address, token, secure)
    conf = {f"spark.hadoop.{key}": value for key, value in settings.items()}
    if ca_file is not None:
        store = truststore.truststore(ca_file)
        conf["spark.driver.extraJavaOptions"] = truststore.java_options(ca_file, str(store))
        conf["spark.executor.extraJavaOptions"] = truststore.java_options(ca_file, store.name)
        conf["spark.files"] = str(store)
    jar = hadoopjar.jar_path() if short_circuit else None
    if jar is not None:
        # On the system class path of the driver and of every executor JVM from their start
        # (the sidecar case: executors on the worker's host see the same path), which every
        # class loader Hadoop resolves fs.webhdfs.impl with can see, and so can py4j.
        conf["spark.driver.extraClassPath"] = str(jar)
        conf["spark.executor.extraClassPath"] = str(jar)
        conf["spark.hadoop.fs.webhdfs.impl"] = hadoopjar.CLASS
    return conf


def short_circuit_bytes(spark: Any) -> int:
    """The bytes this Spark session's driver JVM read straight from page files (the JVM
    client's counter; executors in JVMs of their own count theirs); 0 without the client."""
    from py4j.protocol import Py4JError

    try:
        counters = spark._jvm.org.doracache.hadoop.DoraWebHdfsFileSystem.counters()
    except Py4JError:
        return 0
    return int(counters["short_circuit_bytes"])
