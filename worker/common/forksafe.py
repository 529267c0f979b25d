"""Per-process resources (HTTP connection pools, thread pools) that must not cross a fork.

Spark forks its Python workers from a daemon: a child that inherited an httpx client would share
the parent's sockets (two processes reading one connection's answers), and an inherited thread
pool has no threads. A :class:`ProcessLocal` builds its value lazily and builds a fresh one in a
child process; the inherited value is dropped without closing it, because closing would act on
sockets the parent still uses.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

_instances: weakref.WeakSet[ProcessLocal[Any]] = weakref.WeakSet()


class ProcessLocal(Generic[T]):
    """A value built by ``factory`` at most once per process.

    Thread-safe: the first :meth:`get` in a process builds the value under a lock. After a fork
    the child gets a new lock (the parent's may have been held by a thread that does not exist in
    the child) and builds its own value on first use.
    """

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._value: T | None = None
        self._pid = os.getpid()
        _instances.add(self)

    def get(self) -> T:
        value, pid = self._value, os.getpid()
        if value is not None and self._pid == pid:
            return value
        if self._pid != pid:
            # A fork that bypassed os.register_at_fork (e.g. from C): reset here instead.
            self._after_fork()
        with self._lock:
            if self._value is None:
                self._value = self._factory()
            return self._value

    def peek(self) -> T | None:
        """The value built in this process, if any (without building one)."""
        return self._value if self._pid == os.getpid() else None

    def _after_fork(self) -> None:
        self._lock = threading.Lock()
        self._value = None
        self._pid = os.getpid()


def _reset_all_after_fork() -> None:
    for instance in list(_instances):
        instance._after_fork()


os.register_at_fork(after_in_child=_reset_all_after_fork)
