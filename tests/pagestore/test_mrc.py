"""The miss-ratio curve (pagestore/mrc.py) against LRU simulated page by page."""

from __future__ import annotations

import random
import threading
import tracemalloc
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from pagestore.api import Lookup
from pagestore.factory import in_memory
from pagestore.mrc import MAX_SAMPLES, MissRatioCurve
from pagestore.page import PageId
from tests.pagestore.support import PAGE_SIZE, make_options, open_local

PAGE = PAGE_SIZE
FILE = "f" * 64


def lru_hit_ratio(trace: Sequence[int], capacity: int) -> float:
    """The hit ratio of an LRU cache of ``capacity`` pages over ``trace``."""
    cache: OrderedDict[int, None] = OrderedDict()
    hits = 0
    for page in trace:
        if page in cache:
            hits += 1
            cache.move_to_end(page)
        else:
            cache[page] = None
            if len(cache) > capacity:
                cache.popitem(last=False)
    return hits / len(trace)


def fed(trace: Sequence[int], **options: int) -> MissRatioCurve:
    model = MissRatioCurve(PAGE, **options)
    for page in trace:
        model.record(PageId(FILE, "v1", page))
    return model


def zipf_trace(pages: int, length: int, seed: int) -> list[int]:
    """Zipf(1.0) over ``pages`` pages, the popular ones spread over the key space."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, pages + 1)
    ranks = rng.choice(pages, size=length, p=weights / weights.sum())
    names = rng.permutation(pages)
    return [int(n) for n in names[ranks]]


@pytest.mark.parametrize(("seed", "max_samples"), [(1, MAX_SAMPLES), (2, MAX_SAMPLES), (3, 64)])
def test_unsampled_the_curve_is_lru_exactly(seed: int, max_samples: int) -> None:
    """With room for 64 samples, the tree's times run out every 65 references or so and are
    renumbered: the curve stays exact."""
    rng = random.Random(seed)
    trace = [rng.randrange(60) for _ in range(3000)]
    curve = fed(trace, max_samples=max_samples).curve()
    assert curve.rate == 1.0
    for capacity in range(0, 70):
        expected = lru_hit_ratio(trace, capacity)
        assert curve.hit_ratio(capacity * PAGE) == pytest.approx(expected, abs=1e-12), capacity


def test_capacity_for_a_target_is_the_smallest_lru_that_reaches_it() -> None:
    rng = random.Random(7)
    trace = [min(rng.randrange(100), rng.randrange(100)) for _ in range(5000)]
    curve = fed(trace).curve()
    for target in (0.3, 0.5, 0.8, 0.9):
        pages = next(c for c in range(1, 101) if lru_hit_ratio(trace, c) >= target)
        assert curve.capacity_for(target) == pages * PAGE, target
    assert curve.capacity_for(0.999) is None  # more than the first references allow


def test_a_cyclic_scan_misses_until_everything_fits() -> None:
    curve = fed(list(range(10)) * 5).curve()
    assert curve.hit_ratio(9 * PAGE) == 0.0
    assert curve.hit_ratio(10 * PAGE) == pytest.approx(0.8)
    assert curve.max_hit_ratio == pytest.approx(0.8)
    assert [(p.capacity_bytes, p.hit_ratio) for p in curve.points()] == [
        (0, 0.0),
        (9 * PAGE, 0.0),
        (10 * PAGE, pytest.approx(0.8)),
    ]


def test_nothing_read_gives_no_advice() -> None:
    curve = MissRatioCurve(PAGE).curve()
    assert curve.capacity_for(0.5) is None
    assert curve.hit_ratio(10 * PAGE) == 0.0
    assert curve.points() == []


def test_versions_are_different_pages() -> None:
    model = MissRatioCurve(PAGE)
    for version in ("v1", "v2", "v1"):
        model.record(PageId(FILE, version, 0))
    curve = model.curve()
    assert curve.hit_ratio(1 * PAGE) == 0.0
    assert curve.hit_ratio(2 * PAGE) == pytest.approx(1 / 3)


@pytest.mark.parametrize("seed", [5, 6, 7, 8, 9])
def test_sampled_the_error_stays_small(seed: int) -> None:
    """Some 19,500 pages read, 4,000 of them tracked (the fixed-size variant lowers the rate
    to about 1/5): at each capacity tried within 4 points of LRU, within 1.5 on average.
    (Which hot pages happen to be sampled moves the curve most at small capacities.)"""
    trace = zipf_trace(30_000, 150_000, seed)
    curve = fed(trace, max_samples=4000).curve()
    assert curve.rate < 0.25
    assert curve.tracked_pages <= 4000
    errors = [
        abs(curve.hit_ratio(pages * PAGE) - lru_hit_ratio(trace, pages))
        for pages in (250, 1000, 4000, 10000, 20000)
    ]
    assert max(errors) < 0.04, errors
    assert sum(errors) / len(errors) < 0.015, errors


def test_memory_stays_within_16_mb() -> None:
    model = MissRatioCurve(PAGE)
    tracemalloc.start()
    try:
        # Twice as many pages as can be tracked: the rate falls.
        for page in range(2 * MAX_SAMPLES + 5000):
            model.record(PageId(FILE, "v1", page))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    curve = model.curve()
    assert curve.tracked_pages <= MAX_SAMPLES
    assert curve.rate < 1.0
    assert peak < 16 << 20, peak


def test_records_from_many_threads_are_all_counted() -> None:
    model = MissRatioCurve(PAGE)
    trace = [random.Random(3).randrange(200) for _ in range(4000)]

    def feed() -> None:
        for page in trace:
            model.record(PageId(FILE, "v1", page))

    threads = [threading.Thread(target=feed) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    curve = model.curve()
    assert curve.sampled == 4 * len(trace)
    assert curve.references == pytest.approx(4 * len(trace))


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_the_page_cache_feeds_the_curve_its_lru_store_follows(kind: str, tmp_path: Path) -> None:
    """Read as the reader reads (a lookup, then a fill on a miss) through an LRU store of 8
    pages: the curve's hit ratio at 8 pages is the one the store had."""
    options = make_options(tmp_path, pages=8, evictor="lru")
    cache = open_local(options) if kind == "local" else in_memory(options)
    rng = random.Random(11)
    trace = [min(rng.randrange(16), rng.randrange(16)) for _ in range(600)]
    hits = 0
    try:
        for index in trace:
            page = PageId(FILE, "v1", index)
            if cache.read(page).lookup is Lookup.HIT:
                hits += 1
            else:
                cache.fill_run([page], lambda first, count: [b"x" * PAGE] * count, "s3://b/f")
        curve = cache.advice.curve()
    finally:
        cache.close()
    assert curve.references == len(trace)
    assert 0.2 < hits / len(trace) < 0.9
    assert curve.hit_ratio(8 * PAGE) == pytest.approx(hits / len(trace), abs=1e-12)


