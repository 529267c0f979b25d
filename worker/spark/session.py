"""A quiet local SparkSession with the ``dora`` data source registered (for the demo, the tests
and notebooks)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from pagestore import modes
from worker.spark import jvmguard, procs

# Spark logs WARN lines about native libraries and such at start; the demo's output is a table.
_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def local_session(
    cores: int = 2,
    app_name: str = "doracache",
    conf: dict[str, str] | None = None,
    progress: bool = True,
    master: str | None = None,
) -> Any:
    """A ``local[cores]`` SparkSession (or one on ``master``, such as
    ``local-cluster[2,1,1024]``) with the ``dora`` data source registered.

    Executors' Python is this interpreter (``PYSPARK_PYTHON`` must be set before the session
    exists, or Spark picks whatever ``python3`` is on PATH, without our packages). The JVM
    pyspark starts for it dies with this process, however it ends (:mod:`.jvmguard`).
    """
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from worker.spark.datasource import register

    conf = dict(conf or {})
    java_options = conf.get("spark.driver.extraJavaOptions")
    _jvm_with_class_path(conf.get("spark.driver.extraClassPath"), _truststore(java_options))
    logging_option = f"-Dlog4j2.configurationFile=file:{log_config()}"
    conf["spark.driver.extraJavaOptions"] = f"{logging_option} {java_options or ''}".strip()
    builder = (
        SparkSession.builder.master(master or f"local[{cores}]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", str(progress).lower())
        .config("spark.sql.shuffle.partitions", str(2 * cores))
        .config("spark.sql.session.timeZone", "UTC")
        # Lets the dora source take Spark's filters (its filterPushdown option).
        .config("spark.sql.python.filterPushdown.enabled", "true")
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    # None when pyspark attached to a gateway it did not start (PYSPARK_GATEWAY_PORT).
    gateway_process = getattr(spark.sparkContext._gateway, "proc", None)
    if gateway_process is not None:
        jvmguard.guard(gateway_process.pid)
    register(spark)
    return spark


def log_config() -> Path:
    """The driver JVM's logging configuration, written now (the user's only: the umask may be
    000, and a configuration another user could rewrite would decide what the JVM logs)."""
    path = Path(tempfile.gettempdir()) / f"doracache-log4j2-{os.getuid()}.properties"
    modes.write_file(path, _LOG4J2.encode(), modes.PRIVATE_FILE)
    return path


def _truststore(java_options: str | None) -> str | None:
    """The ``javax.net.ssl.trustStore`` that JVM options set, if any."""
    for option in (java_options or "").split():
        if option.startswith(_TRUSTSTORE):
            return option[len(_TRUSTSTORE) :]
    return None


_TRUSTSTORE = "-Djavax.net.ssl.trustStore="


def _jvm_with_class_path(wanted: str | None, truststore: str | None = None) -> None:
    """A driver class path (such as :func:`worker.spark.webhdfs.spark_conf`'s jar) and a
    truststore take effect only in a JVM that starts with them, and pyspark keeps the JVM of a
    stopped session for the next one: a JVM this process started without ``wanted`` (or with
    another ``truststore``) is stopped (by PID), so the new session starts its own. Raises
    ValueError while a session runs in it."""
    from pyspark import SparkContext

    gateway, jvm = SparkContext._gateway, SparkContext._jvm
    if not (wanted or truststore) or gateway is None or jvm is None:
        return
    system = jvm.java.lang.System
    has_path = not wanted or wanted in str(system.getProperty("java.class.path")).split(os.pathsep)
    if has_path and (
        not truststore or system.getProperty("javax.net.ssl.trustStore") == truststore
    ):
        return
    if SparkContext._active_spark_context is not None:
        raise ValueError(
            f"a SparkSession runs in this process without {wanted or truststore} in its JVM: "
            "stop it"
        )
    process = getattr(gateway, "proc", None)
    gateway.shutdown()
    SparkContext._gateway = None
    SparkContext._jvm = None
    if process is not None:
        procs.terminate(process.pid, timeout=10.0)
        process.wait()
