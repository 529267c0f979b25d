"""The worker service: config + UFS + metadata + pages joined into the cache agent's operations.

Every operation takes a call's context (``worker.request.RequestContext``, built by
:meth:`WorkerService.request`), checks its URI against the mount roots, and answers with plain
data or raises the UFS / metadata errors and the request errors of the error catalogue
(``worker.common.errors``), which every surface maps to its answers. The feed revision of a change
an operation makes or finds goes back on the context (``observed``). Nothing here knows HTTP.
"""

from __future__ import annotations

import builtins
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from config import Config
from config.core_keys import WORK_DIR
from pagestore.api import PageStore
from pagestore.shortcircuit import PageLocations
from ufs import keys as ufs_keys
from ufs.adapter import Ufs
from ufs.deadline import Deadline
from ufs.errors import UfsError, UfsNotFound, UfsVersionChanged
from ufs.roots import MountRoots
from ufs.status import UfsStatus, file_id
from worker import keys
from worker.audit import AuditLog
from worker.cluster.layout import WorkerInfo
from worker.cluster.status import ClusterStatus
from worker.cluster.view import ClusterView
from worker.common import client_keys
from worker.common.errors import IsADirectory
from worker.common.ranges import Span, Window
from worker.compound import Compound
from worker.feeds.change import CacheSink, Change
from worker.freshness import listed
from worker.insight import History, TopFiles
from worker.load.job import LoadJob
from worker.load.manager import LoadManager
from worker.load.source import LoadSource
from worker.meta.counters import MetaCounters
from worker.meta.generations import GenerationFile
from worker.meta.manager import MetadataManager
from worker.metrics import Metrics
from worker.mutations import Mutations
from worker.overview import Overview
from worker.pinning import Pinning
from worker.pins import FILE_NAME as PINS_FILE
from worker.reader import Located, Reader, ReadResult
from worker.request import UNKNOWN_CALLER, Exchange, RequestContext
from worker.request import context as request_context
from worker.rules.keys import TTL_CHECK_INTERVAL
from worker.rules.live import Rules
from worker.rules.pinned import RulePins
from worker.rules.ttl import Expiry
from worker.spool import SPOOL_DIR, BodySpool

log = logging.getLogger(__name__)


def mount_roots(config: Config) -> MountRoots:
    """The mount roots ``dora.worker.ufs.roots`` names; ConfigError if one is not a URI."""
    roots: list[str] = config.get(ufs_keys.ROOTS)
    try:
        return MountRoots(roots)
    except UfsError as exc:
        raise config.invalid(ufs_keys.ROOTS, str(exc)) from None