def test_threads_that_ended_keep_their_count_and_not_their_counter() -> None:
    model = MissRatioCurve(PAGE)
    for _ in range(50):  # a pool's threads come and go
        thread = threading.Thread(target=model.record, args=(PageId(FILE, "v1", 0),))
        thread.start()
        thread.join()
    model.record(PageId(FILE, "v1", 0))
    assert model.curve().references == 51
    assert len(model._seen) == 1  # this thread's; the ended ones are one figure


def test_the_curve_follows_the_work_to_other_pages() -> None:
    """A loop over 2,000 pages, then random reads of 500 others: ten half-lives into the new
    work the curve at 500 pages is the new work's alone (without aging it stays near the mix of
    both, about 0.66)."""
    rng = random.Random(11)
    before = list(range(2000)) * 25
    after = [100_000 + rng.randrange(500) for _ in range(100_000)]
    aged = fed(before + after, half_life=10_000).curve()
    alone = fed(after).curve()
    assert alone.hit_ratio(500 * PAGE) > 0.99
    assert aged.hit_ratio(500 * PAGE) == pytest.approx(alone.hit_ratio(500 * PAGE), abs=0.02)
    assert aged.hit_ratio(2000 * PAGE) == pytest.approx(alone.hit_ratio(2000 * PAGE), abs=0.02)


@pytest.mark.parametrize("seed", [5, 6])
def test_aging_leaves_a_steady_workload_s_curve_as_it_was(seed: int) -> None:
    """Halving hits and references alike every 5,000 references changes a steady curve by
    little (within 3 points of LRU at each capacity tried)."""
    trace = zipf_trace(3000, 60_000, seed)
    curve = fed(trace, half_life=5000).curve()
    for pages in (50, 200, 1000, 2500):
        assert curve.hit_ratio(pages * PAGE) == pytest.approx(
            lru_hit_ratio(trace, pages), abs=0.03
        ), pages
