"""What the change-feed integration tests share: what a worker serves at sync interval -1,
and a bounded wait for a change to reach it."""

import time
from collections.abc import Callable

from ufs.errors import UfsNotFound
from worker.service import WorkerService

WAIT_S = 30.0


def wait_until(condition: Callable[[], bool], timeout: float = WAIT_S) -> None:
    """Poll ``condition`` (bounded; the delay is the bench's to measure, not asserted)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the change did not reach the worker"
        time.sleep(0.05)


def body(service: WorkerService, uri: str) -> bytes | None:
    """What the worker serves for ``uri`` at sync interval -1 (None: not found)."""
    try:
        return b"".join(service.read(uri, sync_interval=-1).chunks)
    except UfsNotFound:
        return None


def served(service: WorkerService, uri: str, expected: bytes | None) -> Callable[[], bool]:
    return lambda: body(service, uri) == expected
