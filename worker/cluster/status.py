"""A snapshot of a cluster as etcd holds it: every member that ever joined, which are live,
how far each has applied the feed, and the feed's newest revision."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any

from config.units import format_size
from worker.cluster import entries, layout
from worker.cluster.entries import BadEntry
from worker.cluster.etcd import Etcd
from worker.cluster.layout import WorkerInfo
from worker.cluster.members import decode_members


@dataclass(frozen=True)
class MemberStatus:
    """One member: ``applied`` is None for a worker that has not reported (or is offline);
    ``lag`` is how many feed revisions it is behind the newest."""

    id: str
    info: WorkerInfo
    online: bool
    applied: int | None
    lag: int | None


@dataclass(frozen=True)
class ClusterStatus:
    name: str
    feed_revision: int
    members: tuple[MemberStatus, ...]

    def to_dict(self) -> dict[str, Any]:
        """The snapshot as JSON (``dora cluster ls --json``, ``/v1/cluster``)."""
        return {
            "cluster": self.name,
            "feed_revision": self.feed_revision,
            "workers": [
                {
                    "id": m.id,
                    "address": m.info.name,
                    "url": m.info.url,
                    "online": m.online,
                    "applied_revision": m.applied,
                    "lag": m.lag,
                    "capacity_bytes": m.info.capacity_bytes,
                    "started_ms": m.info.started_ms,
                }
                for m in self.members
            ],
        }


def cluster_status(etcd: Etcd, cluster: str) -> ClusterStatus:
    """Read the snapshot. Raises EtcdUnavailable / EtcdError."""
    _, authorized = etcd.get_prefix(layout.authorized_prefix(cluster))
    _, live = etcd.get_prefix(layout.live_prefix(cluster))
    _, applied = etcd.get_prefix(layout.applied_prefix(cluster))
    feed = etcd.get(layout.feed_key(cluster))
    feed_revision = feed.mod_revision if feed is not None else 0
    online = decode_members(live)
    everyone = {**decode_members(authorized), **online}
    positions = {}
    for kv in applied:
        # A position that does not decode shows as "-", as for a worker that has not reported.
        with contextlib.suppress(BadEntry):
            positions[kv.key.rsplit("/", 1)[-1]] = entries.decimal(kv.value, "applied revision")
    members = []
    for member_id, info in sorted(everyone.items(), key=lambda item: item[1].name):
        position = positions.get(member_id) if member_id in online else None
        lag = None if position is None else max(0, feed_revision - position)
        members.append(MemberStatus(member_id, info, member_id in online, position, lag))
    return ClusterStatus(cluster, feed_revision, tuple(members))


def format_table(status: ClusterStatus) -> str:
    """The snapshot as ``dora cluster ls`` prints it: a summary line, then one row a worker."""
    rows = [("WORKER", "ADDRESS", "STATUS", "APPLIED", "LAG", "CAPACITY", "STARTED")]
    for m in status.members:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(m.info.started_ms / 1000))
        rows.append(
            (
                m.id[:12],
                m.info.name,
                "ONLINE" if m.online else "OFFLINE",
                "-" if m.applied is None else str(m.applied),
                "-" if m.lag is None else str(m.lag),
                format_size(m.info.capacity_bytes),
                started,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    online = sum(m.online for m in status.members)
    summary = (
        f"cluster {status.name}: {online} of {len(status.members)} workers online, "
        f"feed at revision {status.feed_revision}"
    )
    return "\n".join([summary, *(line.rstrip() for line in lines)])
