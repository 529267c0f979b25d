"""Test doubles for the feed's ends (a sink that records, markers in memory) and waiting."""

import threading
import time
from collections.abc import Callable

from worker.cluster.events import Event, Origins


class RecordingSink:
    """Records applied events and resets. Thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[Event] = []
        self.resets: list[int] = []
        self.origins: list[Origins] = []

    def apply(self, event: Event) -> None:
        with self.lock:
            self.events.append(event)

    def reset(self, before_ms: int) -> None:
        with self.lock:
            self.resets.append(before_ms)

    def arrived(self, origins: Origins) -> None:
        with self.lock:
            self.origins.append(origins)


class MemoryMarkers:
    def __init__(self, value: bytes | None = None) -> None:
        self.value = value

    def load(self) -> bytes | None:
        return self.value

    def save(self, value: bytes) -> None:
        self.value = value


def wait_for(condition: Callable[[], bool], timeout: float = 15.0) -> None:
    """Poll ``condition`` until it holds; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)
