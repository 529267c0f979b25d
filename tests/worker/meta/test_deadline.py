"""A lookup's UFS calls keep the deadline of the call it is made for, and a caller that joined
a load cut short by another caller's deadline is not failed by it."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from tests.worker.meta.support import FakeClock, cache_options, memory_store, run, wait_until
from ufs.deadline import Deadline
from ufs.errors import UfsDeadlineExceeded
from ufs.status import UfsStatus
from worker.meta.manager import MetadataManager

URI = "s3://b/a"
STATUS = UfsStatus(URI, "a", False, 5, 1, "v1", None)


@dataclass(frozen=True)
class Call:
    deadline: Deadline | None
    revisions: list[int | None]

    def observed(self, revision: int | None) -> None:
        self.revisions.append(revision)


class ShortThenAnswering:
    """A UFS whose first status call is cut by its caller's deadline once another caller has
    joined it; every later call answers. Records the deadline each call was given."""

    def __init__(self) -> None:
        self.deadlines: list[Deadline | None] = []
        self.joined = threading.Event()

    def status(self, uri: str, *, deadline: Deadline | None = None) -> UfsStatus:
        self.deadlines.append(deadline)
        if len(self.deadlines) == 1:
            assert self.joined.wait(30), "no caller joined the load"
            assert deadline is not None
            raise UfsDeadlineExceeded("the request's deadline ran out", deadline)
        return STATUS

    def list(self, uri: str, *, deadline: Deadline | None = None) -> list[UfsStatus]:
        raise AssertionError("no listing in this test")


def manager(ufs: ShortThenAnswering) -> MetadataManager:
    clock = FakeClock()
    return MetadataManager(cache_options(), memory_store(clock), ufs, clock)


def test_the_lookup_passes_its_calls_deadline_to_the_ufs() -> None:
    ufs = ShortThenAnswering()
    ufs.deadlines.append(None)  # the first call answers
    meta = manager(ufs)
    deadline = Deadline(60)
    assert meta.reads.get_status(URI, call=Call(deadline, [])) == STATUS
    assert ufs.deadlines[-1] is deadline


def test_a_caller_that_joined_a_load_another_callers_deadline_cut_loads_again() -> None:
    ufs = ShortThenAnswering()
    meta = manager(ufs)
    short, long = Call(Deadline(60), []), Call(Deadline(120), [])
    leader, led = run(lambda: meta.reads.get_status(URI, call=short))
    wait_until(lambda: len(ufs.deadlines) == 1)
    follower, followed = run(lambda: meta.reads.get_status(URI, call=long))
    wait_until(lambda: meta.reads.flights_merged == 1)
    ufs.joined.set()
    leader.join(30)
    follower.join(30)
    assert isinstance(led[0], UfsDeadlineExceeded)  # its own deadline: it has stopped waiting
    assert followed == [STATUS]  # loaded again, under its own deadline
    assert ufs.deadlines == [short.deadline, long.deadline]
