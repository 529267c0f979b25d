"""The memory tier: size bounds, TTLs on a fake clock, prefix removal."""

from __future__ import annotations

from tests.worker.meta.support import HOUR, SECOND, FakeClock
from ufs.status import UfsStatus
from worker.meta.entry import Lifetimes, MetaEntry, Operation
from worker.meta.memory import Listing, ListingCache, StatusCache

LIFETIMES = Lifetimes(ttl_ms=24 * HOUR, negative_ttl_ms=10 * SECOND)


def status(uri: str) -> UfsStatus:
    return UfsStatus(uri, uri.rsplit("/", 1)[-1], False, 1, 1, "1-1", None)


def entry(uri: str, loaded_at: int) -> MetaEntry:
    return MetaEntry(status(uri), loaded_at, Operation.LOADED)


def test_a_status_stays_for_the_memory_ttl(clock: FakeClock) -> None:
    cache = StatusCache(10, HOUR, LIFETIMES, clock)
    cache.put("s3://b/a", entry("s3://b/a", clock.now))
    clock.advance(HOUR - 1)
    assert cache.get("s3://b/a") is not None
    clock.advance(1)
    assert cache.get("s3://b/a") is None


def test_a_negative_entry_stays_for_the_negative_ttl(clock: FakeClock) -> None:
    cache = StatusCache(10, HOUR, LIFETIMES, clock)
    cache.put("s3://b/a", MetaEntry(None, clock.now, Operation.LOADED))
    clock.advance(10 * SECOND - 1)
    assert cache.get("s3://b/a") is not None
    clock.advance(1)
    assert cache.get("s3://b/a") is None


def test_a_promoted_status_never_outlives_its_persisted_life(clock: FakeClock) -> None:
    cache = StatusCache(10, HOUR, LIFETIMES, clock)
    old = entry("s3://b/a", clock.now - 24 * HOUR + 5 * SECOND)
    cache.put("s3://b/a", old)
    clock.advance(5 * SECOND - 1)
    assert cache.get("s3://b/a") == old
    clock.advance(1)
    assert cache.get("s3://b/a") is None
    cache.put("s3://b/b", entry("s3://b/b", clock.now - 25 * HOUR))
    assert cache.get("s3://b/b") is None


def test_many_at_once_is_like_one_at_a_time(clock: FakeClock) -> None:
    cache = StatusCache(2, HOUR, LIFETIMES, clock)
    cache.put_many([(f"s3://b/{n}", entry(f"s3://b/{n}", clock.now)) for n in "abc"])
    assert cache.get_many(["s3://b/a", "s3://b/b", "s3://b/c"]) == [
        None,
        entry("s3://b/b", clock.now),
        entry("s3://b/c", clock.now),
    ]
    assert cache.evictions == 1


def test_the_least_recently_used_status_is_evicted_and_counted(clock: FakeClock) -> None:
    cache = StatusCache(2, HOUR, LIFETIMES, clock)
    for name in ("a", "b"):
        cache.put(f"s3://b/{name}", entry(f"s3://b/{name}", clock.now))
    cache.get("s3://b/a")
    cache.put("s3://b/c", entry("s3://b/c", clock.now))
    assert cache.get("s3://b/b") is None
    assert cache.get("s3://b/a") is not None
    assert (cache.evictions, len(cache)) == (1, 2)


def test_pop_under_respects_segment_boundaries(clock: FakeClock) -> None:
    cache = StatusCache(10, HOUR, LIFETIMES, clock)
    for uri in ("s3://b/d", "s3://b/d/x", "s3://b/d/y/z", "s3://b/d-x", "s3://b/dd"):
        cache.put(uri, entry(uri, clock.now))
    popped = sorted(uri for uri, _ in cache.pop_under("s3://b/d"))
    assert popped == ["s3://b/d", "s3://b/d/x", "s3://b/d/y/z"]
    assert len(cache) == 2


def test_expired_statuses_are_counted(clock: FakeClock) -> None:
    cache = StatusCache(10, HOUR, LIFETIMES, clock)
    cache.put("s3://b/a", entry("s3://b/a", clock.now))
    clock.advance(HOUR)
    cache.put("s3://b/b", entry("s3://b/b", clock.now))
    assert cache.expirations == 1


def test_a_listing_lives_for_its_ttl_and_the_cache_is_bounded(clock: FakeClock) -> None:
    cache = ListingCache(2, HOUR, clock)
    for name in ("x", "y", "z"):
        cache.put(f"s3://b/{name}", Listing.of([status(f"s3://b/{name}/f")], clock.now))
    assert cache.get("s3://b/x") is None
    listing = cache.get("s3://b/y")
    assert listing is not None and listing.versions == {"s3://b/y/f": "1-1"}
    clock.advance(HOUR)
    assert cache.get("s3://b/z") is None


def test_listings_pop_under_a_prefix(clock: FakeClock) -> None:
    cache = ListingCache(10, HOUR, clock)
    for uri in ("s3://b/d", "s3://b/d/x", "s3://b/dd"):
        cache.put(uri, Listing.of([], clock.now))
    assert cache.pop_under("s3://b/d") == 2
    assert cache.get("s3://b/dd") is not None
