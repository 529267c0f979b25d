"""Worker processes joined through one real etcd, for the cluster integration tests."""

from pathlib import Path

from tests.integration.harness import WorkerProcess
from worker.devlab.local.etcd import LocalEtcd
from worker.devlab.local.s3 import free_port

LEASE_TTL_S = 3


class ClusterWorker(WorkerProcess):
    """A cluster member: a worker on a fixed port (so a restart is the same member), sync
    interval -1 (only the feed, never a timer, makes it re-check), a short lease; started by
    :meth:`start`."""

    def __init__(self, work: Path, data: Path, etcd: LocalEtcd, *defines: str) -> None:
        super().__init__(
            work,
            f"dora.worker.ufs.roots=file://{data}",
            f"dora.cluster.etcd.endpoints={etcd.endpoint}",
            f"dora.cluster.lease.ttl={LEASE_TTL_S}s",
            "dora.cluster.etcd.timeout=1s",
            "dora.user.file.metadata.sync.interval=-1",
            "dora.worker.metastore.flush.interval=50ms",
            *defines,
            port=free_port(),
            start=False,
        )
