"""Opening the RocksDB metastore directory: the exclusive lock, the format check, and recovery
from a directory that cannot be opened (``dora.worker.metastore.rocksdb.recover``).

A directory the worker may wipe is recognised by a marker file, ``DORACACHE``, written before
RocksDB first creates its files there. A non-empty directory with neither the marker nor
RocksDB's ``CURRENT`` is somebody else's data: it is never wiped, whatever the policy.

A second marker, ``UNCOMMITTED``, is written when a commit fails: the store may then lack writes
the worker made, so its entries may be stale. A directory holding it cannot be opened
(recovery applies: by default it is wiped and the worker starts cold).
"""

from __future__ import annotations

import fcntl
import logging
import math
import os
import shutil
from pathlib import Path

from rocksdict import AccessType, Options, Rdict

from worker.meta.errors import MetastoreBusy, MetastoreOpenError
from worker.meta.options import RecoverPolicy

log = logging.getLogger(__name__)

MARKER = "DORACACHE"
MARKER_TEXT = b"doracache metastore, value format 1\n"
UNCOMMITTED = "UNCOMMITTED"


class _CannotOpen(Exception):
    """The directory exists but is not a metastore this worker can open; recovery may apply."""


class DirLock:
    """An exclusive ``flock`` on ``.<name>.lock`` beside the metastore directory, held while the
    store is open. It tells "another worker has it open" (never wipe) apart from corruption,
    which RocksDB's own LOCK error does not do except by message text. Not thread-safe; owned by
    one metastore."""

    def __init__(self, path: Path) -> None:
        lock_path = path.parent / f".{path.name}.lock"
        self._fd: int | None = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            self._fd = None
            raise MetastoreBusy(
                f"metastore {str(path)!r} is in use by another worker (lock {str(lock_path)!r})"
            ) from None

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def open_store(path: str, ttl_ms: int, recover: RecoverPolicy) -> tuple[Rdict, DirLock]:
    """Lock and open the metastore at ``path`` (creating it if missing).

    If the directory cannot be opened (corrupt, wrong format, a file in its place): with
    ``WIPE``, log an ERROR, delete it and start cold; with ``FAIL``, raise MetastoreOpenError
    naming the directory and the cause. Raises MetastoreBusy if another store holds it.
    """
    where = Path(path)
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        lock = DirLock(where)
    except OSError as exc:
        raise MetastoreOpenError(f"cannot lock metastore {path!r}: {exc}") from exc
    try:
        return _open_or_recover(where, ttl_ms, recover), lock
    except BaseException:
        lock.release()
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
    # RocksDB's TTL only reclaims space at compaction; expiry itself is checked on every read.
    ttl_s = max(1, math.ceil(ttl_ms / 1000))
    try:
        return Rdict(str(path), options, access_type=AccessType.with_ttl(ttl_s))
    except Exception as exc:  # rocksdict raises bare Exception for every failure
        raise _CannotOpen(str(exc)) from exc


def _check_format(path: Path) -> None:
    if path.exists() and not path.is_dir():
        raise _CannotOpen("it exists and is not a directory")
    if not path.exists() or not any(path.iterdir()):
        path.mkdir(parents=True, exist_ok=True)
        (path / MARKER).write_bytes(MARKER_TEXT)
        return
    marker = path / MARKER
    if marker.is_file():
        if marker.read_bytes() != MARKER_TEXT:
            raise _CannotOpen(f"its {MARKER} marker names another format")
        if (path / UNCOMMITTED).exists():
            raise _CannotOpen(
                f"its {UNCOMMITTED} marker says a commit failed, so it may miss writes"
            )
        return
    if (path / "CURRENT").exists():
        raise _CannotOpen(f"it is a RocksDB database without the {MARKER} marker")
    raise MetastoreOpenError(
        f"metastore directory {str(path)!r} is not empty and is not a metastore; "
        "refusing to use or wipe it (point dora.worker.metastore.rocksdb.dir elsewhere)"
    )


def _wipe(path: Path) -> None:
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
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
