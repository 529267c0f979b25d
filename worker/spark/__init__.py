"""Spark integration: the per-host sidecar worker, the ``dora`` data source, and per-file
processing through the cache. Importing the package does not import PySpark; the data source
modules do."""

from worker.spark.sidecar import RunningWorker, SidecarError, ensure_worker, stop_worker

__all__ = ["RunningWorker", "SidecarError", "ensure_worker", "stop_worker"]
