"""StormWatch: when many evictions in a window are reported, and how often."""

from __future__ import annotations

from pagestore.evict.storm import Storm, StormWatch


class Clock:
    """A clock the test moves by setting ``now``."""

    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_window_reaching_the_threshold_is_a_storm() -> None:
    clock = Clock()
    watch = StormWatch(threshold=10, window=10, quiet=60, clock=clock)
    assert watch.record(9) is None
    clock.now = 5
    assert watch.record(1) == Storm(pages=10, seconds=5, since_last=10)


def test_evictions_spread_over_windows_are_no_storm() -> None:
    clock = Clock()
    watch = StormWatch(threshold=10, window=10, quiet=60, clock=clock)
    for second in range(0, 100, 10):
        clock.now = second
        assert watch.record(9) is None


def test_a_storm_is_reported_once_per_quiet_period_with_what_was_evicted_meanwhile() -> None:
    clock = Clock()
    watch = StormWatch(threshold=10, window=10, quiet=60, clock=clock)
    assert watch.record(10) == Storm(10, 0, 10)
    for second in range(10, 60, 10):
        clock.now = second
        assert watch.record(20) is None  # a storm in every window, still quiet
    clock.now = 60
    assert watch.record(20) == Storm(pages=20, seconds=0, since_last=120)
