"""Eviction policies: the shared contract, then each policy's order against a reference model."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pagestore.evict import EVICTORS, Evictor, LfuEvictor, LruEvictor, make_evictor


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


def test_unused_pages_leave_in_arrival_order(evictor: Evictor[str]) -> None:
    for key in "abc":
        evictor.on_put(key)
    order = []
    while (victim := evictor.evict()) is not None:
        order.append(victim)
        evictor.on_delete(victim)
    assert order == ["a", "b", "c"]


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


# Operations: (kind, key) with kind 0 = put, 1 = get, 2 = delete, 3 = evict.
operations = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 7)), max_size=80)


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
