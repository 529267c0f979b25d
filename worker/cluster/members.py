"""Membership: a worker registers under a lease and keeps it alive; clients follow the live
entries with a watch and keep the last set they saw while etcd is unreachable."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from worker.cluster import layout
from worker.cluster.entries import BadEntry
from worker.cluster.etcd import (
    Compacted,
    Etcd,
    EtcdError,
    EtcdUnavailable,
    KeyValue,
    WatchReply,
    WatchStream,
)
from worker.cluster.layout import WorkerInfo

log = logging.getLogger(__name__)

RETRY_S = 1.0


class Registration:
    """Keeps one worker's entries in etcd: the live entry and its applied revision under a lease
    renewed every third of its TTL, the permanent entry once. A lease etcd no longer knows (an
    outage longer than the TTL) is replaced by a new one, once the worker has applied the feed
    up to its newest write (so it rejoins the ring caught up). :meth:`close` revokes the lease,
    so the worker leaves the ring at once.

    Thread-safe: one keep-alive thread does every etcd call after :meth:`start`.
    """

    def __init__(
        self,
        etcd: Etcd,
        cluster: str,
        info: WorkerInfo,
        ttl_s: int,
        applied: Callable[[], int],
    ) -> None:
        self._etcd = etcd
        self._cluster = cluster
        self.info = info
        self._ttl_s = ttl_s
        self._applied = applied
        self._lease = 0
        self._reported = -1
        self._stop = threading.Event()
        self.registered = False
        self._waiting = False  # for the feed to be applied before (re)joining; said once
        self._thread = threading.Thread(target=self._run, name="dora-membership", daemon=True)

    @property
    def live_key(self) -> str:
        return layout.live_prefix(self._cluster) + self.info.id

    def start(self) -> None:
        """Register now if etcd answers (otherwise keep trying in the background)."""
        self._step()
        self._thread.start()

    def _register(self) -> None:
        value = self.info.encode()
        lease = self._etcd.grant(self._ttl_s)
        self._etcd.put(self.live_key, value, lease)
        self._etcd.put(layout.authorized_prefix(self._cluster) + self.info.id, value)
        self._lease, self._reported = lease, -1
        log.info("etcd: worker %s (%s) registered, lease ttl %ds",
                 self.info.id, self.info.name, self._ttl_s)  # fmt: skip

    def _feed_applied(self) -> bool:
        """Whether this worker has applied the feed up to its newest write. Only then does it
        join the ring (again): a caller routed to a worker back from a partition must not be
        served what the feed has since invalidated."""
        feed = self._etcd.get(layout.feed_key(self._cluster))
        return feed is None or self._applied() >= feed.mod_revision

    def _step(self) -> None:
        try:
            if not self._lease or self._etcd.keepalive(self._lease) <= 0:
                if not self._feed_applied():
                    if self.registered or not self._waiting:
                        log.info("etcd: joining the ring once the feed is applied")
                    self.registered, self._waiting = False, True
                    return
                if self._lease:
                    log.warning("etcd: the membership lease expired; registering again")
                self._register()
                self._waiting = False
            applied = self._applied()
            if applied != self._reported:
                key = layout.applied_prefix(self._cluster) + self.info.id
                self._etcd.put(key, str(applied).encode(), self._lease)
                self._reported = applied
        except (EtcdUnavailable, EtcdError) as exc:
            if self.registered:
                log.warning("etcd: cannot renew membership (%s); still serving", exc)
            self.registered = False
            return
        if not self.registered:
            log.info("etcd: membership of %s is current", self.info.name)
        self.registered = True

    def _run(self) -> None:
        interval = max(self._ttl_s / 3, 0.5)
        while not self._stop.wait(interval if self.registered else RETRY_S):
            self._step()

    def close(self) -> None:
        """Stop renewing and revoke the lease (the live entry goes at once). Idempotent."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if self._lease:
            try:
                self._etcd.revoke(self._lease)
            except (EtcdUnavailable, EtcdError) as exc:
                log.warning("etcd: cannot revoke the membership lease (%s); it expires", exc)
            self._lease = 0


def live_members(etcd: Etcd, cluster: str) -> tuple[int, dict[str, WorkerInfo]]:
    """The live workers (by id) and the revision the answer holds at."""
    revision, kvs = etcd.get_prefix(layout.live_prefix(cluster))
    return revision, decode_members(kvs)


