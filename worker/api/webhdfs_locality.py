"""Which host caches a file, for ``GETFILEBLOCKLOCATIONS``: the owner on the consistent hash ring
the ``dora`` clients route by, so that Spark runs a file's task on the host whose worker holds
its pages. The service names the owner (``WorkerService.owner_of``, from the worker's one
cluster view, ``worker.cluster.view.ClusterView``); this module turns the worker's name into the
host a block location names.

``OPEN`` redirects its data step to the owner too, so a task reads from its own host's worker
whichever worker its ``webhdfs://`` URL names — but only to an owner etcd lists as live (its
lease is current): a static list says nothing of who is up, and a redirect to a dead worker
would fail the read that the asked worker could serve.
"""

from __future__ import annotations

from urllib.parse import urlsplit


def host_and_name(worker: str) -> tuple[str, str]:
    """``(host, host:port)`` for a worker named ``host:port`` or ``http(s)://host:port``."""
    parts = urlsplit(worker if "://" in worker else f"//{worker}")
    host = parts.hostname or worker
    return host, f"{host}:{parts.port}" if parts.port else host
