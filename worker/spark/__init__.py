"""Spark integration: the per-host sidecar worker, the ``dora`` data source, and per-file
processing through the cache. Importing the package does not import PySpark; the data source
modules do."""

from worker.spark.sidecar import SidecarError, WorkerInfo, ensure_worker, stop_worker

__all__ = ["SidecarError", "WorkerInfo", "ensure_worker", "stop_worker"]