def decode_members(kvs: list[KeyValue]) -> dict[str, WorkerInfo]:
    """The valid member entries among ``kvs`` by worker id. An entry that does not decode, or
    whose key is not the id of the address it holds, is left out (one warning line each): it
    never reaches a ring, a table or a block location."""
    members = {}
    for kv in kvs:
        member_id = kv.key.rsplit("/", 1)[-1]
        try:
            info = WorkerInfo.decode(kv.value)
            if info.id != member_id:
                raise BadEntry(f"the key's id is not the id of {info.name} ({info.id})")
        except BadEntry as exc:
            log.warning("etcd: ignoring the member entry %r: %s", kv.key[:200], exc)
            continue
        members[member_id] = info
    return members


class MembershipView:
    """The live workers of a cluster as a client sees them, kept current by a watch.

    :meth:`start` lists the members (waiting up to the etcd timeout); then a thread watches
    for joins and leaves. When etcd is unreachable the last known set stays in use and
    ``available`` is False; it is logged once each way. ``generation`` grows on every change so
    a caller can rebuild what it derives (a hash ring) only when needed.

    Thread-safe: the member map is replaced, never mutated, and read without a lock.
    """

    def __init__(self, etcd: Etcd, cluster: str, idle_timeout_s: float) -> None:
        self._etcd = etcd
        self._cluster = cluster
        self._idle_timeout_s = idle_timeout_s
        self.members: dict[str, WorkerInfo] = {}
        self.generation = 0
        self.available = False
        self.listed = False
        self._revision = 0
        self._stop = threading.Event()
        self._stream_lock = threading.Lock()
        self._stream: WatchStream | None = None
        self._thread = threading.Thread(target=self._run, name="dora-membership-view", daemon=True)

    def start(self) -> MembershipView:
        self._relist()
        self._thread.start()
        return self

    def names(self) -> tuple[str, ...]:
        """The live workers' ``host:port``, sorted."""
        return tuple(sorted(info.name for info in self.members.values()))

    def url(self, name: str) -> str | None:
        """The base URL of the live worker ``host:port`` (with the scheme it registered)."""
        member = self.member(name)
        return None if member is None else member.url

    def member(self, name: str) -> WorkerInfo | None:
        """The entry of the live worker ``host:port`` (None: not a live worker)."""
        for info in self.members.values():
            if info.name == name:
                return info
        return None

    def _relist(self) -> bool:
        try:
            revision, members = live_members(self._etcd, self._cluster)
        except (EtcdUnavailable, EtcdError) as exc:
            self._unavailable(exc)
            return False
        self._replace(members)
        self._revision = revision
        self.listed = True
        if not self.available:
            log.info("etcd: %d live workers in cluster %s", len(members), self._cluster)
        self.available = True
        return True

    def _unavailable(self, exc: Exception) -> None:
        if self.available or not self.listed:
            log.warning("etcd unavailable (%s); using the last known %d workers",
                        exc, len(self.members))  # fmt: skip
        self.available = False

    def _replace(self, members: dict[str, WorkerInfo]) -> None:
        if members != self.members:
            self.members = members
            self.generation += 1

    def _run(self) -> None:
        fresh = self.listed  # start() listed already, unless etcd was down then
        while not self._stop.is_set():
            # Every (re)start of the watch begins from a fresh list: whatever ended the last
            # watch (an outage, a compaction), the list plus a watch from its revision heals it.
            if not fresh and not self._relist():
                self._stop.wait(RETRY_S)
                continue
            fresh = False
            try:
                stream = self._etcd.watch(
                    layout.live_prefix(self._cluster),
                    prefix=True,
                    start_revision=self._revision + 1,
                    idle_timeout_s=self._idle_timeout_s,
                )
                with self._stream_lock:
                    self._stream = stream
                    # close() ran while the watch was being opened: it saw no stream to end.
                    if self._stop.is_set():
                        stream.close()
                with stream:
                    for reply in stream:
                        self._consume(reply)
            except (EtcdUnavailable, EtcdError, Compacted) as exc:
                log.debug("etcd: membership watch ended (%s)", exc)

    def _consume(self, reply: WatchReply) -> None:
        members = dict(self.members)
        for event in reply.events:
            member_id = event.kv.key.rsplit("/", 1)[-1]
            # A member overwritten with an entry that does not decode leaves the ring.
            decoded = {} if event.deleted else decode_members([event.kv])
            members.pop(member_id, None)
            members.update(decoded)
            self._revision = max(self._revision, event.kv.mod_revision)
        if not reply.events:
            self._revision = max(self._revision, reply.revision)
        self._replace(members)

    def close(self) -> None:
        """Stop watching. Idempotent."""
        self._stop.set()
        with self._stream_lock:
            stream = self._stream
        if stream is not None:
            stream.close()
        if self._thread.is_alive():
            self._thread.join()
