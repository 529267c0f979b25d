"""The page cache's memory tier over the disk store, and building the cache from the keys."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import config.core_keys
import pagestore.keys
from config import Config, ConfigError, Registry, load_config
from pagestore.api import Lookup, PutResult
from pagestore.cache import PageCache
from pagestore.factory import page_cache
from pagestore.memory import MemoryStore
from pagestore.page import PageId
from tests.pagestore.support import FILE_A, FILE_B, PAGE_SIZE, content, make_options, open_local

SMALL = 1024


@pytest.fixture
def tiered(tmp_path: Path) -> Iterator[PageCache]:
    """Disk for 8 pages, a memory tier for 4 small pages."""
    cache = open_local(make_options(tmp_path, pages=8), memory=4 * SMALL, memory_limit=SMALL)
    yield cache
    cache.close()


def small(index: int, file_id: str = FILE_A) -> PageId:
    return PageId(file_id, "v1", index)


def test_a_small_page_is_served_from_memory_and_still_written_to_disk(tiered: PageCache) -> None:
    page_id = small(0)
    data = content(page_id, SMALL)
    assert tiered.put(page_id, data, f"s3://b/{FILE_A}") is PutResult.OK
    assert tiered.get(page_id, 10, 20) == data[10:30]
    assert tiered.stats().memory_hits == 1
    # short-circuit readers still find it on disk
    assert [p.index for p in tiered.locate(FILE_A, "v1").pages] == [0]


def test_a_whole_page_stays_on_disk_only(tiered: PageCache) -> None:
    page_id = small(0)
    tiered.put(page_id, content(page_id), "s3://b/x")
    assert tiered.get(page_id) == content(page_id)
    assert (tiered.stats().memory_hits, tiered.stats().memory_bytes) == (0, 0)


def test_a_small_page_read_from_disk_is_promoted(tmp_path: Path) -> None:
    options = make_options(tmp_path, pages=8)
    cold = open_local(options)
    page_id = small(0)
    cold.put(page_id, content(page_id, SMALL), "s3://b/x")
    cold.close()
    cache = open_local(options, memory=4 * SMALL, memory_limit=SMALL)  # restored from disk
    try:
        assert cache.get(page_id) == content(page_id, SMALL)
        assert cache.stats().memory_hits == 0
        assert cache.get(page_id) == content(page_id, SMALL)
        assert cache.stats().memory_hits == 1
    finally:
        cache.close()


def test_invalidation_drops_the_memory_copy_even_once_disk_evicted_it(tiered: PageCache) -> None:
    kept = small(0)
    tiered.put(kept, content(kept, SMALL), f"s3://b/dir/{FILE_A}")
    for index in range(8):  # whole pages of another file push the small one off the disk
        page_id = PageId(FILE_B, "v1", index)
        tiered.put(page_id, content(page_id), f"s3://b/other/{FILE_B}")
    assert tiered.get(kept) == content(kept, SMALL)  # from memory
    assert tiered.delete_prefix("s3://b/dir") == 0  # nothing left on disk to count
    assert tiered.read(kept).lookup is Lookup.MISS
    tiered.put(kept, content(kept, SMALL), f"s3://b/dir/{FILE_A}")
    tiered.delete_file(FILE_A, "v1")
    assert tiered.read(kept).lookup is Lookup.MISS


def test_a_fill_racing_an_invalidation_reaches_neither_tier(tiered: PageCache) -> None:
    page_id = small(0)
    fetching, invalidated = threading.Event(), threading.Event()

    def fill() -> bytes:
        fetching.set()
        assert invalidated.wait(10)
        return content(page_id, SMALL)

    filler = threading.Thread(target=tiered.get_or_fill, args=(page_id, fill, "s3://b/x"))
    filler.start()
    assert fetching.wait(10)
    tiered.delete_file(FILE_A)
    invalidated.set()
    filler.join(10)
    assert tiered.read(page_id).lookup is Lookup.MISS
    assert tiered.stats().memory_bytes == 0


def test_the_memory_store_holds_no_more_than_its_capacity() -> None:
    store = MemoryStore(PAGE_SIZE, 2 * SMALL)
    results = store.put_many(
        [(small(i), content(small(i), SMALL), "s3://b/x") for i in range(3)], lambda *_: True
    )
    assert results == [PutResult.OK] * 3
    assert store.used_bytes == 2 * SMALL
    assert store.read(small(0), 0, None) is None  # the least recently used went
    assert store.stats().evictions == 1


def configured(tmp_path: Path, *defines: str) -> Config:
    registry = Registry().extend([*config.core_keys.KEYS, *pagestore.keys.KEYS])
    defines = (f"dora.worker.page.store.dirs={tmp_path}", *defines)
    return load_config(registry, environ={}, defines=defines)


def test_the_keys_choose_the_memory_tier(tmp_path: Path) -> None:
    assert page_cache(configured(tmp_path)).memory is None
    cache = page_cache(configured(tmp_path, "dora.worker.page.store.memory.size=1MB"))
    assert cache.memory is not None and cache.memory.capacity_bytes == 1 << 20
    assert cache.memory_limit == 64 << 10


def test_a_tier_smaller_than_its_page_limit_is_refused_naming_the_keys(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        page_cache(
            configured(
                tmp_path,
                "dora.worker.page.store.memory.size=32KB",
                "dora.worker.page.store.memory.page.limit=64KB",
            )
        )
    assert "dora.worker.page.store.memory.size" in str(refused.value)
    assert "dora.worker.page.store.memory.page.limit" in str(refused.value)


class SlowDeletes(MemoryStore):
    """A store whose deletions wait for ``gate``: an invalidation held half done."""

    def __init__(self) -> None:
        super().__init__(PAGE_SIZE, 8 * PAGE_SIZE)
        self.deleting, self.gate = threading.Event(), threading.Event()

    def delete_file(self, file_id: str, version: str | None) -> int:
        self.deleting.set()
        assert self.gate.wait(10)
        return super().delete_file(file_id, version)


def test_no_page_is_promoted_while_an_invalidation_is_under_way() -> None:
    below = SlowDeletes()
    cache = PageCache(below, MemoryStore(PAGE_SIZE, 4 * SMALL), SMALL)
    page_id = small(0)
    cache.put(page_id, content(page_id, SMALL), "s3://b/x")
    cache.memory.delete_file(FILE_A, None)  # only below holds it now, as after a restart
    invalidation = threading.Thread(target=cache.delete_file, args=(FILE_A,))
    invalidation.start()
    assert below.deleting.wait(10)
    # The store below still serves the old page, but it must not reach the memory tier.
    assert cache.get(page_id) == content(page_id, SMALL)
    below.gate.set()
    invalidation.join(10)
    assert cache.read(page_id).lookup is Lookup.MISS
