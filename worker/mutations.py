"""The service's mutations: writes, appends, deletes, renames, directories and invalidations made
through the worker, and the change listeners that hear of them (the cluster publishes them).

Each mutation takes the call's context (``worker.request.RequestContext``): the mount roots are
checked on its URI, and the feed revision the change is published under goes back on it
(``observed``), so the answer names it (read-your-writes across workers). Each is written to the
audit log (``worker.audit``), allowed or not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from pagestore.api import PageStore
from ufs import uri as uris
from ufs.adapter import DIR_VERSION, Ufs
from ufs.attributes import NO_ATTRIBUTES, Attributes
from ufs.errors import UfsNotFound
from ufs.roots import MountRoots
from ufs.status import UfsStatus, file_id
from worker.audit import AuditLog
from worker.cluster.events import Event, Op, Origin
from worker.meta.entry import Operation
from worker.meta.manager import MetadataManager
from worker.request import RequestContext

ChangeListener = Callable[[list[Event], Sequence[Origin | None]], int | None]
"""``fn(events, origins)`` after a mutation (``origins`` empty) or a change heard from a change
feed (one origin per event: its source and time, None where unknown); returns the feed revision
it published them under (None: none)."""


class Mutations:
    """The mutations of ``worker.service.WorkerService``, which builds the parts named below.
    Thread-safe as those parts are; listeners are added before serving."""

    roots: MountRoots
    ufs: Ufs
    meta: MetadataManager
    pages: PageStore

    def __init__(self, audit: AuditLog) -> None:
        self.audit = audit
        self._change_listeners: list[ChangeListener] = []

    def add_change_listener(self, fn: ChangeListener) -> None:
        """Call ``fn(events, origins)`` after every mutation, once the cache reflects it (the
        cluster publishes them to the other workers); the feed revision it returns goes on the
        mutation's context. Not thread-safe: add listeners before serving."""
        self._change_listeners.append(fn)

    def _changed(self, *events: Event) -> int | None:
        """Tell the change listeners; the newest feed revision they published under."""
        return self._tell(list(events), ())

    def _tell(self, events: list[Event], origins: Sequence[Origin | None]) -> int | None:
        revisions = [r for fn in self._change_listeners if (r := fn(events, origins)) is not None]
        return max(revisions, default=None)

    def announce(self, events: Sequence[Event], origins: Sequence[Origin | None]) -> int | None:
        """Tell the change listeners of changes made outside the worker that this worker alone
        heard of (a change-feed webhook), once its cache reflects them, with their ``origins``
        (one per event): in a cluster the other workers apply them too, and measure their lag.
        The feed revision they were published under (None: none), which the answer names."""
        if not events:
            return None
        return self._tell(list(events), origins)

    def write(
        self,
        call: RequestContext,
        data: bytes | Iterable[bytes],
        attributes: Attributes = NO_ATTRIBUTES,
    ) -> tuple[UfsStatus, bool]:
        """Write through to the UFS (with ``attributes`` where the store keeps them); the new
        status and whether the file was created."""
        with self.audit.mutation("create", call):
            return self._write(call, data, attributes)

    def admit(self, call: RequestContext, cmd: str) -> None:
        """Check ``call.uri`` against the mount roots before the body of a write is read (a
        refusal is audited as ``cmd``; the mutation that follows is audited itself). Raises
        UfsOutsideRoots, UfsInvalidPath."""
        with self.audit.mutation(cmd, call, refusals_only=True):
            self.roots.check(call.uri)

    def commit(
        self, call: RequestContext, write: Callable[[str], UfsStatus]
    ) -> tuple[UfsStatus, bool]:
        """A write the caller makes by ``write(uri)`` (a store's own multipart upload,
        completed), checked, audited and reflected in the cache as :meth:`write`'s is; the
        new status and whether the file was created."""
        with self.audit.mutation("create", call):
            return self._recorded(call, write)

    def _write(
        self, call: RequestContext, data: bytes | Iterable[bytes], attributes: Attributes
    ) -> tuple[UfsStatus, bool]:
        return self._recorded(
            call,
            lambda uri: self.ufs.write(uri, data, deadline=call.deadline, attributes=attributes),
        )

    def _recorded(
        self, call: RequestContext, write: Callable[[str], UfsStatus]
    ) -> tuple[UfsStatus, bool]:
        uri = self.roots.check(call.uri)
        created = not self._exists(uri, call)
        status = write(uri)
        self.meta.writes.record_write(
            uri, status, Operation.CREATED if created else Operation.UPDATED
        )
        event = Event(Op.CREATED if created else Op.UPDATED, uri, status.version)
        call.observed(self._changed(event))
        return status, created

    def append(self, call: RequestContext, data: Iterable[bytes]) -> UfsStatus:
        """Append through to the UFS (:meth:`Ufs.append`); the file's new status."""
        with self.audit.mutation("append", call):
            uri = self.roots.check(call.uri)
            status = self.ufs.append(uri, data, deadline=call.deadline)
        self.meta.writes.record_write(uri, status, Operation.UPDATED)
        call.observed(self._changed(Event(Op.UPDATED, uri, status.version)))
        return status

    def _exists(self, uri: str, call: RequestContext) -> bool:
        try:
            self.meta.reads.get_status(uri, sync_interval=0, call=call)
        except UfsNotFound:
            return False
        return True

    def delete(self, call: RequestContext, recursive: bool = False) -> str:
        """Delete through to the UFS; the canonical URI deleted."""
        with self.audit.mutation("delete", call):
            uri = self.roots.check(call.uri)
            self.ufs.delete(uri, recursive, deadline=call.deadline)
        # A deleted directory's entries go too: record_write drops everything under it, and
        # the page store drops pages of files under it that no cached status names.
        self.meta.writes.record_write(uri, None, Operation.DELETED)
        if recursive:
            self.pages.delete_prefix(uri)
        call.observed(self._changed(Event(Op.DELETED, uri, prefix=recursive)))
        return uri

    def rename(self, src: RequestContext, dst: RequestContext) -> UfsStatus:
        """Rename ``src.uri`` to ``dst.uri`` through to the UFS; the new status. The revision
        goes on ``src``'s context (the two ends of one call share its exchange)."""
        with self.audit.mutation("rename", src, dst):
            source, target = self.roots.check(src.uri), self.roots.check(dst.uri)
            status = self.ufs.rename(source, target, deadline=src.deadline)
        self.meta.writes.record_write(source, None, Operation.DELETED)
        self.meta.writes.record_write(target, status, Operation.CREATED)
        revision = self._changed(
            Event(Op.DELETED, source, prefix=status.is_dir),
            Event(Op.CREATED, target, "" if status.is_dir else status.version, status.is_dir),
        )
        src.observed(revision)
        return status

    def mkdir(self, call: RequestContext) -> UfsStatus:
        """Make directory ``call.uri`` (and its parents) through to the UFS; its status."""
        with self.audit.mutation("mkdirs", call):
            uri = self.roots.check(call.uri)
            self.ufs.mkdir(uri, deadline=call.deadline)
        try:
            status = self.ufs.status(uri, deadline=call.deadline)
        except UfsNotFound:
            # Object stores keep no empty directories; the prefix exists once written under.
            status = UfsStatus(uri, uris.name(uri), True, 0, 0, DIR_VERSION, None)
        self.meta.writes.record_write(uri, status, Operation.CREATED)
        call.observed(self._changed(Event(Op.CREATED, uri)))
        return status

    def invalidate(self, call: RequestContext, recursive: bool = False) -> int:
        """Drop metadata and pages for a path, or everything under a prefix."""
        with self.audit.mutation("invalidate", call):
            uri = self.roots.check(call.uri)
            dropped = self.meta.writes.invalidate(uri, recursive)
        # Pages go by what the page store knows, whatever the metadata still remembers.
        if recursive:
            self.pages.delete_prefix(uri)
        else:
            self.pages.delete_file(file_id(uri))
        call.observed(self._changed(Event(Op.INVALIDATED, uri, prefix=recursive)))
        return dropped
