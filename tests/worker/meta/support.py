"""Helpers for the metadata tests: a fake clock, a call-counting UFS, an outside writer."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ufs.adapter import Ufs
from ufs.deadline import Deadline
from ufs.status import UfsStatus
from worker.meta.entry import Lifetimes
from worker.meta.manager import MetadataManager
from worker.meta.metastore import MemoryMetastore
from worker.meta.options import CacheOptions, MetastoreOptions, RecoverPolicy
from worker.meta.rocks import RocksMetastore

START_MS = 1_700_000_000_000
SECOND = 1000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
LIFETIMES = Lifetimes(ttl_ms=24 * HOUR, negative_ttl_ms=10 * SECOND)
# Flushes only when a test asks (or at close): the flusher thread sleeps through the test.
MANUAL_FLUSH_MS = 24 * HOUR


class FakeClock:
    """Wall-clock epoch ms that moves only when a test says so."""

    def __init__(self, now: int = START_MS) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


class CountingUfs(Ufs):
    """The real adapter, counting status and list calls. When ``gate`` is set, a status call
    asks the UFS, sets ``answered`` and then waits for the gate before returning: a load held
    in flight with an answer that may be overtaken by later changes."""

    def __init__(self) -> None:
        super().__init__()
        self.status_calls: list[str] = []
        self.list_calls: list[str] = []
        self.gate: threading.Event | None = None
        self.answered = threading.Event()

    def status(self, uri: str, *, deadline: Deadline | None = None) -> UfsStatus:
        self.status_calls.append(uri)
        gate = self.gate
        if gate is None:
            return super().status(uri, deadline=deadline)
        try:
            return super().status(uri, deadline=deadline)
        finally:
            self.answered.set()
            gate.wait()

    def list(self, uri: str, *, deadline: Deadline | None = None) -> list[UfsStatus]:
        self.list_calls.append(uri)
        return super().list(uri, deadline=deadline)

    @property
    def calls(self) -> int:
        return len(self.status_calls) + len(self.list_calls)


class Outside:
    """Changes files under a local directory behind the cache's back, giving each change its
    own mtime so every change is a new version."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._mtime_ns = 1_600_000_000_000_000_000

    def uri(self, name: str) -> str:
        return "file://" + str(self.root / name)

    def write(self, name: str, data: bytes) -> None:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        self._mtime_ns += 1_000_000_007
        os.utime(path, ns=(self._mtime_ns, self._mtime_ns))

    def delete(self, name: str) -> None:
        (self.root / name).unlink()

    def rename(self, src: str, dst: str) -> None:
        (self.root / dst).parent.mkdir(parents=True, exist_ok=True)
        os.replace(self.root / src, self.root / dst)


def memory_store(clock: FakeClock, lifetimes: Lifetimes = LIFETIMES) -> MemoryMetastore:
    return MemoryMetastore(lifetimes, clock)


def rocks_options(
    path: Path,
    lifetimes: Lifetimes = LIFETIMES,
    recover: RecoverPolicy = RecoverPolicy.WIPE,
    flush_interval_ms: int = MANUAL_FLUSH_MS,
) -> MetastoreOptions:
    return MetastoreOptions(str(path), lifetimes, flush_interval_ms, recover)


def rocks_store(path: Path, clock: FakeClock, lifetimes: Lifetimes = LIFETIMES) -> RocksMetastore:
    return RocksMetastore.open(rocks_options(path, lifetimes), clock)


def cache_options(**changes: int) -> CacheOptions:
    base = {
        "status_cache_size": 1000,
        "status_ttl_ms": HOUR,
        "list_cache_dirs": 100,
        "list_ttl_ms": HOUR,
        "sync_interval_ms": -1,
    }
    base.update(changes)
    return CacheOptions(**base)


WAIT_S = 30  # generous bound for a condition that should hold within milliseconds


def wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.001)


def run(fn: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    outcome: list[object] = []

    def target() -> None:
        try:
            outcome.append(fn())
        except Exception as exc:  # noqa: BLE001 - handed to the test thread to assert on
            outcome.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    return thread, outcome


def listen(manager: MetadataManager) -> list[tuple[str, str]]:
    """Every (uri, version) the manager reports gone, in order."""
    heard: list[tuple[str, str]] = []
    manager.writes.add_listener(lambda uri, version: heard.append((uri, version)))
    return heard
