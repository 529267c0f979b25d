"""The same-host fast path as the filesystem's resolvers (:mod:`worker.client.resolvers`): a
:class:`NearCacheMetadata` in front of the REST statuses and listings, and a
:class:`ShortCircuitRanges` in front of the REST reads.

Both find out on first use, from the worker's ``/v1/local``, whether it is on this host: its
generation file must open here (the near-cache needs it), and page files are then opened at the
paths the worker names (a page this process cannot open is read over HTTP). Only a filesystem
with exactly one worker uses them (the sidecar case): with several, another worker's changes
would need its counters too. When the worker is not local, or does not answer ``/v1/local``,
every call goes to the REST API as without them.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from config.units import parse_duration
from worker.client.answers import ReadAnswer
from worker.client.errors import DoraError, WorkerFailure
from worker.client.flow import Flow, blocking
from worker.client.nearcache import NearCache
from worker.client.remote import Remote
from worker.common.generations import GenerationView

if TYPE_CHECKING:
    from worker.client.shortcircuit import ShortCircuitReader

log = logging.getLogger(__name__)

MAX_SIZES = 65536


@dataclass(frozen=True)
class _Local:
    near: NearCache | None
    reader: ShortCircuitReader | None


class LocalWorker:
    """What the fast path knows of the filesystem's one worker, found out once. Thread-safe."""

    def __init__(self, remote: Remote, short_circuit: bool, near_cache: bool) -> None:
        self.remote = remote
        self._wanted = (short_circuit, near_cache)
        self._lock = threading.Lock()
        self._found: _Local | None = None
        # The size of each file version read, for pinned reads: bounded, as a long-lived client
        # may read millions of files (a size forgotten costs one locate call).
        self._sizes: OrderedDict[tuple[str, str], int] = OrderedDict()

    def size_of(self, uri: str, version: str) -> int | None:
        """The size kept for ``uri`` at ``version`` by :meth:`keep_size`, if still kept."""
        with self._lock:
            size = self._sizes.get((uri, version))
            if size is not None:
                self._sizes.move_to_end((uri, version))
            return size

    def keep_size(self, uri: str, version: str, size: int) -> int:
        """Keep the size of ``uri`` at ``version`` (the last ``MAX_SIZES`` kept); ``size``."""
        with self._lock:
            self._sizes[(uri, version)] = size
            self._sizes.move_to_end((uri, version))
            while len(self._sizes) > MAX_SIZES:
                self._sizes.popitem(last=False)
        return size

    @property
    def found(self) -> _Local | None:
        """What :meth:`facts` found, None before it was first asked."""
        return self._found

    def facts(self, uri: str) -> Flow[_Local]:
        """The near-cache and reader to use (None: not here), asking ``/v1/local`` once."""
        if self._found is not None:
            return self._found
        try:
            answer = yield from self.remote.local(uri)
        except DoraError as exc:
            log.info("no same-host fast path: the worker does not describe it: %s", exc)
            answer = {}
        found = yield from blocking(lambda: self._open(answer))
        with self._lock:
            if self._found is None:
                self._found = found
            return self._found

    def _open(self, answer: dict[str, Any]) -> _Local:
        short_circuit, near_cache = self._wanted
        path = answer.get("generations")
        if not path or len(self.remote.client.ring.workers) != 1:
            return _Local(None, None)
        try:
            view = GenerationView(Path(path))
        except (OSError, ValueError) as exc:
            log.info("no same-host fast path: %s cannot be read here: %s", path, exc)
            return _Local(None, None)
        near = NearCache(view, int(answer["sync_interval_ms"])) if near_cache else None
        reader = _short_circuit(int(answer["page_size"])) if short_circuit else None
        if near is not None or reader is not None:
            self.remote.listeners.append(self._changed)
        return _Local(near, reader)

    def _changed(self, uris: Sequence[str], recursive: bool) -> None:
        found = self._found
        if found is None:
            return
        if found.reader is not None:
            # Their pages may be gone: locate again rather than miss page by page.
            for uri in uris:
                found.reader.forget(uri, recursive)
        if found.near is None:
            return
        if recursive:
            found.near.clear()
        for uri in uris:
            key = found.near.key(uri)
            if key is not None:
                found.near.forget(key)


def _interval_ms(sync_interval: str | None) -> int | None:
    return None if sync_interval is None else parse_duration(sync_interval, allow_never=True)


