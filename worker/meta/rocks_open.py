"""Opening the RocksDB metastore directory: the exclusive lock, the format check, and recovery
from a directory that cannot be opened (``dora.worker.metastore.rocksdb.recover``).

A directory the worker may wipe is recognised by a marker file, ``DORACACHE``, written before
RocksDB first creates its files there. Anything else at the path (a file, a symlink to none, a
non-empty directory without the marker, a RocksDB database included) is somebody else's data:
it is refused before anything is created beside it, and never wiped, whatever the policy. A
wipe empties the directory and keeps it (it may be a mount point, or reached by a symlink).

A second marker, ``UNCOMMITTED``, is written when a commit fails: the store may then lack writes
the worker made, so its entries may be stale. A directory holding it cannot be opened
(recovery applies: by default it is wiped and the worker starts cold).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import math
import os
import shutil
from pathlib import Path

from rocksdict import AccessType, Options, Rdict

from pagestore import modes
from worker.meta.errors import MetastoreBusy, MetastoreOpenError
from worker.meta.options import RecoverPolicy

log = logging.getLogger(__name__)

MARKER = "DORACACHE"
MARKER_TEXT = b"doracache metastore, value format 1\n"
UNCOMMITTED = "UNCOMMITTED"
# rocksdict writes its options beside RocksDB's files, with the process's umask (0666 under
# umask 000). RocksDB makes its own files 0644; the directory is 0700 either way.
_ROCKSDICT_CONFIG = "rocksdict-config.json"
# RocksDB keeps every write in a memtable until it reaches this size, then flushes it to disk.
# Its default, 64 MB (and two of them while one flushes), is memory a worker holds for statuses
# that are rewritten over and over: the mixed-load soak grew glibc's heap in use by 7 MiB in
# 25 minutes this way (RELIABILITY.md, issue 36 item 9). Statuses are small and read from the
# memory tier first; flushing every 4 MB costs an L0 file now and then.
MEMTABLE_BYTES = 4 << 20


class _CannotOpen(Exception):
    """The directory exists but is not a metastore this worker can open; recovery may apply."""


class DirLock:
    """An exclusive ``flock`` on ``.<name>.lock`` beside the metastore directory, held while the
    store is open. It tells "another worker has it open" (never wipe) apart from corruption,
    which RocksDB's own LOCK error does not do except by message text. A lock file this lock
    created is removed again if the open fails. Not thread-safe; owned by one metastore.

    Raises MetastoreBusy if another store holds the lock, OSError if the file cannot be made.
    """

    def __init__(self, path: Path) -> None:
        self._path = path.parent / f".{path.name}.lock"
        while True:
            self._fd, self._created = _open_lock_file(self._path)
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(self._fd)
                raise MetastoreBusy(
                    f"metastore {str(path)!r} is in use by another worker "
                    f"(lock {str(self._path)!r})"
                ) from None
            # A failed open that created the file removes it while holding it: if that happened
            # before we got the flock, ours is on a removed file; take the one now in place.
            if _same_file(self._fd, self._path):
                return
            os.close(self._fd)

    def release(self, remove_if_created: bool = False) -> None:
        """Drop the lock; with ``remove_if_created``, first remove the lock file if this lock
        created it (an open that failed leaves nothing behind). Idempotent."""
        if self._fd < 0:
            return
        if remove_if_created and self._created:
            with contextlib.suppress(FileNotFoundError):
                self._path.unlink()  # while holding the flock: see __init__
        os.close(self._fd)  # closing the descriptor drops the flock
        self._fd = -1


def _open_lock_file(path: Path) -> tuple[int, bool]:
    """The lock file's descriptor, and whether this call created it."""
    while True:
        try:
            return modes.create(path, os.O_RDWR | os.O_EXCL, modes.PRIVATE_FILE), True
        except FileExistsError:
            pass
        try:
            return os.open(path, os.O_RDWR), False
        except FileNotFoundError:
            continue  # removed by a failed open in between: create it


def _same_file(fd: int, path: Path) -> bool:
    try:
        named = path.stat()
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino)


def open_store(path: str, ttl_ms: int, recover: RecoverPolicy) -> tuple[Rdict, DirLock]:
    """Lock and open the metastore at ``path`` (creating it if missing).

    If the cache's directory cannot be opened (corrupt, wrong format, a failed commit): with
    ``WIPE``, log an ERROR, empty it and start cold; with ``FAIL``, raise MetastoreOpenError
    naming the directory and the cause. Raises MetastoreOpenError, whatever the policy, if
    something the cache did not create is at the path, and MetastoreBusy if another store
    holds it.
    """
    where = Path(path)
    _refuse_foreign(where)  # before the lock file is created beside it
    try:
        # Shared: the work directory holds the page directories too, which short-circuit
        # clients of the worker's group traverse.
        modes.make_dirs(where.parent, modes.SHARED_DIR)
        lock = DirLock(where)
    except OSError as exc:
        raise MetastoreOpenError(f"cannot lock metastore {path!r}: {exc}") from exc
    try:
        return _open_or_recover(where, ttl_ms, recover), lock
    except BaseException:
        lock.release(remove_if_created=True)
        raise


