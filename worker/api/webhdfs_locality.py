"""Which host caches a file, for ``GETFILEBLOCKLOCATIONS``: the owner on the consistent hash ring
the ``dora`` clients route by, so that Spark runs a file's task on the host whose worker holds
its pages.

The ring is the cluster's when the worker runs in one (``dora.cluster.etcd.endpoints``: the live
workers in etcd, followed with a watch, as :class:`worker.common.clusterring.ClusterRing` does
for clients), else the static ``dora.user.workers`` list when one is configured (its default,
one local worker, is no list of the cluster's hosts). With neither, or while etcd lists no
worker and no static list is set, the answer is the worker that was asked.

``OPEN`` redirects its data step to the owner too (:meth:`Locality.live_owner`), so a task
reads from its own host's worker whichever worker its ``webhdfs://`` URL names — but only to
an owner etcd lists as live (its lease is current): a static list says nothing of who is up,
and a redirect to a dead worker would fail the read that the asked worker could serve.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from urllib.parse import urlsplit

from config import Config
from config.loader import Source
from worker.cluster.etcd import Etcd
from worker.cluster.layout import WorkerInfo
from worker.cluster.members import MembershipView
from worker.common import client_keys
from worker.common.credentials import Credentials
from worker.common.ring import HashRing
from worker.common.tls import PemFiles, etcd_files


def host_and_name(worker: str) -> tuple[str, str]:
    """``(host, host:port)`` for a worker named ``host:port`` or ``http(s)://host:port``."""
    parts = urlsplit(worker if "://" in worker else f"//{worker}")
    host = parts.hostname or worker
    return host, f"{host}:{parts.port}" if parts.port else host


class Locality:
    """Owners of URIs among the current members.

    Thread-safe: the membership view is built once under a lock (on first use, so a worker that
    is never asked for block locations opens no watch), and the ring is replaced, never mutated,
    when the member list changes. Without :meth:`close`, the view's watch thread lives as long
    as the process.
    """

    def __init__(
        self,
        static: Sequence[str],
        virtual_nodes: int,
        etcd_endpoints: Sequence[str] = (),
        cluster: str = "",
        etcd_timeout_s: float = 2.0,
        etcd_credentials: Credentials | None = None,
        etcd_tls: PemFiles | None = None,
    ) -> None:
        self._etcd_tls = etcd_tls
        self._static = tuple(dict.fromkeys(n.strip().rstrip("/") for n in static if n.strip()))
        self._virtual_nodes = virtual_nodes
        self._endpoints = tuple(etcd_endpoints)
        self._cluster = cluster
        self._timeout_s = etcd_timeout_s
        self._credentials = etcd_credentials
        self._lock = threading.Lock()
        self._etcd: Etcd | None = None
        self._view: MembershipView | None = None
        self._ring: HashRing | None = None

    @classmethod
    def from_config(cls, config: Config) -> Locality:
        given = config.setting(client_keys.USER_WORKERS).source is not Source.DEFAULT
        static: list[str] = config.get(client_keys.USER_WORKERS) if given else []
        endpoints: list[str] = config.get(client_keys.ETCD_ENDPOINTS)
        return cls(
            static,
            config.get(client_keys.USER_CLIENT_VIRTUAL_NODES),
            endpoints,
            config.get(client_keys.CLUSTER_NAME),
            config.get(client_keys.ETCD_TIMEOUT) / 1000,
            Credentials.from_config(config),
            etcd_files(config),
        )

    def owner(self, canonical_uri: str) -> tuple[str, str] | None:
        """``(host, host:port)`` of the worker that owns ``canonical_uri``, or None when no
        member is known (the caller answers itself)."""
        members = self._members()
        return host_and_name(self._ring_of(members).owner(canonical_uri)) if members else None

    def live_owner(self, canonical_uri: str) -> str | None:
        """``host:port`` of the owner of ``canonical_uri`` among the workers etcd lists as live,
        or None without a cluster or with none listed."""
        live = self._membership().names() if self._endpoints else ()
        return self._ring_of(live).owner(canonical_uri) if live else None

    def live_member(self, canonical_uri: str) -> WorkerInfo | None:
        """The entry of the owner of ``canonical_uri`` among the live workers (its S3 endpoint
        with it), or None without a cluster or with none listed."""
        owner = self.live_owner(canonical_uri)
        return None if owner is None else self._membership().member(owner)

    def _ring_of(self, members: tuple[str, ...]) -> HashRing:
        ring = self._ring
        if ring is None or ring.workers != members:
            ring = self._ring = HashRing(members, self._virtual_nodes)
        return ring

    def _members(self) -> tuple[str, ...]:
        if self._endpoints:
            live = self._membership().names()
            if live:
                return live
        return self._static

    def _membership(self) -> MembershipView:
        with self._lock:
            if self._view is None:
                self._etcd = Etcd(
                    self._endpoints, self._timeout_s, self._credentials, self._etcd_tls
                )
                self._view = MembershipView(
                    self._etcd, self._cluster, idle_timeout_s=5 * self._timeout_s
                ).start()
            return self._view

    def close(self) -> None:
        """Stop following the membership (a worker that lives as long as its process need not
        call it). Idempotent."""
        with self._lock:
            view, etcd, self._view, self._etcd = self._view, self._etcd, None, None
        if view is not None:
            view.close()
        if etcd is not None:
            etcd.close()