class WorkerService(Mutations, Pinning, Compound, Overview):
    """The cache agent's operations: lookups and reads here, the mutations in
    :class:`worker.mutations.Mutations`, pins in :class:`worker.pinning.Pinning`, and the
    operations made of reads and writes in :class:`worker.compound.Compound`, the operator's
    view in :class:`worker.overview.Overview`. Thread-safe: its parts are, and it holds no
    state of its own beyond them. ``close()`` stops load jobs, closes the cluster view, then
    flushes the metastore and page store."""

    def __init__(
        self,
        config: Config,
        ufs: Ufs,
        meta: MetadataManager,
        pages: PageStore,
        page_size: int,
        *,
        roots: MountRoots,
        rules: Rules,
        metrics: Metrics,
        changes: CacheSink,
        loads: Callable[[LoadSource], LoadManager],
        cluster: ClusterView,
        generations: GenerationFile | None = None,
    ) -> None:
        """Join the parts ``worker.assembly`` built: ``changes`` is where the change feeds and
        the webhook apply their events, ``loads`` makes the load jobs over this service,
        ``cluster`` is the cluster as this worker sees it (closed with the service)."""
        super().__init__(AuditLog(config.get(keys.AUDIT_LOG)))
        self.config = config
        # Every per-path decision reads these (worker.rules), resolved once per request.
        self.rules = rules
        self.ufs = ufs
        self.meta = meta
        self.pages = pages
        self.roots = roots
        self.metrics = metrics
        self.reader = Reader(ufs, pages, page_size, self.metrics)
        self.page_size = page_size
        self.generations = generations
        self.metrics.near_cache.set(generations is not None)
        if generations is not None:
            meta.count_changes(generations)
        self.loads = loads(self)
        self.started_at = time.time()
        self.history = History(self.stats)
        self.top_files = TopFiles()
        # The worker cannot see a same-host client's reads of its page files; what it can
        # count is the cached bytes it handed out for them (the client counts what it read).
        self._located = MetaCounters(("short_circuit_located_bytes",))
        self._closed = False
        self._probes: dict[str, Callable[[], tuple[str, bool]]] = {}
        meta.writes.add_listener(self._drop_pages)
        self.metrics.watch(meta.counters, pages, self.loads.states)
        self.changes = changes
        self._cluster = cluster
        self.expiry = Expiry(self.rules, self._free_expired)
        self.expiry.start(config.get(TTL_CHECK_INTERVAL) / 1000)
        # Where write bodies wait until they are whole (every surface's uploads).
        self.spool = BodySpool(Path(config.get(WORK_DIR)).expanduser() / SPOOL_DIR)
        self.spool.sweep()
        self._start_pins(Path(config.get(WORK_DIR)).expanduser() / PINS_FILE)
        RulePins(self.rules, self.pages, self.pins.covers).start()  # cached pages too

    def close(self) -> None:
        """Idempotent."""
        if self._closed:
            return
        self._closed = True
        self.expiry.close()
        self.history.close()
        self.loads.close()
        self._cluster.close()
        self.reader.close()
        self.meta.close()
        self.pages.close()
        if self.generations is not None:
            self.generations.close()

    def _drop_pages(self, uri: str, version: str) -> None:
        self.pages.delete_file(file_id(uri), version)

    def _free_expired(self, uri: str) -> None:
        """Free ``uri``'s metadata and pages, its rule's TTL run out (``worker.rules.ttl``);
        the UFS and the other workers are not told: each worker keeps its own clock."""
        self.meta.writes.invalidate(uri)
        self.pages.delete_file(file_id(uri))
        self.metrics.ttl_frees.inc()
        log.info("freed %s: its ttl ran out", uri)

    def add_readiness_probe(self, name: str, probe: Callable[[], tuple[str, bool]]) -> None:
        """Report ``probe()``'s state under ``name`` in :meth:`readiness`, and ready only while
        it says the worker may be (the cluster's feed follower). Not thread-safe: add probes
        before serving."""
        self._probes[name] = probe

    # -- metadata ------------------------------------------------------------------------------

    def describe(self, status: UfsStatus) -> dict[str, Any]:
        """A status as the API shows it: the UFS fields plus bytes of it in the page store."""
        return self.describe_many([status])[0]

    def describe_many(self, statuses: Sequence[UfsStatus]) -> list[dict[str, Any]]:
        """:meth:`describe` of each of ``statuses`` (a listing's entries), the page store asked
        once."""
        files = [s for s in statuses if not s.is_dir]
        cached = iter(self.pages.cached_bytes_many([(file_id(s.uri), s.version) for s in files]))
        described = []
        for status in statuses:
            data = status.to_dict()
            data["cached_bytes"] = 0 if status.is_dir else next(cached)
            data["pinned"] = self.pinned(status.uri)
            described.append(data)
        return described

    def request(
        self,
        uri: str,
        sync_interval: int | None = None,
        version: str | None = None,
        exchange: Exchange | None = None,
        serve_stale: bool | None = None,
        caller: str = UNKNOWN_CALLER,
        deadline: Deadline | None = None,
        identity: str | None = None,
    ) -> RequestContext:
        """The context of a call to ``uri`` (``worker.request.context``): ``sync_interval`` and
        ``serve_stale`` are its per-call options (None: it sent none), ``version`` the one it
        pins, ``exchange`` the HTTP request it answers (None: a call from inside the worker),
        ``caller`` who made it (``-``: unknown), ``deadline`` how long it waits for the
        answer (None: it did not say), ``identity`` who a client certificate proved it is
        (its quota applies). A surface builds it once per call and passes it to the
        operations below. Raises UfsInvalidPath for a malformed URI."""
        return request_context(
            self.rules,
            uri,
            sync_interval,
            version,
            exchange,
            serve_stale,
            caller,
            deadline,
            identity,
        )

    def status(self, call: RequestContext) -> UfsStatus:
        """The status of ``call.uri``, as fresh as it asks, at the version it pins."""
        uri = self.roots.inside(call.uri)
        fresh = call.fresh
        status = self.meta.reads.get_status(
            uri, fresh.sync_interval, call.version, fresh.serve_stale, call=call
        )
        self.expiry.loaded(call.uri, call.policy.ttl)
        return status

    def status_cached(self, call: RequestContext) -> UfsStatus | None:
        """:meth:`status` without I/O, for a caller on the event loop: the same answer or
        error when the metadata memory tier holds a usable entry, else None (call
        :meth:`status` in a thread). Local (``file``) URIs are always None: their mount-roots
        check resolves the path on disk."""
        if call.uri.startswith("file:"):
            return None
        uri = self.roots.inside(call.uri)
        fresh = call.fresh
        return self.meta.reads.cached_status(
            uri, fresh.sync_interval, call.version, fresh.serve_stale
        )

    def list(self, call: RequestContext) -> list[UfsStatus]:
        """The children of directory ``call.uri``, as fresh as it asks (as :meth:`status`)."""
        uri = self.roots.inside(call.uri)
        entries = self.meta.reads.list_status(uri, call.fresh.sync_interval, call=call)
        # Entries that lead outside the roots are left out (see MountRoots.visible).
        return self.roots.visible(entries)

    def status_age(self, status: UfsStatus) -> int | None:
        """How long ago (ms) the worker last confirmed ``status`` with the UFS (None: it holds
        no such version)."""
        return self.meta.reads.status_age(status.uri, status.version)

    def listing_age(self, call: RequestContext, children: Sequence[UfsStatus]) -> int | None:
        """How long ago (ms) the worker last listed directory ``call.uri`` with ``children``."""
        return self.meta.reads.listing_age(call.uri, list(children)) if children else None

    def child_intervals(self, call: RequestContext, children: Sequence[str]) -> builtins.list[int]:
        """For each of ``children`` of directory ``call.uri``, the sync interval a near-cache
        keeps its status from the listing by (``worker.freshness.listed``)."""
        return listed(self.rules, call.fresh, children)

    # -- data ----------------------------------------------------------------------------------

    def read(self, call: RequestContext, offset: int = 0, length: int | None = None) -> ReadResult:
        """:meth:`read_span` of ``length`` bytes from ``offset`` (None: to the end); a range
        past the end is cut at the end, an offset past the end is RangeNotSatisfiable."""
        return self.read_span(call, Window(offset, length))

    def read_span(self, call: RequestContext, span: Span, *, ramp: bool = False) -> ReadResult:
        """Resolve the status (as :meth:`status`), resolve ``span`` against its size, and
        fetch the first chunk, so that errors surface here, before a caller starts answering.
        Raises IsADirectory, RangeNotSatisfiable, the status lookup's errors, and
        UfsVersionChanged when the file changed under the version the call pins.

        A change found while reading is evidence, and so is the file found gone: the new status
        is recorded at once (a sync, which also evicts the old version's pages and drops the
        parent's listing). Found before the first byte, with no version pinned, the new
        version is served instead; found later, the chunks end with UfsVersionChanged (a
        caller cuts its answer short).

        Whether what is fetched is stored is the reader's decision, by the admission of the
        call's policy (``Reader.admit``). ``ramp`` is for a client that reads what
        it needs and hangs up (WebHDFS ``OPEN``): read-ahead starts at one page and grows while
        the client keeps reading; closing the chunks cancels the fills not yet started."""
        status = self.status(call)
        try:
            return self._open(call, status, span, ramp)
        except UfsNotFound:
            self._record_change(status.uri, call)
            raise
        except UfsVersionChanged:
            if call.version is not None:
                self._record_change(status.uri, call)
                raise
        changed = self.meta.reads.get_status(status.uri, sync_interval=0, call=call)
        return self._open(call, changed, span, ramp)

    def cache_whole(self, files: Sequence[UfsStatus]) -> Sequence[UfsStatus]:
        """Cache small files a load job listed (a page or less each), many at a time
        (``Reader.store_whole``). Returns those it leaves to :meth:`read`, which reports and
        records what is wrong with them: the ones whose read failed, the ones their rules do not
        cache at once (the reader decides), and the ones that lead outside the mount roots by
        now (the roots are checked again here, as a read checks them)."""
        # By name, not by scanning each directory: a batch is a few files of what may be a
        # directory of 100k, and a scan per batch would make a job quadratic in its size.
        inside = {id(status) for status in self.roots.visible(files, scan=False)}
        rest = [status for status in files if id(status) not in inside]
        batch = [(s, self.rules.resolve(s.uri)) for s in files if id(s) in inside]
        return [*rest, *self.reader.store_whole(batch)]

    def _open(self, call: RequestContext, status: UfsStatus, span: Span, ramp: bool) -> ReadResult:
        if status.is_dir:
            raise IsADirectory(f"cannot read {status.uri!r}: it is a directory")
        offset, length = span.resolve(status.size)
        self.top_files.record(status.uri, length)
        chunks = self.reader.chunks(
            status,
            offset,
            length,
            call.policy,
            ramp=ramp,
            served=call.served,
            wait=call.deadline,
            charge=call.charge,
        )
        first = next(chunks, b"")
        return ReadResult(status, offset, length, self._watched(call, status.uri, first, chunks))

    def _watched(
        self, call: RequestContext, uri: str, first: bytes, chunks: Iterator[bytes]
    ) -> Iterator[bytes]:
        # A generator (not a chain) so that closing the body closes the reader's iterator,
        # which cancels its read-ahead: a client that hangs up stops the fills.
        try:
            if first:
                yield first
            yield from chunks
        except (UfsVersionChanged, UfsNotFound):
            # The answer has started: the revision reaches the client with its next answer.
            self._record_change(uri, call)
            raise
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()

    def _record_change(self, uri: str, call: RequestContext) -> None:
        """Sync ``uri`` after ``call``'s read found it changed; a failing sync leaves that to
        the next caller (the read's own error is what this caller gets)."""
        try:
            self.meta.reads.get_status(uri, sync_interval=0, call=call)
        except UfsError as exc:
            log.info("could not record the change of %s found by a read: %s", uri, exc)

    def locate(self, call: RequestContext, offset: int = 0, length: int | None = None) -> Located:
        """Where the cached pages of ``[offset, offset + length)`` (None: to the end) of one
        file version are, for a same-host client's short-circuit read: the version the call
        pins (None: the current one, as :meth:`status` finds it). Raises what :meth:`status`
        raises (VersionMismatch when the file is not at the pinned version), IsADirectory,
        RangeNotSatisfiable for an offset past the end. A page listed may be evicted at any
        time after: the client's read of it then misses."""
        status = self.status(call)
        if status.is_dir:
            raise IsADirectory(f"cannot locate pages of {status.uri!r}: it is a directory")
        start, count = Window(offset, length).resolve(status.size)
        if count == 0:
            empty = PageLocations(file_id(status.uri), status.version, self.page_size, ())
            return Located(status, empty, ())
        first, last = start // self.page_size, (start + count - 1) // self.page_size
        locations = self.pages.locate(file_id(status.uri), status.version, first, last)
        found = {page.index for page in locations.pages}
        missing = tuple(i for i in range(first, last + 1) if i not in found)
        located = sum(page.size for page in locations.pages)
        self._located.add("short_circuit_located_bytes", located)
        self.metrics.short_circuit_located.inc(located)
        return Located(status, locations, missing)

    def same_host(self) -> dict[str, Any]:
        """What a client on this host needs for its fast path: the generation file its
        near-cache checks (None: none, so no near-cache), the page size and the default sync
        interval (ms) a call without one gets."""
        return {
            "generations": None if self.generations is None else str(self.generations.path),
            "page_size": self.page_size,
            "sync_interval_ms": self.config.get(client_keys.SYNC_INTERVAL),
        }

    # -- load jobs and change feeds ------------------------------------------------------------

    def load(
        self,
        path: str,
        recursive: bool,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        metadata_only: bool = False,
    ) -> LoadJob:
        """Queue a load job for ``path`` (``worker.load.manager.LoadManager.submit``): its
        statuses, and unless ``metadata_only`` its pages, cached in the background. Raises
        what a status call on ``path`` raises, and LoadRejected when no job can be taken."""
        return self.loads.submit(path, recursive, include, exclude, metadata_only)

    def load_job(self, job_id: str) -> LoadJob | None:
        """The load job ``job_id``, or None if it is unknown or has left the history."""
        return self.loads.get(job_id)

    def load_jobs(self) -> builtins.list[LoadJob]:
        """Every load job still in the history, oldest first."""
        return self.loads.jobs()

    def latest_load(self, uri: str) -> LoadJob | None:
        """The newest load job of ``uri`` (a URI within the mount roots), or None."""
        return self.loads.latest(self.roots.check(uri))

    def cancel_load(self, job_id: str) -> LoadJob | None:
        """Cancel the load job ``job_id`` (None: unknown); a running one stops at its next
        file."""
        return self.loads.cancel(job_id)

    def apply_changes(self, source: str, changes: Sequence[Change]) -> int | None:
        """Apply what a change feed ``source`` reported outside the cluster's feed (the
        webhook), and tell the change listeners (the other workers); the feed revision they
        were published under (None: none)."""
        self.changes.apply(source, changes)
        return self.announce(*self.changes.published(source, changes))

    # -- the cluster ---------------------------------------------------------------------------

    def cluster_status(self) -> ClusterStatus:
        """The cluster's members as etcd holds them (``worker.cluster.view.ClusterView``).
        Raises NoCluster outside a cluster, EtcdUnavailable / EtcdError when etcd does not
        answer."""
        return self._cluster.status()

    def cluster_endpoints(self) -> tuple[str, ...]:
        """The cluster's etcd endpoints (none outside a cluster)."""
        return self._cluster.endpoints

    def owner_of(self, uri: str, *, live: bool = False) -> str | None:
        """``host:port`` of the worker that owns ``uri`` on the clients' hash ring (None: no
        ring names one); with ``live``, only among the workers etcd lists as live."""
        return self._cluster.live_owner(uri) if live else self._cluster.owner(uri)

    def owner_member(self, uri: str) -> WorkerInfo | None:
        """The membership entry of :meth:`owner_of` ``uri`` among the live workers (its S3
        endpoint with it), or None."""
        return self._cluster.live_member(uri)

    def cached_bytes(self, files: Sequence[UfsStatus]) -> builtins.list[int]:
        """Bytes of each of ``files`` (at its version) the page store holds."""
        return self.pages.cached_bytes_many([(file_id(f.uri), f.version) for f in files])

    # -- state ---------------------------------------------------------------------------------

    def readiness(self) -> dict[str, Any]:
        """What ``/readyz`` reports. ``ready`` as soon as the service exists, which means its
        metastore is open (the socket already listens when a probe gets here), until it
        closes. The page restore is reported (``pages``: ``restoring`` / ``ready``), never
        waited for: reads treat unrestored pages as misses (DESIGN.md). ``metastore`` is the
        metastore's persistence state: ``persisting``, or ``memory-only`` once a commit failed
        (the worker still answers, from memory and the UFS, so it stays ready; the state says
        why its metadata will not survive a restart). Each probe adds its state and may make
        the worker not ready."""
        answer: dict[str, Any] = {
            "ready": not self._closed,
            "metastore": self.meta.persistence_state().value,
            "pages": "ready" if self.pages.ready else "restoring",
        }
        for name, probe in self._probes.items():
            answer[name], ok = probe()
            answer["ready"] = answer["ready"] and ok
        return answer

    def render_metrics(self) -> bytes:
        """The worker's metrics in Prometheus's text format (its front processes' added)."""
        return self.metrics.render()

    def stats(self) -> dict[str, int]:
        """A JSON-friendly summary for dashboards and the demo."""
        reads = self.reader.counters.snapshot()
        meta = self.meta.counters()
        page_stats = self.pages.stats()
        return {
            "bytes_from_cache": reads["bytes_from_cache"],
            "bytes_from_ufs": reads["bytes_from_ufs"],
            "page_hits": reads["page_hits"],
            "page_misses": reads["page_misses"],
            "passthrough_reads": reads["passthrough"],
            **self._located.snapshot(),
            "metadata_hits": meta.get("memory_hits", 0) + meta.get("metastore_hits", 0),
            "metadata_misses": meta.get("misses", 0),
            "metadata_ufs_calls": meta.get("ufs_calls", 0),
            "pages_cached": page_stats.pages,
            "page_evictions": page_stats.evictions,
            "pages_invalidated": page_stats.invalidated_pages,
            "metadata_invalidations": meta.get("invalidations", 0),
            "page_store_used_bytes": page_stats.used_bytes,
            "page_store_capacity_bytes": page_stats.capacity_bytes,
        }
