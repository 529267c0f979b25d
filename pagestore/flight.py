"""Single flight: concurrent calls for the same key share one execution."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar, cast

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _Call(Generic[V]):
    __slots__ = ("done", "error", "value")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: V | None = None
        self.error: BaseException | None = None


class SingleFlight(Generic[K, V]):
    """Merges concurrent calls: while ``fn`` runs for a key, other callers with that key wait for
    it and get the same value, or the same exception raised again. A call that starts after the
    previous one finished runs ``fn`` afresh (results are not cached here).

    Thread-safe; its lock is held only to look up and register calls, never while ``fn`` runs.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[K, _Call[V]] = {}

    def run(self, key: K, fn: Callable[[], V]) -> V:
        with self._lock:
            call = self._calls.get(key)
            leader = call is None
            if call is None:
                call = self._calls[key] = _Call()
        if not leader:
            call.done.wait()
            if call.error is not None:
                raise call.error
            return cast(V, call.value)
        try:
            call.value = fn()
        except BaseException as exc:
            call.error = exc
            raise
        finally:
            # Unregister before waking the waiters, so a caller arriving after this point starts
            # a new call instead of reading a finished one.
            with self._lock:
                del self._calls[key]
            call.done.set()
        return call.value

    def in_flight(self) -> int:
        """The number of keys with a call running (for tests and stats)."""
        with self._lock:
            return len(self._calls)
