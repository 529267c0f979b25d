"""The error catalogue: one row per error, read the same way by the worker's REST answers, the
fsspec client's translation of them, and the client's UFS fallback."""

import httpx
import pytest

from config import ConfigError
from ufs import errors as ufs
from ufs.deadline import Deadline
from worker.api.errors import error_response
from worker.client.errors import error_from_response
from worker.common import errors as catalogue
from worker.meta.errors import MetaVersionMismatch


class UfsTimeout(ufs.StorageUnavailable):
    """A subclass the catalogue does not list: it maps as its nearest listed base."""


@pytest.mark.parametrize(
    ("exc", "code", "status", "hadoop"),
    [
        (ufs.UfsNotFound("x"), "NotFound", 404, "FileNotFoundException"),
        (ufs.UfsOutsideRoots("x"), "OutsideMountRoots", 403, "AccessControlException"),
        (ufs.UfsPermissionDenied("x"), "PermissionDenied", 403, "AccessControlException"),
        (ufs.UfsInvalidPath("x"), "InvalidPath", 400, "IllegalArgumentException"),
        (ufs.UfsAlreadyExists("x"), "AlreadyExists", 409, "FileAlreadyExistsException"),
        (ufs.UfsVersionChanged("u", "a", "b"), "VersionMismatch", 412, "IOException"),
        (MetaVersionMismatch("u", "a", "b"), "VersionMismatch", 412, "IOException"),
        (ufs.StorageUnavailable("x"), "UfsUnavailable", 503, "IOException"),
        (UfsTimeout("x"), "UfsUnavailable", 503, "IOException"),
        (ufs.UfsDeadlineExceeded("x", Deadline(2.0)), "DeadlineExceeded", 504, "IOException"),
        (ufs.UfsError("x"), "UfsError", 502, "IOException"),
        (ConfigError("x"), "BadRequest", 400, "IllegalArgumentException"),
        (catalogue.InvalidRequest("x"), "BadRequest", 400, "IllegalArgumentException"),
        (catalogue.Unauthorized("x"), "Unauthorized", 401, "AccessControlException"),
        (catalogue.RangeNotSatisfiable("x"), "RangeNotSatisfiable", 416, "EOFException"),
        (catalogue.PayloadTooLarge("x"), "PayloadTooLarge", 413, "IOException"),
    ],
)
def test_worker_errors_have_one_code_status_and_hadoop_name(
    exc: BaseException, code: str, status: int, hadoop: str
) -> None:
    kind = catalogue.kind_of(exc)
    assert kind is not None
    assert (kind.code, kind.status, kind.hadoop_name) == (code, status, hadoop)
    assert "." in kind.hadoop  # fully qualified, as RemoteException's javaClassName


def test_unknown_exceptions_are_bugs() -> None:
    assert catalogue.kind_of(KeyError("x")) is None
    assert catalogue.kind_of(FileNotFoundError("a bug, not a UFS answer")) is None


@pytest.mark.parametrize("kind", catalogue.CATALOGUE, ids=lambda k: k.code)
def test_the_client_reads_every_rest_answer_as_the_catalogue_says(
    kind: catalogue.ErrorKind,
) -> None:
    rest = error_response(kind, "the worker says no", {"Retry-After": "7"})
    answer = httpx.Response(rest.status_code, headers=dict(rest.headers), content=rest.body)
    raised = error_from_response(answer, "w:1", "status s3://b/k")
    assert type(raised) is kind.client
    assert (raised.status, raised.code) == (kind.status, kind.code)
    assert "the worker says no" in str(raised)
    if isinstance(raised, catalogue.UfsUnavailable):
        assert raised.retry_after == 7


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (400, catalogue.InvalidRequest),
        (401, catalogue.Unauthorized),
        (404, catalogue.NotFound),
        (405, catalogue.WorkerFailure),
        (503, catalogue.UfsUnavailable),
        (418, catalogue.WorkerFailure),
    ],
)
def test_an_answer_with_an_unknown_code_maps_by_status(status: int, expected: type) -> None:
    answer = httpx.Response(status, json={"error": "FromANewerWorker", "message": "m"})
    assert type(error_from_response(answer, "w:1", "read")) is expected


def test_an_unknown_route_is_not_a_missing_file() -> None:
    answer = httpx.Response(404, json={"error": "NoSuchRoute", "message": "GET /v9/x"})
    raised = error_from_response(answer, "w:1", "status s3://b/k")
    assert not isinstance(raised, FileNotFoundError)


@pytest.mark.parametrize(
    ("exc", "expected", "builtin"),
    [
        (ufs.UfsNotFound("x"), catalogue.NotFound, FileNotFoundError),
        (ufs.UfsOutsideRoots("x"), catalogue.AccessDenied, PermissionError),
        (ufs.UfsIsADirectory("x"), catalogue.IsADirectory, IsADirectoryError),
        (ufs.UfsNotADirectory("x"), catalogue.NotADirectory, NotADirectoryError),
        (ufs.UfsVersionChanged("u", "a", None), catalogue.VersionMismatch, OSError),
        (ufs.UfsDeadlineExceeded("x", Deadline(2.0)), catalogue.DeadlineExceeded, TimeoutError),
        (ufs.UfsError("x"), catalogue.UfsFailure, OSError),
    ],
)
def test_the_fallback_raises_what_a_worker_answer_would(
    exc: BaseException, expected: type, builtin: type
) -> None:
    raised = catalogue.client_error_for(exc, f"UFS fallback: {exc}")
    assert type(raised) is expected
    assert isinstance(raised, builtin)


def test_the_fallback_keeps_the_ufs_retry_hint() -> None:
    raised = catalogue.client_error_for(ufs.StorageUnavailable("down", retry_after=4), "down")
    assert isinstance(raised, catalogue.UfsUnavailable)
    assert raised.retry_after == 4


def test_error_headers() -> None:
    assert catalogue.headers_for(ufs.StorageUnavailable("x", retry_after=3)) == {"Retry-After": "3"}
    assert catalogue.headers_for(catalogue.Unauthorized("x")) == {"WWW-Authenticate": "Bearer"}
    range_error = catalogue.RangeNotSatisfiable("past the end", size=0)
    assert catalogue.headers_for(range_error) == {"Content-Range": "bytes */0"}
    assert catalogue.headers_for(catalogue.RangeNotSatisfiable("bad")) == {}
    # The caller's own time is spent: no hint to retry later.
    assert catalogue.headers_for(ufs.UfsDeadlineExceeded("x", Deadline(2.0))) == {}
