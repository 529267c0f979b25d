"""The one error catalogue: every error a doracache surface answers with, named once.

Each :class:`ErrorKind` row ties together the error ``code`` (the ``error`` field of a REST
answer), its HTTP ``status``, the exception the dora client raises for it, the Java exception a
Hadoop (WebHDFS) client sees, and the exception types that produce it inside the worker. Surfaces
only render a row in their own shape: REST v1 and WebHDFS look errors up with :func:`kind_of`, the
fsspec client turns an answer back into an exception with :func:`for_answer`, and the client's
UFS fallback translates UFS errors with :func:`client_error_for`. ``ufs.mapping`` stays the one
place where fsspec, botocore and OS errors become UFS errors below all of this.

The client's exceptions (:class:`DoraError` and its subclasses) are declared here too, so the
table can name them without importing the client; ``worker.client.errors`` re-exports them. The
worker raises those that name a caller's mistake (:class:`InvalidRequest`,
:class:`Unauthorized`, :class:`PayloadTooLarge`, :class:`RangeNotSatisfiable`,
:class:`IsADirectory`, :class:`NotFound` for what is not a UFS path, such as a load job).
This module imports no web framework and no service.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from config.errors import ConfigError
from ufs import errors as ufs

# -- the exceptions of the dora client (and of the worker's request checks) ----------------------


class DoraError(OSError):
    """Base of every error the dora client raises. ``status`` and ``code`` are the worker's HTTP
    status and error code when the error came from a worker's answer; ``worker`` is its address."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        worker: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.worker = worker

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class InvalidRequest(DoraError, ValueError):
    """The worker refused the request as malformed (400): a bad path or parameter."""


class UnsupportedOperation(InvalidRequest):
    """The request names an operation this surface does not offer (400), such as a WebHDFS
    ACL or snapshot call."""


class NotFound(DoraError, FileNotFoundError):
    """The path does not exist (404)."""


class AccessDenied(DoraError, PermissionError):
    """The worker refused the caller (401: token) or the path (403: outside the mount roots,
    or the UFS denied access)."""


class Unauthorized(AccessDenied):
    """The bearer token is missing or wrong (401)."""


class AlreadyExists(DoraError, FileExistsError):
    """The target of a create already exists (409)."""


class NotADirectory(DoraError, NotADirectoryError):
    """A directory operation named a file."""


class IsADirectory(DoraError, IsADirectoryError):
    """A file operation named a directory."""


class VersionMismatch(DoraError):
    """The file no longer has the version the caller pinned (412): it changed in the UFS."""


class PayloadTooLarge(DoraError):
    """A write body larger than the worker's limit (413)."""


class PinLimitExceeded(DoraError):
    """A pin would take pinned bytes past ``dora.worker.page.store.pin.max`` (507)."""


class RangeNotSatisfiable(DoraError, ValueError):
    """The requested byte range is outside the file (416). ``size`` is the file's size when
    known, so an answer can say ``Content-Range: bytes */size`` (RFC 9110)."""

    def __init__(
        self,
        message: str,
        *,
        size: int | None = None,
        status: int | None = None,
        code: str | None = None,
        worker: str | None = None,
    ) -> None:
        super().__init__(message, status=status, code=code, worker=worker)
        self.size = size


class UfsFailure(DoraError):
    """The UFS behind the worker failed (502)."""


class RetryLater(DoraError, ConnectionError):
    """A 503: retrying later may succeed. ``retry_after`` is the worker's hint in seconds."""

    def __init__(
        self,
        message: str,
        *,
        retry_after: float = 1.0,
        status: int | None = None,
        code: str | None = None,
        worker: str | None = None,
    ) -> None:
        super().__init__(message, status=status, code=code, worker=worker)
        self.retry_after = retry_after


class UfsUnavailable(RetryLater):
    """The UFS behind the worker is unavailable (503), still after the client's retries."""


class WorkerBusy(RetryLater):
    """The worker cannot take this request now (503): its load queue is full, or as many
    uploads as it takes at once are in flight."""


class DeadlineExceeded(DoraError, TimeoutError):
    """The worker stopped waiting for the UFS at the deadline the request came with (504):
    the client's own timeout, sent as ``X-Dora-Timeout-Ms`` (:mod:`worker.common.deadlines`). Not
    retried: the time the caller gave is spent."""


