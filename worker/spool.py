"""Where request bodies wait on disk until they are whole: ``<work dir>/spool``.

A write goes to the UFS only once its body has arrived whole (a client that stops mid-upload
leaves nothing behind), so the body must wait somewhere; in memory, each stalled upload held
what it had sent (up to 16 MB each, 32 at once). Here each body goes to its own file as it
arrives, so an upload holds no more memory than the batch its surface writes at a time
(``worker.api.body.spool_body``).

Each spool file is created 0600 in a 0700 directory and unlinked as soon as it is open: the
worker reads it back through the open file, the kernel frees it when the file is closed, and a
worker killed mid-upload leaves no body on disk for anyone to read. What a crash between the
creation and the unlink can leave (a name ending in :data:`SUFFIX`) is removed when a worker
starts (:meth:`BodySpool.sweep`); a live spool of another process sharing the work dir has no
name by then, so the sweep cannot take one from under it.
"""

from __future__ import annotations

import logging
import os
import uuid
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)

SPOOL_DIR = "spool"
"""The spool's directory under the work dir."""
SUFFIX = ".body"
DIR_MODE = 0o700
FILE_MODE = 0o600


class BodySpool:
    """Opens spool files in ``path``. Thread-safe: it holds nothing but the path."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def open(self) -> IO[bytes]:
        """A new, empty, nameless file for one body, open for writing and reading back; the
        caller closes it, which frees its space."""
        self.path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        name = self.path / f"{uuid.uuid4().hex}{SUFFIX}"
        fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
        try:
            os.unlink(name)
            return os.fdopen(fd, "w+b")
        except BaseException:
            os.close(fd)
            raise

    def sweep(self) -> int:
        """Remove the spool files a crashed worker left here; how many. Tightens the
        directory to its mode (an older worker may have made it under another umask)."""
        if not self.path.is_dir():
            return 0
        os.chmod(self.path, DIR_MODE)
        removed = 0
        for entry in self.path.iterdir():
            if entry.name.endswith(SUFFIX) and entry.is_file() and not entry.is_symlink():
                entry.unlink(missing_ok=True)
                removed += 1
        if removed:
            log.info("removed %d spool file(s) a stopped worker left in %s", removed, self.path)
        return removed