class NearCacheMetadata:
    """Statuses and listings from the near-cache when it may answer, else from the worker
    (kept for next time). Thread-safe."""

    def __init__(self, local: LocalWorker) -> None:
        self.local = local
        self.remote = local.remote

    def status(
        self, uri: str, sync_interval: str | None = None, version: str | None = None
    ) -> Flow[dict[str, Any]]:
        near = (yield from self.local.facts(uri)).near
        key = None if near is None else near.key(uri)
        if near is None or key is None:
            return (yield from self.remote.status(uri, sync_interval, version))
        kept = near.status(key, _interval_ms(sync_interval), version)
        if kept is not None:
            return dict(kept)  # callers rename what they get
        stamp, asked_at = near.stamp(key), near.now()
        answer = yield from self.remote.status(uri, sync_interval, version, aged=True)
        age, interval = answer.pop("age_ms", None), answer.pop("sync_interval_ms", None)
        near.put_status(key, stamp, asked_at, dict(answer), age, interval)
        return answer

    def list(self, uri: str, sync_interval: str | None = None) -> Flow[list[dict[str, Any]]]:
        near = (yield from self.local.facts(uri)).near
        key = None if near is None else near.key(uri)
        if near is None or key is None:
            return (yield from self.remote.list(uri, sync_interval))
        kept = near.listing(key, _interval_ms(sync_interval))
        if kept is not None:
            return [dict(entry) for entry in kept]
        stamp, asked_at = near.stamp(key), near.now()
        entries = yield from self.remote.list(uri, sync_interval, aged=True)
        # Every entry of one listing has the listing's age; an empty one has none.
        ages = [entry.pop("age_ms", None) for entry in entries]
        intervals = [entry.pop("sync_interval_ms", None) for entry in entries]
        age = ages[0] if ages else None
        kept = [(str(e["name"]), dict(e)) for e in entries]
        near.put_listing(key, stamp, asked_at, kept, age, intervals)
        return entries


class ShortCircuitRanges:
    """Reads of a pinned version from the worker's page files where they are cached, over
    HTTP for the rest; an unpinned read is pinned by a status (from ``metadata``: the
    near-cache when there is one) first. Thread-safe."""

    def __init__(self, local: LocalWorker, metadata: Any) -> None:
        self.local = local
        self.remote = local.remote
        self.metadata = metadata

    def pin(
        self, uri: str, version: str | None, sync_interval: str | None, offset: int
    ) -> Flow[tuple[str, int] | None]:
        """The version and size to :meth:`fill` ``uri`` at (an unpinned read is pinned by a
        status); None when there is no short circuit here."""
        reader = (yield from self.local.facts(uri)).reader
        if reader is None:
            return None
        if version is None:
            status = yield from self.metadata.status(uri, sync_interval)
            version = str(status["version"])
            size = self.local.keep_size(uri, version, int(status["size"]))
            return version, size
        kept = self.local.size_of(uri, version)
        if kept is not None:
            return version, kept
        answer = yield from self.remote.locate(uri, version, offset, reader.page_size)
        reader.located(uri, version, offset // reader.page_size * reader.page_size, answer)
        size = self.local.keep_size(uri, version, int(answer["status"]["size"]))
        return version, size

    def fill(
        self, uri: str, version: str, offset: int, buffer: memoryview
    ) -> Flow[list[tuple[int, int]]]:
        """Fill ``buffer`` from the page files (locating what is not known); the gaps (file
        offset, length) left to read over HTTP."""
        reader = yield from self.locate(uri, version, offset, len(buffer))
        if reader is None:
            return [(offset, len(buffer))]
        return (yield from blocking(lambda: reader.read_local(uri, version, offset, buffer)))

    def locate(
        self, uri: str, version: str, offset: int, length: int
    ) -> Flow[ShortCircuitReader | None]:
        reader = (yield from self.local.facts(uri)).reader
        if reader is not None:
            for at, span in reader.to_locate(uri, version, offset, length):
                answer = yield from self.remote.locate(uri, version, at, span)
                reader.located(uri, version, at, answer)
        return reader

    def small_now(self, uri: str, version: str, offset: int, length: int) -> bytes | None:
        found = self.local.found
        reader = None if found is None else found.reader
        return None if reader is None else reader.read_small(uri, version, offset, length)

    def fill_now(
        self, uri: str, version: str, offset: int, buffer: memoryview
    ) -> list[tuple[int, int]] | None:
        found = self.local.found
        reader = None if found is None else found.reader
        return None if reader is None else reader.read_located(uri, version, offset, buffer)

    def read(
        self,
        uri: str,
        offset: int,
        length: int | None,
        *,
        version: str | None = None,
        sync_interval: str | None = None,
    ) -> Flow[ReadAnswer]:
        pinned = yield from self.pin(uri, version, sync_interval, offset)
        if pinned is None:
            return (yield from self.remote.read(uri, offset, length, version=version))
        version, size = pinned
        if offset >= size:
            # Past the end (or at it): the worker's answer, empty or RangeNotSatisfiable.
            return (yield from self.remote.read(uri, offset, length, version=version))
        length = size - offset if length is None else min(length, size - offset)
        buffer = bytearray(length)
        for at, span in (yield from self.fill(uri, version, offset, memoryview(buffer))):
            got = yield from self.remote.read(uri, at, span, version=version)
            if len(got.data) != span:
                raise WorkerFailure(f"read {uri} [{at}+{span}]: got {len(got.data)} bytes")
            buffer[at - offset : at - offset + span] = got.data
        return ReadAnswer(bytes(buffer), version, size)


def _short_circuit(page_size: int) -> ShortCircuitReader:
    # Imported once a worker on this host is found: a client elsewhere never reads page files.
    from worker.client.shortcircuit import ShortCircuitReader

    return ShortCircuitReader(page_size)