def _open_or_recover(path: Path, ttl_ms: int, recover: RecoverPolicy) -> Rdict:
    try:
        return _open(path, ttl_ms)
    except _CannotOpen as exc:
        if recover is RecoverPolicy.FAIL:
            raise MetastoreOpenError(
                f"cannot open metastore {str(path)!r}: {exc} "
                "(set dora.worker.metastore.rocksdb.recover=wipe to start cold)"
            ) from exc
        log.error(
            "cannot open metastore %r: %s; deleting it and starting with an empty metastore "
            "(dora.worker.metastore.rocksdb.recover=wipe)",
            str(path),
            exc,
        )
    _wipe(path)
    try:
        return _open(path, ttl_ms)
    except _CannotOpen as exc:
        raise MetastoreOpenError(
            f"cannot open metastore {str(path)!r} even after wiping it: {exc}"
        ) from exc


def _open(path: Path, ttl_ms: int) -> Rdict:
    try:
        _check_format(path)
    except OSError as exc:
        raise _CannotOpen(f"cannot inspect it: {exc}") from exc
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.set_write_buffer_size(MEMTABLE_BYTES)
    # RocksDB's TTL only reclaims space at compaction; expiry itself is checked on every read.
    ttl_s = max(1, math.ceil(ttl_ms / 1000))
    try:
        store = Rdict(str(path), options, access_type=AccessType.with_ttl(ttl_s))
    except Exception as exc:  # rocksdict raises bare Exception for every failure
        raise _CannotOpen(str(exc)) from exc
    try:
        with contextlib.suppress(FileNotFoundError):  # a rocksdict that no longer writes it
            os.chmod(path / _ROCKSDICT_CONFIG, modes.PRIVATE_FILE)
    except OSError as exc:
        store.close()
        raise MetastoreOpenError(f"cannot make {str(path)!r} private: {exc}") from exc
    return store


def _check_format(path: Path) -> None:
    """Make a missing or empty directory the cache's (the marker first); raise _CannotOpen if
    the cache's directory is of another format or may miss writes."""
    _refuse_foreign(path)  # again, now that the lock is held
    if not path.exists() or not any(path.iterdir()):
        modes.make_dirs(path, modes.PRIVATE_DIR)
        modes.write_file(path / MARKER, MARKER_TEXT, modes.PRIVATE_FILE)
        return
    if (path / MARKER).read_bytes() != MARKER_TEXT:
        raise _CannotOpen(f"its {MARKER} marker names another format")
    if modes.tighten(path, modes.PRIVATE_DIR):
        # Its files are out of anyone else's reach once it is the user's only.
        log.warning("metastore %s was made under a looser umask: it is the user's only now", path)
    if (path / UNCOMMITTED).exists():
        raise _CannotOpen(f"its {UNCOMMITTED} marker says a commit failed, so it may miss writes")


def _refuse_foreign(path: Path) -> None:
    """Raise MetastoreOpenError unless ``path`` is missing, an empty directory, or a directory
    holding the cache's marker: anything else was not created by the cache."""
    try:
        if not path.exists() and not path.is_symlink():
            return
        if not path.is_dir():
            why = "it is not a directory"
        elif (path / MARKER).is_file() or not any(path.iterdir()):
            return
        elif (path / "CURRENT").exists():
            why = f"it is a RocksDB database without the {MARKER} marker"
        else:
            why = f"it is not empty and has no {MARKER} marker"
    except OSError as exc:
        why = f"cannot inspect it: {exc}"
    raise MetastoreOpenError(
        f"metastore {str(path)!r}: {why}, so the cache did not create it; refusing to use or "
        "delete it (point dora.worker.metastore.rocksdb.dir elsewhere)"
    )


def _wipe(path: Path) -> None:
    """Empty the cache's directory (its marker is there: everything in it is the cache's)."""
    try:
        for child in path.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    except OSError as exc:
        raise MetastoreOpenError(f"cannot wipe metastore {str(path)!r}: {exc}") from exc


def mark_uncommitted(path: str) -> None:
    """Create the ``UNCOMMITTED`` marker. Best effort: an empty file needs no data block, so a
    full disk takes it, but a failing one may not; a failure is logged."""
    marker = Path(path) / UNCOMMITTED
    try:
        marker.touch()
    except OSError as exc:
        log.error("cannot mark metastore %r as missing writes (%s): %s", path, marker, exc)
