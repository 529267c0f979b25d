"""Eviction policies: the contract every policy keeps, each policy's order against a reference
model, and how the scan-resistant ones behave when a scan passes and when the work moves."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pagestore.evict import (
    DEFAULT_EVICTOR,
    EVICTORS,
    Evictor,
    LfuEvictor,
    LruEvictor,
    S3FifoEvictor,
    make_evictor,
)
from pagestore.evict.s3fifo import SMALL_SHARE
from pagestore.evict.sketch import MIN_WIDTH, SAMPLE_FACTOR, FrequencySketch
from tests.pagestore.evict_support import IdCache, scan_then_shift


@pytest.fixture(params=EVICTORS)
def evictor(request: pytest.FixtureRequest) -> Evictor[str]:
    made: Evictor[str] = make_evictor(request.param)
    return made


def test_an_empty_evictor_has_no_victim(evictor: Evictor[str]) -> None:
    assert evictor.evict() is None
    assert len(evictor) == 0


def test_naming_a_victim_does_not_remove_it(evictor: Evictor[str]) -> None:
    evictor.on_put("a")
    assert evictor.evict() == "a"
    assert evictor.evict() == "a"
    evictor.on_delete("a")
    assert evictor.evict() is None


def test_unknown_keys_are_ignored(evictor: Evictor[str]) -> None:
    evictor.on_get("ghost")
    evictor.on_delete("ghost")
    assert len(evictor) == 0


def test_putting_a_tracked_key_again_does_not_duplicate_it(evictor: Evictor[str]) -> None:
    evictor.on_put("a")
    evictor.on_put("a")
    assert len(evictor) == 1


@pytest.mark.parametrize("policy", ["lru", "lfu", "s3fifo", "slru"])
def test_unused_pages_leave_in_arrival_order(policy: str) -> None:
    # Not W-TinyLFU's contract: a page leaving its window loses to the main space's older victim
    # when neither was read, so the newer one leaves first (its admission filter).
    evictor: Evictor[str] = make_evictor(policy)
    for key in "abc":
        evictor.on_put(key)
    order = []
    while (victim := evictor.evict()) is not None:
        order.append(victim)
        evictor.on_delete(victim)
    assert order == ["a", "b", "c"]


# Operations: (kind, key) with kind 0 = put, 1 = get, 2 = delete, 3 = evict.
operations = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 7)), max_size=80)


@pytest.mark.parametrize("policy", EVICTORS)
@given(ops=operations)
def test_victims_are_tracked_pages_named_until_deleted(
    policy: str, ops: list[tuple[int, int]]
) -> None:
    """The contract of every policy: a victim is always a page it was told of and not told is
    gone; it is named again until deleted; there is a victim whenever a page is tracked."""
    evictor: Evictor[int] = make_evictor(policy)
    live: set[int] = set()
    for kind, key in ops:
        if kind == 0:
            evictor.on_put(key)
            live.add(key)
        elif kind == 1:
            evictor.on_get(key)
        elif kind == 2:
            evictor.on_delete(key)
            live.discard(key)
        else:
            victim = evictor.evict()
            assert (victim is None) == (not live)
            assert victim is None or victim in live
            assert evictor.evict() == victim
            if victim is not None and key % 2:
                evictor.on_delete(victim)
                live.discard(victim)
        assert len(evictor) == len(live)


@pytest.mark.parametrize("policy", EVICTORS)
@given(keys=st.lists(st.integers(0, 40), max_size=300), capacity=st.integers(1, 12))
def test_a_cache_over_any_policy_stays_within_its_capacity(
    policy: str, keys: list[int], capacity: int
) -> None:
    cache = IdCache(policy, capacity)  # it checks that each victim is a page it holds
    for key in keys:
        cache.read(key)
        assert len(cache.held) <= capacity
        assert key in cache.held


@pytest.mark.parametrize("policy", EVICTORS)
def test_a_deleted_page_is_never_named_again(policy: str) -> None:
    evictor: Evictor[int] = make_evictor(policy)
    for key in range(100):
        evictor.on_put(key)
        if key % 3 == 0:
            evictor.on_get(key)
    for key in range(0, 100, 2):
        evictor.on_delete(key)
    named = []
    while (victim := evictor.evict()) is not None:
        named.append(victim)
        evictor.on_delete(victim)
    assert sorted(named) == list(range(1, 100, 2))


def test_an_unknown_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="lru"):
        make_evictor("fifo")


def test_lru_evicts_the_least_recently_read() -> None:
    lru: LruEvictor[str] = LruEvictor()
    for key in "abc":
        lru.on_put(key)
    lru.on_get("a")
    assert lru.evict() == "b"


def test_lfu_evicts_the_least_often_read_then_the_oldest() -> None:
    lfu: LfuEvictor[str] = LfuEvictor()
    for key in "abc":
        lfu.on_put(key)
    for key in "aabbc":
        lfu.on_get(key)
    assert lfu.evict() == "c"
    lfu.on_delete("c")
    assert lfu.evict() == "a"  # a and b were read as often; a was read less recently
    lfu.on_put("d")
    assert lfu.evict() == "d"


@given(operations)
def test_lru_matches_a_list_model(ops: list[tuple[int, int]]) -> None:
    lru: LruEvictor[int] = LruEvictor()
    model: list[int] = []  # least recently used first
    for kind, key in ops:
        if kind == 0 or (kind == 1 and key in model):
            if key in model:
                model.remove(key)
            model.append(key)
            (lru.on_put if kind == 0 else lru.on_get)(key)
        elif kind == 2:
            lru.on_delete(key)
            if key in model:
                model.remove(key)
        else:
            assert lru.evict() == (model[0] if model else None)
        assert len(lru) == len(model)


@given(operations)
def test_lfu_matches_a_counting_model(ops: list[tuple[int, int]]) -> None:
    lfu: LfuEvictor[int] = LfuEvictor()
    counts: Counter[int] = Counter()
    last_use: dict[int, int] = {}
    for clock, (kind, key) in enumerate(ops):
        if kind == 0 or (kind == 1 and key in counts):
            counts[key] += 1
            last_use[key] = clock
            (lfu.on_put if kind == 0 else lfu.on_get)(key)
        elif kind == 2:
            lfu.on_delete(key)
            counts.pop(key, None)
        else:
            expected = min(counts, key=lambda k: (counts[k], last_use[k]), default=None)
            assert lfu.evict() == expected
        assert len(lfu) == len(counts)


# -- behaviour: a scan passes, then the work moves -----------------------------------------------
# The worker measurement in ids: 48 pages of capacity, 32 hot read twice, 256 scanned.


@pytest.mark.parametrize("policy", sorted({"s3fifo", DEFAULT_EVICTOR}))
def test_the_hot_set_survives_a_scan_and_a_new_one_is_cached(policy: str) -> None:
    result = scan_then_shift(policy, capacity=480, hot=320)
    assert result.hot_after_scan >= 0.9
    assert result.new_hot_after_three_reads >= 0.9


def test_lru_loses_the_hot_set_to_a_scan() -> None:
    assert scan_then_shift("lru", capacity=480, hot=320).hot_after_scan == 0


def test_lfu_keeps_the_hot_set_but_does_not_follow_the_work() -> None:
    result = scan_then_shift("lfu", capacity=480, hot=320)
    assert result.hot_after_scan == 1
    assert result.new_hot_after_three_reads <= 0.5


def test_s3fifo_evicts_a_page_read_once_before_one_read_again() -> None:
    s3fifo: S3FifoEvictor[str] = S3FifoEvictor()
    for key in "abcd":
        s3fifo.on_put(key)
    s3fifo.on_get("a")
    assert s3fifo.evict() == "b"


def test_s3fifo_brings_a_page_evicted_unread_back_to_its_main_queue() -> None:
    cache = IdCache("s3fifo", 10)
    cache.read_all(range(15))  # 0-4 were evicted unread: their ids are ghosts
    cache.read(0)  # back, straight into the main queue
    cache.read_all(range(100, 200))  # a scan cycles through the small queue
    assert 0 in cache.held


def test_s3fifo_does_not_promote_a_page_deleted_for_another_reason() -> None:
    s3fifo: S3FifoEvictor[str] = S3FifoEvictor()
    for key in "abcdefghij":
        s3fifo.on_put(key)
    s3fifo.on_delete("a")  # invalidated, not evicted: no ghost
    s3fifo.on_put("a")
    assert s3fifo.evict() == "b"
    s3fifo.on_delete("b")
    assert s3fifo.evict() == "c"


@settings(max_examples=200)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 29)), min_size=50, max_size=400))
def test_s3fifo_matches_a_list_model(ops: list[tuple[int, int]]) -> None:
    """The paper's algorithm on plain lists: a new page joins the small queue (the main queue if
    its id is a ghost); a victim is sought in the small queue while it holds its share of the
    pages, where a page read since it came moves to the main queue and an unread one is the
    victim (a ghost once deleted); in the main queue a read page goes round again, one use
    fewer."""
    s3fifo: S3FifoEvictor[int] = S3FifoEvictor()
    small: list[int] = []
    main: list[int] = []
    ghost: list[int] = []
    uses: dict[int, int] = {}
    named: int | None = None

    def victim() -> int | None:
        while small or main:
            if small and (not main or len(small) >= SMALL_SHARE * len(uses)):
                if uses[small[0]] == 0:
                    return small[0]
                uses[small[0]] = 0
                main.append(small.pop(0))
            else:
                if uses[main[0]] == 0:
                    return main[0]
                uses[main[0]] -= 1
                main.append(main.pop(0))
        return None

    def delete(key: int) -> None:
        nonlocal named
        s3fifo.on_delete(key)
        if key in uses:
            del uses[key]
            if key in small and key == named:
                ghost.append(key)
                del ghost[: max(0, len(ghost) - len(uses) - 1)]
            (small if key in small else main).remove(key)
            named = None if named == key else named

    for kind, key in ops:
        if (kind == 0 and key in uses) or kind == 1:  # a read, or storing a tracked page
            if kind == 0:
                s3fifo.on_put(key)
            else:
                s3fifo.on_get(key)
            if key in uses:
                uses[key] = min(uses[key] + 1, 3)
                named = None if named == key else named
        elif kind == 0:
            s3fifo.on_put(key)
            uses[key] = 0
            (main if key in ghost else small).append(key)
            if key in ghost:
                ghost.remove(key)
        elif kind == 2:
            delete(key)
        else:
            expected = victim()
            named = expected if expected in small else named
            assert s3fifo.evict() == expected
            if expected is not None and key % 2:  # evicted: the store deletes it
                delete(expected)
        assert len(s3fifo) == len(uses)


def test_the_frequency_sketch_keeps_counts_as_it_grows_and_halves_them_as_they_age() -> None:
    sketch = FrequencySketch()
    for key in range(200):
        for _ in range(key % 5):
            sketch.increment(key)
    sketch.ensure(MIN_WIDTH)  # fewer than four counters a row per id: the rows double
    assert all(sketch.estimate(key) >= key % 5 for key in range(200))  # never below
    assert sum(sketch.estimate(key) for key in range(200)) <= sum(k % 5 for k in range(200)) + 20
    # A halving comes after ten increments per counter of a row (now twice as wide): these
    # age the counts at least twice (4 -> 1).
    for _ in range(4 * SAMPLE_FACTOR * MIN_WIDTH):
        sketch.increment("other")
    assert max(sketch.estimate(key) for key in range(200)) <= 1
