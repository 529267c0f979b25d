"""The seam between the :class:`ufs.adapter.Ufs` facade and one kind of storage.

A backend knows one storage kind's specifics (paths, how a status is built, conditional reads,
how a stream is uploaded, how to stop waiting for it); the facade keeps everything shared:
error translation, retries, the deadline of each call, composite operations. The contract
suite (``tests/ufs/contract.py``) runs over every backend.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

from fsspec.spec import AbstractFileSystem

from ufs.deadline import Deadline
from ufs.status import UfsStatus

WRITE_CHUNK = 8 << 20


class UfsBackend(Protocol):
    """One storage kind behind the facade. Thread-safe.

    Every method takes a canonical URI (:mod:`ufs.uri`) of this backend's scheme and raises
    the storage's own errors (``OSError``, botocore's, ...) for the facade to translate, or a
    :class:`ufs.errors.UfsError` for what only the backend can tell (a failed precondition).
    Each method is done by its ``deadline``, or raises
    :class:`ufs.deadline.DeadlinePassed` having stopped waiting (and cancelled the request
    where the storage allows).

    ``pins_versions``: :meth:`read` with a version guarantees the bytes come from it (else
    the facade re-checks the version after the read). ``has_directories``: :meth:`move`
    moves a whole directory in one call (else the facade moves file by file).
    """

    pins_versions: bool
    has_directories: bool

    @property
    def filesystem(self) -> AbstractFileSystem:
        """The fsspec filesystem for this storage, for callers that need one."""
        ...

    def status(self, uri: str, deadline: Deadline) -> UfsStatus:
        """The status of a file or directory; FileNotFoundError if absent."""
        ...

    def list(self, uri: str, deadline: Deadline) -> list[UfsStatus]:
        """The children of a directory, in any order. A file raises NotADirectoryError (or
        UfsNotADirectory), a missing path FileNotFoundError."""
        ...

    def read(
        self, uri: str, offset: int, length: int, version: str | None, deadline: Deadline
    ) -> bytes:
        """Bytes ``[offset, offset+length)``, fewer at the end of the file. With
        ``pins_versions`` and a ``version``, raises UfsVersionChanged if the file is not at
        that version; otherwise ``version`` is ignored."""
        ...

    def write(self, uri: str, data: bytes, deadline: Deadline) -> UfsStatus:
        """Create or replace a file, creating parent directories as needed; the status of
        what was written. A write that fails leaves the old file, if any, in place where the
        storage allows.

        The status is the write's own, taken from the write itself where the storage tells
        it (the file written, the ETag answered), so a concurrent delete or replace of the
        file right after neither fails a write that succeeded nor answers the other party's
        file; where a part of it must come from a look after the write, a failed look
        yields the documented best value, never an error."""
        ...

    def write_stream(
        self, uri: str, chunks: Iterator[bytes], step: Callable[[], Deadline]
    ) -> UfsStatus:
        """Like :meth:`write`, from chunks of any size read once. Each request of the upload
        is done by a deadline of its own, ``step()`` made as it starts, rather than the
        whole by one, so a long healthy upload succeeds while one that stops making
        progress fails at a step's deadline."""
        ...

    def append(self, status: UfsStatus, data: Iterable[bytes], deadline: Deadline) -> UfsStatus:
        """Append the chunks of ``data`` to the file ``status`` describes, only while it is
        still at that version (else UfsVersionChanged); the status after. A failed append
        leaves the file as it was. Where the storage has no append, it is emulated only
        where the result is exact, else refused (UfsUnsupported)."""
        ...

    def delete(self, uri: str, recursive: bool, deadline: Deadline) -> None:
        """Delete a file, or a directory with everything under it when ``recursive``; a
        symlink is removed itself, never followed."""
        ...

    def move(self, src: str, dst: str, deadline: Deadline) -> None:
        """Move a file (and a directory, with ``has_directories``) to ``dst``."""
        ...

    def mkdir(self, uri: str, deadline: Deadline) -> None:
        """Create a directory and its parents; an existing one is fine."""
        ...
