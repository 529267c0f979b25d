"""The modes of what the cache creates on disk, set explicitly whatever the process's umask.

Page directories and page files are read by short-circuit clients (``pagestore.shortcircuit``)
that run as the worker's user or in its group, so they are group-readable and no more: a
directory another user could write would let that user plant a page with a valid checksum,
which the worker and every short-circuit client would then serve. What only the worker reads
(the metastore, the state file with its token) is private to its user.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

SHARED_DIR = 0o750
"""Page directories: the worker writes, its group (short-circuit clients) reads."""
SHARED_FILE = 0o640
"""Page files, packs, records, markers, the generation counters: read by the group."""
PRIVATE_DIR = 0o700
"""The metastore's directory, the work directory: the worker's user only."""
PRIVATE_FILE = 0o600
"""The metastore's lock and marker, the state file that carries the token."""
PUBLIC_DIR = 0o755
"""What holds only public things that any user's process may read: the Spark integration's
cache of its jar and truststores (executors may run as another user)."""
PUBLIC_FILE = 0o644
"""The Spark integration's jar and truststores: code and public certificates, which must not
be writable by anyone else (a planted class or CA would be trusted)."""


def make_dirs(path: Path, mode: int) -> None:
    """Create ``path`` and any missing parent with exactly ``mode``; directories that exist
    already are left as they are (the cache changes only what it created)."""
    missing: list[Path] = []
    at = path
    while not at.exists():
        missing.append(at)
        at = at.parent
    for directory in reversed(missing):
        make_dir(directory, mode)


def make_dir(path: Path | str, mode: int) -> None:
    """Create the directory ``path`` with exactly ``mode``, its parent having to exist
    (FileNotFoundError otherwise); one that exists already is left as it is."""
    try:
        os.mkdir(path, mode)
    except FileExistsError:
        return  # made meanwhile by another thread or process: theirs to set
    os.chmod(path, mode)  # mkdir's mode is masked by the umask


def create(path: str | Path, flags: int, mode: int) -> int:
    """``os.open`` with ``O_CREAT``, the file then set to exactly ``mode`` (the mode given to
    open is masked by the umask). The caller closes the descriptor."""
    fd = os.open(path, flags | os.O_CREAT, mode)
    try:
        os.fchmod(fd, mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_file(path: Path, data: bytes, mode: int) -> None:
    """Create or replace ``path`` with ``data`` and exactly ``mode``."""
    fd = create(path, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC, mode)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def tighten(path: str | Path, mode: int) -> bool:
    """Take the bits ``mode`` lacks away from ``path``, a directory or a regular file made
    under a looser umask (a link is left alone: checked by ``lstat`` just before, and only the
    owner of the directory holding it could swap it meanwhile); never adds any. Whether it
    changed the mode; gone is not an error. Raises OSError."""
    try:
        current = os.lstat(path)
    except FileNotFoundError:
        return False
    loose = stat.S_IMODE(current.st_mode)
    if stat.S_ISLNK(current.st_mode) or not loose & ~mode:
        return False
    with contextlib.suppress(FileNotFoundError):
        os.chmod(path, loose & mode)
        return True
    return False
