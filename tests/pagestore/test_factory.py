"""The page cache the factory builds from the configuration: the disk store, and the memory
tier in front of it when its key asks for one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import config.core_keys
import pagestore.keys
from config import ConfigError, Registry, load_config
from pagestore.cache import PageCache
from pagestore.factory import page_cache
from pagestore.page import PageId
from tests.pagestore.support import FILE_A, content, uri


def built(tmp_path: Path, *defines: str) -> Iterator[PageCache]:
    registry = Registry().extend([*config.core_keys.KEYS, *pagestore.keys.KEYS])
    settings = [f"dora.work.dir={tmp_path}", "dora.worker.page.store.page.size=4KB", *defines]
    cache = page_cache(load_config(registry, environ={}, defines=settings))
    cache.start()
    assert cache.wait_ready(30)
    yield cache
    cache.close()


def served_without_its_page_file(tmp_path: Path, cache: PageCache) -> bool:
    page = PageId(FILE_A, "v1", 0)
    cache.put(page, content(page), uri(page))
    for stored in (tmp_path / "pages").rglob(f"{FILE_A}*"):
        stored.unlink()
    return cache.get(page) == content(page)


def test_without_a_memory_tier_a_page_is_read_from_its_file(tmp_path: Path) -> None:
    for cache in built(tmp_path):
        assert not served_without_its_page_file(tmp_path, cache)


def test_the_memory_tier_serves_a_copy_of_a_small_page(tmp_path: Path) -> None:
    defines = (
        "dora.worker.page.store.memory.size=1MB",
        "dora.worker.page.store.memory.page.limit=4KB",
    )
    for cache in built(tmp_path, *defines):
        assert served_without_its_page_file(tmp_path, cache)


def test_a_memory_tier_smaller_than_its_page_limit_is_refused(tmp_path: Path) -> None:
    defines = (
        "dora.worker.page.store.memory.size=2KB",
        "dora.worker.page.store.memory.page.limit=4KB",
    )
    with pytest.raises(ConfigError, match=r"dora\.worker\.page\.store\.memory\.size.*page\.limit"):
        list(built(tmp_path, *defines))
