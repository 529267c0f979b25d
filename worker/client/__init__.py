"""The ``dora`` fsspec filesystem: a client of doracache workers (see DESIGN.md)."""

from worker.client.errors import DoraError, VersionMismatch, WorkerUnavailable
from worker.client.filesystem import DoraFileSystem
from worker.client.stats import ClientStats

__all__ = ["ClientStats", "DoraError", "DoraFileSystem", "VersionMismatch", "WorkerUnavailable"]
