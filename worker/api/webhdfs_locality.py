"""Which host caches a file: the owner on the same consistent hash ring the ``dora`` clients use,
over the workers a members function names (``dora.user.workers`` today; a membership service can
feed the same function later). ``GETFILEBLOCKLOCATIONS`` answers it so that Spark runs a file's
task on the host whose worker holds its pages.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

from worker.client.ring import HashRing

Members = Callable[[], Sequence[str]]


def host_and_name(worker: str) -> tuple[str, str]:
    """``(host, host:port)`` for a worker named ``host:port`` or ``http(s)://host:port``."""
    parts = urlsplit(worker if "://" in worker else f"//{worker}")
    host = parts.hostname or worker
    return host, f"{host}:{parts.port}" if parts.port else host


class Locality:
    """Owners of URIs among the current members. Thread-safe: the ring is rebuilt under a lock
    when the member list changes, and a ring is immutable."""

    def __init__(self, members: Members, virtual_nodes: int) -> None:
        self._members = members
        self._virtual_nodes = virtual_nodes
        self._lock = threading.Lock()
        self._ring: HashRing | None = None

    def owner(self, canonical_uri: str) -> tuple[str, str] | None:
        """``(host, host:port)`` of the worker that owns ``canonical_uri``, or None when there
        are no members."""
        ring = self._current()
        return None if ring is None else host_and_name(ring.owner(canonical_uri))

    def _current(self) -> HashRing | None:
        members = tuple(dict.fromkeys(m.strip() for m in self._members() if m.strip()))
        with self._lock:
            if not members:
                return None
            if self._ring is None or self._ring.workers != members:
                self._ring = HashRing(members, self._virtual_nodes)
            return self._ring
