"""The service's pins: ``dora fs pin`` and ``unpin``, and what a rule's ``pin`` says.

A file is pinned when a pin names it or a prefix above it (``worker.pins``, kept in the work
dir) or when its rule says ``pin``; the page store pins its pages as they are stored
(``PageStore.pin_when``) and never evicts them, up to ``dora.worker.page.store.pin.max``. A pin
whose files would take the pinned bytes past that bound is refused (PinLimitExceeded, 507).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from pagestore.api import PageStore
from ufs.adapter import Ufs
from ufs.roots import MountRoots
from ufs.status import UfsStatus, file_id
from worker.audit import AuditLog
from worker.common.errors import IsADirectory
from worker.metrics import Metrics
from worker.pins import PinTable
from worker.request import RequestContext
from worker.rules.live import Rules


class Pinning:
    """The pin operations of ``worker.service.WorkerService``, which builds the parts named
    below. Thread-safe as those parts are."""

    roots: MountRoots
    ufs: Ufs
    pages: PageStore
    rules: Rules
    metrics: Metrics
    audit: AuditLog
    status: Callable[[RequestContext], UfsStatus]

    def _start_pins(self, path: Path | None) -> None:
        """Read the saved pins, have the page store pin what they and the rules cover as it
        is stored, and pin the pages it holds already: a file's at once (its pages are pinned
        as the restore finds them), a prefix's once the restore is done (in the background)."""
        self.pins = PinTable(path)
        self.pages.pin_when(self.pinned)
        prefixes = []
        for uri, pin in self.pins.entries():
            if pin.recursive:
                prefixes.append(uri)
            else:
                self.pages.pin(file_id(uri))
        if prefixes:

            def restored() -> None:
                for prefix in prefixes:
                    self.pages.pin_prefix(prefix)

            threading.Thread(target=restored, name="pins-restore", daemon=True).start()

    def pinned(self, uri: str) -> bool:
        """Whether ``uri``'s pages are pinned as they are stored: a pin names it or a prefix
        above it, or its rule says ``pin``."""
        return self.pins.covers(uri) or self.rules.resolve(uri).pin

    def pin(self, call: RequestContext, recursive: bool = False) -> int:
        """Pin ``call.uri``, a file (with ``recursive``, everything under it, stored now or
        later); the bytes it counts against the bound (the files' sizes). Raises PinLimitExceeded
        when the files' sizes would take the pinned bytes past the bound, IsADirectory for a
        directory without ``recursive``, and the status lookup's errors."""
        with self.audit.mutation("pin", call):
            uri = self.roots.check(call.uri)
            adding = self._bytes_to_pin(call, uri, recursive)
            # Files a rule pins are bounded as their pages are stored, by the page store.
            self.pins.add(uri, recursive, adding, self.pages.stats().pin_limit_bytes)
        self.metrics.pins.inc()
        if recursive:
            self.pages.pin_prefix(uri)
        else:
            self.pages.pin(file_id(uri))
        return adding

    def unpin(self, call: RequestContext, recursive: bool = False) -> int:
        """Drop the pin of ``call.uri`` (with ``recursive``, every pin at or under it too) and
        make its pages evictable again, but those another pin or a rule still covers; how
        many pins were dropped."""
        with self.audit.mutation("unpin", call):
            uri = self.roots.check(call.uri)
            gone = self.pins.remove(uri, recursive)
        self.metrics.unpins.inc()
        if recursive:
            self.pages.pin_prefix(uri, pinned=False)
            if self.pins.covers(uri):  # a pin of a prefix above it stays
                self.pages.pin_prefix(uri)
        elif not self.pinned(uri):
            self.pages.pin(file_id(uri), pinned=False)
        return len(gone)

    def _bytes_to_pin(self, call: RequestContext, uri: str, recursive: bool) -> int:
        """The bytes of the files a pin of ``uri`` adds: their sizes, but for files pinned
        already."""
        status = self.status(call)
        if not status.is_dir:
            return 0 if self.pinned(status.uri) else status.size
        if not recursive:
            raise IsADirectory(f"cannot pin {uri!r} alone: it is a directory; pin it with -R")
        walked = self.ufs.walk_files(status.uri, deadline=call.deadline)
        return sum(s.size for s in walked if not self.pinned(s.uri))
