"""Single flight: concurrent calls for the same key share one execution.

The first caller for a key (the leader) runs the function; callers that arrive while it runs
wait and receive the leader's result, or have the leader's exception raised in them too, but
a TimeoutError: that is the leader's caller's own deadline running out (how long its client
waits), not theirs, so :meth:`SingleFlight.run` runs the call again for them. Once the call
ends the key is forgotten, so a later call runs the function again: this merges concurrent
work, it is not a cache. The page store merges page fills with it; the worker's metadata
manager merges status and listing loads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar, cast

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class FlightCall(Generic[V]):
    """One call in flight: its outcome once finished, and how many callers joined it.

    Finished is a lock held from creation and released by the leader; each waiter takes and
    hands it back, so all of them pass. Not a threading.Event: a call is made per page filled,
    and an Event (a Condition and two locks, 3 us to make, set and wait) was a tenth of a load
    job's time in small files."""

    __slots__ = ("_running", "error", "value", "waiting")

    def __init__(self) -> None:
        self._running = threading.Lock()
        self._running.acquire()
        self.value: V | None = None
        self.error: BaseException | None = None
        self.waiting = 0

    def finish(self) -> None:
        self._running.release()

    def wait(self) -> None:
        with self._running:
            pass


class SingleFlight(Generic[K, V]):
    """Merges concurrent calls per key.

    Thread-safe: one internal lock guards the table of calls in flight; it is never held while
    the function runs or while a caller waits, so the function may itself use single flight (on
    another key) or take other locks.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[K, FlightCall[V]] = {}
        self._merged = 0

    def run(self, key: K, fn: Callable[[], V]) -> V:
        """Run ``fn`` for ``key`` unless a call for ``key`` is in flight, then share its outcome.
        Raises whatever ``fn`` raised, in the leader and in every caller that joined it, but a
        TimeoutError (the leader's own deadline): a caller that joined runs ``fn`` again,
        leading unless another caller already does."""
        while True:
            leader, call = self.begin(key)
            if leader:
                break
            try:
                return self.wait(call)
            except TimeoutError:
                continue
        try:
            value = fn()
        except BaseException as exc:
            self.end(key, call, error=exc)
            raise
        self.end(key, call, value)
        return value

    def begin(self, key: K) -> tuple[bool, FlightCall[V]]:
        """Lead ``key``'s call unless one is in flight, without waiting: ``(True, call)`` when
        the caller now leads it and must :meth:`end` it (whatever happens), ``(False, call)``
        when it joined another caller's call (:meth:`wait` for its outcome). A caller that
        leads several keys ends each before it waits on any it joined, so callers claiming
        overlapping sets of keys never wait on each other in a circle."""
        with self._lock:
            call = self._calls.get(key)
            if call is not None:
                call.waiting += 1
                self._merged += 1
                return False, call
            call = self._calls[key] = FlightCall()
            return True, call

    def end(
        self,
        key: K,
        call: FlightCall[V],
        value: V | None = None,
        error: BaseException | None = None,
    ) -> None:
        """End the call ``key`` the caller leads with ``value`` or ``error``, waking those who
        joined it."""
        call.value, call.error = value, error
        # Unregister before waking the waiters, so a caller arriving after this point starts
        # a new call instead of reading a finished one.
        with self._lock:
            del self._calls[key]
        call.finish()

    @staticmethod
    def wait(call: FlightCall[V]) -> V:
        """The outcome of a call joined with :meth:`begin`: its value, or its error raised."""
        call.wait()
        if call.error is not None:
            raise call.error
        # The leader stored the value before finishing the call.
        return cast(V, call.value)

    def in_flight(self) -> int:
        """The number of keys with a call running (for tests and stats)."""
        with self._lock:
            return len(self._calls)

    def waiting(self, key: K) -> int:
        """How many callers are waiting on the call in flight for ``key`` (0 if none)."""
        with self._lock:
            call = self._calls.get(key)
            return 0 if call is None else call.waiting

    @property
    def merged(self) -> int:
        """How many calls, in total, joined a call already in flight instead of running ``fn``."""
        with self._lock:
            return self._merged
