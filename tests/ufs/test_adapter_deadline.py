"""A caller's deadline over the adapter's operations, with real storage that does not answer:
a FIFO no one writes to (a hung mount), an S3 endpoint that accepts connections and never
answers, one that refuses them. Each test asserts which deadline the error names and that no
call or retry happened past it, never how long anything took."""

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pytest

from tests.ufs.test_adapter import refusing_s3
from ufs.adapter import Ufs, UfsOptions
from ufs.deadline import Deadline, ThreadRunner
from ufs.errors import StorageUnavailable, UfsDeadlineExceeded
from ufs.generic import FsspecBackend
from ufs.kinds.s3 import S3Options


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[str]:
    """The URI of a FIFO: fsspec's local filesystem blocks opening it, as a hung mount would
    (the generic backend does not refuse special files)."""
    path = tmp_path / "fifo"
    os.mkfifo(path)
    yield f"file://{path}"
    os.close(os.open(path, os.O_WRONLY))  # a writer comes and goes: the reader sees its end


def hanging_ufs(call_deadline_ms: int) -> Ufs:
    runner = ThreadRunner(threads=2)
    generic = FsspecBackend("file", fsspec.filesystem("file", skip_instance_cache=True), runner)
    return Ufs(UfsOptions(call_deadline_ms=call_deadline_ms), backends={"file": generic})


@pytest.fixture
def silent_s3() -> Iterator[Ufs]:
    """An adapter whose S3 accepts connections (the kernel's backlog) and never answers."""
    server = socket.create_server(("127.0.0.1", 0))
    options = UfsOptions(
        call_deadline_ms=60_000,
        kinds=(S3Options(f"http://127.0.0.1:{server.getsockname()[1]}", None, "k", "s"),),
    )
    try:
        yield Ufs(options)
    finally:
        server.close()


def test_a_hung_call_fails_at_the_request_deadline_when_it_comes_first(fifo: str) -> None:
    ufs = hanging_ufs(call_deadline_ms=60_000)
    deadline = Deadline(0.3)
    with pytest.raises(UfsDeadlineExceeded) as raised:
        ufs.read(fifo, 0, 10, deadline=deadline)
    assert (
        str(raised.value)
        == f"UFS gave no answer to read {fifo} within the request's deadline of 0.3s"
    )
    assert raised.value.deadline is deadline  # whose time ran out, for a shared call's waiters
    assert not isinstance(raised.value, StorageUnavailable)  # nothing to retry: the caller is gone


def test_a_hung_call_fails_at_its_own_deadline_when_that_comes_first(fifo: str) -> None:
    ufs = hanging_ufs(call_deadline_ms=300)
    with pytest.raises(StorageUnavailable, match=r"within 0.3s \(dora.ufs.call.deadline\)"):
        ufs.read(fifo, 0, 10, deadline=Deadline(60))


def test_retries_stop_where_the_request_deadline_leaves_no_time_for_them() -> None:
    """S3 refusing connections: retried with doubling backoff (1, 2, 4 s) within the call's
    own 10 s; a request with 2.5 s gets one backoff, and the error names its deadline."""
    clock = FakeClock()
    options = refusing_s3(retry_attempts=5, retry_base_delay_ms=1000, call_deadline_ms=10_000)
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        clock.sleep(seconds)

    ufs = Ufs(options, sleep=sleep, clock=clock)
    with pytest.raises(StorageUnavailable):
        ufs.status("s3://b/k")
    assert sleeps == [1.0, 2.0, 4.0]  # the next (8 s) would end past the call's deadline

    sleeps.clear()
    with pytest.raises(UfsDeadlineExceeded) as raised:
        ufs.status("s3://b/k", deadline=Deadline(2.5, clock))
    assert sleeps == [1.0]  # the next (2 s) would end past the request's deadline
    message = str(raised.value)
    assert message.startswith("UFS unavailable during status s3://b/k")
    assert message.endswith("; no time to retry within the request's deadline of 2.5s")
    assert raised.value.__cause__ is not None


def test_a_spent_deadline_makes_no_call(tmp_path: Path) -> None:
    clock = FakeClock()
    spent = Deadline(1.0, clock)
    clock.sleep(1.0)
    with pytest.raises(UfsDeadlineExceeded, match="within the request's deadline of 1s"):
        Ufs().mkdir(f"file://{tmp_path}/new", deadline=spent)
    assert not (tmp_path / "new").exists()


def test_a_streamed_write_is_bounded_by_the_request_deadline(silent_s3: Ufs) -> None:
    """Each request of a stream gets the earlier of its own deadline and the caller's."""
    with pytest.raises(UfsDeadlineExceeded, match="within the request's deadline of 0.3s"):
        silent_s3.write("s3://b/k", iter([b"ab", b"cd"]), deadline=Deadline(0.3))


def test_every_call_of_an_operation_shares_the_request_deadline(silent_s3: Ufs) -> None:
    """An append looks at the file first: that look, bound by the caller's deadline, is what
    fails; the silent S3 would otherwise hold it for the call's own 60 s."""
    with pytest.raises(UfsDeadlineExceeded, match="status s3://b/k within the request's"):
        silent_s3.append("s3://b/k", iter([b"+"]), deadline=Deadline(0.3))