class RequestTimeout(DoraError):
    """The client sent nothing for longer than the worker waits in the middle of a request
    body (408); the connection is closed after the answer."""


class WorkerUnavailable(DoraError, ConnectionError):
    """No worker could be reached (and the call could not or may not fall back to the UFS), or a
    worker dropped a call that is not safe to repeat."""


class WorkerFailure(DoraError):
    """A worker answered with an error this client does not know (e.g. a 500)."""


# -- the catalogue -------------------------------------------------------------------------------

_IAE = "java.lang.IllegalArgumentException"
_ACE = "org.apache.hadoop.security.AccessControlException"
_FNF = "java.io.FileNotFoundException"
_IOE = "java.io.IOException"


@dataclass(frozen=True)
class ErrorKind:
    """One error as every surface names it.

    ``code`` and ``status`` are what REST v1 answers; ``client`` is the exception the dora client
    raises; ``hadoop`` is the fully qualified Java class a WebHDFS ``RemoteException`` names;
    ``raised_by`` are the exception types (matched with their subclasses) that produce this kind
    inside the worker.
    """

    code: str
    status: int
    client: type[DoraError]
    hadoop: str
    raised_by: tuple[type[BaseException], ...] = ()

    @property
    def hadoop_name(self) -> str:
        """The Java class's simple name (WebHDFS's ``exception`` field)."""
        return self.hadoop.rsplit(".", 1)[-1]


# The first row of each status is what an answer with an unknown code maps to.
CATALOGUE: tuple[ErrorKind, ...] = (
    ErrorKind("BadRequest", 400, InvalidRequest, _IAE, (InvalidRequest, ConfigError)),
    ErrorKind("InvalidPath", 400, InvalidRequest, _IAE, (ufs.UfsInvalidPath,)),
    # Not java.lang.UnsupportedOperationException: Hadoop's client rethrows that one unchecked
    # (FsShell prints its stack trace), where IllegalArgumentException is what a NameNode
    # answers for an op it does not have, which the client shows as one line and, where it
    # can, falls back from.
    ErrorKind(
        "UnsupportedOperation",
        400,
        InvalidRequest,
        _IAE,
        (UnsupportedOperation, ufs.UfsUnsupported),
    ),
    ErrorKind(
        "NotADirectory",
        400,
        NotADirectory,
        "org.apache.hadoop.fs.ParentNotDirectoryException",
        (ufs.UfsNotADirectory, NotADirectory),
    ),
    # HDFS answers an OPEN of a directory with FileNotFoundException("Path is not a file").
    ErrorKind("IsADirectory", 400, IsADirectory, _FNF, (ufs.UfsIsADirectory, IsADirectory)),
    ErrorKind("Unauthorized", 401, Unauthorized, _ACE, (Unauthorized,)),
    ErrorKind("OutsideMountRoots", 403, AccessDenied, _ACE, (ufs.UfsOutsideRoots,)),
    ErrorKind("PermissionDenied", 403, AccessDenied, _ACE, (ufs.UfsPermissionDenied,)),
    ErrorKind("NotFound", 404, NotFound, _FNF, (ufs.UfsNotFound, NotFound)),
    # No route answers this path: not a missing file, so the client must not say "not found".
    ErrorKind("NoSuchRoute", 404, WorkerFailure, _IAE),
    ErrorKind("MethodNotAllowed", 405, WorkerFailure, _IAE),
    ErrorKind(
        "AlreadyExists",
        409,
        AlreadyExists,
        "org.apache.hadoop.fs.FileAlreadyExistsException",
        (ufs.UfsAlreadyExists,),
    ),
    ErrorKind(
        "VersionMismatch",
        412,
        VersionMismatch,
        _IOE,
        (ufs.UfsVersionChanged,),
    ),
    ErrorKind("RequestTimeout", 408, RequestTimeout, _IOE, (RequestTimeout,)),
    ErrorKind("PayloadTooLarge", 413, PayloadTooLarge, _IOE, (PayloadTooLarge, ufs.UfsTooLarge)),
    ErrorKind(
        "RangeNotSatisfiable",
        416,
        RangeNotSatisfiable,
        "java.io.EOFException",
        (RangeNotSatisfiable,),
    ),
    ErrorKind("InternalError", 500, WorkerFailure, _IOE),
    ErrorKind("PinLimitExceeded", 507, PinLimitExceeded, _IOE, (PinLimitExceeded,)),
    ErrorKind("UfsError", 502, UfsFailure, _IOE, (ufs.UfsError,)),
    ErrorKind("UfsUnavailable", 503, UfsUnavailable, _IOE, (ufs.StorageUnavailable,)),
    ErrorKind("WorkerBusy", 503, WorkerBusy, _IOE, (WorkerBusy,)),
    ErrorKind("DeadlineExceeded", 504, DeadlineExceeded, _IOE, (ufs.UfsDeadlineExceeded,)),
)

