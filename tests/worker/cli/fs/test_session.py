"""How a ``dora fs`` command's outcome becomes one line on stderr and an exit status."""

import pytest

from worker.cli.fs.session import Failure, execute, is_remote
from worker.client.errors import InvalidRequest, NotFound, WorkerUnavailable


def raising(error: BaseException) -> int:
    raise error


@pytest.mark.parametrize(
    ("error", "status", "line"),
    [
        (Failure("x is a directory: use -R"), 1, "x is a directory: use -R"),
        (Failure("both ends are local", 2), 2, "both ends are local"),
        (NotFound("status s3://b/k: not found"), 1, "status s3://b/k: not found"),
        (WorkerUnavailable("no worker reachable"), 1, "no worker reachable"),
        (InvalidRequest("invalid path 'x'"), 2, "invalid path 'x'"),
        (ValueError("workers: 'x' is not host:port"), 2, "workers: 'x' is not host:port"),
        (FileNotFoundError(2, "No such file or directory", "/l/x"), 1,
         "/l/x: No such file or directory"),
        (PermissionError(13, "Permission denied"), 1, "[Errno 13] Permission denied"),
        (NotFound("a message\nover two lines"), 1, "a message over two lines"),
        (KeyboardInterrupt(), 130, "interrupted"),
    ],
)  # fmt: skip
def test_errors_are_one_line_and_a_status(
    capsys: pytest.CaptureFixture[str], error: BaseException, status: int, line: str
) -> None:
    assert execute("cp", lambda: raising(error)) == status
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"dora fs cp: {line}\n"


def test_success_passes_the_status_through(capsys: pytest.CaptureFixture[str]) -> None:
    assert execute("ls", lambda: 0) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("path", "remote"),
    [
        ("s3://b/k", True),
        ("file:///data/x", True),
        ("dora://s3://b/k", True),
        ("dora::s3://b/k", True),
        ("/data/x", False),
        ("relative/x", False),
        ("./s3:x", False),
    ],
)
def test_cp_tells_local_paths_from_the_cache(path: str, remote: bool) -> None:
    assert is_remote(path) is remote
