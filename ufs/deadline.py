"""Deadlines for UFS requests, and the two ways of stopping to wait for one.

A coroutine (async fsspec filesystems: S3, ...) is cancelled when its time is up, which closes
its connection. A blocking call (local files, sync fsspec filesystems) cannot be interrupted:
it runs on a bounded set of daemon threads and its caller stops waiting; the thread is
reused once the storage answers.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import enum
import itertools
import queue
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class DeadlinePassed(TimeoutError):
    """A storage request did not finish in the time it had: ``deadline``, which ran out (so a
    caller that bounds a call by one of two deadlines can tell which)."""

    def __init__(self, message: str, deadline: Deadline) -> None:
        super().__init__(message)
        self.deadline = deadline


class Deadline:
    """The moment by which a UFS call must be done, or a whole request to the worker (the
    caller's deadline, which :class:`ufs.adapter.Ufs` operations take). ``seconds`` is the
    time it was given. Immutable and thread-safe."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self._clock = clock
        self._at = clock() + seconds

    def left(self) -> float:
        """Seconds left; zero or less once passed."""
        return self._at - self._clock()

    def timeout(self) -> float:
        """Seconds left for the next request; DeadlinePassed if none are."""
        left = self.left()
        if left <= 0:
            raise DeadlinePassed(f"no time left of {self.seconds:g}s", self)
        return left

    def restarted(self) -> Deadline:
        """A deadline as long as this one, counted from now (on the same clock)."""
        return Deadline(self.seconds, self._clock)

    def capped(self, seconds: float) -> Deadline:
        """The earlier of this deadline and one ``seconds`` from now (on the same clock): this
        very object when it comes first, so a caller can tell which of the two bounds a call
        (``capped(...) is self``)."""
        own = Deadline(seconds, self._clock)
        return self if self._at <= own._at else own


def run_coroutine(
    loop: asyncio.AbstractEventLoop,
    coroutine: Callable[[], Coroutine[Any, Any, T]],
    deadline: Deadline,
) -> T:
    """Run ``coroutine()`` on ``loop`` (another thread's: fsspec's IO loop) and return its
    result; past the deadline it is cancelled and DeadlinePassed is raised. Errors of the
    coroutine propagate unchanged."""
    timeout = deadline.timeout()
    future = asyncio.run_coroutine_threadsafe(coroutine(), loop)
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        # cancel() also cancels the task on the loop; it fails only if the task has just
        # finished (or itself raised TimeoutError), whose outcome is then the answer.
        if not future.cancel():
            return future.result()
        raise DeadlinePassed(f"no answer within {timeout:.3g}s", deadline) from None


class _State(enum.Enum):
    PENDING = "pending"
    RUNNING = "running"
    ABANDONED = "abandoned"


class _Call(Generic[T]):
    """One blocking call and its outcome, handed from a caller to a runner thread."""

    def __init__(self, fn: Callable[[], T]) -> None:
        self._fn = fn
        self._lock = threading.Lock()
        self._state = _State.PENDING
        self._result: T | None = None
        self._error: BaseException | None = None
        # Held until the call is done; its one waiter takes it. Not a threading.Event: every
        # UFS call makes one, and an Event costs 3 us to make, set and wait against 0.4.
        self._running = threading.Lock()
        self._running.acquire()

    def execute(self) -> None:
        with self._lock:
            if self._state is _State.ABANDONED:
                return
            self._state = _State.RUNNING
        try:
            self._result = self._fn()
        except BaseException as exc:  # noqa: BLE001 — not swallowed: the caller re-raises it
            self._error = exc
        finally:
            self._running.release()

    def wait(self, timeout: float) -> bool:
        """Whether the call is done, waiting up to ``timeout`` seconds (one waiter only)."""
        return self._running.acquire(timeout=timeout)

    def abandon(self) -> None:
        """The caller stopped waiting: a call not started yet never runs."""
        with self._lock:
            if self._state is _State.PENDING:
                self._state = _State.ABANDONED

    def outcome(self) -> T:
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]


class ThreadRunner:
    """Runs blocking storage calls on at most ``threads`` daemon threads, so that a caller
    can stop waiting for one.

    A call still running at its deadline is abandoned: the caller gets DeadlinePassed at
    once, while the thread stays blocked until the storage answers, drops the result and
    serves the next call. When a hung storage holds every thread, further calls wait in the
    queue and fail at their deadline without ever running. Daemon threads, so a storage that
    never answers does not hold up interpreter exit.

    Thread-safe; its one lock guards counters only and is never held while a call runs.
    """

    def __init__(self, threads: int, name: str = "ufs") -> None:
        self._max = threads
        self._name = name
        self._queue: queue.SimpleQueue[_Call[Any]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0
        self._unclaimed = 0
        self._ids = itertools.count(1)

    def run(self, fn: Callable[[], T], deadline: Deadline) -> T:
        """``fn()``'s result or error; DeadlinePassed if it is not done by ``deadline``."""
        timeout = deadline.timeout()
        call = _Call(fn)
        self._submit(call)
        if not call.wait(timeout):
            call.abandon()
            raise DeadlinePassed(f"no answer within {timeout:.3g}s", deadline)
        return call.outcome()

    def spawn(self, fn: Callable[[], object]) -> None:
        """Run ``fn()`` when a thread is free, without waiting for it (clean-ups)."""
        self._submit(_Call(fn))

    def _submit(self, call: _Call[Any]) -> None:
        with self._lock:
            self._unclaimed += 1
            start = self._unclaimed > self._idle and self._threads < self._max
            if start:
                self._threads += 1
        self._queue.put(call)
        if start:
            name = f"{self._name}-{next(self._ids)}"
            threading.Thread(target=self._serve, name=name, daemon=True).start()

    def _serve(self) -> None:
        while True:
            with self._lock:
                self._idle += 1
            call = self._queue.get()
            with self._lock:
                self._idle -= 1
                self._unclaimed -= 1
            call.execute()
