"""Deadlines with real blocking calls: a pipe nobody writes to, a server that never answers."""

import asyncio
import os
import socket
import threading
from collections.abc import Iterator

import pytest
from fsspec.asyn import get_loop

from ufs.deadline import Deadline, DeadlinePassed, ThreadRunner, run_coroutine


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    """A pipe whose reads block until the test writes (a real blocking system call)."""
    read_end, write_end = os.pipe()
    yield read_end, write_end
    os.close(write_end)
    os.close(read_end)


def test_deadline_counts_down_and_then_refuses() -> None:
    clock = FakeClock()
    deadline = Deadline(2.0, clock)
    assert deadline.timeout() == 2.0
    clock.now += 1.5
    assert deadline.left() == pytest.approx(0.5)
    clock.now += 0.5
    with pytest.raises(DeadlinePassed):
        deadline.timeout()


def test_a_capped_deadline_is_the_earlier_of_the_two() -> None:
    clock = FakeClock()
    request = Deadline(5.0, clock)
    assert request.capped(10.0) is request  # the request's time bounds the call
    clock.now += 4.0
    call = request.capped(0.5)
    assert call is not request
    assert call.left() == pytest.approx(0.5)


def test_a_blocked_call_is_abandoned_and_its_thread_reused(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    runner = ThreadRunner(threads=1)
    deadline = Deadline(0.2)
    with pytest.raises(DeadlinePassed) as raised:
        runner.run(lambda: os.read(read_end, 1), deadline)
    assert raised.value.deadline is deadline  # which deadline ran out
    # The one thread is still blocked: a call queued behind it fails without ever running.
    ran = threading.Event()
    with pytest.raises(DeadlinePassed):
        runner.run(ran.set, Deadline(0.2))
    os.write(write_end, b"x")  # the storage answers: the thread is free again
    assert runner.run(lambda: 6 * 7, Deadline(30)) == 42
    assert not ran.is_set()


def test_errors_of_a_call_reach_the_caller() -> None:
    runner = ThreadRunner(threads=2)
    with pytest.raises(FileNotFoundError):
        runner.run(lambda: os.stat("/nonexistent/path"), Deadline(30))


def test_spawned_calls_run_without_a_waiting_caller() -> None:
    done = threading.Event()
    ThreadRunner(threads=1).spawn(done.set)
    assert done.wait(30)


def test_a_coroutine_past_its_deadline_is_cancelled() -> None:
    """A server that accepts the connection (the kernel's backlog) and never answers."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    cancelled = threading.Event()

    async def ask() -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            return await reader.read(1)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        finally:
            writer.close()

    try:
        with pytest.raises(DeadlinePassed):
            run_coroutine(get_loop(), ask, Deadline(0.3))
        assert cancelled.wait(30)
    finally:
        server.close()


def test_a_coroutine_error_is_not_a_deadline() -> None:
    async def fail() -> None:
        raise TimeoutError("the coroutine's own")

    with pytest.raises(TimeoutError, match="the coroutine's own") as raised:
        run_coroutine(get_loop(), fail, Deadline(30))
    assert not isinstance(raised.value, DeadlinePassed)
