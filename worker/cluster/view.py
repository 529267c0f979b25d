"""The cluster as one worker process (or one ``dora`` command) sees it, over one long-lived
etcd client: the status snapshot ``/v1/cluster`` and ``dora cluster ls`` show, and the owners
of URIs that WebHDFS locality names (``GETFILEBLOCKLOCATIONS``, ``OPEN``'s redirect).

Owners come from the hash ring the ``dora`` clients route by
(:class:`worker.common.clusterring.ClusterRing`, here over this view's etcd client): the live
workers etcd lists when the worker runs in a cluster (``dora.cluster.etcd.endpoints``), else
the static ``dora.user.workers`` list when one is configured (its default, one local worker,
is no list of the cluster's hosts). With neither, or while etcd lists no worker and no static
list is set, there is no owner and the worker that was asked answers.
"""

from __future__ import annotations

from collections.abc import Sequence

from config import Config
from config.loader import Source
from worker.cluster.etcd import Etcd
from worker.cluster.layout import WorkerInfo
from worker.cluster.members import MembershipView
from worker.cluster.status import ClusterStatus, cluster_status
from worker.common import client_keys
from worker.common.clusterring import ClusterRing
from worker.common.ring import HashRing


class NoCluster(Exception):
    """The view has no etcd to ask: ``dora.cluster.etcd.endpoints`` is not set."""


class ClusterView:
    """One etcd client for everything a worker asks of its cluster, closed with the worker.

    Thread-safe: the etcd client is, the ring is built once (its membership watch starts on
    first use, so a worker never asked for an owner opens none) and replaced, never mutated.
    """

    def __init__(
        self,
        etcd: Etcd | None,
        cluster: str,
        static: Sequence[str],
        virtual_nodes: int,
    ) -> None:
        self.etcd = etcd
        self.cluster = cluster
        names = tuple(dict.fromkeys(n.strip().rstrip("/") for n in static if n.strip()))
        self._static = HashRing(names, virtual_nodes) if names else None
        self._ring: ClusterRing | None = None
        self._members: MembershipView | None = None
        if etcd is not None:
            idle_s = 5 * etcd.timeout_s

            def follow() -> tuple[Etcd, MembershipView]:
                self._members = MembershipView(etcd, cluster, idle_s).start()
                return etcd, self._members

            self._ring = ClusterRing(
                # The ring's own fallback is not used (owner() falls back to _static, which
                # may be empty); it needs one name.
                names or ("-",),
                virtual_nodes,
                etcd.endpoints,
                cluster,
                follow=follow,
            )

    @classmethod
    def from_config(cls, config: Config) -> ClusterView:
        """The view ``dora.cluster.*`` and ``dora.user.workers`` (when set) describe."""
        endpoints: list[str] = config.get(client_keys.ETCD_ENDPOINTS)
        given = config.setting(client_keys.USER_WORKERS).source is not Source.DEFAULT
        static: list[str] = config.get(client_keys.USER_WORKERS) if given else []
        return cls(
            Etcd.from_config(config) if endpoints else None,
            config.get(client_keys.CLUSTER_NAME),
            static,
            config.get(client_keys.USER_CLIENT_VIRTUAL_NODES),
        )

    @property
    def endpoints(self) -> tuple[str, ...]:
        """etcd's endpoints (none outside a cluster)."""
        return () if self.etcd is None else self.etcd.endpoints

    def status(self) -> ClusterStatus:
        """The cluster's members as etcd holds them now. Raises NoCluster, and
        EtcdUnavailable / EtcdError when etcd does not answer."""
        if self.etcd is None:
            raise NoCluster(f"{client_keys.ETCD_ENDPOINTS.name} is not set: there is no cluster")
        return cluster_status(self.etcd, self.cluster)

    def owner(self, canonical_uri: str) -> str | None:
        """``host:port`` of the worker that owns ``canonical_uri``: among the live workers,
        else the static list; None when neither names one (the caller answers itself)."""
        ring = self._live() or self._static
        return None if ring is None else ring.owner(canonical_uri)

    def live_owner(self, canonical_uri: str) -> str | None:
        """``host:port`` of the owner of ``canonical_uri`` among the workers etcd lists as
        live (a static list says nothing of who is up), or None without a cluster or with none
        listed."""
        ring = self._live()
        return None if ring is None else ring.owner(canonical_uri)

    def live_member(self, canonical_uri: str) -> WorkerInfo | None:
        """The entry etcd holds for :meth:`live_owner` (its S3 endpoint with it), or None."""
        owner = self.live_owner(canonical_uri)
        members = self._members
        return None if owner is None or members is None else members.member(owner)

    def _live(self) -> HashRing | None:
        return None if self._ring is None else self._ring.live()

    def close(self) -> None:
        """Stop following the membership and close the etcd client. Idempotent."""
        if self._ring is not None:
            self._ring.close()
        if self.etcd is not None:
            self.etcd.close()
