"""The RocksDB metastore (rocksdict): key = the URI's UTF-8, value = :mod:`worker.meta.codec`.

Writes are batched Ozone-style with a double buffer. ``put``, ``pop`` and ``delete`` only touch
the *active* buffer (a dict, so the last write to a URI wins). Every flush interval one flusher
thread swaps it for an empty one and commits the swapped-out *flushing* buffer as one
WriteBatch; only after the commit does the flushing buffer go away. Reads look in the active
buffer, then the flushing buffer, then RocksDB, so an entry the memory tier evicted stays
readable while its batch is pending. A WriteBatch is atomic, so a crash loses at most the
pending buffers, never half an entry: a lost entry is a miss.

A failed commit leaves RocksDB's writer in error: it refuses every later write until reopened
(ENOSPC does this, even once space is freed), so retrying is futile and buffering would grow
without bound. The store then gives up persisting (``MEMORY_ONLY``): it drops its buffers and is
no longer read, since RocksDB now lacks writes the worker made; the worker goes on serving from
memory and the UFS. An ``UNCOMMITTED`` marker makes the next start discard the directory
instead of serving stale entries from it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import cast

from rocksdict import Rdict, WriteBatch

from ufs import uri as uris
from worker.meta import codec
from worker.meta.entry import Lifetimes, MetaEntry, wall_clock_ms
from worker.meta.errors import CorruptEntry, MetastoreError
from worker.meta.metastore import PersistenceState
from worker.meta.options import MetastoreOptions
from worker.meta.rocks_open import DirLock, mark_uncommitted, open_store

log = logging.getLogger(__name__)

# Markers are keyed by this prefix plus a name: no URI key starts with a NUL byte (URIs always
# contain "://" after a scheme), so neither a lookup nor a prefix scan of a URI can meet one.
_MARKER_PREFIX = b"\0marker/"

# A buffered write: an entry, or None for a delete.
_Buffer = dict[str, MetaEntry | None]


class RocksMetastore:
    """A :class:`worker.meta.metastore.Metastore` on RocksDB that survives restarts.

    Thread-safe. Locks, in the order they are taken: ``_flush_lock`` (one flush or prefix
    removal at a time, so a commit never races a prefix scan) before ``_buffer_lock`` (guards
    both buffers, the persistence state and the closed flag; never held during I/O). RocksDB
    calls themselves are thread-safe.
    """

    def __init__(
        self,
        db: Rdict,
        lock: DirLock,
        options: MetastoreOptions,
        clock: Callable[[], int] = wall_clock_ms,
    ) -> None:
        self._db = db
        self._dir_lock = lock
        self._options = options
        self._clock = clock
        self._flush_lock = threading.Lock()
        self._buffer_lock = threading.Lock()
        self._active: _Buffer = {}
        self._flushing: _Buffer = {}
        self._closed = False
        self._state = PersistenceState.PERSISTING
        self._flushes = 0
        self._flush_errors = 0
        self._dropped = 0
        self._stop = threading.Event()
        self._flusher = threading.Thread(
            target=self._run_flusher, name=f"metastore-flusher:{options.path}", daemon=True
        )
        self._flusher.start()

    @classmethod
    def open(
        cls, options: MetastoreOptions, clock: Callable[[], int] = wall_clock_ms
    ) -> RocksMetastore:
        """Open (or create) the metastore at ``options.path``; see :func:`open_store` for
        recovery. Raises MetastoreOpenError / MetastoreBusy."""
        db, lock = open_store(options.path, options.lifetimes.ttl_ms, options.recover)
        return cls(db, lock, options, clock)

    @property
    def lifetimes(self) -> Lifetimes:
        return self._options.lifetimes

    @property
    def path(self) -> str:
        return self._options.path

    def get(self, uri: str) -> MetaEntry | None:
        entry = self.peek(uri)
        if entry is None or self.lifetimes.expired(entry, self._clock()):
            return None
        return entry

    def peek(self, uri: str) -> MetaEntry | None:
        with self._buffer_lock:
            self._check_open()
            if self._state is PersistenceState.MEMORY_ONLY:
                return None
            for buffer in (self._active, self._flushing):
                if uri in buffer:
                    return buffer[uri]
        # Not buffered: either never written, or its batch is committed (the flusher drops the
        # flushing buffer only after the commit), so RocksDB has the newest value.
        try:
            raw = self._db.get(uri.encode())
        except Exception as exc:  # rocksdict raises bare Exception
            raise MetastoreError(f"metastore {self.path!r}: cannot read {uri!r}: {exc}") from exc
        return None if raw is None else codec.decode(uri, raw)

    def peek_many(self, uris: list[str]) -> list[MetaEntry | None]:
        found: list[MetaEntry | None] = [None] * len(uris)
        unbuffered: list[int] = []
        with self._buffer_lock:
            self._check_open()
            if self._state is PersistenceState.MEMORY_ONLY:
                return found
            for i, uri in enumerate(uris):
                if uri in self._active:
                    found[i] = self._active[uri]
                elif uri in self._flushing:
                    found[i] = self._flushing[uri]
                else:
                    unbuffered.append(i)
        if unbuffered:
            # As in peek(): what is not buffered is committed, so RocksDB has the newest value.
            keys: list[str | int | float | bytes | bool] = [uris[i].encode() for i in unbuffered]
            try:
                values = cast(list[bytes | None], self._db.get(keys))
            except Exception as exc:  # rocksdict raises bare Exception
                raise MetastoreError(
                    f"metastore {self.path!r}: cannot read {len(keys)} entries: {exc}"
                ) from exc
            for i, raw in zip(unbuffered, values, strict=True):
                found[i] = None if raw is None else self._decode_or_none(uris[i], raw)
        return found

    def put(self, uri: str, entry: MetaEntry) -> None:
        self._buffer(uri, entry)

    def put_many(self, items: list[tuple[str, MetaEntry]]) -> None:
        with self._buffer_lock:
            self._check_open()
            if self._state is not PersistenceState.MEMORY_ONLY:
                self._active.update(items)

    def pop(self, uri: str) -> MetaEntry | None:
        try:
            previous = self.peek(uri)
        except CorruptEntry:
            log.warning("dropping an undecodable metastore entry for %r", uri)
            previous = None
        self._buffer(uri, None)
        return previous

    def delete(self, uri: str) -> None:
        self._buffer(uri, None)

    def _buffer(self, uri: str, entry: MetaEntry | None) -> None:
        with self._buffer_lock:
            self._check_open()
            if self._state is PersistenceState.MEMORY_ONLY:
                return
            self._active[uri] = entry

    def pop_under(self, prefix: str) -> list[tuple[str, MetaEntry]]:
        with self._flush_lock:
            merged: dict[str, MetaEntry | None] = {}
            for uri, raw in self._scan(prefix):
                merged[uri] = self._decode_or_none(uri, raw)
            with self._buffer_lock:
                self._check_open()
                if self._state is PersistenceState.MEMORY_ONLY:
                    return []
                # Oldest first, so the active buffer's writes win over the flushing one's.
                for buffer in (self._flushing, self._active):
                    merged.update((u, e) for u, e in buffer.items() if uris.is_under(u, prefix))
                for uri in merged:
                    self._active[uri] = None
        return [(uri, entry) for uri, entry in merged.items() if entry is not None]

    def _scan(self, prefix: str) -> list[tuple[str, bytes]]:
        """Committed values at or under ``prefix``: URIs sort so that a directory's descendants
        are contiguous after ``prefix + "/"``."""
        base = (prefix if prefix.endswith("/") else prefix + "/").encode()
        found: list[tuple[str, bytes]] = []
        try:
            exact = self._db.get(prefix.encode())
            if exact is not None:
                found.append((prefix, exact))
            for item_key, value in self._db.items(from_key=base):
                key = cast(bytes, item_key)  # raw mode: keys and values are bytes
                if not key.startswith(base):
                    break
                found.append((key.decode(), value))
        except Exception as exc:  # rocksdict raises bare Exception
            raise MetastoreError(f"metastore {self.path!r}: cannot scan {prefix!r}: {exc}") from exc
        return found

    @staticmethod
    def _decode_or_none(uri: str, raw: bytes) -> MetaEntry | None:
        try:
            return codec.decode(uri, raw)
        except CorruptEntry:
            log.warning("dropping an undecodable metastore entry for %r", uri)
            return None

    def flush(self) -> None:
        """Commit everything buffered so far.

        Raises MetastoreError if the commit fails (the store then stops persisting, see the
        module's docstring) or has already failed.
        """
        with self._flush_lock:
            with self._buffer_lock:
                if self._state is PersistenceState.MEMORY_ONLY:
                    raise MetastoreError(f"metastore {self.path!r} no longer persists")
                if not self._active:
                    return
                self._flushing, self._active = self._active, {}
            self._commit_flushing()

    def _commit_flushing(self) -> None:
        # Only flushes (under _flush_lock, which the caller holds) replace _flushing.
        pending = self._flushing
        if not pending:
            return
        batch = WriteBatch(raw_mode=True)
        for uri, entry in pending.items():
            if entry is None:
                batch.delete(uri.encode())
            else:
                batch.put(uri.encode(), codec.encode(entry))
        try:
            self._db.write(batch)
        except Exception as exc:  # rocksdict raises bare Exception
            self._give_up(exc)
            raise MetastoreError(
                f"metastore {self.path!r}: cannot commit {len(pending)} entries: {exc}"
            ) from exc
        with self._buffer_lock:
            self._flushing = {}
        self._flushes += 1

    def _give_up(self, cause: Exception) -> None:
        """Stop persisting after a failed commit: drop the buffers, read RocksDB no more, and
        mark the directory so the next start discards it."""
        self._flush_errors += 1
        with self._buffer_lock:
            self._dropped += len(self._active) + len(self._flushing)
            self._active, self._flushing = {}, {}
            self._state = PersistenceState.MEMORY_ONLY
        log.error(
            "metastore %r: a commit failed (%s); no longer persisting metadata until the worker "
            "restarts, serving from memory and the UFS (%d pending writes dropped)",
            self.path,
            cause,
            self._dropped,
        )
        mark_uncommitted(self.path)

    def _run_flusher(self) -> None:
        interval_s = self._options.flush_interval_ms / 1000
        while not self._stop.wait(interval_s):
            try:
                self.flush()
            except MetastoreError:
                return  # logged by _give_up; nothing will be committed any more

    def close(self) -> None:
        """Stop the flusher, commit what is buffered and close RocksDB. Idempotent.

        Never raises: if the last commit fails, or the store no longer persists, that is logged
        and the ``UNCOMMITTED`` marker makes the next start discard the directory.
        """
        with self._buffer_lock:
            if self._closed:
                return
            # From here on reads and writes are refused; the final flush still commits.
            self._closed = True
        self._stop.set()
        self._flusher.join()
        # A failure was logged when the store gave up; its marker makes the next start discard it.
        with contextlib.suppress(MetastoreError):
            self.flush()
        try:
            self._db.close()
        except Exception as exc:  # noqa: BLE001 - rocksdict raises bare Exception; logged
            log.error("metastore %r: closing RocksDB failed: %s", self.path, exc)
        finally:
            self._dir_lock.release()

    def load_marker(self, name: str) -> bytes | None:
        with self._buffer_lock:
            self._check_open()
            if self._state is PersistenceState.MEMORY_ONLY:
                return None  # RocksDB lacks writes the marker would claim to cover
        try:
            raw: bytes | None = self._db.get(_MARKER_PREFIX + name.encode())
        except Exception as exc:  # rocksdict raises bare Exception
            raise MetastoreError(f"metastore {self.path!r}: cannot read marker {name!r}") from exc
        return raw

    def save_marker(self, name: str, value: bytes) -> None:
        # Commit the buffered entries first: the marker is written after what it covers.
        self.flush()
        try:
            self._db.put(_MARKER_PREFIX + name.encode(), value)
        except Exception as exc:  # rocksdict raises bare Exception
            raise MetastoreError(f"metastore {self.path!r}: cannot write marker {name!r}") from exc

    def _check_open(self) -> None:
        if self._closed:
            raise MetastoreError(f"metastore {self.path!r} is closed")

    def stats(self) -> dict[str, int]:
        with self._buffer_lock:
            pending = len(self._active) + len(self._flushing)
            memory_only = self._state is PersistenceState.MEMORY_ONLY
        return {
            "metastore_pending": pending,
            "metastore_flushes": self._flushes,
            "metastore_flush_errors": self._flush_errors,
            "metastore_memory_only": int(memory_only),
            "metastore_dropped_writes": self._dropped,
        }

    def persistence_state(self) -> PersistenceState:
        with self._buffer_lock:
            return self._state
