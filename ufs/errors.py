"""The UFS error tree. ``ufs.adapter`` translates fsspec/botocore/OS errors into these in one
place; everything above the adapter only sees these."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the client imports these errors, and the deadline module only a worker uses
    from ufs.deadline import Deadline


class UfsError(Exception):
    """Base of every error the UFS adapter raises."""


class UfsNotFound(UfsError, FileNotFoundError):
    """The path does not exist in the UFS."""


class UfsPermissionDenied(UfsError, PermissionError):
    """The UFS refused access (credentials, ACLs, read-only)."""


class UfsInvalidPath(UfsError, ValueError):
    """The URI is malformed, names an unsupported scheme, or contains traversal."""


class UfsOutsideRoots(UfsError, PermissionError):
    """The URI is not under any configured mount root."""


class UfsAlreadyExists(UfsError, FileExistsError):
    """The target of a create or rename already exists."""


class UfsNotADirectory(UfsError, NotADirectoryError):
    """A directory operation named a file."""


class UfsIsADirectory(UfsError, IsADirectoryError):
    """A file operation named a directory."""


class UfsUnsupported(UfsError):
    """The storage cannot do the operation asked of it (such as an append where no exact
    emulation exists)."""


class UfsTooLarge(UfsError):
    """The operation would move more bytes than a configured bound allows."""


class StorageUnavailable(UfsError):
    """The UFS could not be reached or failed on its side (connection refused, timeout, 5xx),
    after bounded retries. ``retry_after`` is a hint in seconds for callers."""

    def __init__(self, message: str, retry_after: int = 1) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class UfsDeadlineExceeded(UfsError, TimeoutError):
    """The caller's own ``deadline`` for the request ran out while it waited for the UFS, or
    left no time for another attempt after a failure. Unlike :class:`StorageUnavailable`, where
    the UFS took longer than ``dora.ufs.call.deadline``, the caller has stopped waiting:
    there is nothing to retry on its behalf. A caller that shares a call with others (single
    flight) tells by ``deadline`` whose time ran out: another caller's is not its own."""

    def __init__(self, message: str, deadline: Deadline) -> None:
        super().__init__(message)
        self.deadline = deadline


class UfsVersionChanged(UfsError):
    """The file changed while it was being read: it is no longer at ``expected``."""

    def __init__(self, uri: str, expected: str, actual: str | None) -> None:
        now = f"now {actual!r}" if actual else "it has changed"
        super().__init__(f"{uri} changed during the read: expected version {expected!r}, {now}")
        self.uri = uri
        self.expected = expected
        self.actual = actual
