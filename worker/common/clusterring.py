"""The hash ring a client routes by: the live workers in etcd, followed with a watch, when the
cluster is configured; the static ``dora.user.workers`` list otherwise, and as the last resort
when etcd has never answered or lists no worker."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from worker.common.forksafe import ProcessLocal
from worker.common.ring import HashRing

if TYPE_CHECKING:
    from worker.cluster.etcd import Etcd
    from worker.cluster.members import MembershipView
    from worker.common.credentials import Credentials
    from worker.common.tls import PemFiles

log = logging.getLogger(__name__)


class ClusterRing:
    """Builds the current :class:`HashRing`: from a :class:`MembershipView` (rebuilt only when
    the membership changed) or from the static names.

    Thread-safe: the ring is replaced, never mutated; rebuilding and closing are guarded by a
    lock. Fork-safe: the view (its etcd connection and watch thread) is built per process, on
    first use. :meth:`close` stops following etcd: a client that outlives its cluster (a test
    lab's) would otherwise go on retrying it, and say so in the log, for the rest of the process.
    """

    def __init__(
        self,
        static_names: Sequence[str],
        virtual_nodes: int,
        etcd_endpoints: Sequence[str] = (),
        cluster: str = "",
        etcd_timeout_s: float = 2.0,
        etcd_credentials: Credentials | None = None,
        etcd_tls: PemFiles | None = None,
        follow: Callable[[], tuple[Etcd, MembershipView]] | None = None,
    ) -> None:
        """``follow`` starts following the membership over an etcd client of the caller's
        (a worker's ``worker.cluster.view.ClusterView`` shares its own); by default the ring
        opens one of its own, from the endpoints and credentials given."""
        self._virtual_nodes = virtual_nodes
        self._static = HashRing(static_names, virtual_nodes)
        self._endpoints = tuple(etcd_endpoints)
        self._cluster = cluster
        self._timeout_s = etcd_timeout_s
        self._credentials = etcd_credentials
        self._etcd_tls = etcd_tls
        self._view = ProcessLocal(follow or self._build_view) if self._endpoints else None
        self._lock = threading.Lock()
        self._built: tuple[int, HashRing] | None = None
        self._fell_back = False
        self._closed = False

    def _build_view(self) -> tuple[Etcd, MembershipView]:
        # The etcd client (requests, etcd3gw) only for a client that has a cluster to follow.
        from worker.cluster.etcd import Etcd
        from worker.cluster.members import MembershipView

        etcd = Etcd(self._endpoints, self._timeout_s, self._credentials, self._etcd_tls)
        view = MembershipView(etcd, self._cluster, idle_timeout_s=5 * self._timeout_s)
        return etcd, view.start()

    @property
    def dynamic(self) -> bool:
        return self._view is not None

    def current(self) -> HashRing:
        """The ring to route by now: :meth:`live`, else the static one (and once closed)."""
        if self._view is None or self._closed:
            return self._static
        ring = self.live()
        if ring is not None:
            self._fell_back = False
            return ring
        if not self._closed and not self._fell_back:
            view = self._view.get()[1]
            log.warning(
                "dora: no live worker in etcd cluster %s (%s); using dora.user.workers",
                self._cluster,
                "etcd unreachable" if not view.listed else "none registered",
            )
        self._fell_back = True
        return self._static

    def live(self) -> HashRing | None:
        """The ring of the workers etcd lists as live (rebuilt only when they change); None
        without a cluster, once closed, or while etcd lists none (or has never answered)."""
        if self._view is None or self._closed:
            return None
        view = self._view.get()[1]
        if self._closed:
            self.close()  # closed while the view was being built: it is closed now too
            return None
        built = self._built
        if built is not None and built[0] == view.generation:
            return built[1]
        with self._lock:
            names = view.names()
            if not names:
                return None
            ring = HashRing(names, self._virtual_nodes)
            self._built = (view.generation, ring)
            return ring

    def close(self) -> None:
        """Stop following etcd (the watch and its connection, in this process); the ring is the
        static one from then on. Idempotent."""
        with self._lock:
            self._closed = True
            following = None if self._view is None else self._view.peek()
        if following is not None:
            etcd, view = following
            view.close()
            etcd.close()

    def url(self, name: str) -> str | None:
        """The base URL etcd has for the worker ``name`` (None: not a live worker there)."""
        following = None if self._view is None else self._view.peek()
        return None if following is None else following[1].url(name)

    @property
    def etcd_available(self) -> bool | None:
        """Whether the ring follows etcd right now (None without a cluster)."""
        if self._view is None:
            return None
        following = self._view.peek()
        return following is not None and following[1].available
