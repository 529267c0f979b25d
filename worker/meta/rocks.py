"""The RocksDB metastore (rocksdict): key = the URI's UTF-8, value = :mod:`worker.meta.codec`.

Writes are batched Ozone-style with a double buffer. ``put`` and ``pop`` only touch the *active*
buffer (a dict, so the last write to a URI wins). Every flush interval one flusher thread swaps
it for an empty one and commits the swapped-out *flushing* buffer as one WriteBatch; only after
the commit does the flushing buffer go away. Reads look in the active buffer, then the flushing
buffer, then RocksDB, so an entry the memory tier evicted stays readable while its batch is
pending. A WriteBatch is atomic, so a crash loses at most the pending buffers, never half an
entry: a lost entry is a miss.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import cast

from rocksdict import Rdict, WriteBatch

from ufs import uri as uris
from worker.meta import codec
from worker.meta.entry import Lifetimes, MetaEntry, wall_clock_ms
from worker.meta.errors import CorruptEntry, MetastoreError
from worker.meta.options import MetastoreOptions
from worker.meta.rocks_open import DirLock, open_store

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
    both buffers and the closed flag; never held during RocksDB I/O). RocksDB calls themselves
    are thread-safe.
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
        self._flushes = 0
        self._flush_errors = 0
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

    def put(self, uri: str, entry: MetaEntry) -> None:
        with self._buffer_lock:
            self._check_open()
            self._active[uri] = entry

    def pop(self, uri: str) -> MetaEntry | None:
        try:
            previous = self.peek(uri)
        except CorruptEntry:
            log.warning("dropping an undecodable metastore entry for %r", uri)
            previous = None
        with self._buffer_lock:
            self._check_open()
            self._active[uri] = None
        return previous

    def pop_under(self, prefix: str) -> list[tuple[str, MetaEntry]]:
        with self._flush_lock:
            merged: dict[str, MetaEntry | None] = {}
            for uri, raw in self._scan(prefix):
                merged[uri] = self._decode_or_none(uri, raw)
            with self._buffer_lock:
                self._check_open()
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
        """Commit everything buffered so far (retrying a batch whose commit failed before).

        Raises MetastoreError if a commit fails; its entries stay buffered and readable.
        """
        with self._flush_lock:
            self._commit_flushing()
            with self._buffer_lock:
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
            self._flush_errors += 1
            raise MetastoreError(
                f"metastore {self.path!r}: cannot commit {len(pending)} entries: {exc}"
            ) from exc
        with self._buffer_lock:
            self._flushing = {}
        self._flushes += 1

    def _run_flusher(self) -> None:
        interval_s = self._options.flush_interval_ms / 1000
        while not self._stop.wait(interval_s):
            try:
                self.flush()
            except MetastoreError:
                # The batch stays buffered (still readable) and is retried next interval.
                log.exception(
                    "metastore flush failed; retrying in %d ms", self._options.flush_interval_ms
                )

    def close(self) -> None:
        """Stop the flusher, commit what is buffered and close RocksDB. Idempotent.

        Raises MetastoreError if the last commit fails (RocksDB is closed all the same).
        """
        with self._buffer_lock:
            if self._closed:
                return
            # From here on reads and writes are refused; the final flush still commits.
            self._closed = True
        self._stop.set()
        self._flusher.join()
        try:
            self.flush()
        finally:
            self._db.close()
            self._dir_lock.release()

    def load_marker(self, name: str) -> bytes | None:
        with self._buffer_lock:
            self._check_open()
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
        return {
            "metastore_pending": pending,
            "metastore_flushes": self._flushes,
            "metastore_flush_errors": self._flush_errors,
        }