_BY_TYPE: dict[type[BaseException], ErrorKind] = {}
_BY_CODE: dict[str, ErrorKind] = {}
_BY_STATUS: dict[int, ErrorKind] = {}
for _kind in CATALOGUE:
    _BY_CODE[_kind.code] = _kind
    _BY_STATUS.setdefault(_kind.status, _kind)
    for _raised in _kind.raised_by:
        if _raised in _BY_TYPE:
            raise TypeError(f"{_raised.__name__} is in the error catalogue twice")
        _BY_TYPE[_raised] = _kind
del _kind, _raised

INTERNAL = _BY_CODE["InternalError"]
"""The kind of an exception the catalogue does not know: a bug, answered 500."""


class Catalogued:
    """A mixin for an exception of the worker's own parts (which this module does not import)
    that names the catalogue row it is answered with by its ``error_code``, as the metadata
    tiers' ``VersionMismatch`` names ``"VersionMismatch"``."""

    error_code: ClassVar[str]


def kind_of(exc: BaseException) -> ErrorKind | None:
    """The kind of an exception raised inside the worker, or None for a bug. The most specific
    catalogued class in the exception's MRO decides (``UfsNotFound`` before ``UfsError``); a
    :class:`Catalogued` exception is of the kind it names."""
    for cls in type(exc).__mro__:
        kind = _BY_TYPE.get(cls)
        if kind is not None:
            return kind
    if isinstance(exc, Catalogued):
        return _BY_CODE[exc.error_code]
    return None


def kind_for_code(code: str) -> ErrorKind:
    """The kind named ``code``; KeyError if the catalogue has none."""
    return _BY_CODE[code]


def for_answer(code: str | None, status: int) -> ErrorKind | None:
    """The kind of a worker's error answer: by its code, else by its status; None when neither
    is known (an error this client cannot interpret)."""
    return _BY_CODE.get(code or "") or _BY_STATUS.get(status)


def headers_for(exc: BaseException) -> dict[str, str]:
    """HTTP headers an error answer carries besides its body: ``Retry-After`` when the UFS is
    unavailable or the worker busy, ``WWW-Authenticate`` for a missing token, ``Content-Range:
    bytes */size`` for a range past the end of a file of known size, ``Connection: close``
    when the client stalled mid-body (the rest of it is not awaited)."""
    if isinstance(exc, ufs.StorageUnavailable | WorkerBusy):
        return {"Retry-After": str(exc.retry_after)}
    if isinstance(exc, RequestTimeout):
        return {"Connection": "close"}
    if isinstance(exc, Unauthorized):
        return {"WWW-Authenticate": "Bearer"}
    if isinstance(exc, RangeNotSatisfiable) and exc.size is not None:
        return {"Content-Range": f"bytes */{exc.size}"}
    return {}


def client_error(
    kind: ErrorKind | None,
    message: str,
    *,
    status: int | None = None,
    code: str | None = None,
    worker: str | None = None,
    retry_after: float = 1.0,
) -> DoraError:
    """The client exception for ``kind`` (WorkerFailure for None) with ``message``."""
    cls = WorkerFailure if kind is None else kind.client
    if issubclass(cls, RetryLater):
        return cls(message, retry_after=retry_after, status=status, code=code, worker=worker)
    return cls(message, status=status, code=code, worker=worker)


def client_error_for(exc: BaseException, message: str) -> DoraError:
    """The client exception for an error raised in this process (the client's UFS fallback):
    the catalogue's client class for ``exc``'s kind, WorkerFailure if it has none."""
    retry_after = exc.retry_after if isinstance(exc, ufs.StorageUnavailable | WorkerBusy) else 1.0
    return client_error(kind_of(exc), message, retry_after=retry_after)
