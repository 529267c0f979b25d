"""Single flight: concurrent calls for one key share one execution."""

from __future__ import annotations

import threading
import time

import pytest

from pagestore.flight import SingleFlight


def test_a_lone_call_runs_and_returns() -> None:
    flights: SingleFlight[str, int] = SingleFlight()
    assert flights.run("k", lambda: 7) == 7
    assert flights.in_flight() == 0


def test_calls_after_one_finished_run_again() -> None:
    flights: SingleFlight[str, int] = SingleFlight()
    calls: list[int] = []

    def call() -> int:
        calls.append(1)
        return len(calls)

    assert [flights.run("k", call) for _ in range(3)] == [1, 2, 3]


def test_waiters_share_the_leaders_value_or_exception() -> None:
    flights: SingleFlight[str, int] = SingleFlight()
    release = threading.Event()
    entered = threading.Event()
    outcomes: list[object] = []

    def leader_fn() -> int:
        entered.set()
        release.wait()
        raise OSError("boom")

    def call(fn: object) -> None:
        try:
            outcomes.append(flights.run("k", leader_fn))
        except OSError as exc:
            outcomes.append(exc)

    leader = threading.Thread(target=call, args=(leader_fn,))
    leader.start()
    entered.wait()
    waiters = [threading.Thread(target=call, args=(leader_fn,)) for _ in range(3)]
    for waiter in waiters:
        waiter.start()
    # The waiters have registered once the flight is the only one and they are blocked on it;
    # releasing early is still correct (a late waiter simply runs its own call).
    release.set()
    for thread in [leader, *waiters]:
        thread.join()
    assert len(outcomes) == 4
    assert all(isinstance(outcome, OSError) for outcome in outcomes)
    assert flights.in_flight() == 0


def test_a_caller_that_joined_a_call_cut_by_the_leaders_deadline_runs_it_again() -> None:
    """A TimeoutError is the leader's caller's own deadline: the caller that joined is not
    failed by it, it runs its own function."""
    flights: SingleFlight[str, str] = SingleFlight()
    outcome: list[object] = []

    def follow() -> None:
        outcome.append(flights.run("k", lambda: "the follower's own"))

    follower = threading.Thread(target=follow)

    def leader_fn() -> str:
        follower.start()  # now that the leader runs
        while flights.waiting("k") < 1:
            time.sleep(0.001)
        raise TimeoutError("the leader's client stopped waiting")

    with pytest.raises(TimeoutError):
        flights.run("k", leader_fn)
    follower.join(30)
    assert outcome == ["the follower's own"]
    assert flights.in_flight() == 0


def test_different_keys_do_not_wait_for_each_other() -> None:
    flights: SingleFlight[str, str] = SingleFlight()
    assert flights.run("a", lambda: flights.run("b", lambda: "inner")) == "inner"


def test_an_exception_leaves_no_call_behind() -> None:
    flights: SingleFlight[str, int] = SingleFlight()
    empty: dict[str, int] = {}
    with pytest.raises(KeyError):
        flights.run("k", lambda: empty["missing"])
    assert flights.run("k", lambda: 1) == 1


def test_concurrent_callers_run_once_and_are_counted() -> None:
    flights: SingleFlight[str, int] = SingleFlight()
    release = threading.Event()
    ran: list[int] = []
    results: list[int] = []

    def slow() -> int:
        ran.append(1)
        release.wait()
        return 42

    threads = [threading.Thread(target=lambda: results.append(flights.run("k", slow)))]
    threads[0].start()
    while not ran:
        time.sleep(0.001)
    threads += [
        threading.Thread(target=lambda: results.append(flights.run("k", slow))) for _ in range(5)
    ]
    for thread in threads[1:]:
        thread.start()
    deadline = time.monotonic() + 10
    while flights.waiting("k") < 5:
        assert time.monotonic() < deadline, "the callers never joined the flight"
        time.sleep(0.001)
    release.set()
    for thread in threads:
        thread.join()
    assert (ran, results) == ([1], [42] * 6)
    assert (flights.merged, flights.waiting("k")) == (5, 0)
